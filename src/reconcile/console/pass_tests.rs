//! Which verdicts a console's status carries, from what its pass decided and applied.

use serde_json::{Value, json};

use super::*;
use crate::api::{ExposureKind, InstanceCaBundleStatus, PgToolBoxConsoleStatus};
use crate::conditions::reasons::{common, console as r};
use crate::conditions::{ConditionType, Hostname, Kind, PassFacts, Reason, Verdict};
use crate::reconcile::exposure::ExposureDecision;

fn exposure(verdict: Verdict, url: Option<&str>) -> ExposureDecision {
    ExposureDecision {
        verdict,
        url: url.map(str::to_owned),
        apply: Some(ExposureKind::Route),
        delete: Vec::new(),
        published: vec![ExposureKind::Route],
        delete_past_cache: Vec::new(),
        unseen: Vec::new(),
    }
}

struct Case {
    config: ConfigOutcome,
    hostname_refused: bool,
    policy_refused: bool,
    workload: Option<Verdict>,
    exposure: ExposureDecision,
    confinement: Option<Verdict>,
    bundle: Option<BundleOutcome>,
    bundle_foreign: bool,
}

fn valid() -> ConfigOutcome {
    ConfigOutcome {
        verdict: Verdict::holds(common::AS_EXPECTED, "valid"),
        image: Some("ghcr.io/pgtoolbox/console:0.1.0".into()),
    }
}

impl Case {
    fn ready() -> Self {
        Case {
            config: valid(),
            hostname_refused: false,
            policy_refused: false,
            workload: Some(Verdict::holds(common::AS_EXPECTED, "running")),
            exposure: exposure(
                Verdict::holds(common::AS_EXPECTED, "served"),
                Some("https://console.apps.example.com"),
            ),
            confinement: Some(Verdict::holds(common::AS_EXPECTED, "confined")),
            bundle: None,
            bundle_foreign: false,
        }
    }

    fn run(&self) -> PassFacts {
        let names = ChildNames::of("ops");
        let stored = PgToolBoxConsoleStatus {
            url: Some("https://old.apps.example.com".into()),
            published_exposure_kinds: vec![ExposureKind::Route],
            ..PgToolBoxConsoleStatus::default()
        };
        let hostname = if self.hostname_refused {
            Hostname::refused("console.example.org is not under an allowed suffix")
        } else {
            Hostname::Allowed
        };
        let facts = PassFacts::new(Kind::PgToolBoxConsole, 1)
            .with_hostname(hostname)
            .expect("hostname");
        conclude(ConsoleConclusion {
            facts,
            config: &self.config,
            hostname_refused: self.hostname_refused,
            policy_refused: self.policy_refused,
            workload: self.workload.clone(),
            exposure: &self.exposure,
            confinement: self.confinement.as_ref(),
            bundle: self.bundle.as_ref(),
            bundle_foreign: self.bundle_foreign,
            names: &names,
            stored: &stored,
            converged: true,
        })
        .expect("facts")
    }
}

fn aspect(facts: &PassFacts, type_: ConditionType) -> Option<Reason> {
    facts
        .aspects
        .iter()
        .find(|(t, _)| *t == type_)
        .map(|(_, v)| v.reason)
}

/// `Some(None)`: the advisory is removed; `None`: not stated.
fn advisory(facts: &PassFacts, type_: ConditionType) -> Option<Option<Reason>> {
    facts
        .advisories
        .iter()
        .find(|(t, _)| *t == type_)
        .map(|(_, v)| v.as_ref().map(|v| v.reason))
}

fn field(facts: &PassFacts, field: StatusField) -> Option<Value> {
    facts
        .fields
        .iter()
        .find(|f| f.field == field)
        .map(|f| f.value.clone())
}

use crate::conditions::StatusField;

