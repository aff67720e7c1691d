//! The operator's one cache set: every kind's passes read the same stores, so each child kind
//! and each referenced kind is watched once for the whole operator, whatever number of kinds
//! use it. `register_all` builds it once and hands a clone to each reconciler.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;

use super::contents::Contents;
use super::external::{HttpRoute, Route};
use super::host_claims::HostClaims;
use super::references::{ReferenceIndex, cnpg_clusters, secrets_resource};
use super::store::{
    ChildStore, FollowsShare, Ingest, StoredChild, Wakeups, our_owner, owner_label,
};
use super::synced::{NotSynced, Synced};
use crate::k8s::{WatchClients, WatchScope};
use crate::reconcile::access_request::keep_binding;
use crate::reconcile::children::{MANAGED_BY, MANAGED_BY_LABEL};
use crate::reconcile::observed::{
    keep_pod, keep_replica_set, pod_is_complete, replica_set_is_complete,
};
use crate::reconcile::optional_api::{Availability, OptionalApi, ProbeResult};
use crate::reconcile::redact::{redact_secret, secret_is_complete};
use crate::ring::Ownership;

pub use crate::reconcile::access_request::REQUEST_LABEL;

/// Starts the streams of one cache (what the operator builder's `cache` takes).
pub type CacheStart = Box<dyn FnOnce(&WatchClients, &WatchScope) -> Vec<Wakeups> + Send>;

#[derive(Clone)]
pub struct OperatorCaches {
    // Children this operator made (label managed-by), filed under their owner.
    pub service_accounts: Arc<ChildStore<ServiceAccount>>,
    pub services: Arc<ChildStore<Service>>,
    pub deployments: Arc<ChildStore<Deployment>>,
    /// Observed, never applied: only the fields passes read are kept (`reconcile::observed`),
    /// as for `pods`.
    pub replica_sets: Arc<ChildStore<ReplicaSet>>,
    pub pods: Arc<ChildStore<Pod>>,
    pub config_maps: Arc<ChildStore<ConfigMap>>,
    pub jobs: Arc<ChildStore<Job>>,
    /// A PgAdmin's data volume.
    pub persistent_volume_claims: Arc<ChildStore<PersistentVolumeClaim>>,
    pub role_bindings: Arc<ChildStore<RoleBinding>>,
    pub network_policies: Arc<ChildStore<NetworkPolicy>>,
    pub ingresses: Arc<ChildStore<Ingress>>,
    /// Empty where the API is not served (the prober's answer decides, not this store).
    pub routes: Arc<ChildStore<Route>>,
    pub http_routes: Arc<ChildStore<HttpRoute>>,
    /// Secrets this operator wrote (an EvidenceAgent's serving certificate): only ours are
    /// selected, never a Secret of anyone else. Certificates are kept whole; every other value
    /// (the private key) only as judged when it arrived (`reconcile::redact`).
    pub owned_secrets: Arc<ChildStore<Secret>>,
    /// The RoleBindings of PgAccessRequests, filed under the request their label names.
    pub access_bindings: Arc<ChildStore<RoleBinding>>,

    // Objects our objects name (metadata only), with who names them.
    /// CloudNativePG Clusters, with their labels (a `clusterSelector` selects on them).
    pub clusters: Arc<Contents>,
    pub poolers: Arc<Contents>,
    pub object_stores: Arc<Contents>,
    pub pgadmin_accesses: Arc<Contents>,
    /// CloudNativePG DatabaseRoles (a PgAdmin offers them as servers).
    pub database_roles: Arc<Contents>,
    /// CloudNativePG Databases (a PgAdmin's settings database).
    pub databases: Arc<Contents>,
    /// The secret router's index when one runs (it owns the watch), else one of our own.
    pub secrets: Arc<ReferenceIndex>,
    pub referenced_config_maps: Arc<ReferenceIndex>,
    /// Every NetworkPolicy of a namespace a console reads (the others add up with its own).
    pub namespace_network_policies: Arc<Contents>,
    /// The exposure hostnames every PgAdmin and console claims (every watched namespace).
    pub host_claims: Arc<HostClaims>,
    /// Whether `secrets` is watched by these caches (false: the secret router feeds it).
    watch_secrets: bool,
}

/// A member keeps the children of its share's owners only. The reference indexes (Clusters,
/// Secrets and the like) stay whole: they grow with the clusters, not with our objects, and
/// any member's object may name any of them.
impl FollowsShare for OperatorCaches {
    fn follow_share(&self, share: Arc<Ownership>) -> BoxFuture<'static, ()> {
        let follows: Vec<_> = self
            .stores()
            .iter()
            .map(|store| store.follow_share(share.clone()))
            .collect();
        Box::pin(async move {
            futures::future::join_all(follows).await;
        })
    }
}

