//! What a PgAccessRequest pass reads without asking the API server: the RoleBindings labelled
//! for each request, and which Clusters exist. Both are fed by one watch each (RoleBindings
//! filtered on the request label, Clusters metadata-only), so a pass costs no request and a
//! thousand timers firing cost a thousand status writes and nothing else.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;

use crate::messages::ObjectKey;
use crate::supervisor::{ChildWatch, OwnerSource, WatchScope, watch_events};

/// The label that makes a RoleBinding "a RoleBinding of the request" named by its value.
pub const REQUEST_LABEL: &str = "pgtoolbox.fyannk.dev/access-request";

/// The CloudNativePG Cluster kind, read metadata-only.
fn cluster_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("postgresql.cnpg.io", "v1", "Cluster"),
        "clusters",
    )
}

/// Whether the Cluster API could be read at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterApi {
    Readable,
    /// Not served or refused: `spec.cluster` cannot be checked.
    Unreadable,
}

/// The RoleBinding or Cluster watch has not completed its first list.
#[derive(Debug, thiserror::Error)]
#[error(
    "RoleBindings or Clusters not listed after {0:?}: the operator may lack list/watch permission"
)]
pub struct CacheNotReady(Duration);

#[derive(Default)]
pub struct AccessCaches {
    /// Request key → its RoleBindings, by RoleBinding name.
    bindings: DashMap<ObjectKey, HashMap<String, Arc<RoleBinding>>>,
    /// RoleBinding key → the request it was filed under (to move it when its label changes).
    binding_owner: DashMap<ObjectKey, ObjectKey>,
    /// RoleBindings this operator deleted whose deletion the watch has not reported yet.
    deleted: DashMap<ObjectKey, ()>,
    /// Existing Clusters, by namespace and name.
    clusters: DashMap<ObjectKey, ()>,
    /// Cluster key → requests that name it, registered by their passes.
    cluster_users: DashMap<ObjectKey, HashSet<String>>,
    /// Request key → the Cluster it named at its last pass.
    cluster_of: DashMap<ObjectKey, String>,
    cluster_api: std::sync::Mutex<Option<ClusterApi>>,
    ready: Readiness,
}

struct Readiness {
    bindings: watch::Sender<bool>,
    clusters: watch::Sender<bool>,
}

impl Default for Readiness {
    fn default() -> Self {
        Self {
            bindings: watch::Sender::new(false),
            clusters: watch::Sender::new(false),
        }
    }
}

impl AccessCaches {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Waits until both watches delivered their first complete list: a pass before that
    /// would mistake "not listed yet" for "absent". Gives up after `limit`, so a watch that
    /// cannot list (e.g. RoleBindings refused) fails the pass visibly instead of hanging it.
    pub async fn wait_ready(&self, limit: Duration) -> Result<(), CacheNotReady> {
        // Every pass asks; once both lists are in, answer without subscribing or a timer.
        if *self.ready.bindings.borrow() && *self.ready.clusters.borrow() {
            return Ok(());
        }
        let mut bindings = self.ready.bindings.subscribe();
        let mut clusters = self.ready.clusters.subscribe();
        let both = async {
            // The senders live as long as `self`, so these only end when the flag turns true.
            let _ = bindings.wait_for(|ready| *ready).await;
            let _ = clusters.wait_for(|ready| *ready).await;
        };
        tokio::time::timeout(limit, both)
            .await
            .map_err(|_| CacheNotReady(limit))
    }

