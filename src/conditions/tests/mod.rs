//! Table-driven tests of every derivation rule of the engine.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;

use super::reasons::{ALL, access_request, common, console, evidence_agent, pgadmin};
use super::*;

use ConditionStatus::{False, True, Unknown};
use ConditionType as C;

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).expect("valid timestamp")
}

fn get(conditions: &[Condition], type_: ConditionType) -> &Condition {
    find_condition(conditions, type_).unwrap_or_else(|| panic!("{type_} missing"))
}

fn triple(conditions: &[Condition], type_: ConditionType) -> (String, String) {
    let c = get(conditions, type_);
    (c.status.clone(), c.reason.clone())
}

fn st(status: ConditionStatus, reason: Reason) -> (String, String) {
    (status.as_str().to_owned(), reason.as_str().to_owned())
}

/// Facts a settled object of `kind` may have: nothing evaluated yet, every aspect holding, and
/// holding while paused.
fn settled_samples(kind: Kind) -> [PassFacts; 3] {
    [
        PassFacts::new(kind, 1),
        all_holding(kind, 1),
        all_holding(kind, 1).with_paused(true),
    ]
}

fn all_holding(kind: Kind, generation: i64) -> PassFacts {
    kind.aspects()
        .iter()
        .fold(PassFacts::new(kind, generation), |facts, aspect| {
            facts
                .with_aspect(*aspect, Verdict::holds(common::AS_EXPECTED, "fine"))
                .expect("aspect of kind")
        })
        .with_children_converged(true)
}

fn with(facts: PassFacts, aspect: ConditionType, verdict: Verdict) -> PassFacts {
    facts.with_aspect(aspect, verdict).expect("aspect of kind")
}

/// Replaces one aspect's verdict in a facts value built by `all_holding`.
fn replacing(kind: Kind, generation: i64, changes: &[(ConditionType, Verdict)]) -> PassFacts {
    let mut facts = PassFacts::new(kind, generation).with_children_converged(true);
    for aspect in kind.aspects() {
        let verdict = changes
            .iter()
            .find(|(c, _)| c == aspect)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| Verdict::holds(common::AS_EXPECTED, "fine"));
        facts = with(facts, *aspect, verdict);
    }
    facts
}

fn derive(facts: &PassFacts, stored: &[Condition], now: Timestamp) -> StatusUpdate {
    derive_status(
        facts,
        StoredStatus {
            conditions: stored,
            observed_generation: stored.first().and_then(|c| c.observed_generation),
        },
        now,
    )
}

#[test]
fn first_touch_is_unknown_initializing_for_every_kind() {
    for kind in Kind::ALL {
        let update = derive(&PassFacts::new(*kind, 1), &[], t(0));
        assert_eq!(
            triple(&update.conditions, C::Ready),
            st(Unknown, common::INITIALIZING)
        );
        for aspect in kind.aspects() {
            assert_eq!(
                triple(&update.conditions, *aspect),
                st(Unknown, common::INITIALIZING)
            );
        }
        assert_eq!(
            triple(&update.conditions, C::Stalled),
            st(False, common::AS_EXPECTED)
        );
        assert_eq!(
            triple(&update.conditions, C::Progressing),
            st(True, common::RECONCILING)
        );
        assert!(update.changed, "{kind:?}: a first status is always written");
        assert!(update.events.is_empty(), "{kind:?}: {:?}", update.events);
        for advisory in kind.advisories() {
            assert_eq!(
                triple(&update.conditions, *advisory),
                st(Unknown, common::INITIALIZING),
                "{kind:?}: an advisory starts unknown too"
            );
        }
        let types: Vec<&str> = update.conditions.iter().map(|c| c.type_.as_str()).collect();
        let expected: Vec<&str> = kind.condition_types().iter().map(|c| c.as_str()).collect();
        assert_eq!(types, expected, "{kind:?}");
    }
}

#[test]
fn each_kind_has_its_aspects_in_order() {
    let cases: &[(Kind, &[ConditionType], &[ConditionType])] = &[
        (
            Kind::PgAdmin,
            &[
                C::ConfigurationValid,
                C::WorkloadReady,
                C::ExposureReady,
                C::ServersSynced,
            ],
            &[C::PgAdminEgressConfined],
        ),
        (
            Kind::EvidenceAgent,
            &[
                C::ConfigurationValid,
                C::ServingCertificateReady,
                C::WorkloadReady,
            ],
            &[],
        ),
        (
            Kind::PgToolBoxConsole,
            &[C::ConfigurationValid, C::WorkloadReady, C::ExposureReady],
            &[C::InstanceCABundleComplete, C::ExposureConfined],
        ),
        (
            Kind::PgAccessRequest,
            &[C::ConfigurationValid, C::RoleBindingSynced],
            &[],
        ),
    ];
    for (kind, aspects, advisories) in cases {
        assert_eq!(kind.aspects(), *aspects, "{kind:?}");
        assert_eq!(kind.advisories(), *advisories, "{kind:?}");
    }
}

