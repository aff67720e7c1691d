//! One pass over an EvidenceAgent: read the caches (and the Cluster's and ObjectStore's
//! contents when their resourceVersion moved), decide ConfigurationValid (pure), apply the
//! children through the applier only for a valid configuration, judge the serving certificate
//! and the workload from the caches, and write the status once.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;

use super::caches::{EvidenceCaches, KIND, object_stores};
use crate::actors::{ObjectContext, Outcome, PassFailure, ReconcileError, Reconciler};
use crate::api::{
    CertificateProvider, CertificateStatus, EvidenceAgent, ObjectStoreStatus, ReportsConditions,
};
use crate::children::{
    Applier, ApplyReport, ChildOwner, ChildVerdict, Component, Desired, ReferenceIndex,
    cnpg_clusters,
};
use crate::conditions::reasons::common;
use crate::conditions::{ConditionType, PassFacts, StatusField, Verdict};
use crate::k8s::EventSink;
use crate::messages::{KindKey, ObjectKey};
use crate::reconcile::evidenceagent::{
    AgentFacts, CABUNDLE_KEY, ChildNames, ConfigOutcome, ForeignChild, RenderInput, ServiceCaFacts,
    ValidConfig, barman_object_name, ca_config_map, decide, deployment, service, service_account,
    service_ca_verdict,
};
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::{Availability, OptionalApi};
use crate::reconcile::workload::workload_verdict;
use crate::status::{Extras, StatusWriter, Written};

/// How long a pass waits for the first lists of its caches.
const CACHE_WAIT: Duration = Duration::from_secs(30);

/// An object's contents as last read, with the resourceVersion read.
type Contents = DashMap<ObjectKey, (Option<String>, Arc<Value>)>;

#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("the operator cannot read Clusters in namespace {0}")]
    ClustersUnreadable(String),
    #[error("EvidenceAgent {0} has no uid yet: its children cannot be owned")]
    NoUid(String),
    #[error("{what} {name} cannot be represented as JSON: {source}")]
    Json {
        what: &'static str,
        name: String,
        #[source]
        source: serde_json::Error,
    },
}

pub struct EvidenceAgentReconciler {
    caches: EvidenceCaches,
    status: StatusWriter<EvidenceAgent>,
    clusters: Contents,
    stores: Contents,
    cluster_resource: ApiResource,
    store_resource: ApiResource,
}

fn owner_key(key: &ObjectKey) -> KindKey {
    KindKey::new(KIND, &key.namespace, &key.name)
}