    pub fn bindings_of(&self, request: &ObjectKey) -> Vec<Arc<RoleBinding>> {
        self.bindings
            .get(request)
            .map(|entry| {
                entry
                    .iter()
                    .filter(|(name, _)| {
                        self.deleted.is_empty()
                            || !self
                                .deleted
                                .contains_key(&ObjectKey::new(&request.namespace, name.as_str()))
                    })
                    .map(|(_, rb)| rb.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Hides a RoleBinding the operator just deleted, so a pass that runs before the watch
    /// reports the deletion does not delete it a second time. The watch's Delete event still
    /// removes it and wakes its request (whose children have then converged).
    pub fn binding_deleted(&self, namespace: &str, name: &str) {
        self.deleted.insert(ObjectKey::new(namespace, name), ());
    }

    /// Whether the Cluster exists, or `None` when the Cluster API cannot be read.
    pub fn cluster_exists(&self, namespace: &str, name: &str) -> Option<bool> {
        let readable = matches!(
            *self
                .cluster_api
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            Some(ClusterApi::Readable)
        );
        readable.then(|| self.clusters.contains_key(&ObjectKey::new(namespace, name)))
    }

    /// Records which Cluster a request names, so a change of that Cluster wakes it.
    pub fn track_cluster_use(&self, request: &ObjectKey, cluster: Option<&str>) {
        // Every pass registers; most find it unchanged and leave the maps alone.
        let unchanged = match (self.cluster_of.get(request), cluster) {
            (Some(known), Some(cluster)) => known.as_str() == cluster,
            (None, None) => true,
            _ => false,
        };
        if unchanged {
            return;
        }
        self.forget_cluster_use(request);
        if let Some(cluster) = cluster {
            self.cluster_of.insert(request.clone(), cluster.to_string());
            self.cluster_users
                .entry(ObjectKey::new(&request.namespace, cluster))
                .or_default()
                .insert(request.name.clone());
        }
    }

    pub fn forget_cluster_use(&self, request: &ObjectKey) {
        if let Some((_, cluster)) = self.cluster_of.remove(request) {
            let cluster = ObjectKey::new(&request.namespace, cluster);
            if let Some(mut users) = self.cluster_users.get_mut(&cluster) {
                users.remove(&request.name);
            }
            self.cluster_users
                .remove_if(&cluster, |_, users| users.is_empty());
        }
    }

    /// The RoleBinding watch, feeding this cache and waking the requests whose bindings changed.
    pub fn binding_watch(self: &Arc<Self>) -> ChildWatch {
        let cache = self.clone();
        ChildWatch::custom(move |client: &Client, scope: &WatchScope| {
            let config = watcher::Config::default().labels(REQUEST_LABEL);
            let namespaces = scope.namespaces();
            scope
                .apis::<RoleBinding>(client)
                .into_iter()
                .zip(namespaces)
                .map(|(api, namespace)| {
                    let cache = cache.clone();
                    let mut relist: Option<Vec<RoleBinding>> = None;
                    watch_events(api, config.clone())
                        .flat_map(move |event| {
                            let owners =
                                cache.apply_binding_event(event, namespace.as_deref(), &mut relist);
                            futures::stream::iter(owners)
                        })
                        .boxed()
                })
                .collect()
        })
    }

    /// The Cluster watch (metadata only), feeding this cache and waking the requests naming it.
    pub fn cluster_watch(self: &Arc<Self>) -> ChildWatch {
        let cache = self.clone();
        ChildWatch::custom(move |client: &Client, scope: &WatchScope| {
            let namespaces = scope.namespaces();
            let watches = namespaces.len();
            let listed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            namespaces
                .into_iter()
                .map(|namespace| {
                    // Metadata only: nothing of a Cluster but its name is kept.
                    let api: Api<PartialObjectMeta<DynamicObject>> = match &namespace {
                        Some(ns) => Api::namespaced_with(client.clone(), ns, &cluster_resource()),
                        None => Api::all_with(client.clone(), &cluster_resource()),
                    };
                    cache.clone().cluster_stream(api, watches, listed.clone())
                })
                .collect()
        })
    }

    fn cluster_stream(
        self: Arc<Self>,
        api: Api<PartialObjectMeta<DynamicObject>>,
        watches: usize,
        listed: Arc<std::sync::atomic::AtomicUsize>,
    ) -> OwnerSource {
        let mut relist: Option<Vec<ObjectKey>> = None;
        let mut counted = false;
        let stream: BoxStream<'static, _> = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        stream
            .flat_map(move |result| {
                let owners = match result {
                    Ok(event) => {
                        let (owners, done) = self.apply_cluster_event(event, &mut relist);
                        if done && !counted {
                            counted = true;
                            self.cluster_listed(ClusterApi::Readable, watches, &listed);
                        }
                        owners
                    }
                    Err(err) => {
                        // Not served or refused: the pass reports the Cluster as unverifiable
                        // rather than waiting forever; the watch keeps retrying.
                        if !counted {
                            counted = true;
                            tracing::warn!(error = %err, "CloudNativePG Clusters cannot be watched");
                            self.cluster_listed(ClusterApi::Unreadable, watches, &listed);
                        }
                        Vec::new()
                    }
                };
                futures::stream::iter(owners)
            })
            .boxed()
    }

    fn cluster_listed(
        &self,
        api: ClusterApi,
        watches: usize,
        listed: &std::sync::atomic::AtomicUsize,
    ) {
        {
            let mut state = self
                .cluster_api
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // One unreadable namespace makes the answer unverifiable there; keep it simple and
            // honest: any refusal marks the API unreadable.
            *state = match (*state, api) {
                (Some(ClusterApi::Unreadable), _) | (_, ClusterApi::Unreadable) => {
                    Some(ClusterApi::Unreadable)
                }
                _ => Some(ClusterApi::Readable),
            };
        }
        if listed.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 >= watches {
            self.ready.clusters.send_replace(true);
        }
    }

    /// Applies one RoleBinding event; returns the requests to wake.
    fn apply_binding_event(
        &self,
        event: watcher::Event<RoleBinding>,
        namespace: Option<&str>,
        relist: &mut Option<Vec<RoleBinding>>,
    ) -> Vec<ObjectKey> {
        match event {
            watcher::Event::Init => {
                *relist = Some(Vec::new());
                Vec::new()
            }
            watcher::Event::InitApply(rb) => {
                relist.get_or_insert_with(Vec::new).push(rb);
                Vec::new()
            }
            watcher::Event::InitDone => {
                let listed = relist.take().unwrap_or_default();
                let owners = self.replace_bindings(namespace, listed);
                self.ready.bindings.send_replace(true);
                owners
            }
            watcher::Event::Apply(rb) => self.upsert_binding(rb),
            watcher::Event::Delete(rb) => self.remove_binding(&rb),
        }
    }

    fn binding_key(rb: &RoleBinding) -> Option<ObjectKey> {
        Some(ObjectKey::new(rb.namespace()?, rb.metadata.name.clone()?))
    }

    fn upsert_binding(&self, rb: RoleBinding) -> Vec<ObjectKey> {
        let mut woken = self.remove_binding(&rb);
        let (Some(key), Some(request)) = (Self::binding_key(&rb), rb.labels().get(REQUEST_LABEL))
        else {
            return woken;
        };
        let owner = ObjectKey::new(&key.namespace, request.clone());
        self.deleted.remove(&key);
        self.binding_owner.insert(key.clone(), owner.clone());
        self.bindings
            .entry(owner.clone())
            .or_default()
            .insert(key.name, Arc::new(rb));
        if !woken.contains(&owner) {
            woken.push(owner);
        }
        woken
    }

    fn remove_binding(&self, rb: &RoleBinding) -> Vec<ObjectKey> {
        match Self::binding_key(rb) {
            Some(key) => self.remove_key(&key),
            None => Vec::new(),
        }
    }

    fn remove_key(&self, key: &ObjectKey) -> Vec<ObjectKey> {
        self.deleted.remove(key);
        let Some((_, owner)) = self.binding_owner.remove(key) else {
            return Vec::new();
        };
        let now_empty = self.bindings.get_mut(&owner).is_some_and(|mut entry| {
            entry.remove(&key.name);
            entry.is_empty()
        });
        if now_empty {
            self.bindings.remove_if(&owner, |_, entry| entry.is_empty());
        }
        vec![owner]
    }

    /// A relist replaces what one watch (one namespace, or all) knew: bindings deleted while
    /// disconnected go too.
    fn replace_bindings(
        &self,
        namespace: Option<&str>,
        listed: Vec<RoleBinding>,
    ) -> Vec<ObjectKey> {
        let listed_keys: HashSet<ObjectKey> = listed.iter().filter_map(Self::binding_key).collect();
        let stale: Vec<ObjectKey> = self
            .binding_owner
            .iter()
            .filter(|entry| !listed_keys.contains(entry.key()))
            // Another namespace's watch owns those, unless this watch covers every namespace.
            .filter(|entry| namespace.is_none_or(|ns| entry.key().namespace == ns))
            .map(|entry| entry.key().clone())
            .collect();
        let mut woken: HashSet<ObjectKey> = HashSet::new();
        for key in stale {
            self.deleted.remove(&key);
            if let Some((_, owner)) = self.binding_owner.remove(&key) {
                if let Some(mut entry) = self.bindings.get_mut(&owner) {
                    entry.remove(&key.name);
                }
                woken.insert(owner);
            }
        }
        self.bindings.retain(|_, entry| !entry.is_empty());
        for rb in listed {
            woken.extend(self.upsert_binding(rb));
        }
        woken.into_iter().collect()
    }

    /// Applies one Cluster event; returns the requests to wake and whether a list completed.
    fn apply_cluster_event(
        &self,
        event: watcher::Event<PartialObjectMeta<DynamicObject>>,
        relist: &mut Option<Vec<ObjectKey>>,
    ) -> (Vec<ObjectKey>, bool) {
        let key_of = |meta: &PartialObjectMeta<DynamicObject>| {
            Some(ObjectKey::new(
                meta.namespace()?,
                meta.metadata.name.clone()?,
            ))
        };
        match event {
            watcher::Event::Init => {
                *relist = Some(Vec::new());
                (Vec::new(), false)
            }
            watcher::Event::InitApply(meta) => {
                if let Some(key) = key_of(&meta) {
                    relist.get_or_insert_with(Vec::new).push(key);
                }
                (Vec::new(), false)
            }
            watcher::Event::InitDone => {
                let listed: HashSet<ObjectKey> =
                    relist.take().unwrap_or_default().into_iter().collect();
                let mut changed: Vec<ObjectKey> = Vec::new();
                self.clusters.retain(|key, _| {
                    let keep = listed.contains(key);
                    if !keep {
                        changed.push(key.clone());
                    }
                    keep
                });
                for key in listed {
                    if self.clusters.insert(key.clone(), ()).is_none() {
                        changed.push(key);
                    }
                }
                (
                    changed.iter().flat_map(|c| self.users_of(c)).collect(),
                    true,
                )
            }
            watcher::Event::Apply(meta) => match key_of(&meta) {
                Some(key) => {
                    let fresh = self.clusters.insert(key.clone(), ()).is_none();
                    (
                        if fresh {
                            self.users_of(&key)
                        } else {
                            Vec::new()
                        },
                        false,
                    )
                }
                None => (Vec::new(), false),
            },
            watcher::Event::Delete(meta) => match key_of(&meta) {
                Some(key) => {
                    self.clusters.remove(&key);
                    (self.users_of(&key), false)
                }
                None => (Vec::new(), false),
            },
        }
    }

    #[cfg(test)]
    fn apply_binding_event_for_test(
        &self,
        event: watcher::Event<RoleBinding>,
        relist: &mut Option<Vec<RoleBinding>>,
    ) -> Vec<ObjectKey> {
        self.apply_binding_event(event, Some("ns"), relist)
    }

    fn users_of(&self, cluster: &ObjectKey) -> Vec<ObjectKey> {
        self.cluster_users
            .get(cluster)
            .map(|users| {
                users
                    .iter()
                    .map(|name| ObjectKey::new(&cluster.namespace, name.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::core::PartialObjectMetaExt;

    fn rb(name: &str, request: &str) -> RoleBinding {
        RoleBinding {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                labels: Some([(REQUEST_LABEL.to_string(), request.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn names(cache: &AccessCaches, request: &str) -> Vec<String> {
        let mut names: Vec<String> = cache
            .bindings_of(&ObjectKey::new("ns", request))
            .iter()
            .filter_map(|rb| rb.metadata.name.clone())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn bindings_are_indexed_by_request_and_follow_their_label() {
        let cache = AccessCaches::default();
        let mut relist = None;
        let woken = cache
            .apply_binding_event_for_test(watcher::Event::Apply(rb("pgar-a", "a")), &mut relist);
        assert_eq!(woken, vec![ObjectKey::new("ns", "a")]);
        assert_eq!(names(&cache, "a"), vec!["pgar-a"]);
        // Relabelled to another request: moves, and both requests wake.
        let woken = cache
            .apply_binding_event_for_test(watcher::Event::Apply(rb("pgar-a", "b")), &mut relist);
        assert_eq!(woken.len(), 2);
        assert!(names(&cache, "a").is_empty());
        assert_eq!(names(&cache, "b"), vec!["pgar-a"]);
        cache.apply_binding_event_for_test(watcher::Event::Delete(rb("pgar-a", "b")), &mut relist);
        assert!(names(&cache, "b").is_empty());
    }

    #[test]
    fn a_binding_we_deleted_is_hidden_until_the_watch_reports_it() {
        let cache = AccessCaches::default();
        let mut relist = None;
        cache.apply_binding_event_for_test(watcher::Event::Apply(rb("pgar-a", "a")), &mut relist);
        cache.binding_deleted("ns", "pgar-a");
        assert!(names(&cache, "a").is_empty(), "not judged twice");
        let woken = cache
            .apply_binding_event_for_test(watcher::Event::Delete(rb("pgar-a", "a")), &mut relist);
        assert_eq!(
            woken,
            vec![ObjectKey::new("ns", "a")],
            "the request still wakes"
        );
        // A binding recreated under the same name is visible again.
        cache.apply_binding_event_for_test(watcher::Event::Apply(rb("pgar-a", "a")), &mut relist);
        assert_eq!(names(&cache, "a"), vec!["pgar-a"]);
    }

    #[test]
    fn a_relist_drops_bindings_deleted_while_disconnected() {
        let cache = AccessCaches::default();
        let mut relist = None;
        cache.apply_binding_event_for_test(watcher::Event::Apply(rb("one", "a")), &mut relist);
        cache.apply_binding_event_for_test(watcher::Event::Apply(rb("two", "a")), &mut relist);
        cache.apply_binding_event_for_test(watcher::Event::Init, &mut relist);
        cache.apply_binding_event_for_test(watcher::Event::InitApply(rb("two", "a")), &mut relist);
        let woken = cache.apply_binding_event_for_test(watcher::Event::InitDone, &mut relist);
        assert_eq!(woken, vec![ObjectKey::new("ns", "a")]);
        assert_eq!(names(&cache, "a"), vec!["two"]);
    }

    #[test]
    fn cluster_changes_wake_only_the_requests_naming_them() {
        let cache = AccessCaches::default();
        let request = ObjectKey::new("ns", "req");
        cache.track_cluster_use(&request, Some("orders"));
        let meta = |name: &str| {
            ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            }
            .into_response_partial::<DynamicObject>()
        };
        let mut relist = None;
        let (woken, _) =
            cache.apply_cluster_event(watcher::Event::Apply(meta("orders")), &mut relist);
        assert_eq!(woken, vec![request.clone()]);
        let (woken, _) =
            cache.apply_cluster_event(watcher::Event::Apply(meta("other")), &mut relist);
        assert!(woken.is_empty());
        // Re-registering the same Cluster keeps it; naming another one moves the request.
        cache.track_cluster_use(&request, Some("orders"));
        assert_eq!(
            cache.users_of(&ObjectKey::new("ns", "orders")),
            vec![request.clone()]
        );
        cache.track_cluster_use(&request, Some("other"));
        assert!(cache.users_of(&ObjectKey::new("ns", "orders")).is_empty());
        assert_eq!(
            cache.users_of(&ObjectKey::new("ns", "other")),
            vec![request.clone()]
        );
        cache.forget_cluster_use(&request);
        let (woken, _) =
            cache.apply_cluster_event(watcher::Event::Delete(meta("orders")), &mut relist);
        assert!(woken.is_empty());
    }
}
