//! The reference index: objects our objects name (a CNPG Cluster, a Secret, a ConfigMap...),
//! watched metadata-only, with who names them. A pass asks "does X exist" from the cache and
//! registers what it named; a change of X wakes exactly the objects naming it. A user that
//! selects by labels (a PgAdmin's `clusterSelector`) registers a namespace instead, and reads
//! the namespace's objects with their labels from an index built `with_labels`.
//!
//! Availability is per watch scope (a namespace, or all): an API refused in one namespace is
//! unknown there and still readable everywhere else.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use futures::StreamExt;
use kube::api::ApiResource;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};

use super::registrations::{Registrations, Track};
use super::relist::Relist;
use super::store::Wakeups;
use super::synced::{NotSynced, Synced};
use crate::k8s::WatchScope;
use crate::messages::{KindKey, ObjectKey};

pub use crate::messages::shared::{Meta, Observed};
pub type Labels = BTreeMap<String, String>;

/// A stream of judged events of one watch.
pub type Observations = futures::stream::BoxStream<'static, Observed>;

/// What is kept of an existing object: its version, and its labels when the index keeps them.
#[derive(Clone, Debug, PartialEq)]
struct Present {
    version: Option<String>,
    labels: Option<Labels>,
}

pub struct ReferenceIndex {
    resource: ApiResource,
    keep_labels: bool,
    present: DashMap<ObjectKey, Present>,
    /// Watch scopes that could not be read (`None`: the cluster-wide watch).
    unreadable: DashMap<Option<String>, ()>,
    /// Whether the watches cover all namespaces (one scope) or one each.
    all_namespaces: AtomicBool,
    names: Registrations<ObjectKey>,
    /// Users of every object of a namespace (label selectors), and what each registered.
    namespaces: Registrations<String>,
    /// Watch scopes whose first list is done: before that, changes wake nobody.
    listed: DashMap<Option<String>, ()>,
    synced: Synced,
}

impl ReferenceIndex {
    /// `what` names the referenced objects in errors ("Clusters").
    pub fn new(what: &'static str, resource: ApiResource) -> Arc<Self> {
        Arc::new(Self {
            resource,
            keep_labels: false,
            present: DashMap::new(),
            unreadable: DashMap::new(),
            all_namespaces: AtomicBool::new(true),
            names: Registrations::default(),
            namespaces: Registrations::default(),
            listed: DashMap::new(),
            synced: Synced::new(what),
        })
    }

    /// An index that also keeps each object's labels, for users that select by labels.
    pub fn with_labels(what: &'static str, resource: ApiResource) -> Arc<Self> {
        let mut index = Self::new(what, resource);
        if let Some(inner) = Arc::get_mut(&mut index) {
            inner.keep_labels = true;
        }
        index
    }

    /// Waits until every watch listed (or was refused).
    pub async fn wait_synced(&self, limit: Duration) -> Result<(), NotSynced> {
        self.synced.wait(limit).await
    }

    /// Whether every watch listed (for [`super::wait_synced`]).
    pub fn synced(&self) -> &Synced {
        &self.synced
    }

    fn readable(&self, namespace: &str) -> bool {
        let scope = if self.all_namespaces.load(Ordering::Relaxed) {
            None
        } else {
            Some(namespace.to_owned())
        };
        self.unreadable.is_empty() || !self.unreadable.contains_key(&scope)
    }

    /// Whether the object exists; `None` when its namespace's watch cannot read the kind.
    pub fn exists(&self, key: &ObjectKey) -> Option<bool> {
        self.readable(&key.namespace)
            .then(|| self.present.contains_key(key))
    }

    /// The resourceVersion of an existing object, as last watched.
    pub fn version(&self, key: &ObjectKey) -> Option<String> {
        self.present.get(key).and_then(|p| p.version.clone())
    }

    /// The objects of a namespace with their labels (empty maps unless built `with_labels`),
    /// sorted by name; `None` when the namespace cannot be read.
    pub fn in_namespace(&self, namespace: &str) -> Option<Vec<(String, Labels)>> {
        if !self.readable(namespace) {
            return None;
        }
        let mut objects: Vec<(String, Labels)> = self
            .present
            .iter()
            .filter(|e| e.key().namespace == namespace)
            .map(|e| (e.key().name.clone(), e.labels.clone().unwrap_or_default()))
            .collect();
        objects.sort_by(|a, b| a.0.cmp(&b.0));
        Some(objects)
    }

