//! One pass over an EvidenceAgent: read the caches (and the Cluster's and ObjectStore's
//! contents when their resourceVersion moved), decide ConfigurationValid (pure), plan the
//! serving certificate (`operator` provider: keep, issue or renew it with the operator's CA),
//! apply the children through the applier only for a valid configuration, judge the serving
//! certificate and the workload from the caches, and write the status once, with the
//! certificate's renewal in the engine's schedule.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::ca::CaStore;
use super::certificate::{OperatorCertificate, certificate_facts};
use crate::actors::{ObjectContext, Outcome, ReconcileError, StatusPass, user_of};
use crate::api::{
    CertificateProvider, CertificateStatus, EvidenceAgent, ObjectStoreStatus, ReportsConditions,
};
use crate::children::{
    Applier, ApplyReport, ChildOwner, ChildVerdict, Component, Desired, OperatorCaches, Track,
    wait_synced,
};
use crate::conditions::reasons::common;
use crate::conditions::{ConditionType, PassFacts, StatusField, Verdict};
use crate::k8s::EventSink;
use crate::messages::ObjectKey;
use crate::reconcile::evidenceagent::{
    AgentFacts, CABUNDLE_KEY, CertificatePlan, ChildNames, ConfigOutcome, ForeignChild,
    RenderInput, ServiceCaFacts, ValidConfig, Validity, barman_object_name, ca_config_map, decide,
    deployment, operator_verdict, service, service_account, service_ca_verdict, tampered_detail,
};
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::{Availability, OptionalApi};
use crate::reconcile::redact::redact_secret;
use crate::reconcile::workload::{SecretDigest, workload_verdict};
use crate::status::{Extras, StatusWriter, Written};

/// How long a pass waits for the first lists of its caches.
const CACHE_WAIT: Duration = Duration::from_secs(30);

/// The kind the agent's children and references are filed under.
pub const KIND: &str = "EvidenceAgent";

#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("the operator cannot read Clusters in namespace {0}")]
    ClustersUnreadable(String),
    #[error("EvidenceAgent {0} has no uid yet: its children cannot be owned")]
    NoUid(String),
    #[error("the serving certificate of EvidenceAgent {0} cannot be issued: {1}")]
    Certificate(
        String,
        #[source] crate::reconcile::evidenceagent::pki::PkiError,
    ),
}

pub struct EvidenceAgentReconciler {
    pub(super) caches: OperatorCaches,
    status: StatusWriter<EvidenceAgent>,
    /// The operator's CA (`operator` provider), read or created once.
    pub(super) ca: CaStore,
}