#[test]
fn ready_copies_the_first_aspect_that_is_not_true() {
    for kind in Kind::ALL {
        let aspects = kind.aspects();
        // Every later aspect fails too; the earliest failing one must decide.
        for (index, deciding) in aspects.iter().enumerate() {
            let changes: Vec<(ConditionType, Verdict)> = aspects[index..]
                .iter()
                .enumerate()
                .map(|(offset, aspect)| {
                    let verdict = if offset == 0 {
                        Verdict::unknown(common::RECONCILING, format!("{aspect} first"))
                    } else {
                        Verdict::fails(common::RESOURCE_NOT_OWNED, format!("{aspect} later"))
                    };
                    (*aspect, verdict)
                })
                .collect();
            let update = derive(&replacing(*kind, 4, &changes), &[], t(0));
            let ready = get(&update.conditions, C::Ready);
            assert_eq!(
                (
                    ready.status.as_str(),
                    ready.reason.as_str(),
                    ready.message.clone()
                ),
                ("Unknown", "Reconciling", format!("{deciding} first")),
                "{kind:?}: {deciding} comes first"
            );
        }
    }
}

#[test]
fn ready_is_true_only_when_every_aspect_holds_at_the_current_generation() {
    for kind in Kind::ALL {
        let update = derive(&all_holding(*kind, 3), &[], t(0));
        assert_eq!(
            triple(&update.conditions, C::Ready),
            st(True, common::AS_EXPECTED)
        );
        assert_eq!(
            triple(&update.conditions, C::Progressing),
            st(False, common::AS_EXPECTED)
        );

        // The spec moved on (generation 4) and this pass evaluated only the first aspect:
        // the others are still those of generation 3.
        let first = kind.aspects()[0];
        let next = with(
            PassFacts::new(*kind, 4),
            first,
            Verdict::holds(common::AS_EXPECTED, "ok"),
        );
        let update = derive(&next, &update.conditions, t(10));
        let ready = get(&update.conditions, C::Ready);
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("Unknown", "Reconciling")
        );
        assert!(
            ready.message.contains(kind.aspects()[1].as_str()),
            "{}",
            ready.message
        );
        assert_eq!(
            get(&update.conditions, kind.aspects()[1]).observed_generation,
            Some(3),
            "a kept aspect keeps the generation it was evaluated at"
        );
    }
}

#[test]
fn every_condition_carries_observed_generation() {
    let update = derive(&all_holding(Kind::PgAdmin, 7), &[], t(0));
    assert_eq!(update.observed_generation, 7);
    for c in &update.conditions {
        assert_eq!(c.observed_generation, Some(7), "{}", c.type_);
    }
}

#[test]
fn an_error_makes_ready_false_with_its_class() {
    let cases = [
        (ErrorClass::ReconciliationFailed, "ReconciliationFailed: "),
        (ErrorClass::QuotaExceeded, "QuotaExceeded: "),
        (ErrorClass::AdmissionDenied, "AdmissionDenied: "),
    ];
    for (class, prefix) in cases {
        let long = "x".repeat(5000);
        let facts =
            all_holding(Kind::PgToolBoxConsole, 2).with_error(ClassifiedError::new(class, &long));
        let update = derive(&facts, &[], t(0));
        let ready = get(&update.conditions, C::Ready);
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "ReconcileError")
        );
        assert!(ready.message.starts_with(prefix), "{}", ready.message);
        assert!(ready.message.len() <= MESSAGE_LIMIT_BYTES);
        assert_eq!(
            triple(&update.conditions, C::Progressing),
            st(True, common::RECONCILING),
            "a failed pass is not converged"
        );
    }
}