#[test]
fn which_verdicts_the_status_carries() {
    use ConditionType::{ConfigurationValid, ExposureConfined, ExposureReady, WorkloadReady};
    struct Row {
        name: &'static str,
        case: Case,
        config: Reason,
        workload: Option<Reason>,
        exposure: Option<Reason>,
        confined: Option<Option<Reason>>,
        url: Option<Value>,
    }
    let refused_host = Verdict::fails(common::HOSTNAME_NOT_ALLOWED, "refused");
    let rows = vec![
        Row {
            name: "ready: every verdict, the URL and the confinement",
            case: Case::ready(),
            config: common::AS_EXPECTED,
            workload: Some(common::AS_EXPECTED),
            exposure: Some(common::AS_EXPECTED),
            confined: Some(Some(common::AS_EXPECTED)),
            url: Some(json!("https://console.apps.example.com")),
        },
        Row {
            name: "invalid configuration: no exposure verdict, the stored URL untouched",
            case: Case {
                config: ConfigOutcome {
                    verdict: Verdict::fails(r::CONSOLE_IMAGE_REQUIRED, "no image"),
                    image: None,
                },
                workload: None,
                ..Case::ready()
            },
            config: r::CONSOLE_IMAGE_REQUIRED,
            workload: None,
            exposure: None,
            confined: None,
            url: None,
        },
        Row {
            name: "refused hostname on an invalid configuration: the exposure says so anyway",
            case: Case {
                config: ConfigOutcome {
                    verdict: Verdict::fails(r::CONSOLE_IMAGE_REQUIRED, "no image"),
                    image: None,
                },
                hostname_refused: true,
                workload: None,
                exposure: exposure(refused_host.clone(), None),
                confinement: None,
                ..Case::ready()
            },
            config: r::CONSOLE_IMAGE_REQUIRED,
            workload: None,
            exposure: Some(common::HOSTNAME_NOT_ALLOWED),
            confined: Some(None),
            url: Some(Value::Null),
        },
        Row {
            name: "refused policy: nothing published, no confinement, the URL removed",
            case: Case {
                config: ConfigOutcome {
                    verdict: Verdict::fails(r::EXPOSURE_POLICY_INVALID, "refused"),
                    image: valid().image,
                },
                policy_refused: true,
                workload: None,
                ..Case::ready()
            },
            config: r::EXPOSURE_POLICY_INVALID,
            workload: None,
            // Withdrawn: ExposureReady no longer says what was served.
            exposure: Some(r::EXPOSURE_POLICY_INVALID),
            confined: Some(None),
            url: Some(Value::Null),
        },
        Row {
            name: "refused hostname wins over a refused policy: the exposure's own withdrawal",
            case: Case {
                hostname_refused: true,
                policy_refused: true,
                workload: None,
                exposure: exposure(refused_host, None),
                confinement: Some(Verdict::holds(common::AS_EXPECTED, "nothing published")),
                ..Case::ready()
            },
            config: common::AS_EXPECTED,
            workload: None,
            exposure: Some(common::HOSTNAME_NOT_ALLOWED),
            confined: Some(Some(common::AS_EXPECTED)),
            url: Some(Value::Null),
        },
    ];
    for row in rows {
        let facts = row.case.run();
        let name = row.name;
        assert_eq!(
            aspect(&facts, ConfigurationValid),
            Some(row.config),
            "{name}"
        );
        assert_eq!(
            aspect(&facts, WorkloadReady),
            row.workload,
            "{name}: workload"
        );
        assert_eq!(
            aspect(&facts, ExposureReady),
            row.exposure,
            "{name}: exposure"
        );
        assert_eq!(
            advisory(&facts, ExposureConfined),
            row.confined,
            "{name}: confined"
        );
        assert_eq!(field(&facts, StatusField::Url), row.url, "{name}: url");
    }
}

#[test]
fn the_bundle_advisory_is_judged_only_while_mirroring_a_valid_configuration() {
    let bundle = BundleOutcome {
        bundle: String::new(),
        status: InstanceCaBundleStatus {
            config_map: Some("ops-console-instance-ca".into()),
            clusters: 1,
            missing: Vec::new(),
        },
        verdict: Verdict::holds(common::AS_EXPECTED, "complete"),
    };
    let complete = ConditionType::InstanceCABundleComplete;
    let not_mirroring = Case::ready().run();
    assert_eq!(advisory(&not_mirroring, complete), Some(None));
    assert_eq!(
        field(&not_mirroring, StatusField::InstanceCaBundle),
        Some(Value::Null)
    );
    let mirrored = Case {
        bundle: Some(bundle.clone()),
        ..Case::ready()
    }
    .run();
    assert_eq!(
        advisory(&mirrored, complete),
        Some(Some(common::AS_EXPECTED))
    );
    let foreign = Case {
        bundle: Some(bundle.clone()),
        bundle_foreign: true,
        ..Case::ready()
    }
    .run();
    assert_eq!(
        advisory(&foreign, complete),
        Some(Some(common::RESOURCE_NOT_OWNED))
    );
    let invalid = Case {
        bundle: Some(bundle),
        config: ConfigOutcome {
            verdict: Verdict::fails(r::CONSOLE_IMAGE_REQUIRED, "no image"),
            image: None,
        },
        ..Case::ready()
    }
    .run();
    assert_eq!(advisory(&invalid, complete), None, "kept as it was");
}

#[test]
fn withdrawn_clears_what_was_published() {
    let stored = PgToolBoxConsoleStatus {
        url: Some("https://console.apps.example.com".into()),
        published_exposure_kinds: vec![ExposureKind::Ingress],
        ..PgToolBoxConsoleStatus::default()
    };
    let facts = withdrawn(PassFacts::new(Kind::PgToolBoxConsole, 1), &stored).expect("withdrawn");
    assert_eq!(field(&facts, StatusField::Url), Some(Value::Null));
    assert_eq!(
        field(&facts, StatusField::PublishedExposureKinds),
        Some(json!([]))
    );
    assert_eq!(
        advisory(&facts, ConditionType::ExposureConfined),
        Some(None)
    );
}
