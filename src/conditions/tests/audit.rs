//! The rules the audit against the conditions seed asked for: stalls through error passes,
//! typed conditional stalls, status fields in "changed", the kinds' own Events, error classes
//! as a set, advisories on first touch, one schedule.

use std::time::Duration;

use serde_json::json;

use super::super::reasons::{ALL, access_request, common, console, evidence_agent, pgadmin};
use super::super::*;
use super::{C, False, True, all_holding, derive, get, replacing, st, t, triple};
use crate::messages::TimerPurpose;

/// (name, desired, stored, changed, the value written)
type FieldCase = (
    &'static str,
    Option<String>,
    Option<String>,
    bool,
    serde_json::Value,
);

/// (name, facts, the timers, the next wake-up)
type ScheduleCase = (
    &'static str,
    PassFacts,
    Vec<(TimerPurpose, Duration)>,
    Option<Duration>,
);

fn error_pass(kind: Kind, generation: i64, class: ErrorClass) -> PassFacts {
    PassFacts::new(kind, generation).with_error(ClassifiedError::new(class, "the API said no"))
}

#[test]
fn a_stall_survives_an_error_pass() {
    let cases: &[(Kind, ConditionType, Verdict)] = &[
        (
            Kind::PgToolBoxConsole,
            C::ConfigurationValid,
            Verdict::fails(
                console::CONSOLE_ROLE_MISSING,
                "pgtoolbox-console is missing",
            ),
        ),
        (
            Kind::EvidenceAgent,
            C::ConfigurationValid,
            Verdict::fails(evidence_agent::REGION_REQUIRED, "set a region"),
        ),
        (
            Kind::PgAdmin,
            C::WorkloadReady,
            Verdict::fails(pgadmin::UPGRADE_BACKUP_FAILED, "the backup Job failed"),
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(
                common::CONFIGURATION_INVALID,
                "configDatabase names no Cluster",
            )
            .about(Subject::SettingsDatabase),
        ),
    ];
    for (kind, aspect, verdict) in cases {
        let label = format!("{kind:?} {}", verdict.reason);
        let stalling = replacing(*kind, 1, &[(*aspect, verdict.clone())]);
        let first = derive(&stalling, &[], t(0));
        assert_eq!(
            first.stall.as_ref().map(|s| s.reason),
            Some(verdict.reason),
            "{label}"
        );

        for class in ErrorClass::ALL {
            let failed = derive(&error_pass(*kind, 1, *class), &first.conditions, t(10));
            assert_eq!(
                triple(&failed.conditions, C::Stalled),
                st(True, verdict.reason),
                "{label}: {class:?}"
            );
            assert_eq!(
                triple(&failed.conditions, C::Progressing),
                st(False, verdict.reason),
                "{label}: {class:?}"
            );
            assert_eq!(
                get(&failed.conditions, *aspect),
                get(&first.conditions, *aspect),
                "{label}"
            );
            assert_eq!(
                get(&failed.conditions, C::Stalled).last_transition_time,
                get(&first.conditions, C::Stalled).last_transition_time
            );
            assert_eq!(
                triple(&failed.conditions, C::Ready),
                st(False, common::RECONCILE_ERROR)
            );
            assert_eq!(
                failed.stall, first.stall,
                "{label}: still not retried with backoff"
            );
            let reasons: Vec<Reason> = failed.events.iter().map(|e| e.reason).collect();
            assert_eq!(reasons, vec![class.reason()], "{label}");

            // The next pass finds the same stall: no second Stalled Event.
            let next = derive(&stalling, &failed.conditions, t(20));
            assert!(
                next.events.iter().all(|e| e.reason != verdict.reason),
                "{label}: {:?}",
                next.events
            );
        }
    }
}

