//! The randomised invariant test: random pass sequences of every kind.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::messages::TimerPurpose;

use super::super::reasons::{ALL, common};
use super::super::*;
use super::{C, False, True, Unknown, derive, get, t, with};

/// A small deterministic generator, so the invariant test needs no extra dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

fn random_verdict(rng: &mut Rng, kind: Kind) -> Verdict {
    // A refused hostname is a fact of its own (`random_facts`), never a verdict; the error
    // classes are Event reasons only.
    let usable: Vec<Reason> = ALL
        .iter()
        .copied()
        .filter(|r| kind.may_use(*r) && *r != common::HOSTNAME_NOT_ALLOWED)
        .filter(|r| ErrorClass::ALL.iter().all(|c| c.reason() != *r))
        .collect();
    let status = rng.pick(&[True, False, Unknown]);
    let message = "ü".repeat(rng.below(700));
    let mut verdict = Verdict::new(status, rng.pick(&usable), message);
    if kind.has_subjects() && rng.chance(3) {
        verdict = verdict.about(rng.pick(&[Subject::SignInSecret, Subject::SettingsDatabase]));
    }
    if rng.chance(6) {
        verdict = verdict.with_suffix(" — a sentence that must stay");
    }
    verdict
}

/// What the object stores besides its conditions: one status field of the kind.
#[derive(Clone, Default)]
struct StoredField(Option<String>);

fn random_facts(
    rng: &mut Rng,
    kind: Kind,
    generation: i64,
    stored_field: &StoredField,
) -> PassFacts {
    let mut facts = PassFacts::new(kind, generation)
        .with_children_converged(rng.chance(2))
        .with_paused(rng.chance(4));
    // Some passes end early with an error and evaluate nothing (a runtime's error report).
    let error_only = rng.chance(5);
    if !error_only {
        for aspect in kind.aspects() {
            if !rng.chance(4) {
                facts = with(facts, *aspect, random_verdict(rng, kind));
            }
        }
        for advisory in kind.advisories() {
            facts = match rng.below(3) {
                0 => facts.with_advisory(*advisory, random_verdict(rng, kind)),
                1 => facts.without_advisory(*advisory),
                _ => Ok(facts),
            }
            .expect("advisory of kind");
        }
    }
    if kind.aspects().contains(&C::ExposureReady) && rng.chance(2) {
        let hostname = if rng.chance(2) {
            Hostname::Allowed
        } else {
            Hostname::refused(format!("hostname h{}.example.org is refused", rng.below(2)))
        };
        facts = facts.with_hostname(hostname).expect("exposure kind");
    }
    let field = kind.status_fields()[0];
    let desired = rng.pick(&[None, Some("a"), Some("b")]).map(str::to_owned);
    facts = facts
        .with_status_field(field, &desired, &stored_field.0)
        .expect("field of kind");
    if let Some((reason, _)) = kind.events().first()
        && rng.chance(4)
    {
        facts = facts
            .with_event(*reason, "the kind's own fact")
            .expect("event of kind");
    }
    if rng.chance(4) {
        let delay = Duration::from_secs(rng.below(600) as u64 + 1);
        facts = facts
            .with_timer(
                rng.pick(&[TimerPurpose::Expiry, TimerPurpose::Grace]),
                delay,
            )
            .expect("a kind's timer");
    }
    if error_only || rng.chance(3) {
        let class = rng.pick(ErrorClass::ALL);
        facts = facts.with_error(ClassifiedError::new(class, &"e".repeat(rng.below(3000))));
    }
    facts
}

/// The same facts once their status fields are stored: nothing left to change.
fn as_stored(facts: &PassFacts) -> PassFacts {
    let mut facts = facts.clone();
    for field in &mut facts.fields {
        field.changed = false;
    }
    facts
}