    /// Replaces what `user` names (empty: nothing) and which of their changes wake it. Every
    /// pass calls it; most change nothing.
    pub fn register(&self, user: &KindKey, refs: Vec<ObjectKey>, track: Track) {
        self.names.register(user, refs, track);
    }

    /// Replaces the namespaces whose every object `user` reads (a label selector's scope).
    pub fn register_namespaces(&self, user: &KindKey, namespaces: Vec<String>, track: Track) {
        self.namespaces.register(user, namespaces, track);
    }

    /// The user is gone: its references go with it.
    pub fn forget(&self, user: &KindKey) {
        self.names.forget(user);
        self.namespaces.forget(user);
    }

    /// Whether anyone names `key` (by name or by its namespace); allocates nothing.
    pub fn is_named(&self, key: &ObjectKey) -> bool {
        let any = |users: Option<&HashMap<KindKey, Track>>| users.is_some_and(|u| !u.is_empty());
        any(self.names.users(key).as_deref())
            || any(self.namespaces.users(&key.namespace).as_deref())
    }

    /// Who names `key` (by name or by its namespace).
    pub fn users_of(&self, key: &ObjectKey) -> Vec<KindKey> {
        self.woken(key, |_| true)
    }

    /// The users of `key` whose registration asks to be woken by this change.
    fn woken(&self, key: &ObjectKey, wakes: impl Fn(Track) -> bool) -> Vec<KindKey> {
        let by_name = self.names.users(key);
        let by_namespace = self.namespaces.users(&key.namespace);
        let mut users: Vec<KindKey> = by_name
            .iter()
            .flat_map(|u| u.iter())
            .chain(by_namespace.iter().flat_map(|u| u.iter()))
            .filter(|(_, track)| wakes(**track))
            .map(|(user, _)| user.clone())
            .collect();
        users.sort();
        users.dedup();
        users
    }

    /// Every user with a registration, by name or by namespace (sorted, once each).
    /// What is kept of each existing object, one line each (tests inspect what the operator
    /// keeps in memory).
    #[doc(hidden)]
    pub fn dump(&self) -> Vec<String> {
        self.present
            .iter()
            .map(|e| format!("{:?} {:?}", e.key(), e.value()))
            .collect()
    }

    pub fn users_registered(&self) -> Vec<KindKey> {
        let mut users = self.names.users_registered();
        users.extend(self.namespaces.users_registered());
        users.sort();
        users.dedup();
        users
    }

    /// How many users registered names, how many objects are named, how many watch scopes
    /// finished their first list (router statistics).
    pub fn counts(&self) -> (usize, usize, usize) {
        let (users, named) = self.names.counts();
        (users, named, self.listed.len())
    }

    /// One metadata-only watch per watched namespace (or one for all); yields the users to wake.
    pub fn watch(self: &Arc<Self>, client: &Client, scope: &WatchScope) -> Vec<Wakeups> {
        self.watch_observed(client, scope)
            .into_iter()
            .map(|events| {
                events
                    .flat_map(|seen| futures::stream::iter(seen.changed.unwrap_or_default()))
                    .boxed()
            })
            .collect()
    }

    /// The watches of [`Self::watch`], yielding every judged event.
    pub fn watch_observed(
        self: &Arc<Self>,
        client: &Client,
        scope: &WatchScope,
    ) -> Vec<Observations> {
        let namespaces = scope.namespaces();
        self.all_namespaces
            .store(matches!(scope, WatchScope::All), Ordering::Relaxed);
        self.synced.expect(namespaces.len());
        namespaces
            .into_iter()
            .map(|namespace| {
                let api: Api<Meta> = match &namespace {
                    Some(ns) => Api::namespaced_with(client.clone(), ns, &self.resource),
                    None => Api::all_with(client.clone(), &self.resource),
                };
                self.clone().stream(api, namespace)
            })
            .collect()
    }