impl Default for OperatorCaches {
    fn default() -> Self {
        Self::new()
    }
}

fn core(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", kind), plural)
}

fn pgadmin_accesses() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(crate::api::GROUP, crate::api::VERSION, "PgAdminAccess"),
        "pgadminaccesses",
    )
}

fn network_policies() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("networking.k8s.io", "v1", "NetworkPolicy"),
        "networkpolicies",
    )
}

fn managed() -> watcher::Config {
    watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"))
}

/// The list page of the watches that download whole objects anyone editing the namespace can
/// label into them (Pods and ReplicaSets, whose status the operator reads; the access-request
/// RoleBindings, whose subjects it judges). They are trimmed as they arrive, so one page is
/// what a list decodes at once: 50 objects of at most 1.5 MB instead of kube's 500 (issue 46,
/// finding 4: 500 labelled Pods of 200 KiB annotations peaked a starting operator at 330 MiB).
/// The other child stores list metadata only and need no bound.
const WHOLE_OBJECT_PAGE: u32 = 50;

fn managed_whole() -> watcher::Config {
    managed().page_size(WHOLE_OBJECT_PAGE)
}

/// Children, all in their owner's namespace: kept by share, so watched through the share's
/// client.
fn start<C: StoredChild>(store: &Arc<ChildStore<C>>, config: watcher::Config) -> CacheStart {
    let store = store.clone();
    Box::new(move |clients, scope| store.watch(&clients.share, scope, config))
}

fn start_index(index: &Arc<ReferenceIndex>) -> CacheStart {
    let index = index.clone();
    Box::new(move |clients, scope| index.watch(&clients.all, scope))
}

/// Claims are decided over every member's objects: watched through the unsharded client.
fn start_claims(claims: &Arc<HostClaims>) -> CacheStart {
    let claims = claims.clone();
    Box::new(move |clients, scope| claims.watch(&clients.all, scope))
}