#[test]
fn a_stall_ends_when_its_aspect_is_evaluated_again() {
    let kind = Kind::PgToolBoxConsole;
    let first = derive(
        &replacing(
            kind,
            1,
            &[(
                C::ConfigurationValid,
                Verdict::fails(common::CONFIG_MAP_NOT_FOUND, "extra-ca is missing"),
            )],
        ),
        &[],
        t(0),
    );
    let fixed = derive(&all_holding(kind, 1), &first.conditions, t(10));
    assert_eq!(
        triple(&fixed.conditions, C::Stalled),
        st(False, common::AS_EXPECTED)
    );
    assert_eq!(fixed.stall, None);
    // Paused, the same stored stall is not on show (only a refused hostname is).
    let paused = derive(
        &PassFacts::new(kind, 1).with_paused(true),
        &first.conditions,
        t(10),
    );
    assert_eq!(
        triple(&paused.conditions, C::Stalled),
        st(False, common::AS_EXPECTED)
    );
}

#[test]
fn the_kinds_table_alone_decides_a_stall() {
    // Every ConfigurationValid=False of a console or an agent stalls; nothing of a request does.
    for reason in ALL {
        for kind in [Kind::PgToolBoxConsole, Kind::EvidenceAgent] {
            let stalls = kind.may_use(*reason) && *reason != common::HOSTNAME_NOT_ALLOWED;
            if !stalls {
                continue;
            }
            let facts = replacing(
                kind,
                1,
                &[(C::ConfigurationValid, Verdict::fails(*reason, "m"))],
            );
            assert_eq!(
                derive(&facts, &[], t(0)).stall.map(|s| s.reason),
                Some(*reason),
                "{kind:?} {reason}"
            );
        }
        if Kind::PgAccessRequest.may_use(*reason) && *reason != common::HOSTNAME_NOT_ALLOWED {
            for aspect in Kind::PgAccessRequest.aspects() {
                let facts = replacing(
                    Kind::PgAccessRequest,
                    1,
                    &[(*aspect, Verdict::fails(*reason, "m"))],
                );
                assert_eq!(derive(&facts, &[], t(0)).stall, None, "{aspect} {reason}");
            }
        }
    }
    // A subject is only meaningful where the table reads it.
    for kind in [
        Kind::PgAccessRequest,
        Kind::PgToolBoxConsole,
        Kind::EvidenceAgent,
    ] {
        let facts = PassFacts::new(kind, 1).with_aspect(
            C::ConfigurationValid,
            Verdict::fails(common::SECRET_NOT_FOUND, "m").about(Subject::SignInSecret),
        );
        assert_eq!(facts, Err(FactsError::NoSubjects { kind }), "{kind:?}");
    }
}

#[test]
fn status_fields_take_part_in_changed() {
    let kind = Kind::PgAdmin;
    let settled = derive(&all_holding(kind, 1), &[], t(0));
    let url = |s: &str| Some(s.to_owned());
    let cases: &[FieldCase] = &[
        (
            "same url",
            url("https://a"),
            url("https://a"),
            false,
            json!("https://a"),
        ),
        (
            "new url",
            url("https://b"),
            url("https://a"),
            true,
            json!("https://b"),
        ),
        (
            "url withdrawn",
            None,
            url("https://a"),
            true,
            serde_json::Value::Null,
        ),
        ("still none", None, None, false, serde_json::Value::Null),
    ];
    for (name, desired, stored, changed, value) in cases {
        let facts = all_holding(kind, 1)
            .with_status_field(StatusField::Url, desired, stored)
            .expect("field of kind");
        let update = derive(&facts, &settled.conditions, t(10));
        assert_eq!(update.conditions, settled.conditions, "{name}");
        assert_eq!(update.changed, *changed, "{name}");
        assert_eq!(update.fields.get("url"), Some(value), "{name}");
        let patch = status_patch(&update, serde_json::Map::new(), None).expect("serialisable");
        assert_eq!(&patch["status"]["url"], value, "{name}");
    }
    // Structured fields compare as values.
    let servers = vec![json!({"cluster": "a"})];
    let facts = all_holding(kind, 1)
        .with_status_field(StatusField::Servers, &servers, &servers)
        .and_then(|f| f.with_status_field(StatusField::Image, "img:1", "img:2"))
        .expect("fields of kind");
    assert!(derive(&facts, &settled.conditions, t(10)).changed);
    let wrong = PassFacts::new(Kind::PgToolBoxConsole, 1).with_status_field(
        StatusField::Servers,
        &servers,
        &servers,
    );
    assert!(matches!(wrong, Err(FactsError::NotAStatusField { .. })));
    let twice = PassFacts::new(Kind::PgToolBoxConsole, 1)
        .with_status_field(StatusField::Url, "a", "a")
        .and_then(|f| f.with_status_field(StatusField::Url, "b", "a"));
    assert_eq!(
        twice,
        Err(FactsError::FieldTwice {
            field: StatusField::Url
        })
    );
}