#[test]
fn an_error_class_is_reported_once_across_retries() {
    let kind = Kind::PgAdmin;
    let quota = |text: &str| ClassifiedError::new(ErrorClass::QuotaExceeded, text);
    let first = derive(&all_holding(kind, 1).with_error(quota("try 1")), &[], t(0));
    let reasons: Vec<Reason> = first.events.iter().map(|e| e.reason).collect();
    assert_eq!(reasons, vec![common::QUOTA_EXCEEDED]);

    // Retries with the same class, even with another text, report nothing new.
    let second = derive(
        &all_holding(kind, 1).with_error(quota("try 2")),
        &first.conditions,
        t(5),
    );
    assert!(second.events.is_empty(), "{:?}", second.events);
    let third = derive(
        &all_holding(kind, 1).with_error(quota("try 2")),
        &second.conditions,
        t(9),
    );
    assert!(third.events.is_empty());
    assert!(!third.changed, "the same error again is no write");

    // Another class is reported, once.
    let denied = ClassifiedError::new(ErrorClass::AdmissionDenied, "webhook said no");
    let fourth = derive(
        &all_holding(kind, 1).with_error(denied.clone()),
        &third.conditions,
        t(12),
    );
    let reasons: Vec<Reason> = fourth.events.iter().map(|e| e.reason).collect();
    assert_eq!(reasons, vec![common::ADMISSION_DENIED]);
    assert_eq!(fourth.events[0].type_, EventType::Warning);

    // Recovery: Ready turns True (Normal); a later quota error is reported again.
    let healthy = derive(&all_holding(kind, 1), &fourth.conditions, t(20));
    assert_eq!(
        healthy.events,
        vec![EventDecision::normal(
            common::AS_EXPECTED,
            "ready: every aspect holds"
        )]
    );
    let again = derive(
        &all_holding(kind, 1).with_error(quota("try 3")),
        &healthy.conditions,
        t(30),
    );
    assert_eq!(again.events.len(), 1);
}

#[test]
fn progressing_follows_convergence() {
    let cases = [
        (
            "children converging",
            all_holding(Kind::EvidenceAgent, 1).with_children_converged(false),
            st(True, common::RECONCILING),
        ),
        (
            "converged",
            all_holding(Kind::EvidenceAgent, 1),
            st(False, common::AS_EXPECTED),
        ),
        (
            "an aspect not true is not converged",
            replacing(
                Kind::EvidenceAgent,
                1,
                &[(
                    C::WorkloadReady,
                    Verdict::fails(common::ROLLOUT_IN_PROGRESS, "2 of 3 updated"),
                )],
            ),
            st(True, common::RECONCILING),
        ),
    ];
    for (name, facts, expected) in cases {
        let update = derive(&facts, &[], t(0));
        assert_eq!(
            triple(&update.conditions, C::Progressing),
            expected,
            "{name}"
        );
        assert_eq!(
            triple(&update.conditions, C::Stalled),
            st(False, common::AS_EXPECTED),
            "{name}"
        );
    }
}

