//! The combining rules of an EvidenceAgent pass: `plan` then `conclude`, as the actor chains
//! them, over the cases that decide which verdict wins.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

use super::tests::cluster;
use super::*;
use crate::api::EvidenceAgentSpec;
use crate::conditions::reasons::{common, evidence_agent as r};
use crate::conditions::{ConditionStatus, ConditionType, Kind, PassFacts, Reason};
use crate::messages::TimerPurpose;
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::Availability;

/// The tests' valid ObjectStore, with a region from a second Secret.
fn store() -> Value {
    super::tests::store_with(
        "/spec/configuration/s3Credentials/region",
        json!({"name": "orders-region", "key": "REGION"}),
    )
    .expect("store")
}

fn spec(provider: &str) -> EvidenceAgentSpec {
    serde_json::from_value(json!({
        "cluster": {"name": "orders"},
        "image": "ghcr.io/pgtoolbox/evidence-agent:0.1.0",
        "servingCertificate": {"provider": provider}
    }))
    .expect("spec")
}

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("now")
}

/// The `operator` provider's plan for a certificate issued this pass.
fn issued() -> CertificatePlan {
    let mut secret = Secret::default();
    secret.metadata.name = Some("orders-evidence-evidence-agent-tls".into());
    CertificatePlan::Apply {
        secret: Box::new(secret),
        validity: Validity::starting(now(), Duration::from_secs(90 * 86_400)),
        issued: Some(IssueReason::Absent),
    }
}

/// One pass's inputs: the agent's observations and the children as the caches hold them.
struct Case {
    provider: &'static str,
    cluster: Option<Value>,
    certificate: Option<CertificatePlan>,
    versions: BTreeMap<&'static str, &'static str>,
    existing: Vec<&'static str>,
    /// What the apply reports: `Some((kind, name))` for a name held by a foreign object.
    taken: Option<(&'static str, &'static str)>,
    converged: bool,
    /// Whether the agent's Deployment exists already.
    deployment: bool,
}

impl Case {
    fn operator() -> Self {
        Case {
            provider: "operator",
            cluster: Some(cluster()),
            certificate: Some(issued()),
            versions: BTreeMap::from([("orders-s3", "7"), ("orders-region", "3")]),
            existing: vec!["orders-s3", "orders-region"],
            taken: None,
            converged: true,
            deployment: false,
        }
    }

    fn openshift() -> Self {
        Case {
            provider: "openshift",
            certificate: None,
            ..Case::operator()
        }
    }

    fn plan(&self, names: &ChildNames, spec: &EvidenceAgentSpec, facts: AgentFacts<'_>) -> Plan {
        let version = |name: &str| self.versions.get(name).map(|v| v.to_string());
        plan(Observed {
            agent: "orders-evidence",
            spec,
            names,
            outcome: decide(&facts),
            facts,
            certificate: self.certificate.clone(),
            secret_version: &version,
            deployment_exists: self.deployment,
        })
    }

    /// The plan and the pass's facts, as the actor chains them.
    fn run(&self) -> (Plan, PassFacts) {
        let names = ChildNames::of("orders-evidence");
        let spec = spec(self.provider);
        let allow = ImageAllowList::new(&[]);
        let store = store();
        let api = Availability::On;
        let facts = AgentFacts {
            namespace: "team-a",
            cluster_name: "orders",
            cluster: self.cluster.as_ref(),
            object_store_api: &api,
            object_store: Some(&store),
            image: spec.image.as_deref(),
            default_image: None,
            allow_list: &allow,
            foreign_child: None,
        };
        let plan = self.plan(&names, &spec, facts.clone());
        let exists = |name: &str| Some(self.existing.contains(&name));
        let applied = match &plan {
            Plan::Hold { outcome } => Applied::Held(outcome.clone()),
            Plan::Apply(apply) => match self.taken {
                Some((kind, name)) => Applied::NameTaken {
                    kind: kind.into(),
                    name: name.into(),
                },
                None => Applied::Children {
                    plan: &apply.judged,
                    converged: self.converged,
                    seen: ChildrenSeen {
                        service_ca: (self.provider == "openshift").then(|| ServiceCaFacts {
                            tls_secret: &names.tls_secret,
                            secret_issued: false,
                            ca_config_map: &names.ca_config_map,
                            bundle: None,
                        }),
                        secret_exists: &exists,
                        deployment: None,
                        replica_sets: &[],
                        pods: &[],
                    },
                },
            },
        };
        let facts = conclude(Conclusion {
            facts: PassFacts::new(Kind::EvidenceAgent, 1),
            agent: &facts,
            names: &names,
            provider: spec.serving_certificate.provider,
            applied,
            stored: None,
            now: now(),
        })
        .expect("facts");
        (plan, facts)
    }
}

