//! The reference index: objects our objects name (a CNPG Cluster, a Secret, a ConfigMap...),
//! watched metadata-only, with who names them. A pass asks "does X exist" from the cache and
//! registers what it named; a change of X wakes exactly the objects naming it.
//!
//! Availability is per watch scope (a namespace, or all): an API refused in one namespace is
//! unknown there and still readable everywhere else.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};

use super::relist::Relist;
use super::store::Wakeups;
use super::synced::{NotSynced, Synced};
use crate::k8s::WatchScope;
use crate::messages::{KindKey, ObjectKey};

/// Which changes of a referenced object wake its users.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Track {
    /// Only appearing and disappearing (a Cluster named by a request).
    Existence,
    /// Every new resourceVersion (a Secret whose contents a Pod consumes).
    Version,
}

type Meta = PartialObjectMeta<DynamicObject>;

pub struct ReferenceIndex {
    resource: ApiResource,
    track: Track,
    /// Existing objects, with their resourceVersion.
    present: DashMap<ObjectKey, Option<String>>,
    /// Watch scopes that could not be read (`None`: the cluster-wide watch).
    unreadable: DashMap<Option<String>, ()>,
    /// Whether the watches cover all namespaces (one scope) or one each.
    all_namespaces: std::sync::atomic::AtomicBool,
    users: DashMap<ObjectKey, HashSet<KindKey>>,
    uses: DashMap<KindKey, Vec<ObjectKey>>,
    synced: Synced,
}

impl ReferenceIndex {
    /// `what` names the referenced objects in errors ("Clusters").
    pub fn new(what: &'static str, resource: ApiResource, track: Track) -> Arc<Self> {
        Arc::new(Self {
            resource,
            track,
            present: DashMap::new(),
            unreadable: DashMap::new(),
            all_namespaces: std::sync::atomic::AtomicBool::new(true),
            users: DashMap::new(),
            uses: DashMap::new(),
            synced: Synced::new(what),
        })
    }

    /// Waits until every watch listed (or was refused).
    pub async fn wait_synced(&self, limit: Duration) -> Result<(), NotSynced> {
        self.synced.wait(limit).await
    }