    fn stream(self: Arc<Self>, api: Api<Meta>, namespace: Option<String>) -> Observations {
        let mut relist = Relist::default();
        let mut reported = false;
        crate::k8s::backoff_until_progress(watcher(api, watcher::Config::default()))
            .flat_map(move |result| {
                let seen = match result {
                    Ok(event) => {
                        let done = matches!(event, watcher::Event::InitDone);
                        let seen = self.observe(event, namespace.as_deref(), &mut relist);
                        if done && !std::mem::replace(&mut reported, true) {
                            self.synced.one_done();
                        }
                        seen
                    }
                    Err(err) => {
                        // Refused or not served here: passes report the reference as
                        // unverifiable in this scope instead of waiting; the watch retries.
                        if !std::mem::replace(&mut reported, true) {
                            tracing::warn!(kind = %self.resource.kind, namespace = ?namespace, error = %err, "cannot be watched");
                            self.refused(namespace.clone());
                            self.synced.one_done();
                        }
                        Vec::new()
                    }
                };
                futures::stream::iter(seen)
            })
            .boxed()
    }

    /// The watch of `scope` cannot read the kind: existence there is unknown.
    pub fn refused(&self, scope: Option<String>) {
        self.unreadable.insert(scope, ());
    }

    /// Applies one event of the watch covering `namespace` (`None`: all); returns the users to
    /// wake.
    pub fn apply(
        &self,
        event: watcher::Event<Meta>,
        namespace: Option<&str>,
        relist: &mut Relist<ObjectKey>,
    ) -> Vec<KindKey> {
        let mut users: Vec<KindKey> = self
            .observe(event, namespace, relist)
            .into_iter()
            .flat_map(|seen| seen.changed.unwrap_or_default())
            .collect();
        users.sort();
        users.dedup();
        users
    }

    /// Applies one event and judges each object it concerns.
    pub fn observe(
        &self,
        event: watcher::Event<Meta>,
        namespace: Option<&str>,
        relist: &mut Relist<ObjectKey>,
    ) -> Vec<Observed> {
        let key_of = |meta: &Meta| Some(ObjectKey::new(meta.namespace()?, meta.name_any()));
        // Until this scope's first list is done no pass has read the index: record only.
        let quiet = !self.listed.contains_key(&namespace.map(str::to_owned));
        let seen = |key: ObjectKey, changed: Option<Vec<KindKey>>, meta: Option<Meta>| Observed {
            key,
            changed: changed.filter(|_| !quiet),
            meta,
        };
        match event {
            watcher::Event::Init => {
                relist.start();
                Vec::new()
            }
            watcher::Event::InitApply(meta) | watcher::Event::Apply(meta) => {
                let Some(key) = key_of(&meta) else {
                    return Vec::new();
                };
                relist.listed(key.clone());
                let changed = self.upsert(key.clone(), &meta);
                vec![seen(key, changed, Some(meta))]
            }
            watcher::Event::InitDone => {
                let known: Vec<ObjectKey> = self
                    .present
                    .iter()
                    .filter(|e| namespace.is_none_or(|ns| e.key().namespace == ns))
                    .map(|e| e.key().clone())
                    .collect();
                let mut gone: Vec<Observed> = relist
                    .finish(&known)
                    .into_iter()
                    .map(|key| {
                        let changed = self.remove(&key);
                        seen(key, changed, None)
                    })
                    .collect();
                let scope = namespace.map(str::to_owned);
                // A scope that could not be read (refused, or the kind not served yet) is
                // readable now: every reference judged unverifiable meanwhile is judged again.
                if self.unreadable.remove(&scope).is_some() {
                    gone.extend(self.users_in(namespace));
                }
                self.listed.insert(scope, ());
                gone
            }
            watcher::Event::Delete(meta) => {
                let Some(key) = key_of(&meta) else {
                    return Vec::new();
                };
                let changed = self.remove(&key);
                vec![seen(key, changed, Some(meta))]
            }
        }
    }

    /// The users to wake for a new state of `key`; `None` when it is the state already seen.
    fn upsert(&self, key: ObjectKey, meta: &Meta) -> Option<Vec<KindKey>> {
        let now = Present {
            version: meta.resource_version(),
            labels: self.keep_labels.then(|| meta.labels().clone()),
        };
        let previous = self.present.insert(key.clone(), now.clone());
        match previous {
            None => Some(self.users_of(&key)),
            // A relist repeats what was seen: nobody wakes for it.
            Some(old) if old.version.is_some() && old.version == now.version => None,
            Some(old) => {
                let relabelled = old.labels != now.labels;
                Some(self.woken(&key, |track| track == Track::Version || relabelled))
            }
        }
    }