#[test]
fn kind_events_are_recorded_even_when_nothing_changed() {
    let cases: &[(Kind, Reason, EventType)] = &[
        (Kind::PgAdmin, pgadmin::ROLLOUT_STARTED, EventType::Normal),
        (
            Kind::PgAdmin,
            pgadmin::REGISTRATION_STARTED,
            EventType::Normal,
        ),
        (
            Kind::PgAdmin,
            pgadmin::SERVERS_REGISTERED,
            EventType::Normal,
        ),
        (
            Kind::PgAdmin,
            pgadmin::UPGRADE_BACKUP_COMPLETED,
            EventType::Normal,
        ),
        (
            Kind::PgAdmin,
            pgadmin::UPGRADE_BACKUP_SKIPPED,
            EventType::Warning,
        ),
        (
            Kind::EvidenceAgent,
            evidence_agent::CERTIFICATE_ISSUED,
            EventType::Normal,
        ),
        (
            Kind::PgAccessRequest,
            access_request::ACCESS_EXPIRED,
            EventType::Normal,
        ),
        (
            Kind::PgAccessRequest,
            access_request::SELF_APPROVAL_REFUSED,
            EventType::Warning,
        ),
    ];
    for (kind, reason, type_) in cases {
        let settled = derive(&all_holding(*kind, 1), &[], t(0));
        let facts = all_holding(*kind, 1)
            .with_event(*reason, "the kind's fact")
            .expect("event of kind");
        let update = derive(&facts, &settled.conditions, t(10));
        assert!(!update.changed, "{reason}: nothing to write");
        assert_eq!(
            update.events,
            vec![EventDecision::of(*type_, *reason, "the kind's fact")],
            "{reason}"
        );
        // With a transition, the kind's Event follows the engine's.
        let first = derive(&facts, &[], t(0));
        assert_eq!(first.events.last().map(|e| e.reason), Some(*reason));
        assert_eq!(
            first.events.first().map(|e| e.reason),
            Some(common::AS_EXPECTED)
        );
    }
    let foreign =
        PassFacts::new(Kind::PgToolBoxConsole, 1).with_event(pgadmin::ROLLOUT_STARTED, "m");
    assert!(matches!(foreign, Err(FactsError::NotAnEventOfKind { .. })));
    let transition = PassFacts::new(Kind::PgAdmin, 1).with_event(common::AS_EXPECTED, "m");
    assert!(matches!(
        transition,
        Err(FactsError::NotAnEventOfKind { .. })
    ));
}

#[test]
fn error_classes_are_reported_once_each_until_a_pass_succeeds() {
    use ErrorClass::{AdmissionDenied as A, QuotaExceeded as Q, ReconciliationFailed as R};
    // (class of the pass or None for a successful one, the class Warning expected)
    let sequence: &[(Option<ErrorClass>, Option<ErrorClass>)] = &[
        (Some(Q), Some(Q)),
        (Some(A), Some(A)),
        (Some(Q), None),
        (Some(A), None),
        (Some(R), Some(R)),
        (Some(Q), None),
        (None, None),
        (Some(Q), Some(Q)),
        (Some(A), Some(A)),
    ];
    let kind = Kind::PgToolBoxConsole;
    let mut stored = Vec::new();
    for (pass, (class, warned)) in sequence.iter().enumerate() {
        let facts = match class {
            Some(class) => all_holding(kind, 1)
                .with_error(ClassifiedError::new(*class, &"long text ".repeat(200))),
            None => all_holding(kind, 1),
        };
        let update = derive(&facts, &stored, t(pass as i64 * 10));
        let got: Vec<Reason> = update
            .events
            .iter()
            .filter(|e| ErrorClass::ALL.iter().any(|c| c.reason() == e.reason))
            .map(|e| e.reason)
            .collect();
        let expected: Vec<Reason> = warned.map(ErrorClass::reason).into_iter().collect();
        assert_eq!(got, expected, "pass {pass}");
        let ready = get(&update.conditions, C::Ready);
        assert!(ready.message.len() <= MESSAGE_LIMIT_BYTES);
        if let Some(class) = class {
            assert!(
                ready.message.starts_with(class.reason().as_str()),
                "pass {pass}"
            );
        }
        stored = update.conditions;
    }
}