    /// Whether the object exists; `None` when its namespace's watch cannot read the kind.
    pub fn exists(&self, key: &ObjectKey) -> Option<bool> {
        let scope = if self
            .all_namespaces
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            None
        } else {
            Some(key.namespace.clone())
        };
        if !self.unreadable.is_empty() && self.unreadable.contains_key(&scope) {
            return None;
        }
        Some(self.present.contains_key(key))
    }

    /// The resourceVersion of an existing object, as last watched.
    pub fn version(&self, key: &ObjectKey) -> Option<String> {
        self.present.get(key).and_then(|v| v.value().clone())
    }

    /// Replaces what `user` names (empty: nothing). Every pass calls it; most change nothing.
    pub fn register(&self, user: &KindKey, refs: Vec<ObjectKey>) {
        let mut refs = refs;
        refs.sort();
        refs.dedup();
        if self.uses.get(user).is_some_and(|known| *known == refs)
            || (refs.is_empty() && !self.uses.contains_key(user))
        {
            return;
        }
        self.forget(user);
        if refs.is_empty() {
            return;
        }
        for key in &refs {
            self.users
                .entry(key.clone())
                .or_default()
                .insert(user.clone());
        }
        self.uses.insert(user.clone(), refs);
    }

    /// The user is gone: its references go with it.
    pub fn forget(&self, user: &KindKey) {
        let Some((_, refs)) = self.uses.remove(user) else {
            return;
        };
        for key in refs {
            if let Some(mut users) = self.users.get_mut(&key) {
                users.remove(user);
            }
            self.users.remove_if(&key, |_, users| users.is_empty());
        }
    }

    /// Who names `key`.
    pub fn users_of(&self, key: &ObjectKey) -> Vec<KindKey> {
        let mut users: Vec<KindKey> = self
            .users
            .get(key)
            .map(|u| u.iter().cloned().collect())
            .unwrap_or_default();
        users.sort();
        users
    }

    /// One metadata-only watch per watched namespace (or one for all); yields the users to wake.
    pub fn watch(self: &Arc<Self>, client: &Client, scope: &WatchScope) -> Vec<Wakeups> {
        let namespaces = scope.namespaces();
        self.all_namespaces.store(
            matches!(scope, WatchScope::All),
            std::sync::atomic::Ordering::Relaxed,
        );
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

    fn stream(self: Arc<Self>, api: Api<Meta>, namespace: Option<String>) -> Wakeups {
        let mut relist = Relist::default();
        let mut first = true;
        watcher(api, watcher::Config::default())
            .default_backoff()
            .flat_map(move |result| {
                let users = match result {
                    Ok(event) => {
                        let done = matches!(event, watcher::Event::InitDone);
                        let users = self.apply(event, namespace.as_deref(), &mut relist);
                        if done {
                            self.unreadable.remove(&namespace);
                            if std::mem::take(&mut first) {
                                self.synced.one_done();
                            }
                        }
                        users
                    }
                    Err(err) => {
                        // Refused or not served here: passes report the reference as
                        // unverifiable in this scope instead of waiting; the watch retries.
                        if first {
                            tracing::warn!(kind = %self.resource.kind, namespace = ?namespace, error = %err, "cannot be watched");
                            self.refused(namespace.clone());
                            first = false;
                            self.synced.one_done();
                        }
                        Vec::new()
                    }
                };
                futures::stream::iter(users)
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
        let key_of = |meta: &Meta| Some(ObjectKey::new(meta.namespace()?, meta.name_any()));
        match event {
            watcher::Event::Init => {
                relist.start();
                Vec::new()
            }
            watcher::Event::InitApply(meta) => match key_of(&meta) {
                Some(key) => {
                    relist.listed(key.clone());
                    self.upsert(key, meta.resource_version())
                }
                None => Vec::new(),
            },
            watcher::Event::Apply(meta) => match key_of(&meta) {
                Some(key) => self.upsert(key, meta.resource_version()),
                None => Vec::new(),
            },
            watcher::Event::InitDone => {
                let known: Vec<ObjectKey> = self
                    .present
                    .iter()
                    .filter(|e| namespace.is_none_or(|ns| e.key().namespace == ns))
                    .map(|e| e.key().clone())
                    .collect();
                relist
                    .finish(&known)
                    .into_iter()
                    .flat_map(|key| self.remove(&key))
                    .collect()
            }
            watcher::Event::Delete(meta) => match key_of(&meta) {
                Some(key) => self.remove(&key),
                None => Vec::new(),
            },
        }
    }

    fn upsert(&self, key: ObjectKey, version: Option<String>) -> Vec<KindKey> {
        let previous = self.present.insert(key.clone(), version.clone());
        let wake = match (previous, self.track) {
            (None, _) => true,
            (Some(_), Track::Existence) => false,
            (Some(old), Track::Version) => old.is_none() || old != version,
        };
        if wake {
            self.users_of(&key)
        } else {
            Vec::new()
        }
    }

    fn remove(&self, key: &ObjectKey) -> Vec<KindKey> {
        match self.present.remove(key) {
            Some(_) => self.users_of(key),
            None => Vec::new(),
        }
    }
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

    fn index(track: Track) -> Arc<ReferenceIndex> {
        ReferenceIndex::new("Clusters", cnpg_clusters(), track)
    }

    #[test]
    fn a_change_wakes_exactly_the_objects_naming_it() {
        let index = index(Track::Existence);
        let mut relist = Relist::default();
        index.register(&user("a"), vec![ObjectKey::new("ns", "orders")]);
        index.register(&user("b"), vec![ObjectKey::new("ns", "orders")]);
        index.register(&user("c"), vec![ObjectKey::new("ns", "other")]);
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
        index.register(&user("a"), vec![ObjectKey::new("ns", "other")]);
        let woken = index.apply(
            watcher::Event::Delete(meta("ns", "orders", "2")),
            None,
            &mut relist,
        );
        assert_eq!(woken, vec![user("b")]);
        index.forget(&user("b"));
        assert!(index.users_of(&ObjectKey::new("ns", "orders")).is_empty());
        assert_eq!(
            index.users_of(&ObjectKey::new("ns", "other")),
            vec![user("a"), user("c")]
        );
    }

    #[test]
    fn version_tracking_wakes_on_every_new_version_but_not_on_a_repeat() {
        let index = index(Track::Version);
        let mut relist = Relist::default();
        index.register(&user("a"), vec![ObjectKey::new("ns", "s")]);
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
        let index = index(Track::Existence);
        let mut relist = Relist::default();
        index.register(&user("a"), vec![ObjectKey::new("ns", "gone")]);
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
        let index = index(Track::Existence);
        index
            .all_namespaces
            .store(false, std::sync::atomic::Ordering::Relaxed);
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
}