#[test]
fn stalls_follow_each_kinds_table() {
    let cases: &[(Kind, ConditionType, Verdict, bool)] = &[
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(common::IMAGE_NOT_ALLOWED, "m"),
            true,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(common::RESOURCE_NOT_OWNED, "m"),
            true,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(common::SECRET_NOT_FOUND, "m").about(Subject::SignInSecret),
            true,
        ),
        (
            // A Secret of a Cluster's credentials: pgAdmin keeps serving the others.
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(common::SECRET_NOT_FOUND, "m"),
            false,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(common::SECRET_NOT_FOUND, "m").about(Subject::SettingsDatabase),
            false,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(pgadmin::DATABASE_API_UNAVAILABLE, "m"),
            true,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(pgadmin::DATABASE_ROLE_API_UNAVAILABLE, "m")
                .about(Subject::SettingsDatabase),
            true,
        ),
        (
            // DatabaseRoles only offered as servers: none is offered, nothing stalls.
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(pgadmin::DATABASE_ROLE_API_UNAVAILABLE, "m"),
            false,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(pgadmin::PASSWORD_GENERATION_UNAVAILABLE, "m"),
            true,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(common::CONFIGURATION_INVALID, "other"),
            false,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(common::CONFIGURATION_INVALID, "configDatabase")
                .about(Subject::SettingsDatabase),
            true,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(common::CLUSTER_NOT_FOUND, "m"),
            false,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(pgadmin::NO_CLUSTER_SELECTED, "m"),
            false,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(pgadmin::TOO_MANY_SERVERS, "m"),
            false,
        ),
        (
            Kind::PgAdmin,
            C::ConfigurationValid,
            Verdict::fails(pgadmin::GRANT_MISSING, "m"),
            false,
        ),
        (
            Kind::PgAdmin,
            C::WorkloadReady,
            Verdict::fails(pgadmin::UPGRADE_BACKUP_FAILED, "m"),
            true,
        ),
        (
            Kind::PgAdmin,
            C::WorkloadReady,
            Verdict::fails(common::CRASH_LOOP_BACK_OFF, "m"),
            false,
        ),
        (
            Kind::EvidenceAgent,
            C::ConfigurationValid,
            Verdict::fails(evidence_agent::REGION_REQUIRED, "m"),
            true,
        ),
        (
            Kind::EvidenceAgent,
            C::ConfigurationValid,
            Verdict::fails(common::CLUSTER_NOT_FOUND, "m"),
            true,
        ),
        (
            Kind::EvidenceAgent,
            C::WorkloadReady,
            Verdict::fails(common::SECRET_NOT_FOUND, "m"),
            false,
        ),
        (
            Kind::PgToolBoxConsole,
            C::ConfigurationValid,
            Verdict::fails(console::CONSOLE_ROLE_MISSING, "m"),
            true,
        ),
        (
            Kind::PgToolBoxConsole,
            C::ConfigurationValid,
            Verdict::fails(common::CONFIG_MAP_NOT_FOUND, "m"),
            true,
        ),
        (
            Kind::PgToolBoxConsole,
            C::ConfigurationValid,
            Verdict::fails(common::SECRET_NOT_FOUND, "m"),
            true,
        ),
        (
            Kind::PgToolBoxConsole,
            C::ExposureReady,
            Verdict::fails(common::NOT_ADMITTED, "m"),
            false,
        ),
        (
            Kind::PgAccessRequest,
            C::ConfigurationValid,
            Verdict::fails(common::CONFIGURATION_INVALID, "m"),
            false,
        ),
        (
            Kind::PgAccessRequest,
            C::ConfigurationValid,
            Verdict::fails(common::CLUSTER_NOT_FOUND, "m"),
            false,
        ),
        (
            Kind::PgAccessRequest,
            C::RoleBindingSynced,
            Verdict::fails(access_request::ROLE_BINDING_MISSING, "m"),
            false,
        ),
    ];
    for (kind, aspect, verdict, stalls) in cases {
        let facts = replacing(*kind, 1, &[(*aspect, verdict.clone())]);
        let update = derive(&facts, &[], t(0));
        let stalled = get(&update.conditions, C::Stalled);
        let progressing = get(&update.conditions, C::Progressing);
        let label = format!("{kind:?} {aspect} {}", verdict.reason);
        if *stalls {
            assert_eq!(
                (stalled.status.as_str(), stalled.reason.as_str()),
                ("True", verdict.reason.as_str()),
                "{label}"
            );
            assert_eq!(
                (progressing.status.as_str(), progressing.reason.as_str()),
                ("False", verdict.reason.as_str()),
                "{label}"
            );
            assert!(
                update.events.iter().any(|e| e.reason == verdict.reason),
                "{label}"
            );
        } else {
            assert_eq!(
                triple(&update.conditions, C::Stalled),
                st(False, common::AS_EXPECTED),
                "{label}"
            );
            assert_eq!(
                triple(&update.conditions, C::Progressing),
                st(True, common::RECONCILING),
                "{label}"
            );
        }
    }
}

#[test]
fn paused_objects_say_so() {
    for kind in Kind::ALL {
        // A paused pass evaluates nothing but may still see a stall of the kind's table: only
        // the hostname refusal shows through a pause.
        let facts = replacing(
            *kind,
            1,
            &[(
                C::ConfigurationValid,
                Verdict::fails(common::IMAGE_NOT_ALLOWED, "m"),
            )],
        )
        .with_paused(true);
        let update = derive(&facts, &[], t(0));
        assert_eq!(
            triple(&update.conditions, C::Ready),
            st(Unknown, common::RECONCILIATION_PAUSED),
            "{kind:?}"
        );
        assert_eq!(
            triple(&update.conditions, C::Progressing),
            st(False, common::RECONCILIATION_PAUSED),
            "{kind:?}"
        );
        assert_eq!(
            triple(&update.conditions, C::Stalled),
            st(False, common::AS_EXPECTED),
            "{kind:?}"
        );
    }
}

