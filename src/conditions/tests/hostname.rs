//! The hostname fact: applied by the engine to ConfigurationValid and ExposureReady, one
//! Warning per refusal across passes, and a lifted refusal never left on show.

use super::super::reasons::{common, console, evidence_agent};
use super::super::*;
use super::{C, False, True, Unknown, derive, get, replacing, st, t, triple, with};

const REFUSAL: &str = "hostname a.example.org is outside the allowed suffixes .apps.example.com";

fn refused() -> Hostname {
    Hostname::refused(REFUSAL)
}

fn exposure_kinds() -> [Kind; 2] {
    [Kind::PgAdmin, Kind::PgToolBoxConsole]
}

fn hostname_warnings(update: &StatusUpdate) -> usize {
    update
        .events
        .iter()
        .filter(|e| e.reason == common::HOSTNAME_NOT_ALLOWED)
        .count()
}

#[test]
fn a_refused_hostname_is_applied_to_both_conditions_with_one_warning() {
    for kind in exposure_kinds() {
        let facts = replacing(kind, 1, &[])
            .with_hostname(refused())
            .expect("exposure kind");
        let update = derive(&facts, &[], t(0));
        for aspect in [C::ConfigurationValid, C::ExposureReady] {
            let c = get(&update.conditions, aspect);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
                ("False", "HostnameNotAllowed", REFUSAL),
                "{kind:?} {aspect}"
            );
        }
        assert_eq!(
            triple(&update.conditions, C::Stalled),
            st(True, common::HOSTNAME_NOT_ALLOWED)
        );
        assert_eq!(
            update.events,
            vec![EventDecision::warning(
                common::HOSTNAME_NOT_ALLOWED,
                REFUSAL
            )],
            "{kind:?}"
        );
    }
}

#[test]
fn a_refused_image_is_named_with_the_refused_hostname() {
    let facts = with(
        PassFacts::new(Kind::PgToolBoxConsole, 1),
        C::ConfigurationValid,
        Verdict::fails(common::IMAGE_NOT_ALLOWED, "image evil.io/x is not allowed"),
    )
    .with_hostname(refused())
    .expect("exposure kind");
    let update = derive(&facts, &[], t(0));
    let config = get(&update.conditions, C::ConfigurationValid);
    assert_eq!(config.reason, "HostnameNotAllowed");
    assert!(config.message.contains(REFUSAL), "{}", config.message);
    assert!(
        config.message.contains("evil.io/x"),
        "both refusals named: {}",
        config.message
    );
}

#[test]
fn the_refused_kind_sentence_survives_the_hostname_refusal() {
    let sentence = "; the operator may not read Routes in team-b: a Route orders-console \
                    published before may remain; delete it by hand";
    let facts = with(
        PassFacts::new(Kind::PgToolBoxConsole, 1),
        C::ExposureReady,
        Verdict::fails(common::NOT_ADMITTED, "x".repeat(4000)).with_suffix(sentence),
    )
    .with_hostname(Hostname::refused("h".repeat(3000)))
    .expect("exposure kind");
    let update = derive(&facts, &[], t(0));
    let exposure = get(&update.conditions, C::ExposureReady);
    assert_eq!(exposure.reason, "HostnameNotAllowed");
    assert!(exposure.message.ends_with(sentence), "{}", exposure.message);
    assert!(exposure.message.len() <= MESSAGE_LIMIT_BYTES);
}

#[test]
fn a_refusal_is_one_warning_across_passes_of_every_sort() {
    for kind in exposure_kinds() {
        let first = derive(
            &replacing(kind, 1, &[])
                .with_hostname(refused())
                .expect("exposure"),
            &[],
            t(0),
        );
        assert_eq!(hostname_warnings(&first), 1, "{kind:?}");
        // Later passes state the same refusal: normal, paused, failing, at a new generation,
        // with another wording of it.
        let passes: Vec<(&str, PassFacts)> = vec![
            (
                "paused",
                PassFacts::new(kind, 1)
                    .with_paused(true)
                    .with_hostname(refused())
                    .expect("exposure"),
            ),
            (
                "error",
                PassFacts::new(kind, 1)
                    .with_error(ClassifiedError::new(
                        ErrorClass::ReconciliationFailed,
                        "boom",
                    ))
                    .with_hostname(refused())
                    .expect("exposure"),
            ),
            (
                "new generation",
                replacing(kind, 2, &[])
                    .with_hostname(refused())
                    .expect("exposure"),
            ),
            (
                "reworded",
                replacing(kind, 2, &[])
                    .with_hostname(Hostname::refused("b.example.org is refused too"))
                    .expect("exposure"),
            ),
        ];
        let mut stored = first.conditions;
        for (name, facts) in passes {
            let update = derive(&facts, &stored, t(10));
            assert_eq!(hostname_warnings(&update), 0, "{kind:?} {name}");
            assert_eq!(
                triple(&update.conditions, C::Stalled),
                st(True, common::HOSTNAME_NOT_ALLOWED),
                "{kind:?} {name}"
            );
            stored = update.conditions;
        }
    }
}