impl EvidenceAgentReconciler {
    pub fn new(caches: OperatorCaches, events: EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
            ca: CaStore::default(),
        }
    }

    /// Waits for the first lists of every cache a pass reads.
    async fn wait_synced(&self) -> Result<(), ReconcileError> {
        let c = &self.caches;
        wait_synced(
            CACHE_WAIT,
            &[
                c.service_accounts.synced(),
                c.services.synced(),
                c.deployments.synced(),
                c.config_maps.synced(),
                c.replica_sets.synced(),
                c.pods.synced(),
                c.owned_secrets.synced(),
                c.clusters.index().synced(),
                c.object_stores.index().synced(),
                c.secrets.synced(),
            ],
        )
        .await
        .map_err(ReconcileError::other)
    }

    async fn pass(
        &self,
        obj: &EvidenceAgent,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.wait_synced().await?;
        let facts = obj.pass_facts();
        if facts.paused {
            let written = self.write(obj, facts, cx).await?;
            return Ok(Outcome::done().with_status(written));
        }
        let ns = cx.key.namespace.as_str();
        let owner = user_of::<EvidenceAgent>(&cx.key);
        let names = ChildNames::of(&cx.key.name);

        // Registered before anything is read, so a change meanwhile still wakes this agent.
        let cluster_key = ObjectKey::new(ns, obj.spec.cluster.name.as_str());
        let clusters = &self.caches.clusters;
        clusters
            .index()
            .register(&owner, vec![cluster_key.clone()], Track::Version);
        if clusters.index().exists(&cluster_key).is_none() {
            return Err(ReconcileError::other(EvidenceError::ClustersUnreadable(
                ns.to_owned(),
            )));
        }
        let cluster = clusters.get(&cx.client, &cluster_key).await?;
        let store_key = cluster
            .as_deref()
            .and_then(barman_object_name)
            .map(|name| ObjectKey::new(ns, name.as_str()));
        let stores = &self.caches.object_stores;
        stores
            .index()
            .register(&owner, store_key.iter().cloned().collect(), Track::Version);
        let mut api = cx
            .shared
            .optional_apis
            .availability(OptionalApi::ObjectStores, ns);
        if api == Availability::On
            && let Some(key) = &store_key
            && stores.index().exists(key).is_none()
        {
            api = Availability::Refused {
                namespace: ns.to_owned(),
            };
        }
        let store = match (&store_key, &api) {
            (Some(key), Availability::On) => stores.get(&cx.client, key).await?,
            _ => None,
        };

        let allow = ImageAllowList::new(&cx.shared.settings.allowed_image_repositories);
        let mut agent = AgentFacts {
            namespace: ns,
            cluster_name: &obj.spec.cluster.name,
            cluster: cluster.as_deref(),
            object_store_api: &api,
            object_store: store.as_deref(),
            image: obj.spec.image.as_deref(),
            default_image: cx.shared.settings.default_images.evidence_agent.as_deref(),
            allow_list: &allow,
            foreign_child: None,
        };
        let mut outcome = decide(&agent);
        let provider = obj.spec.serving_certificate.provider;

        // The credential Secrets and the certificate Secret, by version: a new version of any
        // of them wakes the agent, and (its digest in the workload hash) rolls the Deployment.
        let tls_key = ObjectKey::new(ns, names.tls_secret.as_str());
        let mut secret_refs = vec![tls_key.clone()];
        let mut facts = facts;
        let mut converged = true;
        let mut certificate = None;
        if let Some(valid) = outcome.valid.clone() {
            let credentials = credential_secrets(&valid);
            secret_refs.extend(
                credentials
                    .iter()
                    .map(|secret| ObjectKey::new(ns, secret.as_str())),
            );
            self.caches
                .secrets
                .register(&owner, secret_refs, Track::Version);
            let (plan, tampered) = match provider {
                CertificateProvider::Operator => {
                    match self.plan_certificate(obj, cx, &names).await? {
                        CertificatePlan::Tampered => (None, true),
                        CertificatePlan::Apply {
                            secret,
                            validity,
                            issued,
                        } => (
                            Some(OperatorCertificate {
                                secret: *secret,
                                validity,
                                issued,
                            }),
                            false,
                        ),
                    }
                }
                CertificateProvider::Openshift => (None, false),
            };
            if tampered {
                // Someone else's certificate: nothing is written, the agent stalls.
                let foreign = ForeignChild {
                    kind: "Secret".into(),
                    name: names.tls_secret.clone(),
                    detail: Some(tampered_detail().into()),
                };
                agent.foreign_child = Some(&foreign);
                outcome = decide(&agent);
            } else {
                let mut digests: Vec<SecretDigest> = credentials
                    .iter()
                    .map(|secret| {
                        let version = self.caches.secrets.version(&ObjectKey::new(ns, secret));
                        SecretDigest::of_version(secret, version.as_deref())
                    })
                    .collect();
                digests.push(match &plan {
                    // The certificate as the cache keeps it (its key by digest): the same
                    // whether issued this pass or kept, and new with every key.
                    Some(cert) => SecretDigest::of_secret(
                        &names.tls_secret,
                        Some(&redact_secret(cert.secret.clone())),
                    ),
                    // The service CA's: its version.
                    None => SecretDigest::of_version(
                        &names.tls_secret,
                        self.caches.secrets.version(&tls_key).as_deref(),
                    ),
                });
                let report = self
                    .apply_children(
                        obj,
                        &valid,
                        provider,
                        plan.as_ref().map(|c| &c.secret),
                        &digests,
                        cx,
                    )
                    .await?;
                converged = report.converged();
                if let Some(ChildVerdict::NotOwned { kind, name }) = report.not_owned() {
                    let foreign = ForeignChild {
                        kind: kind.clone(),
                        name: name.clone(),
                        detail: None,
                    };
                    agent.foreign_child = Some(&foreign);
                    outcome = decide(&agent);
                } else if let Some(refusal) = report.refusal() {
                    // Ends the pass as an error of its class (AdmissionDenied, ...).
                    return Err(refusal.into());
                } else {
                    facts = self.judge_children(
                        facts,
                        &cx.key,
                        &names,
                        &valid,
                        provider,
                        plan.as_ref(),
                    )?;
                    // Only a certificate that was applied is shown, renewed and announced.
                    certificate = plan;
                }
            }
        } else {
            self.caches
                .secrets
                .register(&owner, secret_refs, Track::Version);
        }
        if let Some(cert) = &certificate {
            facts = certificate_facts(
                facts,
                cert,
                &names.tls_secret,
                cx.shared.settings.clock.now_jiff(),
            )?;
        }

        facts = facts
            .with_aspect(ConditionType::ConfigurationValid, outcome.verdict.clone())
            .map_err(ReconcileError::other)?
            .with_children_converged(converged);
        facts = self.status_fields(
            obj,
            facts,
            &outcome,
            &names,
            provider,
            certificate.as_ref().map(|c| &c.validity),
        )?;
        let written = self.write(obj, facts, cx).await?;
        Ok(Outcome::done().with_status(written))
    }

    async fn apply_children(
        &self,
        obj: &EvidenceAgent,
        valid: &ValidConfig,
        provider: CertificateProvider,
        certificate: Option<&Secret>,
        secrets: &[SecretDigest],
        cx: &ObjectContext,
    ) -> Result<ApplyReport, ReconcileError> {
        let owner = ChildOwner::of(obj)
            .ok_or_else(|| ReconcileError::other(EvidenceError::NoUid(cx.key.name.clone())))?;
        let input = RenderInput {
            agent: &cx.key.name,
            replicas: obj.spec.replicas,
            resources: obj.spec.resources.as_ref(),
            provider,
            config: valid,
            secrets,
        };
        let applier = Applier {
            client: &cx.client,
            writes: &cx.writes,
        };
        let mut report = ApplyReport::default();
        let mut add = |r: ApplyReport| {
            report.verdicts.extend(r.verdicts);
            report.deleted.extend(r.deleted);
        };
        // The certificate first, so the Pods find it. With `openshift` the agent owns no Secret
        // (one left from the `operator` provider is deleted); the service CA writes its own.
        add(applier
            .apply(
                &self.caches.owned_secrets,
                &owner,
                certificate.cloned().map(desired).into_iter().collect(),
            )
            .await
            .map_err(ReconcileError::other)?);
        add(applier
            .apply(
                &self.caches.service_accounts,
                &owner,
                vec![desired(service_account(&input))],
            )
            .await
            .map_err(ReconcileError::other)?);
        add(applier
            .apply(
                &self.caches.config_maps,
                &owner,
                ca_config_map(&input).map(desired).into_iter().collect(),
            )
            .await
            .map_err(ReconcileError::other)?);
        add(applier
            .apply(
                &self.caches.services,
                &owner,
                vec![desired(service(&input))],
            )
            .await
            .map_err(ReconcileError::other)?);
        add(applier
            .apply(
                &self.caches.deployments,
                &owner,
                vec![desired(deployment(&input))],
            )
            .await
            .map_err(ReconcileError::other)?);
        Ok(report)
    }

    /// ServingCertificateReady and WorkloadReady from the caches.
    fn judge_children(
        &self,
        facts: PassFacts,
        key: &ObjectKey,
        names: &ChildNames,
        valid: &ValidConfig,
        provider: CertificateProvider,
        certificate: Option<&OperatorCertificate>,
    ) -> Result<PassFacts, ReconcileError> {
        let ns = key.namespace.as_str();
        let owner = user_of::<EvidenceAgent>(key);
        let mut facts = facts;
        if let Some(cert) = certificate {
            facts = facts
                .with_aspect(
                    ConditionType::ServingCertificateReady,
                    operator_verdict(&names.tls_secret, &cert.validity),
                )
                .map_err(ReconcileError::other)?;
        }
        if provider == CertificateProvider::Openshift {
            let cm = self
                .caches
                .config_maps
                .get(&ObjectKey::new(ns, names.ca_config_map.as_str()));
            let bundle = cm
                .as_ref()
                .and_then(|cm| cm.data.as_ref())
                .and_then(|d| d.get(CABUNDLE_KEY))
                .map(String::as_str);
            let verdict = service_ca_verdict(&ServiceCaFacts {
                tls_secret: &names.tls_secret,
                secret_issued: self
                    .caches
                    .secrets
                    .exists(&ObjectKey::new(ns, names.tls_secret.as_str()))
                    == Some(true),
                ca_config_map: &names.ca_config_map,
                bundle,
            });
            facts = facts
                .with_aspect(ConditionType::ServingCertificateReady, verdict)
                .map_err(ReconcileError::other)?;
        }
        let missing_secret = credential_secrets(valid).into_iter().find(|secret| {
            self.caches
                .secrets
                .exists(&ObjectKey::new(ns, secret.as_str()))
                == Some(false)
        });
        let workload = match missing_secret {
            Some(secret) => Verdict::fails(
                common::SECRET_NOT_FOUND,
                format!(
                    "Secret {secret}, which ObjectStore {} references, does not exist in {ns}",
                    valid.store.name
                ),
            ),
            None => {
                let deployment = self
                    .caches
                    .deployments
                    .get(&ObjectKey::new(ns, names.workload.as_str()));
                let replica_sets: Vec<ReplicaSet> = self
                    .caches
                    .replica_sets
                    .children_of(&owner)
                    .iter()
                    .map(|rs| rs.as_ref().clone())
                    .collect();
                let pods: Vec<Pod> = self
                    .caches
                    .pods
                    .children_of(&owner)
                    .iter()
                    .map(|p| p.as_ref().clone())
                    .collect();
                workload_verdict(&names.workload, deployment.as_deref(), &replica_sets, &pods)
            }
        };
        facts
            .with_aspect(ConditionType::WorkloadReady, workload)
            .map_err(ReconcileError::other)
    }

    fn status_fields(
        &self,
        obj: &EvidenceAgent,
        facts: PassFacts,
        outcome: &ConfigOutcome,
        names: &ChildNames,
        provider: CertificateProvider,
        validity: Option<&Validity>,
    ) -> Result<PassFacts, ReconcileError> {
        let stored = obj.status.as_ref();
        let object_store = outcome
            .object_store
            .as_ref()
            .map(|(name, destination_path)| ObjectStoreStatus {
                name: name.clone(),
                destination_path: destination_path.clone(),
            });
        let stored_store = stored.and_then(|s| s.object_store.clone());
        let mut facts = facts
            .with_status_field(StatusField::ObjectStore, &object_store, &stored_store)
            .map_err(ReconcileError::other)?;
        // `notAfter` is known of the operator's certificates only; a stall keeps what is stored.
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
            facts = facts
                .with_status_field(StatusField::Certificate, &certificate, &stored_certificate)
                .map_err(ReconcileError::other)?;
        }
        Ok(facts)
    }

    /// The one status write of the pass, then its Events.
    async fn write(
        &self,
        obj: &EvidenceAgent,
        facts: PassFacts,
        cx: &ObjectContext,
    ) -> Result<Written, ReconcileError> {
        // A failed write keeps the timers the facts decided (a certificate's renewal).
        self.status
            .write(obj, &facts, Extras::default(), cx.target())
            .await
            .map_err(|e| ReconcileError::from(e).keeping_timers(&facts.timers))
    }
}

