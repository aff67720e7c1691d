//! The combining rules of one EvidenceAgent pass, pure. The actor observes (caches, the
//! Cluster's and ObjectStore's contents, the operator's CA), asks [`plan`] what to apply,
//! applies it, reads the children back from the caches and asks [`conclude`] for the facts it
//! writes. Which verdict wins, when the pass is converged and what it announces live here.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::certificate::{
    IssueReason, ServiceCaFacts, Validity, issued_note, operator_verdict, service_ca_verdict,
    tampered_detail,
};
use super::config::{AgentFacts, ConfigOutcome, ForeignChild, ValidConfig, decide};
use super::plan::CertificatePlan;
use super::render::{
    ChildNames, RenderInput, ca_config_map, deployment, network_policy, service, service_account,
};
use crate::api::EvidenceAgentStatus;
use crate::api::{CertificateProvider, CertificateStatus, EvidenceAgentSpec, ObjectStoreStatus};
use crate::conditions::reasons::{common, evidence_agent as r};
use crate::conditions::{ConditionType, FactsError, PassFacts, StatusField, Verdict};
use crate::messages::TimerPurpose;
use crate::reconcile::redact::redact_secret;
use crate::reconcile::workload::{SecretDigest, workload_verdict};

/// What the pass observed before writing anything.
pub struct Observed<'a> {
    /// `metadata.name` of the agent.
    pub agent: &'a str,
    pub spec: &'a EvidenceAgentSpec,
    pub names: &'a ChildNames,
    /// ConfigurationValid's inputs (no foreign child known yet).
    pub facts: AgentFacts<'a>,
    /// ConfigurationValid as decided from `facts` (the pass decided it to know what to read).
    pub outcome: ConfigOutcome,
    /// The `operator` provider's certificate plan, made when [`needs_certificate`] said so.
    pub certificate: Option<CertificatePlan>,
    /// The resourceVersion the Secret index holds for a Secret of the namespace.
    pub secret_version: &'a dyn Fn(&str) -> Option<String>,
    /// Whether the agent's Deployment exists (as the cache or this operator's last write has it).
    pub deployment_exists: bool,
}

/// The serving certificate of the `operator` provider a pass applies (its Secret is one of
/// the children): what the status shows of it, its renewal and its Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorCertificate {
    pub validity: Validity,
    /// Why a new certificate was issued this pass (its Event, once applied).
    pub issued: Option<IssueReason>,
}

/// The agent's children, in the order they are applied: the certificate first, so the Pods
/// find it. `certificate` is `None` with `openshift` (the service CA writes its own; one left
/// from the `operator` provider is deleted), `ca_config_map` `None` with `operator`.
/// `deployment` is `None` while it is held (see [`Judged::deployment_held`]).
#[derive(Clone, Debug)]
pub struct AgentChildren {
    pub certificate: Option<Secret>,
    pub service_account: ServiceAccount,
    pub ca_config_map: Option<ConfigMap>,
    pub service: Service,
    pub network_policy: NetworkPolicy,
    pub deployment: Option<Deployment>,
}

/// What one pass does before it judges anything.
#[derive(Clone, Debug)]
pub enum Plan {
    /// Nothing is applied: the configuration is invalid, or the certificate Secret holds a
    /// certificate someone else wrote (a stall on `ResourceNotOwned`).
    Hold { outcome: Box<ConfigOutcome> },
    /// A valid configuration: apply these children.
    Apply(Box<ApplyPlan>),
}

#[derive(Clone, Debug)]
pub struct ApplyPlan {
    pub judged: Judged,
    /// Moved out to the applier; what the conclusion needs is in `judged`.
    pub children: AgentChildren,
}

/// What the conclusion of an applied plan judges from besides the children.
#[derive(Clone, Debug)]
pub struct Judged {
    pub outcome: ConfigOutcome,
    pub valid: ValidConfig,
    pub certificate: Option<OperatorCertificate>,
    /// With `openshift`, a Deployment not created yet waits for the service CA's Secret: its
    /// Pod template carries that Secret's version, so creating it before would roll it out
    /// again at once when the Secret arrives (a second write and a second ReplicaSet).
    pub deployment_held: bool,
}

/// Whether the pass must plan the `operator` provider's certificate (reading, or creating,
/// the operator's CA): only for a valid configuration.
pub fn needs_certificate(outcome: &ConfigOutcome, provider: CertificateProvider) -> bool {
    outcome.valid.is_some() && provider == CertificateProvider::Operator
}

/// The Secrets whose versions wake the agent: its certificate Secret, and the credential
/// Secrets of a valid configuration.
pub fn watched_secrets(outcome: &ConfigOutcome, names: &ChildNames) -> Vec<String> {
    let mut secrets = vec![names.tls_secret.clone()];
    if let Some(valid) = &outcome.valid {
        secrets.extend(credential_secrets(valid));
    }
    secrets
}