#[test]
fn an_allowed_hostname_lifts_a_stored_refusal_on_every_sort_of_pass() {
    let kind = Kind::PgToolBoxConsole;
    let before = derive(
        &replacing(kind, 1, &[])
            .with_hostname(refused())
            .expect("exposure"),
        &[],
        t(0),
    );
    let allowed = |facts: PassFacts| facts.with_hostname(Hostname::Allowed).expect("exposure");
    let cases: Vec<(&str, PassFacts, (String, String))> = vec![
        (
            "paused",
            allowed(PassFacts::new(kind, 2).with_paused(true)),
            st(False, common::AS_EXPECTED),
        ),
        (
            "error",
            allowed(
                PassFacts::new(kind, 2)
                    .with_error(ClassifiedError::new(ErrorClass::QuotaExceeded, "quota")),
            ),
            st(False, common::AS_EXPECTED),
        ),
        (
            // The image is refused now: the pass stops after ConfigurationValid.
            "another stall",
            allowed(with(
                PassFacts::new(kind, 2),
                C::ConfigurationValid,
                Verdict::fails(common::IMAGE_NOT_ALLOWED, "image refused"),
            )),
            st(True, common::IMAGE_NOT_ALLOWED),
        ),
        (
            // No hostname fact, but ConfigurationValid was evaluated: the hostname, checked
            // first, was allowed.
            "implied by ConfigurationValid",
            with(
                PassFacts::new(kind, 2),
                C::ConfigurationValid,
                Verdict::fails(console::CONSOLE_IMAGE_REQUIRED, "no image"),
            ),
            st(True, console::CONSOLE_IMAGE_REQUIRED),
        ),
    ];
    for (name, facts, stalled) in cases {
        let after = derive(&facts, &before.conditions, t(10));
        assert_eq!(
            triple(&after.conditions, C::ExposureReady),
            st(Unknown, common::RECONCILING),
            "{name}"
        );
        assert!(
            after
                .conditions
                .iter()
                .all(|c| c.reason != common::HOSTNAME_NOT_ALLOWED.as_str()),
            "{name}: the refusal lingers"
        );
        assert_eq!(triple(&after.conditions, C::Stalled), stalled, "{name}");
        assert_eq!(hostname_warnings(&after), 0, "{name}");
    }
}

#[test]
fn a_pass_that_did_not_check_the_hostname_keeps_the_refusal() {
    let kind = Kind::PgAdmin;
    let before = derive(
        &replacing(kind, 1, &[])
            .with_hostname(refused())
            .expect("exposure"),
        &[],
        t(0),
    );
    let error_only = PassFacts::new(kind, 1).with_error(ClassifiedError::new(
        ErrorClass::ReconciliationFailed,
        "boom",
    ));
    let after = derive(&error_only, &before.conditions, t(10));
    for aspect in [C::ConfigurationValid, C::ExposureReady, C::Stalled] {
        assert_eq!(
            get(&after.conditions, aspect),
            get(&before.conditions, aspect),
            "{aspect}"
        );
    }
}

#[test]
fn the_hostname_is_a_fact_only_of_kinds_that_publish() {
    for kind in [Kind::EvidenceAgent, Kind::PgAccessRequest] {
        assert_eq!(
            PassFacts::new(kind, 1).with_hostname(Hostname::Allowed),
            Err(FactsError::NoExposure { kind })
        );
    }
    let twice = PassFacts::new(Kind::PgAdmin, 1)
        .with_hostname(Hostname::Allowed)
        .and_then(|f| f.with_hostname(refused()));
    assert_eq!(twice, Err(FactsError::HostnameTwice));
    let as_verdict = PassFacts::new(Kind::PgToolBoxConsole, 1).with_aspect(
        C::ExposureReady,
        Verdict::fails(common::HOSTNAME_NOT_ALLOWED, REFUSAL),
    );
    assert_eq!(
        as_verdict,
        Err(FactsError::HostnameIsAFact {
            condition: C::ExposureReady
        })
    );
    // A kind without exposure never sees it implied either.
    let agent = with(
        PassFacts::new(Kind::EvidenceAgent, 1),
        C::ConfigurationValid,
        Verdict::fails(evidence_agent::REGION_REQUIRED, "m"),
    );
    assert!(agent.hostname().is_none());
}

#[test]
fn the_exposures_own_refusal_keeps_what_it_appended() {
    // The exposure decision words a refused hostname itself and appends the fixed sentence of
    // an exposure that may remain; stated after the hostname fact, it is kept whole.
    let sentence = "the operator may not read Routes in team-b: a Route orders-console published \
                    before may remain; delete it by hand";
    let exposure = Verdict::fails(
        common::HOSTNAME_NOT_ALLOWED,
        format!("{REFUSAL}; {sentence}"),
    );
    for kind in exposure_kinds() {
        let facts = PassFacts::new(kind, 1)
            .with_hostname(refused())
            .and_then(|f| f.with_aspect(C::ExposureReady, exposure.clone()))
            .expect("stated after the hostname");
        let update = derive(&facts, &[], t(0));
        let c = get(&update.conditions, C::ExposureReady);
        assert_eq!(c.reason, "HostnameNotAllowed", "{kind:?}");
        assert!(c.message.ends_with(sentence), "{kind:?}: {}", c.message);
        let config = get(&update.conditions, C::ConfigurationValid);
        assert_eq!(
            (config.status.as_str(), config.reason.as_str()),
            ("False", "HostnameNotAllowed")
        );
        assert_eq!(hostname_warnings(&update), 1, "{kind:?}");
        // Never for ConfigurationValid, and never without the fact.
        assert_eq!(
            PassFacts::new(kind, 1)
                .with_hostname(refused())
                .and_then(|f| f.with_aspect(C::ConfigurationValid, exposure.clone())),
            Err(FactsError::HostnameIsAFact {
                condition: C::ConfigurationValid
            })
        );
    }
}