fn check_invariants(facts: &PassFacts, stored: &[Condition], update: &StatusUpdate, label: &str) {
    let conditions = &update.conditions;
    assert!(conditions.len() <= MAX_CONDITIONS, "{label}");
    for (i, c) in conditions.iter().enumerate() {
        assert!(
            conditions[..i].iter().all(|o| o.type_ != c.type_),
            "{label}: {} twice",
            c.type_
        );
        assert!(
            Reason::parse(&c.reason).is_some(),
            "{label}: {} unregistered",
            c.reason
        );
        assert!(
            ["True", "False", "Unknown"].contains(&c.status.as_str()),
            "{label}"
        );
        assert!(c.message.len() <= MESSAGE_LIMIT_BYTES, "{label}");
        if let Some(old) = find_condition(stored, ConditionType::parse(&c.type_).expect("ours"))
            && old.status == c.status
        {
            assert_eq!(
                old.last_transition_time, c.last_transition_time,
                "{label}: {}",
                c.type_
            );
        }
    }
    let ready = get(conditions, C::Ready);
    if ready.status == "True" {
        assert!(facts.error.is_none() && !facts.paused, "{label}");
        for aspect in facts.kind.aspects() {
            let c = get(conditions, *aspect);
            assert_eq!(
                (c.status.as_str(), c.observed_generation),
                ("True", Some(facts.generation)),
                "{label}"
            );
        }
    }
    if facts.error.is_some() {
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "ReconcileError"),
            "{label}"
        );
    } else if facts.paused {
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("Unknown", "ReconciliationPaused"),
            "{label}"
        );
    }
    let stalled = get(conditions, C::Stalled);
    if stalled.status == "True" {
        assert_eq!(get(conditions, C::Progressing).status, "False", "{label}");
    }
    check_stall_survives_an_error_pass(facts, stored, update, label);
    check_hostname(facts, stored, update, label);
    if facts.fields.iter().any(|f| f.changed) {
        assert!(update.changed, "{label}: a changed status field is a write");
    }
    for field in &facts.fields {
        assert_eq!(
            update.fields.get(field.field.as_str()),
            Some(&field.value),
            "{label}"
        );
    }
    let wake = update.timers.iter().map(|(_, d)| *d).min();
    assert_eq!(update.next_wake_up(), wake, "{label}");
    if let Some(recheck) = update.recheck_after {
        assert!(update.stall.is_some(), "{label}");
        assert!(update.timers.iter().any(|(_, d)| *d == recheck), "{label}");
    }
    for timer in &facts.timers {
        assert!(update.timers.contains(timer), "{label}: {timer:?} lost");
    }
    let kind_events = &facts.events;
    assert!(
        update.events.ends_with(kind_events),
        "{label}: the kind's Events come last, always"
    );
    for event in &update.events {
        assert!(event.note.len() <= MESSAGE_LIMIT_BYTES, "{label}");
        if kind_events.contains(event) {
            assert_eq!(
                facts.kind.event_type(event.reason),
                Some(event.type_),
                "{label}"
            );
        } else if event.type_ == EventType::Normal {
            assert_eq!(event.reason, common::AS_EXPECTED, "{label}");
        } else {
            assert!(
                !facts.kind.is_quiet(event.reason) || update.stall.is_some(),
                "{label}: {}",
                event.reason
            );
        }
    }
    if stored.is_empty() {
        for advisory in facts.kind.advisories() {
            if facts.advisory(*advisory).is_none() {
                assert_eq!(
                    get(conditions, *advisory).reason,
                    "Initializing",
                    "{label}: an advisory starts Unknown/Initializing"
                );
            }
        }
    }
    let again = derive_status(
        &as_stored(facts),
        StoredStatus {
            conditions,
            observed_generation: Some(update.observed_generation),
        },
        t(1_000_000),
    );
    assert!(
        !again.changed && again.events == *kind_events,
        "{label}: not idempotent: {:?}",
        again.events
    );
}