    /// Every object reference registered in `namespace` (`None`: all) with its users, in order;
    /// then every namespace registered by a label selector there, as a key with an empty name.
    fn users_in(&self, namespace: Option<&str>) -> Vec<Observed> {
        let in_scope = |ns: &str| namespace.is_none_or(|scope| scope == ns);
        let observed = |key: ObjectKey, users: &HashMap<KindKey, Track>| {
            let mut users: Vec<KindKey> = users.keys().cloned().collect();
            users.sort();
            Observed {
                key,
                changed: Some(users),
                meta: None,
            }
        };
        let mut out: Vec<Observed> = self
            .names
            .iter()
            .filter(|e| in_scope(&e.key().namespace))
            .map(|e| observed(e.key().clone(), e.value()))
            .collect();
        out.extend(
            self.namespaces
                .iter()
                .filter(|e| in_scope(e.key()))
                .map(|e| observed(ObjectKey::new(e.key(), ""), e.value())),
        );
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    fn remove(&self, key: &ObjectKey) -> Option<Vec<KindKey>> {
        self.present.remove(key).map(|_| self.users_of(key))
    }
}

/// The Secret kind, read metadata-only.
pub fn secrets_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("", "v1", "Secret"),
        "secrets",
    )
}

/// The CloudNativePG Cluster kind.
pub fn cnpg_clusters() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("postgresql.cnpg.io", "v1", "Cluster"),
        "clusters",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::api::DynamicObject;
    use kube::core::PartialObjectMetaExt;

    fn meta(ns: &str, name: &str, rv: &str) -> Meta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        }
        .into_response_partial::<DynamicObject>()
    }

    fn user(name: &str) -> KindKey {
        KindKey::new("PgAccessRequest", "ns", name)
    }

    /// An index whose watches of `scopes` finished their first (empty) list, as a real watch
    /// does before any change: only then do changes wake anyone.
    fn listed(index: Arc<ReferenceIndex>, scopes: &[Option<&str>]) -> Arc<ReferenceIndex> {
        for scope in scopes {
            let mut relist = Relist::default();
            index.apply(watcher::Event::Init, *scope, &mut relist);
            index.apply(watcher::Event::InitDone, *scope, &mut relist);
        }
        index
    }

    fn index() -> Arc<ReferenceIndex> {
        listed(
            ReferenceIndex::new("Clusters", cnpg_clusters()),
            &[None, Some("ns")],
        )
    }

    #[test]
    fn a_change_wakes_exactly_the_objects_naming_it() {
        let index = index();
        let mut relist = Relist::default();
        index.register(
            &user("a"),
            vec![ObjectKey::new("ns", "orders")],
            Track::Existence,
        );
        index.register(
            &user("b"),
            vec![ObjectKey::new("ns", "orders")],
            Track::Existence,
        );
        index.register(
            &user("c"),
            vec![ObjectKey::new("ns", "other")],
            Track::Existence,
        );
        let woken = index.apply(
            watcher::Event::Apply(meta("ns", "orders", "1")),
            None,
            &mut relist,
        );
        assert_eq!(woken, vec![user("a"), user("b")]);
        assert_eq!(index.exists(&ObjectKey::new("ns", "orders")), Some(true));
        // Existence only: a status change of the Cluster wakes nobody.
        assert!(
            index
                .apply(
                    watcher::Event::Apply(meta("ns", "orders", "2")),
                    None,
                    &mut relist
                )
                .is_empty()
        );
        assert!(
            index
                .apply(
                    watcher::Event::Apply(meta("ns", "unused", "1")),
                    None,
                    &mut relist
                )
                .is_empty()
        );
        // Re-registering moves the user.
        index.register(
            &user("a"),
            vec![ObjectKey::new("ns", "other")],
            Track::Existence,
        );
        let woken = index.apply(
            watcher::Event::Delete(meta("ns", "orders", "2")),
            None,
            &mut relist,
        );
        assert_eq!(woken, vec![user("b")]);
        index.forget(&user("b"));
        assert!(index.users_of(&ObjectKey::new("ns", "orders")).is_empty());
        assert!(!index.is_named(&ObjectKey::new("ns", "orders")));
        assert!(index.is_named(&ObjectKey::new("ns", "other")));
        assert_eq!(
            index.users_of(&ObjectKey::new("ns", "other")),
            vec![user("a"), user("c")]
        );
    }

    #[test]
    fn version_tracking_wakes_on_every_new_version_but_not_on_a_repeat() {
        let index = index();
        let mut relist = Relist::default();
        index.register(&user("a"), vec![ObjectKey::new("ns", "s")], Track::Version);
        index.apply(
            watcher::Event::Apply(meta("ns", "s", "1")),
            None,
            &mut relist,
        );
        assert_eq!(
            index.apply(
                watcher::Event::Apply(meta("ns", "s", "2")),
                None,
                &mut relist
            ),
            vec![user("a")]
        );
        index.apply(watcher::Event::Init, None, &mut relist);
        assert!(
            index
                .apply(
                    watcher::Event::InitApply(meta("ns", "s", "2")),
                    None,
                    &mut relist
                )
                .is_empty()
        );
        assert!(
            index
                .apply(watcher::Event::InitDone, None, &mut relist)
                .is_empty()
        );
    }

    #[test]
    fn a_relist_wakes_the_users_of_what_vanished() {
        let index = index();
        let mut relist = Relist::default();
        index.register(
            &user("a"),
            vec![ObjectKey::new("ns", "gone")],
            Track::Existence,
        );
        index.apply(
            watcher::Event::Apply(meta("ns", "gone", "1")),
            Some("ns"),
            &mut relist,
        );
        index.apply(watcher::Event::Init, Some("ns"), &mut relist);
        assert_eq!(
            index.apply(watcher::Event::InitDone, Some("ns"), &mut relist),
            vec![user("a")]
        );
        assert_eq!(index.exists(&ObjectKey::new("ns", "gone")), Some(false));
    }

    #[test]
    fn a_refusal_in_one_namespace_leaves_the_others_readable() {
        let index = index();
        index.all_namespaces.store(false, Ordering::Relaxed);
        let mut relist = Relist::default();
        index.apply(
            watcher::Event::Apply(meta("open", "c", "1")),
            Some("open"),
            &mut relist,
        );
        index.refused(Some("closed".into()));
        assert_eq!(index.exists(&ObjectKey::new("closed", "c")), None);
        assert_eq!(index.exists(&ObjectKey::new("open", "c")), Some(true));
        assert_eq!(
            index.exists(&ObjectKey::new("open", "missing")),
            Some(false)
        );
    }

    fn labelled(ns: &str, name: &str, rv: &str, labels: &[(&str, &str)]) -> Meta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            resource_version: Some(rv.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        }
        .into_response_partial::<DynamicObject>()
    }

    #[test]
    fn each_user_is_woken_by_what_it_tracks() {
        let index = index();
        let mut relist = Relist::default();
        let key = ObjectKey::new("ns", "orders");
        index.register(&user("request"), vec![key.clone()], Track::Existence);
        index.register(&user("agent"), vec![key.clone()], Track::Version);
        let apply = |rv: &str, relist: &mut Relist<ObjectKey>| {
            index.apply(
                watcher::Event::Apply(meta("ns", "orders", rv)),
                None,
                relist,
            )
        };
        assert_eq!(
            apply("1", &mut relist),
            vec![user("agent"), user("request")]
        );
        assert_eq!(apply("2", &mut relist), vec![user("agent")]);
        assert!(apply("2", &mut relist).is_empty());
    }

    #[test]
    fn a_namespace_user_sees_objects_appear_and_their_labels_change() {
        let index = listed(
            ReferenceIndex::with_labels("Clusters", cnpg_clusters()),
            &[None],
        );
        let mut relist = Relist::default();
        let selector = KindKey::new("PgAdmin", "team-a", "admin");
        index.register_namespaces(&selector, vec!["team-a".into()], Track::Existence);
        let woken = index.apply(
            watcher::Event::Apply(labelled("team-a", "orders", "1", &[("team", "a")])),
            None,
            &mut relist,
        );
        assert_eq!(woken, vec![selector.clone()]);
        // A new version with the same labels: an Existence user sleeps on.
        assert!(
            index
                .apply(
                    watcher::Event::Apply(labelled("team-a", "orders", "2", &[("team", "a")])),
                    None,
                    &mut relist
                )
                .is_empty()
        );
        let woken = index.apply(
            watcher::Event::Apply(labelled("team-a", "orders", "3", &[("team", "b")])),
            None,
            &mut relist,
        );
        assert_eq!(woken, vec![selector.clone()]);
        // Another namespace wakes nobody.
        assert!(
            index
                .apply(
                    watcher::Event::Apply(labelled("team-b", "x", "1", &[])),
                    None,
                    &mut relist
                )
                .is_empty()
        );
        let listed = index.in_namespace("team-a").unwrap_or_default();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].0, "orders");
        assert_eq!(listed[0].1.get("team").map(String::as_str), Some("b"));
        index.forget(&selector);
        assert!(
            index
                .apply(
                    watcher::Event::Delete(labelled("team-a", "orders", "3", &[])),
                    None,
                    &mut relist
                )
                .is_empty()
        );
    }

    #[test]
    fn the_first_list_records_and_wakes_nobody() {
        let index = ReferenceIndex::new("Secrets", cnpg_clusters());
        let mut relist = Relist::default();
        index.register(&user("a"), vec![ObjectKey::new("ns", "s")], Track::Version);
        index.apply(watcher::Event::Init, None, &mut relist);
        let first = index.observe(
            watcher::Event::InitApply(meta("ns", "s", "1")),
            None,
            &mut relist,
        );
        assert!(first[0].changed.is_none(), "no pass read the index yet");
        index.apply(watcher::Event::InitDone, None, &mut relist);
        assert_eq!(index.exists(&ObjectKey::new("ns", "s")), Some(true));
        assert_eq!(
            index.apply(
                watcher::Event::Apply(meta("ns", "s", "2")),
                None,
                &mut relist
            ),
            vec![user("a")]
        );
    }

    /// Found by the simulation tests (dst seed 790): CloudNativePG not served when the operator
    /// started, a request said ClusterNotFound, and kept saying it once the Cluster was listed.
    #[test]
    fn the_first_list_after_an_unreadable_scope_wakes_its_users() {
        let index = ReferenceIndex::new("Clusters", cnpg_clusters());
        let mut relist = Relist::default();
        index.refused(None);
        index.register(
            &user("a"),
            vec![ObjectKey::new("ns", "c")],
            Track::Existence,
        );
        assert_eq!(
            index.exists(&ObjectKey::new("ns", "c")),
            None,
            "unverifiable"
        );
        index.apply(watcher::Event::Init, None, &mut relist);
        index.register(
            &user("b"),
            vec![ObjectKey::new("ns", "absent")],
            Track::Existence,
        );
        index.apply(
            watcher::Event::InitApply(meta("ns", "c", "1")),
            None,
            &mut relist,
        );
        // Both are woken: one's Cluster exists, the other's is now known to be missing.
        assert_eq!(
            index.apply(watcher::Event::InitDone, None, &mut relist),
            vec![user("a"), user("b")]
        );
        assert_eq!(index.exists(&ObjectKey::new("ns", "c")), Some(true));
        assert_eq!(index.exists(&ObjectKey::new("ns", "absent")), Some(false));
    }

    /// The same for a label selector: a PgAdmin selecting Clusters of its namespace by labels
    /// judged them unverifiable while the kind was unreadable, and must look again once it is
    /// listed, even when the list brings nothing new to its namespace.
    #[test]
    fn the_first_list_after_an_unreadable_scope_wakes_its_selectors() {
        let index = ReferenceIndex::with_labels("Clusters", cnpg_clusters());
        let mut relist = Relist::default();
        index.refused(None);
        let selector = KindKey::new("PgAdmin", "team-a", "admin");
        index.register_namespaces(&selector, vec!["team-a".into()], Track::Existence);
        index.register_namespaces(&user("elsewhere"), vec!["team-b".into()], Track::Existence);
        assert_eq!(index.in_namespace("team-a"), None, "unverifiable");
        index.apply(watcher::Event::Init, None, &mut relist);
        let woken = index.apply(watcher::Event::InitDone, None, &mut relist);
        assert_eq!(woken, vec![user("elsewhere"), selector.clone()]);
        assert_eq!(index.in_namespace("team-a"), Some(Vec::new()));

        // Refused in one namespace only: its listing wakes that namespace's selector alone.
        let index = ReferenceIndex::with_labels("Clusters", cnpg_clusters());
        index.all_namespaces.store(false, Ordering::Relaxed);
        index.refused(Some("team-a".into()));
        index.register_namespaces(&selector, vec!["team-a".into()], Track::Existence);
        index.register_namespaces(&user("elsewhere"), vec!["team-b".into()], Track::Existence);
        let mut relist = Relist::default();
        index.apply(watcher::Event::Init, Some("team-a"), &mut relist);
        let woken = index.apply(watcher::Event::InitDone, Some("team-a"), &mut relist);
        assert_eq!(woken, vec![selector]);
    }
}