/// The distinct Secrets the agent's credentials come from.
fn credential_secrets(valid: &ValidConfig) -> Vec<String> {
    let mut secrets: Vec<String> = [&valid.store.access_key_id, &valid.store.secret_access_key]
        .into_iter()
        .chain(valid.store.region.as_ref())
        .map(|(secret, _)| secret.clone())
        .collect();
    secrets.sort();
    secrets.dedup();
    secrets
}

fn desired<C>(object: C) -> Desired<C> {
    Desired {
        component: Component::EvidenceAgent,
        object,
    }
}

impl StatusPass for EvidenceAgentReconciler {
    type Object = EvidenceAgent;

    fn status(&self) -> &StatusWriter<EvidenceAgent> {
        &self.status
    }

    fn caches(&self) -> &OperatorCaches {
        &self.caches
    }

    /// Besides the conditions, the `notAfter` of the serving certificate the operator issued
    /// (the status holds one only for the `operator` provider).
    fn reported(obj: &EvidenceAgent) -> crate::runtime::Reported {
        let not_after = obj
            .status
            .as_ref()
            .and_then(|s| s.certificate.as_ref())
            .and_then(|c| c.not_after.as_ref())
            .map(|t| t.0.as_second());
        crate::runtime::Reported {
            certificate_not_after: not_after,
            ..obj.reported()
        }
    }

    async fn run(
        &self,
        obj: &EvidenceAgent,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.pass(obj, cx).await
    }
}