#[test]
fn advisories_never_enter_ready() {
    let cases: &[(Kind, ConditionType, Verdict)] = &[
        (
            Kind::PgAdmin,
            C::PgAdminEgressConfined,
            Verdict::fails(pgadmin::PGADMIN_EGRESS_OPEN, "rule 1 is open"),
        ),
        (
            Kind::PgToolBoxConsole,
            C::InstanceCABundleComplete,
            Verdict::fails(console::INSTANCE_CA_MISSING, "a: no secret"),
        ),
        (
            Kind::PgToolBoxConsole,
            C::ExposureConfined,
            Verdict::fails(console::EXPOSURE_OPEN, "no policy"),
        ),
        (
            Kind::PgToolBoxConsole,
            C::ExposureConfined,
            Verdict::unknown(console::EXPOSURE_OPEN, "cannot read"),
        ),
    ];
    for (kind, advisory, verdict) in cases {
        let facts = all_holding(*kind, 1)
            .with_advisory(*advisory, verdict.clone())
            .expect("advisory of kind");
        let update = derive(&facts, &[], t(0));
        assert_eq!(
            triple(&update.conditions, C::Ready),
            st(True, common::AS_EXPECTED),
            "{advisory}"
        );
        assert_eq!(
            triple(&update.conditions, *advisory),
            st(verdict.status, verdict.reason)
        );
        assert_eq!(
            triple(&update.conditions, C::Progressing),
            st(False, common::AS_EXPECTED)
        );
        assert!(
            update.events.iter().all(|e| e.reason != verdict.reason),
            "advisories raise no Warning: {:?}",
            update.events
        );

        // Kept while not reported, removed when the pass says it no longer applies.
        let kept = derive(&all_holding(*kind, 1), &update.conditions, t(5));
        assert!(find_condition(&kept.conditions, *advisory).is_some());
        let gone = all_holding(*kind, 1)
            .without_advisory(*advisory)
            .expect("advisory of kind");
        let gone = derive(&gone, &kept.conditions, t(6));
        assert!(find_condition(&gone.conditions, *advisory).is_none());
        assert!(gone.changed);
    }
}

#[test]
fn facts_refuse_conditions_of_another_kind() {
    let cases = [
        PassFacts::new(Kind::PgAccessRequest, 1)
            .with_aspect(C::WorkloadReady, Verdict::holds(common::AS_EXPECTED, "")),
        PassFacts::new(Kind::PgAdmin, 1)
            .with_aspect(C::Ready, Verdict::holds(common::AS_EXPECTED, "")),
        PassFacts::new(Kind::PgAdmin, 1)
            .with_advisory(C::ExposureConfined, Verdict::holds(common::AS_EXPECTED, "")),
        PassFacts::new(Kind::PgAdmin, 1)
            .with_aspect(C::WorkloadReady, Verdict::holds(common::AS_EXPECTED, ""))
            .and_then(|f| f.with_aspect(C::WorkloadReady, Verdict::holds(common::AS_EXPECTED, ""))),
    ];
    for case in cases {
        assert!(case.is_err());
    }
}

#[test]
fn at_most_sixteen_conditions() {
    let foreign: Vec<Condition> = (0..30)
        .map(|i| Condition {
            type_: format!("Foreign{i}"),
            status: "True".into(),
            reason: "Other".into(),
            message: String::new(),
            observed_generation: Some(1),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t(0)),
        })
        .collect();
    let facts = all_holding(Kind::PgToolBoxConsole, 1)
        .with_advisory(
            C::ExposureConfined,
            Verdict::holds(common::AS_EXPECTED, "confined"),
        )
        .and_then(|f| f.without_advisory(C::InstanceCABundleComplete))
        .expect("advisory");
    let update = derive(&facts, &foreign, t(0));
    assert_eq!(update.conditions.len(), MAX_CONDITIONS);
    assert_eq!(update.conditions[0].type_, "Ready", "ours come first");
    assert_eq!(update.conditions[6].type_, "ExposureConfined");
    assert_eq!(
        update.conditions[7].type_, "Foreign0",
        "foreign ones keep their order"
    );
}

#[test]
fn messages_are_bounded() {
    let long = "é".repeat(10_000);
    let facts = replacing(
        Kind::PgAdmin,
        1,
        &[(
            C::WorkloadReady,
            Verdict::fails(common::CRASH_LOOP_BACK_OFF, &long),
        )],
    );
    let update = derive(&facts, &[], t(0));
    for c in &update.conditions {
        assert!(
            c.message.len() <= MESSAGE_LIMIT_BYTES,
            "{}: {}",
            c.type_,
            c.message.len()
        );
    }
    for e in &update.events {
        assert!(e.note.len() <= MESSAGE_LIMIT_BYTES);
    }
    assert!(get(&update.conditions, C::Ready).message.ends_with('…'));
}

#[test]
fn an_unchanged_status_is_not_written() {
    for kind in Kind::ALL {
        for facts in settled_samples(*kind) {
            let first = derive(&facts, &[], t(0));
            let second = derive(&facts, &first.conditions, t(60));
            assert!(!second.changed, "{kind:?}");
            assert!(second.events.is_empty(), "{kind:?}: {:?}", second.events);
            assert_eq!(second.conditions, first.conditions);
        }
    }
    // A new generation alone is a write (observedGeneration moves).
    let first = derive(&all_holding(Kind::PgAdmin, 1), &[], t(0));
    let next = derive(&all_holding(Kind::PgAdmin, 2), &first.conditions, t(1));
    assert!(next.changed);
}