impl OperatorCaches {
    /// Every reference index, by name.
    fn indexes(&self) -> [(&'static str, &Arc<ReferenceIndex>); 9] {
        [
            ("clusters", self.clusters.index()),
            ("poolers", self.poolers.index()),
            ("objectstores", self.object_stores.index()),
            ("pgadminaccesses", self.pgadmin_accesses.index()),
            ("databaseroles", self.database_roles.index()),
            ("databases", self.databases.index()),
            ("secrets", &self.secrets),
            ("configmaps", &self.referenced_config_maps),
            ("networkpolicies", self.namespace_network_policies.index()),
        ]
    }

    /// `user` stops (its object was deleted, or its actor stops): it names nothing any more,
    /// in every index, whatever its kind read.
    pub fn forget_user(&self, user: &crate::messages::KindKey) {
        for (_, index) in self.indexes() {
            index.forget(user);
        }
    }

    /// Every user registered with a reference index, with the index's name (a test checks
    /// that none outlives its object).
    pub fn registered_users(&self) -> Vec<(&'static str, crate::messages::KindKey)> {
        self.indexes()
            .into_iter()
            .flat_map(|(name, index)| index.users_registered().into_iter().map(move |u| (name, u)))
            .collect()
    }

    /// Everything these caches hold, as one JSON document keyed by cache: each child store's
    /// objects, each reference index's entries, each read object. Tests look in it for Secret
    /// values, which no cache may hold, the operator's own included.
    #[doc(hidden)]
    pub fn dump(&self) -> String {
        use serde_json::json;
        let stores = json!({
            "serviceAccounts": self.service_accounts.dump(),
            "services": self.services.dump(),
            "deployments": self.deployments.dump(),
            "replicaSets": self.replica_sets.dump(),
            "pods": self.pods.dump(),
            "configMaps": self.config_maps.dump(),
            "jobs": self.jobs.dump(),
            "persistentVolumeClaims": self.persistent_volume_claims.dump(),
            "roleBindings": self.role_bindings.dump(),
            "networkPolicies": self.network_policies.dump(),
            "ingresses": self.ingresses.dump(),
            "routes": self.routes.dump(),
            "httpRoutes": self.http_routes.dump(),
            "ownedSecrets": self.owned_secrets.dump(),
            "accessBindings": self.access_bindings.dump(),
        });
        let read: [(&str, &Arc<Contents>); 7] = [
            ("clusters", &self.clusters),
            ("poolers", &self.poolers),
            ("objectStores", &self.object_stores),
            ("pgadminAccesses", &self.pgadmin_accesses),
            ("databaseRoles", &self.database_roles),
            ("databases", &self.databases),
            ("namespaceNetworkPolicies", &self.namespace_network_policies),
        ];
        let indexes: Vec<(&str, &Arc<ReferenceIndex>)> = read
            .iter()
            .map(|(name, c)| (*name, c.index()))
            .chain([
                ("secrets", &self.secrets),
                ("referencedConfigMaps", &self.referenced_config_maps),
            ])
            .collect();
        json!({
            "stores": stores,
            "read": read.iter().map(|(name, c)| ((*name).to_string(), json!(c.dump()))).collect::<serde_json::Map<_, _>>(),
            "indexes": indexes.iter().map(|(name, i)| ((*name).to_string(), json!(i.dump()))).collect::<serde_json::Map<_, _>>(),
        })
        .to_string()
    }

    pub fn new() -> Self {
        let contents =
            |index: Arc<ReferenceIndex>, resource: ApiResource| Contents::new(index, resource);
        let clusters = cnpg_clusters();
        let poolers = OptionalApi::Poolers.resource();
        let stores = OptionalApi::ObjectStores.resource();
        let accesses = pgadmin_accesses();
        let roles = OptionalApi::DatabaseRoles.resource();
        let databases = OptionalApi::Databases.resource();
        Self {
            service_accounts: ChildStore::of_ours("ServiceAccounts", None),
            services: ChildStore::of_ours("Services", None),
            deployments: ChildStore::of_ours("Deployments", None),
            replica_sets: ChildStore::with_ingest(
                "ReplicaSets",
                our_owner(),
                Ingest {
                    keep: keep_replica_set,
                    complete: replica_set_is_complete,
                },
            ),
            pods: ChildStore::with_ingest(
                "Pods",
                our_owner(),
                Ingest {
                    keep: keep_pod,
                    complete: pod_is_complete,
                },
            ),
            config_maps: ChildStore::of_ours("ConfigMaps", None),
            jobs: ChildStore::of_ours("Jobs", None),
            persistent_volume_claims: ChildStore::of_ours("PersistentVolumeClaims", None),
            role_bindings: ChildStore::of_ours("RoleBindings", None),
            network_policies: ChildStore::of_ours("NetworkPolicies", None),
            ingresses: ChildStore::of_ours("Ingresses", None),
            routes: ChildStore::of_ours("Routes", None),
            http_routes: ChildStore::of_ours("HTTPRoutes", None),
            owned_secrets: ChildStore::of_ours(
                "Secrets",
                Some(Ingest {
                    keep: redact_secret,
                    complete: secret_is_complete,
                }),
            ),
            // Every binding labelled for a request is judged (a foreign one is deleted), so its
            // role and subjects are kept whatever its owner; nothing else of it is (issue 46).
            // Never written from a kept copy: the operator only adopts and deletes them.
            access_bindings: ChildStore::with_ingest(
                "RoleBindings of requests",
                owner_label("PgAccessRequest", REQUEST_LABEL),
                Ingest {
                    keep: keep_binding,
                    complete: |_| false,
                },
            ),
            clusters: contents(
                ReferenceIndex::with_labels("Clusters", clusters.clone()),
                clusters,
            ),
            poolers: contents(ReferenceIndex::new("Poolers", poolers.clone()), poolers),
            object_stores: contents(ReferenceIndex::new("ObjectStores", stores.clone()), stores),
            pgadmin_accesses: contents(
                ReferenceIndex::new("PgAdminAccesses", accesses.clone()),
                accesses,
            ),
            database_roles: contents(ReferenceIndex::new("DatabaseRoles", roles.clone()), roles),
            databases: contents(
                ReferenceIndex::new("Databases", databases.clone()),
                databases,
            ),
            secrets: ReferenceIndex::new("Secrets", secrets_resource()),
            watch_secrets: true,
            referenced_config_maps: ReferenceIndex::new(
                "ConfigMaps",
                core("ConfigMap", "configmaps"),
            ),
            namespace_network_policies: contents(
                ReferenceIndex::new("NetworkPolicies", network_policies()),
                network_policies(),
            ),
            host_claims: HostClaims::new(),
        }
    }

    /// The caches of an operator whose secret router runs (`routed`: its index, from
    /// `shared.secrets.routed_index()`): Secrets are then read from the router's index, so the
    /// operator keeps one Secret watch.
    pub fn sharing_secrets(self, routed: Option<&Arc<ReferenceIndex>>) -> Self {
        match routed {
            Some(index) => Self {
                secrets: index.clone(),
                watch_secrets: false,
                ..self
            },
            None => self,
        }
    }

    /// Every owned-children store, as what follows a member's share.
    fn stores(&self) -> [&dyn FollowsShare; 15] {
        [
            self.service_accounts.as_ref(),
            self.services.as_ref(),
            self.deployments.as_ref(),
            self.replica_sets.as_ref(),
            self.pods.as_ref(),
            self.config_maps.as_ref(),
            self.jobs.as_ref(),
            self.persistent_volume_claims.as_ref(),
            self.role_bindings.as_ref(),
            self.network_policies.as_ref(),
            self.ingresses.as_ref(),
            self.routes.as_ref(),
            self.http_routes.as_ref(),
            self.owned_secrets.as_ref(),
            self.access_bindings.as_ref(),
        ]
    }

    /// Every watch, each started once for the whole operator.
    /// The Route and HTTPRoute stores a pass over an object of `namespace` waits for: only
    /// where the prober has not seen the API refused there (a refused watch never lists; an
    /// unserved API lists as empty at once).
    pub fn exposure_synced(&self, apis: &ProbeResult, namespace: &str) -> Vec<&Synced> {
        let usable = |api| {
            !matches!(
                apis.availability(api, namespace),
                Availability::Refused { .. }
            )
        };
        let mut synced = Vec::new();
        if usable(OptionalApi::Routes) {
            synced.push(self.routes.synced());
        }
        if usable(OptionalApi::HttpRoutes) {
            synced.push(self.http_routes.synced());
        }
        synced
    }

    pub fn watches(&self) -> Vec<CacheStart> {
        let mut starts = vec![
            start(&self.service_accounts, managed()),
            start(&self.services, managed()),
            start(&self.deployments, managed()),
            start(&self.replica_sets, managed_whole()),
            start(&self.pods, managed_whole()),
            start(&self.config_maps, managed()),
            start(&self.jobs, managed()),
            start(&self.persistent_volume_claims, managed()),
            start(&self.role_bindings, managed()),
            start(&self.network_policies, managed()),
            start(&self.ingresses, managed()),
            start(&self.routes, managed()),
            start(&self.http_routes, managed()),
            start(&self.owned_secrets, managed()),
            // A request's binding is in the request's namespace, as every child is.
            start(
                &self.access_bindings,
                watcher::Config::default()
                    .labels(REQUEST_LABEL)
                    .page_size(WHOLE_OBJECT_PAGE),
            ),
            start_index(self.clusters.index()),
            start_index(self.poolers.index()),
            start_index(self.object_stores.index()),
            start_index(self.pgadmin_accesses.index()),
            start_index(self.database_roles.index()),
            start_index(self.databases.index()),
            start_index(&self.referenced_config_maps),
            start_index(self.namespace_network_policies.index()),
            start_claims(&self.host_claims),
        ];
        if self.watch_secrets {
            starts.push(start_index(&self.secrets));
        }
        starts
    }
}

/// How long a pass waits for the first lists of the caches it reads.
pub const CACHE_WAIT: Duration = Duration::from_secs(30);

/// Waits until each of the caches a pass reads holds its first list: before that, "not
/// listed yet" would read as "absent". A kind waits only for what it reads, so a kind whose
/// watch is refused does not hold the others back.
pub async fn wait_synced(limit: Duration, caches: &[&Synced]) -> Result<(), NotSynced> {
    for synced in caches {
        synced.wait(limit).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::reconcile::optional_api::ApiState;

    #[test]
    fn exposure_stores_are_waited_for_where_their_api_is_not_refused() {
        let caches = OperatorCaches::new();
        let apis = ProbeResult::new(BTreeMap::from([
            (
                OptionalApi::Routes,
                ApiState::On {
                    refused_in: BTreeSet::from(["team-b".to_owned()]),
                },
            ),
            (OptionalApi::HttpRoutes, ApiState::NotServed),
        ]));
        let waited = |ns| -> Vec<*const Synced> {
            caches
                .exposure_synced(&apis, ns)
                .into_iter()
                .map(std::ptr::from_ref)
                .collect()
        };
        let routes = std::ptr::from_ref(caches.routes.synced());
        let http_routes = std::ptr::from_ref(caches.http_routes.synced());
        // Served and readable; not served lists as empty at once, so waiting costs nothing.
        assert_eq!(waited("team-a"), [routes, http_routes]);
        // Refused there: that watch never lists, so nothing waits for it.
        assert_eq!(waited("team-b"), [http_routes]);
    }
}