fn aspect(facts: &PassFacts, type_: ConditionType) -> Option<(ConditionStatus, Reason)> {
    facts
        .aspects
        .iter()
        .find(|(t, _)| *t == type_)
        .map(|(_, v)| (v.status, v.reason))
}

fn events(facts: &PassFacts) -> Vec<Reason> {
    facts.events.iter().map(|e| e.reason).collect()
}

#[test]
fn which_verdict_wins_and_what_the_pass_announces() {
    use ConditionStatus::{False, True};
    use ConditionType::{ConfigurationValid, ServingCertificateReady, WorkloadReady};
    struct Row {
        name: &'static str,
        case: Case,
        applies: bool,
        config: (ConditionStatus, Reason),
        certificate: Option<(ConditionStatus, Reason)>,
        workload: Option<Reason>,
        converged: bool,
        issued_event: bool,
        renewal_timer: bool,
    }
    let rows = vec![
        Row {
            name: "valid, certificate issued: applied, judged, announced and renewed",
            case: Case::operator(),
            applies: true,
            config: (True, common::AS_EXPECTED),
            certificate: Some((True, common::AS_EXPECTED)),
            workload: Some(common::RECONCILING),
            converged: true,
            issued_event: true,
            renewal_timer: true,
        },
        Row {
            name: "no Cluster: nothing applied, nothing judged, converged",
            case: Case {
                cluster: None,
                certificate: None,
                ..Case::operator()
            },
            applies: false,
            config: (False, common::CLUSTER_NOT_FOUND),
            certificate: None,
            workload: None,
            converged: true,
            issued_event: false,
            renewal_timer: false,
        },
        Row {
            name: "someone else's certificate: a stall on the Secret, nothing applied",
            case: Case {
                certificate: Some(CertificatePlan::Tampered),
                ..Case::operator()
            },
            applies: false,
            config: (False, common::RESOURCE_NOT_OWNED),
            certificate: None,
            workload: None,
            converged: true,
            issued_event: false,
            renewal_timer: false,
        },
        Row {
            name: "a child name held by a foreign object: not converged, the certificate unannounced",
            case: Case {
                taken: Some(("Service", "orders-evidence-evidence-agent")),
                ..Case::operator()
            },
            applies: true,
            config: (False, common::RESOURCE_NOT_OWNED),
            certificate: None,
            workload: None,
            converged: false,
            issued_event: false,
            renewal_timer: false,
        },
        Row {
            name: "a credential Secret missing: the workload says so before its Pods",
            case: Case {
                existing: vec!["orders-s3"],
                ..Case::operator()
            },
            applies: true,
            config: (True, common::AS_EXPECTED),
            certificate: Some((True, common::AS_EXPECTED)),
            workload: Some(common::SECRET_NOT_FOUND),
            converged: true,
            issued_event: true,
            renewal_timer: true,
        },
        Row {
            name: "openshift: the service CA's certificate, pending until it writes it",
            case: Case::openshift(),
            applies: true,
            config: (True, common::AS_EXPECTED),
            certificate: Some((False, r::SERVICE_CA_PENDING)),
            workload: Some(common::RECONCILING),
            converged: true,
            issued_event: false,
            renewal_timer: false,
        },
        Row {
            name: "children written this pass: not converged",
            case: Case {
                converged: false,
                ..Case::operator()
            },
            applies: true,
            config: (True, common::AS_EXPECTED),
            certificate: Some((True, common::AS_EXPECTED)),
            workload: Some(common::RECONCILING),
            converged: false,
            issued_event: true,
            renewal_timer: true,
        },
    ];
    for row in rows {
        let (plan, facts) = row.case.run();
        let name = row.name;
        assert_eq!(
            matches!(plan, Plan::Apply(_)),
            row.applies,
            "{name}: applies"
        );
        assert_eq!(
            aspect(&facts, ConfigurationValid),
            Some(row.config),
            "{name}: ConfigurationValid"
        );
        assert_eq!(
            aspect(&facts, ServingCertificateReady),
            row.certificate,
            "{name}: ServingCertificateReady"
        );
        assert_eq!(
            aspect(&facts, WorkloadReady).map(|(_, reason)| reason),
            row.workload,
            "{name}: WorkloadReady"
        );
        assert_eq!(facts.children_converged, row.converged, "{name}: converged");
        assert_eq!(
            events(&facts).contains(&r::CERTIFICATE_ISSUED),
            row.issued_event,
            "{name}: CertificateIssued"
        );
        assert_eq!(
            facts.timers.iter().any(|(p, _)| *p == TimerPurpose::Expiry),
            row.renewal_timer,
            "{name}: renewal timer"
        );
    }
}

