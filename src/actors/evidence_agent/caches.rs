//! What an EvidenceAgent pass reads instead of the API: its children from the owned-children
//! stores (ServiceAccount, Service, Deployment, CA ConfigMap by controller reference; the
//! Deployment's ReplicaSets and Pods by the instance label), and its Cluster, ObjectStore and
//! Secrets from reference indexes, whose changes wake it.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service, ServiceAccount};
use kube::Client;
use kube::api::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;

use crate::children::{
    ChildStore, NotSynced, ReferenceIndex, Track, Wakeups, cnpg_clusters, controller_owner,
    owner_label,
};
use crate::k8s::WatchScope;
use crate::reconcile::optional_api::OptionalApi;

/// The owner kind the children are filed under.
pub const KIND: &str = "EvidenceAgent";

const GROUP: &str = "pgtoolbox.fyannk.dev";
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Every child of an agent carries these labels; the watches select on them.
const SELECTOR: &str =
    "app.kubernetes.io/managed-by=pgtoolbox-operator,app.kubernetes.io/component=evidence-agent";

/// Starts the streams of one cache (what the operator builder's `cache` takes).
pub type CacheStart = Box<dyn FnOnce(&Client, &WatchScope) -> Vec<Wakeups> + Send>;

#[derive(Clone)]
pub struct EvidenceCaches {
    pub service_accounts: Arc<ChildStore<ServiceAccount>>,
    pub services: Arc<ChildStore<Service>>,
    pub deployments: Arc<ChildStore<Deployment>>,
    pub config_maps: Arc<ChildStore<ConfigMap>>,
    pub replica_sets: Arc<ChildStore<ReplicaSet>>,
    pub pods: Arc<ChildStore<Pod>>,
    pub clusters: Arc<ReferenceIndex>,
    pub object_stores: Arc<ReferenceIndex>,
    pub secrets: Arc<ReferenceIndex>,
}

impl Default for EvidenceCaches {
    fn default() -> Self {
        Self::new()
    }
}

/// The barman-cloud ObjectStore kind.
pub fn object_stores() -> ApiResource {
    let api = OptionalApi::ObjectStores;
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(api.group(), api.version(), api.kind()),
        api.plural(),
    )
}

fn secrets() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Secret"), "secrets")
}

impl EvidenceCaches {
    pub fn new() -> Self {
        Self {
            service_accounts: ChildStore::new("ServiceAccounts", controller_owner(GROUP)),
            services: ChildStore::new("Services", controller_owner(GROUP)),
            deployments: ChildStore::new("Deployments", controller_owner(GROUP)),
            config_maps: ChildStore::new("ConfigMaps", controller_owner(GROUP)),
            replica_sets: ChildStore::new("ReplicaSets", owner_label(KIND, INSTANCE_LABEL)),
            pods: ChildStore::new("Pods", owner_label(KIND, INSTANCE_LABEL)),
            clusters: ReferenceIndex::new("Clusters", cnpg_clusters(), Track::Version),
            object_stores: ReferenceIndex::new("ObjectStores", object_stores(), Track::Version),
            secrets: ReferenceIndex::new("Secrets", secrets(), Track::Existence),
        }
    }

    /// Waits until every cache holds its first list: absence must mean absence.
    pub async fn wait_synced(&self, limit: Duration) -> Result<(), NotSynced> {
        self.service_accounts.wait_synced(limit).await?;
        self.services.wait_synced(limit).await?;
        self.deployments.wait_synced(limit).await?;
        self.config_maps.wait_synced(limit).await?;
        self.replica_sets.wait_synced(limit).await?;
        self.pods.wait_synced(limit).await?;
        self.clusters.wait_synced(limit).await?;
        self.object_stores.wait_synced(limit).await?;
        self.secrets.wait_synced(limit).await
    }

    /// Every watch of the kind, each started once for the whole operator.
    pub fn watches(&self) -> Vec<CacheStart> {
        let config = || watcher::Config::default().labels(SELECTOR);
        let sa = self.service_accounts.clone();
        let svc = self.services.clone();
        let dep = self.deployments.clone();
        let cm = self.config_maps.clone();
        let rs = self.replica_sets.clone();
        let pods = self.pods.clone();
        let clusters = self.clusters.clone();
        let stores = self.object_stores.clone();
        let secrets = self.secrets.clone();
        vec![
            Box::new(move |c: &Client, s: &WatchScope| sa.watch(c, s, config())),
            Box::new(move |c: &Client, s: &WatchScope| svc.watch(c, s, config())),
            Box::new(move |c: &Client, s: &WatchScope| dep.watch(c, s, config())),
            Box::new(move |c: &Client, s: &WatchScope| cm.watch(c, s, config())),
            Box::new(move |c: &Client, s: &WatchScope| rs.watch(c, s, config())),
            Box::new(move |c: &Client, s: &WatchScope| pods.watch(c, s, config())),
            Box::new(move |c: &Client, s: &WatchScope| clusters.watch(c, s)),
            Box::new(move |c: &Client, s: &WatchScope| stores.watch(c, s)),
            Box::new(move |c: &Client, s: &WatchScope| secrets.watch(c, s)),
        ]
    }
}