#[test]
fn last_transition_time_moves_only_with_the_status() {
    let kind = Kind::PgAdmin;
    let crash = |msg: &str| {
        replacing(
            kind,
            1,
            &[(
                C::WorkloadReady,
                Verdict::fails(common::CRASH_LOOP_BACK_OFF, msg),
            )],
        )
    };
    let first = derive(&crash("restart 1"), &[], t(0));
    let pull = replacing(
        kind,
        1,
        &[(
            C::WorkloadReady,
            Verdict::fails(common::IMAGE_PULL_FAILED, "no such tag"),
        )],
    );
    // Same status, other reason and message: the transition time stays.
    let second = derive(&pull, &first.conditions, t(30));
    assert!(second.changed);
    assert_eq!(
        get(&second.conditions, C::WorkloadReady)
            .last_transition_time
            .0,
        t(0)
    );
    assert_eq!(
        get(&second.conditions, C::Ready).last_transition_time.0,
        t(0)
    );
    // Status changes: now, truncated to whole seconds as metav1.Time stores it.
    let later = t(90)
        .checked_add(k8s_openapi::jiff::SignedDuration::from_millis(700))
        .expect("time");
    let third = derive(&all_holding(kind, 1), &second.conditions, later);
    assert_eq!(
        get(&third.conditions, C::WorkloadReady)
            .last_transition_time
            .0,
        t(90)
    );
    assert_eq!(
        get(&third.conditions, C::Stalled).last_transition_time.0,
        t(0)
    );
}

#[test]
fn aspects_turning_false_warn_unless_quiet() {
    let cases: &[(Kind, ConditionType, Reason, bool)] = &[
        (
            Kind::PgAdmin,
            C::WorkloadReady,
            common::ROLLOUT_IN_PROGRESS,
            false,
        ),
        (
            Kind::PgAdmin,
            C::WorkloadReady,
            common::POD_NOT_READY,
            false,
        ),
        (
            Kind::PgAdmin,
            C::WorkloadReady,
            pgadmin::UPGRADE_BACKUP_RUNNING,
            false,
        ),
        (
            Kind::PgAdmin,
            C::WorkloadReady,
            pgadmin::CONFIG_DATABASE_NOT_READY,
            false,
        ),
        (
            Kind::PgAdmin,
            C::WorkloadReady,
            common::CRASH_LOOP_BACK_OFF,
            true,
        ),
        (
            Kind::PgAdmin,
            C::ServersSynced,
            pgadmin::REGISTRATION_FAILED,
            true,
        ),
        (
            Kind::EvidenceAgent,
            C::ServingCertificateReady,
            evidence_agent::SERVICE_CA_PENDING,
            false,
        ),
        (
            Kind::EvidenceAgent,
            C::WorkloadReady,
            common::ROLLOUT_STUCK,
            true,
        ),
        (
            Kind::PgToolBoxConsole,
            C::WorkloadReady,
            common::POD_NOT_READY,
            false,
        ),
        (
            Kind::PgToolBoxConsole,
            C::ExposureReady,
            common::NOT_ADMITTED,
            true,
        ),
        (
            Kind::PgAccessRequest,
            C::RoleBindingSynced,
            access_request::ROLE_BINDING_DRIFTED,
            true,
        ),
    ];
    for (kind, aspect, reason, warns) in cases {
        let healthy = derive(&all_holding(*kind, 1), &[], t(0));
        let facts = replacing(*kind, 1, &[(*aspect, Verdict::fails(*reason, "the fact"))]);
        let update = derive(&facts, &healthy.conditions, t(10));
        let expected = if *warns {
            vec![EventDecision::warning(*reason, "the fact")]
        } else {
            vec![]
        };
        assert_eq!(update.events, expected, "{kind:?} {aspect} {reason}");
        // Still False with the same reason on the next pass: nothing new to say.
        let again = derive(&facts, &update.conditions, t(20));
        assert!(again.events.is_empty(), "{kind:?} {aspect} {reason}");
    }
}

#[test]
fn quiet_reasons_belong_to_their_kind() {
    assert!(Kind::PgAdmin.is_quiet(pgadmin::UPGRADE_BACKUP_RUNNING));
    assert!(!Kind::EvidenceAgent.is_quiet(pgadmin::UPGRADE_BACKUP_RUNNING));
    assert!(Kind::EvidenceAgent.is_quiet(evidence_agent::SERVICE_CA_PENDING));
    assert!(!Kind::PgToolBoxConsole.is_quiet(evidence_agent::SERVICE_CA_PENDING));
    assert!(!Kind::PgAccessRequest.is_quiet(access_request::ROLE_BINDING_MISSING));
}