/// The distinct Secrets the agent's credentials come from.
pub fn credential_secrets(valid: &ValidConfig) -> Vec<String> {
    let mut secrets: Vec<String> = [&valid.store.access_key_id, &valid.store.secret_access_key]
        .into_iter()
        .chain(valid.store.region.as_ref())
        .chain(valid.store.endpoint_ca.as_ref())
        .map(|(secret, _)| secret.clone())
        .collect();
    secrets.sort();
    secrets.dedup();
    secrets
}

/// The pass's plan from what it observed.
pub fn plan(observed: Observed<'_>) -> Plan {
    let outcome = observed.outcome;
    let Some(valid) = outcome.valid.clone() else {
        return Plan::Hold {
            outcome: Box::new(outcome),
        };
    };
    let provider = observed.spec.serving_certificate.provider;
    let (certificate, secret) = match observed.certificate {
        Some(CertificatePlan::Tampered) => {
            let foreign = ForeignChild {
                kind: "Secret".into(),
                name: observed.names.tls_secret.clone(),
                detail: Some(tampered_detail().into()),
            };
            return Plan::Hold {
                outcome: Box::new(with_foreign(&observed.facts, &foreign)),
            };
        }
        Some(CertificatePlan::Apply {
            secret,
            validity,
            issued,
        }) => (
            Some(OperatorCertificate { validity, issued }),
            Some(*secret),
        ),
        None => (None, None),
    };
    let mut digests: Vec<SecretDigest> = credential_secrets(&valid)
        .iter()
        .map(|secret| {
            SecretDigest::of_version(secret, (observed.secret_version)(secret).as_deref())
        })
        .collect();
    let tls = &observed.names.tls_secret;
    let deployment_held = provider == CertificateProvider::Openshift
        && (observed.secret_version)(tls).is_none()
        && !observed.deployment_exists;
    digests.push(match &secret {
        // The certificate as the cache keeps it (its key by digest): the same whether issued
        // this pass or kept, and new with every key.
        Some(secret) => SecretDigest::of_secret(tls, Some(&redact_secret(secret.clone()))),
        // The service CA's: its version.
        None => SecretDigest::of_version(tls, (observed.secret_version)(tls).as_deref()),
    });
    let input = RenderInput {
        agent: observed.agent,
        replicas: observed.spec.replicas,
        resources: observed.spec.resources.as_ref(),
        provider,
        config: &valid,
        secrets: &digests,
        pod_template: observed.spec.pod_template.as_ref(),
    };
    let children = AgentChildren {
        certificate: secret,
        service_account: service_account(&input),
        ca_config_map: ca_config_map(&input),
        service: service(&input),
        network_policy: network_policy(&input, &observed.spec.clients),
        deployment: (!deployment_held).then(|| deployment(&input)),
    };
    Plan::Apply(Box::new(ApplyPlan {
        judged: Judged {
            outcome,
            valid,
            certificate,
            deployment_held,
        },
        children,
    }))
}

/// ConfigurationValid once a child name is known to be held by a foreign object.
fn with_foreign(facts: &AgentFacts<'_>, foreign: &ForeignChild) -> ConfigOutcome {
    decide(&AgentFacts {
        foreign_child: Some(foreign),
        ..facts.clone()
    })
}

/// The children as the caches hold them after the apply.
pub struct ChildrenSeen<'a> {
    /// What the service CA has written so far: `Some` exactly with the `openshift` provider.
    pub service_ca: Option<ServiceCaFacts<'a>>,
    /// Whether a Secret of the namespace exists, as the Secret index says.
    pub secret_exists: &'a dyn Fn(&str) -> Option<bool>,
    pub deployment: Option<&'a Deployment>,
    pub replica_sets: &'a [ReplicaSet],
    pub pods: &'a [Pod],
}

/// What became of the plan.
pub enum Applied<'a> {
    /// The plan held: nothing was applied.
    Held(Box<ConfigOutcome>),
    /// A child name is taken by an object the agent does not control: nothing is judged.
    NameTaken { kind: String, name: String },
    /// Every child was applied (`converged`: nothing had to be written).
    Children {
        plan: &'a Judged,
        converged: bool,
        seen: ChildrenSeen<'a>,
    },
}

/// The facts of the pass, from what it applied and saw.
pub struct Conclusion<'a> {
    pub facts: PassFacts,
    pub agent: &'a AgentFacts<'a>,
    pub names: &'a ChildNames,
    pub provider: CertificateProvider,
    pub applied: Applied<'a>,
    pub stored: Option<&'a EvidenceAgentStatus>,
    pub now: Timestamp,
}