impl EvidenceAgentReconciler {
    pub fn new(caches: EvidenceCaches, events: EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
            clusters: DashMap::new(),
            stores: DashMap::new(),
            cluster_resource: cnpg_clusters(),
            store_resource: object_stores(),
        }
    }

    /// The contents of a referenced object: from the last read while its resourceVersion has
    /// not moved, else read once. `None` when it does not exist.
    async fn contents(
        &self,
        index: &ReferenceIndex,
        cache: &Contents,
        resource: &ApiResource,
        key: &ObjectKey,
        cx: &ObjectContext,
    ) -> Result<Option<Arc<Value>>, ReconcileError> {
        if index.exists(key) != Some(true) {
            cache.remove(key);
            return Ok(None);
        }
        let version = index.version(key);
        if let Some(known) = cache.get(key)
            && version.is_some()
            && known.0 == version
        {
            return Ok(Some(known.1.clone()));
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(cx.client.clone(), &key.namespace, resource);
        let Some(object) = api.get_opt(&key.name).await? else {
            cache.remove(key);
            return Ok(None);
        };
        let read_version = object.metadata.resource_version.clone();
        let value = Arc::new(serde_json::to_value(&object).map_err(|source| {
            ReconcileError::other(EvidenceError::Json {
                what: "object",
                name: key.name.clone(),
                source,
            })
        })?);
        cache.insert(key.clone(), (read_version, value.clone()));
        Ok(Some(value))
    }

    async fn pass(
        &self,
        obj: &EvidenceAgent,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.caches
            .wait_synced(CACHE_WAIT)
            .await
            .map_err(ReconcileError::other)?;
        let facts = obj.pass_facts();
        if facts.paused {
            let written = self.write(obj, facts, cx).await?;
            return Ok(Outcome::done().with_status(written));
        }
        let ns = cx.key.namespace.as_str();
        let owner = owner_key(&cx.key);
        let names = ChildNames::of(&cx.key.name);

        // Registered before anything is read, so a change meanwhile still wakes this agent.
        let cluster_key = ObjectKey::new(ns, obj.spec.cluster.name.as_str());
        self.caches
            .clusters
            .register(&owner, vec![cluster_key.clone()]);
        if self.caches.clusters.exists(&cluster_key).is_none() {
            return Err(ReconcileError::other(EvidenceError::ClustersUnreadable(
                ns.to_owned(),
            )));
        }
        let cluster = self
            .contents(
                &self.caches.clusters,
                &self.clusters,
                &self.cluster_resource,
                &cluster_key,
                cx,
            )
            .await?;
        let store_key = cluster
            .as_deref()
            .and_then(barman_object_name)
            .map(|name| ObjectKey::new(ns, name.as_str()));
        self.caches
            .object_stores
            .register(&owner, store_key.iter().cloned().collect());
        let mut api = cx
            .shared
            .optional_apis
            .availability(OptionalApi::ObjectStores, ns);
        if api == Availability::On
            && let Some(key) = &store_key
            && self.caches.object_stores.exists(key).is_none()
        {
            api = Availability::Refused {
                namespace: ns.to_owned(),
            };
        }
        let store = match (&store_key, &api) {
            (Some(key), Availability::On) => {
                self.contents(
                    &self.caches.object_stores,
                    &self.stores,
                    &self.store_resource,
                    key,
                    cx,
                )
                .await?
            }
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

        let mut secret_refs = vec![ObjectKey::new(ns, names.tls_secret.as_str())];
        let mut facts = facts;
        let mut converged = true;
        if let Some(valid) = outcome.valid.clone() {
            secret_refs.extend(
                [
                    Some(&valid.store.access_key_id),
                    Some(&valid.store.secret_access_key),
                    valid.store.region.as_ref(),
                ]
                .into_iter()
                .flatten()
                .map(|(secret, _)| ObjectKey::new(ns, secret.as_str())),
            );
            self.caches.secrets.register(&owner, secret_refs.clone());
            let report = self.apply_children(obj, &valid, provider, cx).await?;
            converged = report.converged();
            if let Some(ChildVerdict::NotOwned { kind, name }) = report.not_owned() {
                let foreign = ForeignChild {
                    kind: kind.clone(),
                    name: name.clone(),
                    detail: None,
                };
                agent.foreign_child = Some(&foreign);
                outcome = decide(&agent);
            } else if let Some(refused) = refused(&report) {
                facts = facts
                    .with_aspect(ConditionType::WorkloadReady, refused)
                    .map_err(ReconcileError::other)?;
            } else {
                facts = self.judge_children(facts, &cx.key, &names, &valid, provider)?;
            }
        } else {
            self.caches.secrets.register(&owner, secret_refs.clone());
        }

        facts = facts
            .with_aspect(ConditionType::ConfigurationValid, outcome.verdict.clone())
            .map_err(ReconcileError::other)?
            .with_children_converged(converged);
        facts = self.status_fields(obj, facts, &outcome, &names, provider)?;
        let written = self.write(obj, facts, cx).await?;
        Ok(Outcome::done().with_status(written))
    }

    async fn apply_children(
        &self,
        obj: &EvidenceAgent,
        valid: &ValidConfig,
        provider: CertificateProvider,
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
            secrets: &[],
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
    ) -> Result<PassFacts, ReconcileError> {
        let ns = key.namespace.as_str();
        let owner = owner_key(key);
        let mut facts = facts;
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
        let missing_secret = [&valid.store.access_key_id, &valid.store.secret_access_key]
            .into_iter()
            .chain(valid.store.region.as_ref())
            .map(|(secret, _)| secret)
            .find(|secret| {
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
        if provider == CertificateProvider::Openshift && outcome.valid.is_some() {
            let certificate = Some(CertificateStatus {
                secret: names.tls_secret.clone(),
                not_after: None,
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
        Ok(self
            .status
            .write(obj, &facts, Extras::default(), cx.target())
            .await?)
    }
}

fn desired<C>(object: C) -> Desired<C> {
    Desired {
        component: Component::EvidenceAgent,
        object,
    }
}

/// A child the server refused: the workload cannot be rendered as asked.
fn refused(report: &ApplyReport) -> Option<Verdict> {
    report.verdicts.iter().find_map(|v| match v {
        ChildVerdict::Refused {
            name,
            code,
            message,
            ..
        } => Some(Verdict::fails(
            common::RECONCILIATION_FAILED,
            format!("the API server refused {name} ({code}): {message}"),
        )),
        _ => None,
    })
}

impl Reconciler for EvidenceAgentReconciler {
    type Object = EvidenceAgent;

    async fn reconcile(
        &self,
        obj: Arc<EvidenceAgent>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        let obj = self.status.freshest(&cx.key, obj);
        self.pass(&obj, cx).await
    }

    async fn on_stop(&self, key: &ObjectKey, _cx: &ObjectContext) {
        let owner = owner_key(key);
        self.caches.clusters.forget(&owner);
        self.caches.object_stores.forget(&owner);
        self.caches.secrets.forget(&owner);
        self.status.forget(key);
    }

    async fn report_error(
        &self,
        obj: Arc<EvidenceAgent>,
        failure: PassFailure<'_>,
        cx: &ObjectContext,
    ) {
        self.status
            .report_error(obj, failure.classify(), cx.target())
            .await;
    }
}