#[test]
fn a_kind_writes_common_reasons_and_its_own_only() {
    let cases = [
        (Kind::PgAdmin, pgadmin::TOO_MANY_SERVERS, true),
        (Kind::PgAdmin, common::CLUSTER_NOT_FOUND, true),
        (Kind::PgAdmin, console::CONSOLE_ROLE_MISSING, false),
        (Kind::EvidenceAgent, evidence_agent::REGION_REQUIRED, true),
        (Kind::EvidenceAgent, access_request::ACCESS_GRANTED, false),
        (Kind::PgToolBoxConsole, console::EXPOSURE_OPEN, true),
        (Kind::PgToolBoxConsole, pgadmin::PGADMIN_EGRESS_OPEN, false),
        (Kind::PgAccessRequest, access_request::ACCESS_GRANTED, true),
        (Kind::PgAccessRequest, evidence_agent::IMAGE_REQUIRED, false),
    ];
    for (kind, reason, allowed) in cases {
        let facts =
            PassFacts::new(kind, 1).with_aspect(C::ConfigurationValid, Verdict::fails(reason, "m"));
        assert_eq!(facts.is_ok(), allowed, "{kind:?} {reason}");
    }
    let advisory = PassFacts::new(Kind::PgToolBoxConsole, 1).with_advisory(
        C::ExposureConfined,
        Verdict::fails(pgadmin::PGADMIN_EGRESS_OPEN, "m"),
    );
    assert!(advisory.is_err());
}

#[test]
fn stalls_on_unwatched_inputs_are_rechecked() {
    let cases = [
        (
            Kind::PgToolBoxConsole,
            console::CONSOLE_ROLE_MISSING,
            Some(120),
        ),
        (
            Kind::PgToolBoxConsole,
            common::CONFIG_MAP_NOT_FOUND,
            Some(120),
        ),
        (
            Kind::PgToolBoxConsole,
            console::EXPOSURE_POLICY_INVALID,
            Some(300),
        ),
        (Kind::PgToolBoxConsole, common::IMAGE_NOT_ALLOWED, None),
        (Kind::EvidenceAgent, common::CONFIG_MAP_NOT_FOUND, None),
    ];
    for (kind, reason, seconds) in cases {
        let facts = replacing(
            kind,
            1,
            &[(C::ConfigurationValid, Verdict::fails(reason, "m"))],
        );
        let update = derive(&facts, &[], t(0));
        assert_eq!(
            update.stall.as_ref().map(|s| s.reason),
            Some(reason),
            "{kind:?} {reason}"
        );
        assert_eq!(
            update.recheck_after,
            seconds.map(std::time::Duration::from_secs),
            "{kind:?} {reason}"
        );
    }
    let healthy = derive(&all_holding(Kind::PgToolBoxConsole, 1), &[], t(0));
    assert_eq!((healthy.stall, healthy.recheck_after), (None, None));
}

#[test]
fn stalled_turning_true_is_reported_once() {
    let facts = replacing(
        Kind::EvidenceAgent,
        1,
        &[(
            C::ConfigurationValid,
            Verdict::fails(evidence_agent::BARMAN_PLUGIN_NOT_CONFIGURED, "no plugin"),
        )],
    );
    let first = derive(&facts, &[], t(0));
    assert_eq!(
        first.events,
        vec![EventDecision::warning(
            evidence_agent::BARMAN_PLUGIN_NOT_CONFIGURED,
            "no plugin"
        )]
    );
    assert!(derive(&facts, &first.conditions, t(1)).events.is_empty());
}

#[test]
fn pgaccessrequest_terminal_phases_are_ready() {
    for reason in [
        access_request::AWAITING_DECISION,
        access_request::ACCESS_GRANTED,
        access_request::ACCESS_DENIED,
        access_request::ACCESS_EXPIRED,
        access_request::ACCESS_REVOKED,
        access_request::ROLE_BINDING_ORPHANED,
        access_request::SELF_APPROVAL_REFUSED,
    ] {
        let facts = replacing(
            Kind::PgAccessRequest,
            1,
            &[(C::RoleBindingSynced, Verdict::holds(reason, "m"))],
        );
        let update = derive(&facts, &[], t(0));
        assert_eq!(
            triple(&update.conditions, C::Ready),
            st(True, common::AS_EXPECTED),
            "{reason}"
        );
    }
}