/// The pass's facts: ConfigurationValid, the children's conditions when they were applied,
/// the certificate's renewal and Event when one was applied, and the status fields.
pub fn conclude(c: Conclusion<'_>) -> Result<PassFacts, FactsError> {
    let mut facts = c.facts;
    let (outcome, converged, certificate) = match c.applied {
        Applied::Held(outcome) => (*outcome, true, None),
        Applied::NameTaken { kind, name, .. } => {
            let foreign = ForeignChild {
                kind,
                name,
                detail: None,
            };
            // A name taken is something written or refused: never converged.
            (with_foreign(c.agent, &foreign), false, None)
        }
        Applied::Children {
            plan,
            converged,
            seen,
        } => {
            facts = judge_children(facts, c.agent.namespace, c.names, plan, &seen)?;
            // Only a certificate that was applied is shown, renewed and announced.
            (plan.outcome.clone(), converged, plan.certificate.as_ref())
        }
    };
    if let Some(cert) = certificate {
        facts = certificate_facts(facts, cert, &c.names.tls_secret, c.now)?;
    }
    facts = facts
        .with_aspect(ConditionType::ConfigurationValid, outcome.verdict.clone())?
        .with_children_converged(converged);
    status_fields(
        facts,
        c.stored,
        &outcome,
        c.names,
        c.provider,
        certificate.map(|c| &c.validity),
    )
}

/// ServingCertificateReady and WorkloadReady from the children as the caches hold them.
fn judge_children(
    facts: PassFacts,
    namespace: &str,
    names: &ChildNames,
    plan: &Judged,
    seen: &ChildrenSeen<'_>,
) -> Result<PassFacts, FactsError> {
    let mut facts = facts;
    if let Some(cert) = &plan.certificate {
        facts = facts.with_aspect(
            ConditionType::ServingCertificateReady,
            operator_verdict(&names.tls_secret, &cert.validity),
        )?;
    }
    if let Some(service_ca) = &seen.service_ca {
        facts = facts.with_aspect(
            ConditionType::ServingCertificateReady,
            service_ca_verdict(service_ca),
        )?;
    }
    let missing = credential_secrets(&plan.valid)
        .into_iter()
        .find(|secret| (seen.secret_exists)(secret) == Some(false));
    let workload = match missing {
        Some(secret) => Verdict::fails(
            common::SECRET_NOT_FOUND,
            format!(
                "Secret {secret}, which ObjectStore {} references, does not exist in {namespace}",
                plan.valid.store.name
            ),
        ),
        None if plan.deployment_held => Verdict::unknown(
            common::RECONCILING,
            format!(
                "Deployment {} is created once the OpenShift service CA has issued Secret {}",
                names.workload, names.tls_secret
            ),
        ),
        None => workload_verdict(
            &names.workload,
            seen.deployment,
            seen.replica_sets,
            seen.pods,
        ),
    };
    facts.with_aspect(ConditionType::WorkloadReady, workload)
}

/// An applied certificate's renewal (a timer in the engine's schedule) and, when it is new,
/// its `CertificateIssued` Event.
fn certificate_facts(
    facts: PassFacts,
    cert: &OperatorCertificate,
    secret: &str,
    now: Timestamp,
) -> Result<PassFacts, FactsError> {
    let delay = cert.validity.renewal_delay(now);
    let mut facts = facts.with_timer(TimerPurpose::Expiry, delay)?;
    if let Some(why) = &cert.issued {
        facts = facts.with_event(
            r::CERTIFICATE_ISSUED,
            &issued_note(secret, &cert.validity, why),
        )?;
    }
    Ok(facts)
}

/// `status.objectStore`, and `status.certificate` when it is known: `notAfter` is known of the
/// operator's certificates only, and a stall keeps what is stored.
fn status_fields(
    facts: PassFacts,
    stored: Option<&EvidenceAgentStatus>,
    outcome: &ConfigOutcome,
    names: &ChildNames,
    provider: CertificateProvider,
    validity: Option<&Validity>,
) -> Result<PassFacts, FactsError> {
    let object_store = outcome
        .object_store
        .as_ref()
        .map(|(name, destination_path)| ObjectStoreStatus {
            name: name.clone(),
            destination_path: destination_path.clone(),
        });
    let stored_store = stored.and_then(|s| s.object_store.clone());
    let mut facts =
        facts.with_status_field(StatusField::ObjectStore, &object_store, &stored_store)?;
    let not_after = validity.and_then(|v| {
        k8s_openapi::jiff::Timestamp::from_second(v.not_after.as_second())
            .ok()
            .map(Time)
    });
    let shown = match provider {
        CertificateProvider::Openshift => outcome.valid.is_some(),
        CertificateProvider::Operator => not_after.is_some(),
    };
    if shown {
        let certificate = Some(CertificateStatus {
            secret: names.tls_secret.clone(),
            not_after,
        });
        let stored_certificate = stored.and_then(|s| s.certificate.clone());
        facts =
            facts.with_status_field(StatusField::Certificate, &certificate, &stored_certificate)?;
    }
    Ok(facts)
}