#[test]
fn advisories_start_unknown_initializing_on_first_touch_only() {
    let kind = Kind::PgToolBoxConsole;
    let first = derive(&all_holding(kind, 1), &[], t(0));
    for advisory in kind.advisories() {
        assert_eq!(
            triple(&first.conditions, *advisory),
            st(ConditionStatus::Unknown, common::INITIALIZING)
        );
    }
    // Once withdrawn, an advisory not reported stays absent.
    let withdrawn = all_holding(kind, 1)
        .without_advisory(C::ExposureConfined)
        .and_then(|f| f.without_advisory(C::InstanceCABundleComplete))
        .expect("advisories of kind");
    let second = derive(&withdrawn, &first.conditions, t(10));
    let later = derive(&all_holding(kind, 1), &second.conditions, t(20));
    for advisory in kind.advisories() {
        assert!(
            find_condition(&later.conditions, *advisory).is_none(),
            "{advisory}"
        );
    }
    // Withdrawn on the very first pass: never shown.
    let at_once = derive(&withdrawn, &[], t(0));
    assert!(find_condition(&at_once.conditions, C::ExposureConfined).is_none());
}

#[test]
fn one_schedule_from_stall_rechecks_and_the_kinds_timers() {
    let role_missing = (
        C::ConfigurationValid,
        Verdict::fails(console::CONSOLE_ROLE_MISSING, "m"),
    );
    let policy_invalid = (
        C::ConfigurationValid,
        Verdict::fails(console::EXPOSURE_POLICY_INVALID, "m"),
    );
    let kept_policy = Duration::from_secs(45);
    let renewal = Duration::from_secs(3600);
    let cases: Vec<ScheduleCase> = vec![
        (
            "nothing",
            all_holding(Kind::PgToolBoxConsole, 1),
            vec![],
            None,
        ),
        (
            "two-minute recheck",
            replacing(
                Kind::PgToolBoxConsole,
                1,
                std::slice::from_ref(&role_missing),
            ),
            vec![(TimerPurpose::Recheck2m, STALL_RECHECK)],
            Some(STALL_RECHECK),
        ),
        (
            "five-minute recheck and a kept policy's wait",
            replacing(Kind::PgToolBoxConsole, 1, &[policy_invalid])
                .with_timer(TimerPurpose::Grace, kept_policy)
                .expect("kind timer"),
            vec![
                (TimerPurpose::Recheck5m, STALL_RECHECK_LONG),
                (TimerPurpose::Grace, kept_policy),
            ],
            Some(kept_policy),
        ),
        (
            "certificate renewal",
            all_holding(Kind::EvidenceAgent, 1)
                .with_timer(TimerPurpose::Expiry, renewal)
                .expect("kind timer"),
            vec![(TimerPurpose::Expiry, renewal)],
            Some(renewal),
        ),
    ];
    for (name, facts, timers, wake) in cases {
        let update = derive(&facts, &[], t(0));
        assert_eq!(update.timers, timers, "{name}");
        assert_eq!(update.next_wake_up(), wake, "{name}");
    }
    for purpose in [
        TimerPurpose::Retry,
        TimerPurpose::Recheck2m,
        TimerPurpose::Recheck5m,
    ] {
        assert_eq!(
            PassFacts::new(Kind::PgAdmin, 1).with_timer(purpose, STALL_RECHECK),
            Err(FactsError::NotAKindTimer { purpose })
        );
    }
}