#[test]
fn namespace_not_watched_turns_ready_unknown_once() {
    let healthy = derive(&all_holding(Kind::PgAdmin, 3), &[], t(0));
    let stored = StoredStatus {
        conditions: &healthy.conditions,
        observed_generation: Some(3),
    };
    let update = namespace_not_watched(3, stored, "team-a: cannot watch secrets", t(5));
    assert_eq!(
        triple(&update.conditions, C::Ready),
        st(Unknown, common::NAMESPACE_NOT_WATCHED)
    );
    assert_eq!(update.conditions.len(), healthy.conditions.len());
    assert_eq!(update.events.len(), 1);
    let stored = StoredStatus {
        conditions: &update.conditions,
        observed_generation: Some(3),
    };
    let again = namespace_not_watched(3, stored, "team-a: cannot watch secrets", t(9));
    assert!(!again.changed && again.events.is_empty());
}

#[test]
fn status_patch_carries_conditions_generation_fields_and_precondition() {
    let update = derive(&all_holding(Kind::PgAdmin, 4), &[], t(0));
    let mut fields = serde_json::Map::new();
    fields.insert("url".into(), serde_json::Value::Null);
    let patch = status_patch(&update, fields, Some("42")).expect("serialisable");
    assert_eq!(patch["metadata"]["resourceVersion"], "42");
    assert_eq!(patch["status"]["observedGeneration"], 4);
    assert!(patch["status"]["url"].is_null());
    assert_eq!(patch["status"]["conditions"][0]["type"], "Ready");
    assert_eq!(
        patch["status"]["conditions"][0]["lastTransitionTime"],
        "2027-01-15T08:00:00Z"
    );
    let without = status_patch(&update, serde_json::Map::new(), None).expect("serialisable");
    assert!(without.get("metadata").is_none());
}

fn reason_pattern_ok(value: &str) -> bool {
    // ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, 1..1024
    let bytes = value.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    let middle_ok = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':');
    value.len() <= 1024
        && first.is_ascii_alphabetic()
        && rest.iter().all(middle_ok)
        && rest
            .last()
            .is_none_or(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

fn type_pattern_ok(value: &str) -> bool {
    // ^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$, ≤ 316
    let name = value.rsplit('/').next().unwrap_or(value);
    let bytes = name.as_bytes();
    !value.contains('/')
        && value.len() <= 316
        && !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

#[test]
fn every_reason_and_type_passes_the_condition_rules() {
    for reason in ALL {
        assert!(reason_pattern_ok(reason.as_str()), "{reason}");
    }
    for type_ in ConditionType::ALL {
        assert!(type_pattern_ok(type_.as_str()), "{type_}");
    }
    for bad in ["", "1abc", "ends,", "has space", "dash-ed"] {
        assert!(!reason_pattern_ok(bad), "{bad:?} must be refused");
    }
}

mod audit;
mod hostname;
mod invariants;
mod slim;

#[test]
fn a_change_of_messages_alone_is_told_apart_from_every_other_change() {
    for kind in Kind::ALL {
        let first = kind.aspects()[0];
        let stored = derive(&all_holding(*kind, 1), &[], t(0)).conditions;
        let same = derive(&all_holding(*kind, 1), &stored, t(5));
        assert!(
            !same.changed && !same.messages_only,
            "{kind:?}: nothing changed"
        );

        let reworded = replacing(
            *kind,
            1,
            &[(first, Verdict::holds(common::AS_EXPECTED, "finer"))],
        );
        let update = derive(&reworded, &stored, t(5));
        assert!(
            update.changed && update.messages_only,
            "{kind:?}: a message alone"
        );

        let failing = replacing(
            *kind,
            1,
            &[(first, Verdict::fails(common::RECONCILING, "fine"))],
        );
        let update = derive(&failing, &stored, t(5));
        assert!(
            update.changed && !update.messages_only,
            "{kind:?}: a status and reason"
        );

        let next_generation = derive(&all_holding(*kind, 2), &stored, t(5));
        assert!(
            next_generation.changed && !next_generation.messages_only,
            "{kind:?}: a new generation"
        );

        if let Some(field) = kind.status_fields().first() {
            let with_field = replacing(
                *kind,
                1,
                &[(first, Verdict::holds(common::AS_EXPECTED, "finer"))],
            )
            .with_status_field(*field, "x", "y")
            .expect("a field of the kind");
            let update = derive(&with_field, &stored, t(5));
            assert!(
                update.changed && !update.messages_only,
                "{kind:?}: a status field"
            );
        }
    }
}
