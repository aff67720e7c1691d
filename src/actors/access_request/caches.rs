//! What a PgAccessRequest pass reads instead of the API: its RoleBindings from the shared
//! owned-children store (selected and owned by the request label: a console creates them, the
//! request does not control them) and which Clusters exist from the reference index.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::Client;
use kube::runtime::watcher;

use crate::children::{
    ChildStore, NotSynced, ReferenceIndex, Track, Wakeups, cnpg_clusters, owner_label,
};
use crate::k8s::WatchScope;

/// The label that makes a RoleBinding "a RoleBinding of the request" named by its value.
pub const REQUEST_LABEL: &str = "pgtoolbox.fyannk.dev/access-request";

/// The owner kind the RoleBindings are filed under.
pub const KIND: &str = "PgAccessRequest";

#[derive(Clone)]
pub struct AccessCaches {
    pub bindings: Arc<ChildStore<RoleBinding>>,
    pub clusters: Arc<ReferenceIndex>,
}

impl Default for AccessCaches {
    fn default() -> Self {
        Self::new()
    }
}

impl AccessCaches {
    pub fn new() -> Self {
        Self {
            bindings: ChildStore::new("RoleBindings", owner_label(KIND, REQUEST_LABEL)),
            clusters: ReferenceIndex::new("Clusters", cnpg_clusters(), Track::Existence),
        }
    }

    /// Waits until both caches hold their first lists: a pass before that would mistake "not
    /// listed yet" for "absent".
    pub async fn wait_synced(&self, limit: Duration) -> Result<(), NotSynced> {
        self.bindings.wait_synced(limit).await?;
        self.clusters.wait_synced(limit).await
    }

    /// The RoleBinding watch (one per watched namespace), selected by the request label.
    pub fn binding_watch(
        &self,
    ) -> impl FnOnce(&Client, &WatchScope) -> Vec<Wakeups> + Send + 'static {
        let store = self.bindings.clone();
        move |client, scope| {
            store.watch(
                client,
                scope,
                watcher::Config::default().labels(REQUEST_LABEL),
            )
        }
    }

    /// The Cluster watch (metadata only).
    pub fn cluster_watch(
        &self,
    ) -> impl FnOnce(&Client, &WatchScope) -> Vec<Wakeups> + Send + 'static {
        let index = self.clusters.clone();
        move |client, scope| index.watch(client, scope)
    }
}