/// A stall survives a pass that failed before evaluating anything: Stalled stays True with
/// its reason, Progressing False, and no second stall Event.
fn check_stall_survives_an_error_pass(
    facts: &PassFacts,
    stored: &[Condition],
    update: &StatusUpdate,
    label: &str,
) {
    let Some(old) = find_condition(stored, C::Stalled).filter(|c| c.status == "True") else {
        return;
    };
    let lifted_hostname = old.reason == common::HOSTNAME_NOT_ALLOWED.as_str()
        && matches!(facts.hostname, Some(Hostname::Allowed));
    let refused_hostname = matches!(facts.hostname, Some(Hostname::Refused { .. }));
    let only_an_error = facts.aspects.is_empty() && facts.error.is_some();
    let paused_away = facts.paused && old.reason != common::HOSTNAME_NOT_ALLOWED.as_str();
    if !only_an_error || lifted_hostname || refused_hostname || paused_away {
        return;
    }
    let stalled = get(&update.conditions, C::Stalled);
    assert_eq!(
        (stalled.status.as_str(), stalled.reason.as_str()),
        ("True", old.reason.as_str()),
        "{label}: the error pass lifted the stall"
    );
    let progressing = get(&update.conditions, C::Progressing);
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("False", old.reason.as_str()),
        "{label}"
    );
    assert!(
        update
            .events
            .iter()
            .all(|e| e.reason.as_str() != old.reason),
        "{label}: a second stall Event"
    );
}

/// A refused hostname: both conditions say so, at most one Warning, none when a stored
/// condition already says so. An allowed one leaves no refusal on show.
fn check_hostname(facts: &PassFacts, stored: &[Condition], update: &StatusUpdate, label: &str) {
    let warnings = update
        .events
        .iter()
        .filter(|e| e.reason == common::HOSTNAME_NOT_ALLOWED)
        .count();
    let on_record = stored
        .iter()
        .any(|c| c.reason == common::HOSTNAME_NOT_ALLOWED.as_str());
    match &facts.hostname {
        Some(Hostname::Refused { message }) => {
            for aspect in [C::ConfigurationValid, C::ExposureReady] {
                let c = get(&update.conditions, aspect);
                assert_eq!(
                    (c.status.as_str(), c.reason.as_str()),
                    ("False", "HostnameNotAllowed"),
                    "{label}: {aspect}"
                );
                assert!(c.message.starts_with(message.as_str()), "{label}: {aspect}");
            }
            assert_eq!(warnings, usize::from(!on_record), "{label}");
        }
        Some(Hostname::Allowed) => {
            assert!(
                update
                    .conditions
                    .iter()
                    .all(|c| c.reason != common::HOSTNAME_NOT_ALLOWED.as_str()),
                "{label}: a lifted refusal lingers"
            );
            assert_eq!(warnings, 0, "{label}");
        }
        None => assert_eq!(warnings, 0, "{label}"),
    }
}

#[test]
fn invariants_hold_over_random_pass_sequences() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for run in 0..600 {
        let kind = rng.pick(Kind::ALL);
        let mut stored: Vec<Condition> = Vec::new();
        let mut stored_field = StoredField::default();
        let mut generation = 1;
        // Error classes reported since the last pass that did not fail.
        let mut reported: Vec<ErrorClass> = Vec::new();
        for pass in 0..8 {
            if rng.chance(3) {
                generation += 1;
            }
            let facts = random_facts(&mut rng, kind, generation, &stored_field);
            let update = derive(&facts, &stored, t(pass * 60));
            let label = format!("run {run} pass {pass} {kind:?}");
            check_invariants(&facts, &stored, &update, &label);
            let class_warnings: Vec<ErrorClass> = ErrorClass::ALL
                .iter()
                .copied()
                .filter(|c| update.events.iter().any(|e| e.reason == c.reason()))
                .collect();
            match &facts.error {
                Some(error) => {
                    let expected: Vec<ErrorClass> = (!reported.contains(&error.class))
                        .then_some(error.class)
                        .into_iter()
                        .collect();
                    assert_eq!(class_warnings, expected, "{label}: once per class");
                    if !reported.contains(&error.class) {
                        reported.push(error.class);
                    }
                }
                None => {
                    assert!(class_warnings.is_empty(), "{label}");
                    reported.clear();
                }
            }
            if update.changed {
                stored = update.conditions;
                stored_field = StoredField(
                    update
                        .fields
                        .values()
                        .next()
                        .and_then(|v| v.as_str())
                        .map(str::to_owned),
                );
            }
        }
    }
}