#[test]
fn the_children_follow_the_provider_and_a_credential_change_rolls_the_workload() {
    let children = |case: &Case| match case.run().0 {
        Plan::Apply(apply) => apply.children,
        Plan::Hold { outcome } => panic!("held: {outcome:?}"),
    };
    let operator = children(&Case::operator());
    assert!(operator.certificate.is_some(), "the operator's Secret");
    assert!(operator.ca_config_map.is_none());
    let openshift = children(&Case::openshift());
    assert!(
        openshift.certificate.is_none(),
        "the service CA writes its own"
    );
    assert!(openshift.ca_config_map.is_some(), "the injected bundle");

    let template = |children: &AgentChildren| {
        let deployment = children.deployment.as_ref().expect("a Deployment");
        serde_json::to_value(&deployment.spec.template).expect("template")
    };
    let rotated = children(&Case {
        versions: BTreeMap::from([("orders-s3", "8"), ("orders-region", "3")]),
        ..Case::operator()
    });
    assert_ne!(
        template(&operator),
        template(&rotated),
        "a new credential version"
    );
    assert_eq!(template(&operator), template(&children(&Case::operator())));
}

/// With `openshift`, a Deployment not created yet waits for the service CA's Secret, whose
/// version its template carries: created before, it would be rolled out again at once. One
/// that exists is kept applied (the Secret deleted later is no reason to stop managing it).
#[test]
fn an_openshift_deployment_is_first_created_with_the_service_cas_secret() {
    let issued = Case {
        versions: BTreeMap::from([
            ("orders-s3", "7"),
            ("orders-region", "3"),
            ("orders-evidence-evidence-tls", "12"),
        ]),
        ..Case::openshift()
    };
    let existing = Case {
        deployment: true,
        ..Case::openshift()
    };
    let held = Case::openshift();
    let deployment = |case: &Case| match case.run().0 {
        Plan::Apply(apply) => (
            apply.children.deployment.is_some(),
            apply.judged.deployment_held,
        ),
        Plan::Hold { outcome } => panic!("held: {outcome:?}"),
    };
    assert_eq!(deployment(&held), (false, true), "before the Secret");
    assert_eq!(deployment(&issued), (true, false), "with the Secret");
    assert_eq!(deployment(&existing), (true, false), "already there");
    assert_eq!(
        deployment(&Case::operator()),
        (true, false),
        "operator provider"
    );

    let (_, facts) = held.run();
    let workload = facts
        .aspects
        .iter()
        .find(|(t, _)| *t == ConditionType::WorkloadReady)
        .map(|(_, v)| v.clone())
        .expect("WorkloadReady");
    assert_eq!(workload.status, ConditionStatus::Unknown);
    assert_eq!(workload.reason, common::RECONCILING);
    assert!(
        workload.message.contains(
            "once the OpenShift service CA has issued Secret orders-evidence-evidence-tls"
        ),
        "{}",
        workload.message
    );
}

#[test]
fn the_watched_secrets_are_the_certificate_and_each_credential_once() {
    let names = ChildNames::of("orders-evidence");
    let invalid = ConfigOutcome {
        verdict: crate::conditions::Verdict::fails(common::CLUSTER_NOT_FOUND, "gone"),
        object_store: None,
        valid: None,
    };
    assert_eq!(
        watched_secrets(&invalid, &names),
        vec![names.tls_secret.clone()]
    );
    assert!(!needs_certificate(
        &invalid,
        crate::api::CertificateProvider::Operator
    ));
    let Plan::Apply(apply) = Case::operator().run().0 else {
        panic!("valid");
    };
    assert_eq!(
        watched_secrets(&apply.judged.outcome, &names),
        vec![
            names.tls_secret.clone(),
            "orders-region".to_string(),
            "orders-s3".to_string()
        ]
    );
    assert!(needs_certificate(
        &apply.judged.outcome,
        crate::api::CertificateProvider::Operator
    ));
    assert!(!needs_certificate(
        &apply.judged.outcome,
        crate::api::CertificateProvider::Openshift
    ));
}
