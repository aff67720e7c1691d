//! The owned-children store: one watch per child kind for the whole operator, kept in memory
//! and indexed by owner, so a pass asks "this object's RoleBindings" without a request.
//!
//! Each change is routed to its owner ([`KindKey`]); a relist is diffed once ([`Relist`]);
//! [`Synced`] says when absence means absence; a child this operator just deleted is hidden
//! (a tombstone pinned to its uid) until the watch reports the deletion, and a child it just
//! created or applied is seen as written ([`ReadYourWrites`]) until the watch reports that
//! version, so a pass that runs before the watch catches up neither judges a deleted child
//! twice nor POSTs a created one again (answered 409) nor re-applies an applied one.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use dashmap::DashMap;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ListParams;
use kube::core::{NamespaceResourceScope, PartialObjectMeta};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::relist::Relist;
use super::synced::{NotSynced, Synced};
use crate::k8s::{
    FirstList, Generation, Kept, ReadYourWrites, Restarts, WatchScope, backoff_until_progress,
    raw_events, restartable,
};
use crate::messages::{KindKey, ObjectKey};
use crate::reconcile::children::{COMPONENT_LABEL, Component, INSTANCE_LABEL};
use crate::reconcile::observed::keep_meta;
use crate::ring::Ownership;

/// What a child store can hold: a namespaced object it watches, packs and decodes.
pub trait StoredChild:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + DeserializeOwned
    + serde::Serialize
    + Send
    + Sync
    + 'static
{
}

impl<C> StoredChild for C where
    C: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + serde::Serialize
        + Send
        + Sync
        + 'static
{
}

/// A shared cache that keeps only a member's share (the owned-children stores): it follows
/// each new share; the future resolves once it holds what the share needs.
pub trait FollowsShare: Send + Sync {
    fn follow_share(&self, share: Arc<Ownership>) -> BoxFuture<'static, ()>;
}

/// Maps a child to its owner, or `None` when it has none of ours.
pub type OwnerOf<C> = Arc<dyn Fn(&C) -> Option<KindKey> + Send + Sync>;

/// Owners whose children changed.
pub type Wakeups = BoxStream<'static, KindKey>;

/// The owner named by a label on the child (its value), of kind `kind`, in the child's namespace.
pub fn owner_label<C: Resource>(kind: &'static str, label: &'static str) -> OwnerOf<C> {
    Arc::new(move |child: &C| {
        let name = child.labels().get(label)?;
        Some(KindKey::new(kind, &child.namespace()?, name))
    })
}

/// The owner given by the child's controller ownerReference, when it is one of our kinds
/// (`api_version` in `group`).
pub fn controller_owner<C: Resource>(group: &'static str) -> OwnerOf<C> {
    Arc::new(move |child: &C| {
        let owner = child
            .owner_references()
            .iter()
            .find(|r| r.controller == Some(true))?;
        let namespace = child.namespace()?;
        (owner.api_version.split('/').next() == Some(group))
            .then(|| KindKey::new(&owner.kind, &namespace, &owner.name))
    })
}

/// The owner of any child this operator makes: its controller ownerReference when that is one
/// of our kinds, else (Pods, ReplicaSets, a Job's Pods: their controller is not ours) the kind
/// its `component` label belongs to and the object its `instance` label names.
pub fn our_owner<C: Resource + 'static>() -> OwnerOf<C> {
    let by_reference = controller_owner::<C>(crate::api::GROUP);
    Arc::new(move |child: &C| {
        by_reference(child).or_else(|| {
            let labels = child.labels();
            let component = Component::parse(labels.get(COMPONENT_LABEL)?)?;
            let name = labels.get(INSTANCE_LABEL)?;
            Some(KindKey::new(
                component.owner_kind(),
                &child.namespace()?,
                name,
            ))
        })
    })
}

/// Whether `child` is controlled by an object of one of our kinds that owns children (its
/// controller ownerReference names our API group and such a kind). Anyone who may edit a
/// namespace can put our labels on an object; an ownerReference to one of our objects points
/// at an object the garbage collector removes the child with.
pub fn controlled_by_ours<C: Resource>(child: &C) -> bool {
    child.owner_references().iter().any(|r| {
        r.controller == Some(true)
            && r.api_version.split('/').next() == Some(crate::api::GROUP)
            && Component::owns_children(&r.kind)
    })
}

/// The labels a guarded store keeps of a foreign object: those that file it under an owner
/// (`our_owner`) and select it. Any other label, like its annotations and body, is dropped.
const KEPT_LABELS: [&str; 3] = [
    crate::reconcile::children::MANAGED_BY_LABEL,
    COMPONENT_LABEL,
    INSTANCE_LABEL,
];

/// `child` as a guarded store keeps it: whole when one of our objects controls it, else its
/// metadata only (no annotations, only our labels, no body). A foreign object holding a
/// child's name is judged by its ownerReferences alone (`ResourceNotOwned`), so its metadata
/// is all a pass needs, and labelling objects cannot make the operator hold their contents.
fn ours_whole<C: StoredChild + Default>(child: C) -> C {
    if controlled_by_ours(&child) {
        return child;
    }
    let mut child = child;
    bare(std::mem::take(child.meta_mut()))
}

/// An object of kind `C` of which only `meta` is known, kept as [`ours_whole`] keeps a foreign
/// object.
fn bare<C: StoredChild + Default>(meta: ObjectMeta) -> C {
    let mut meta = keep_meta(meta, &[]);
    if let Some(labels) = meta.labels.as_mut() {
        labels.retain(|key, _| KEPT_LABELS.contains(&key.as_str()));
    }
    let mut bare = C::default();
    *bare.meta_mut() = meta;
    bare
}

/// How many objects of ours a guarded store's watch fetches at once (the first list of a
/// store with many children of ours; events keep their order).
const FETCHES: usize = 8;

/// How often a fetch that failed is tried again before the watch lists anew.
const FETCH_TRIES: u32 = 3;

/// A guarded store answers a list with one list of full objects when that brings at most this
/// many objects it does not need whole (foreign ones, another member's, copies it holds at
/// that version); else it fetches the objects of ours one by one. Someone who labels many
/// objects makes a list cost a read per object of ours, never the bodies of theirs.
const UNWANTED_IN_A_LIST: usize = 32;

/// The page of that list (as the watches' own lists).
const LIST_PAGE: u32 = 500;

/// A watch the server answers "not served" (404: an optional API such as Routes off
/// OpenShift) or "forbidden" (403: refused in this namespace) reads as empty rather than
/// holding every pass until a deadline: passes judge optional APIs by the prober's answer per
/// namespace, and a write into a refused namespace is refused and reported by its pass.
fn unreadable(error: &watcher::Error) -> bool {
    matches!(api_code(error), Some(403 | 404))
}

/// The code of the API server's answer a watch failed on, if it answered.
fn api_code(error: &watcher::Error) -> Option<u16> {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(response))
        | watcher::Error::WatchStartFailed(kube::Error::Api(response))
        | watcher::Error::WatchError(response) => Some(response.code),
        _ => None,
    }
}

/// The API of the store is not served (404), as when a CRD or an aggregated API went away.
fn not_served(error: &watcher::Error) -> bool {
    api_code(error) == Some(404)
}

/// What a store keeps of each object as it enters it, and which objects may be written: a
/// store of Secrets keeps their certificates and only a judgement of every other value
/// (`crate::reconcile::redact`), and a desired object rebuilt from such a copy must never be
/// written, since it lacks what was dropped.
pub struct Ingest<C> {
    /// The object as the store keeps it. Must be idempotent (`keep(keep(x)) == keep(x)`): the
    /// applier compares a desired object in this form with the kept copy.
    pub keep: fn(C) -> C,
    /// Whether the object holds everything `keep` drops (false: built from a kept copy).
    pub complete: fn(&C) -> bool,
}

impl<C> Clone for Ingest<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Ingest<C> {}

/// A cached child, packed ([`Kept`]): passes read a child far less often than the store keeps
/// it, so each read decodes it afresh (issue 16: the RoleBinding of an approved request).
struct Entry<C> {
    object: Kept<C>,
    /// Kept apart so a relist that repeats a child does not decode it.
    version: Option<String>,
    owner: Option<KindKey>,
}

pub struct ChildStore<C> {
    entries: DashMap<ObjectKey, Entry<C>>,
    /// Owner → the names of its children (children live in their owner's namespace).
    by_owner: DashMap<KindKey, HashSet<String>>,
    /// Children this operator deleted, by key, with the uid deleted.
    tombstones: DashMap<ObjectKey, Option<String>>,
    /// Children this operator created or applied, until the watch reports that version. A
    /// child only written is indexed under its owner too (`by_owner`).
    written: ReadYourWrites<C>,
    owner_of: OwnerOf<C>,
    synced: Synced,
    ingest: Option<Ingest<C>>,
    /// What a guarded store keeps of an object before its ingest (`ours_whole`).
    guard: Option<fn(C) -> C>,
    /// A guarded store watches metadata only and fetches an object whole only when one of our
    /// objects controls it (`whole_if_ours`); this makes a foreign object of its metadata.
    bare: Option<fn(ObjectMeta) -> C>,
    /// The owners whose children are kept (a member keeps only its share's); children of no
    /// owner of ours are kept whatever the share.
    share: RwLock<Arc<Ownership>>,
    /// Lists again when the share grows; `relisted` counts the watches done with each relist.
    restarts: Restarts,
    relisted: watch::Sender<(Generation, usize)>,
    streams: AtomicUsize,
}

impl<C: serde::Serialize + DeserializeOwned> ChildStore<C> {
    /// Every cached child as JSON (tests inspect what the operator keeps in memory).
    #[doc(hidden)]
    pub fn dump(&self) -> Vec<serde_json::Value> {
        // The writes the watch has not reported yet are held too.
        self.entries
            .iter()
            .filter_map(|e| e.value().object.get().ok())
            .chain(self.written.copies())
            .filter_map(|object| serde_json::to_value(object.as_ref()).ok())
            .collect()
    }
}

impl<C> ChildStore<C>
where
    C: StoredChild,
{
    /// `what` names the children in errors ("RoleBindings").
    pub fn new(what: &'static str, owner_of: OwnerOf<C>) -> Arc<Self> {
        Self::build(what, owner_of, None, None, None)
    }

    /// A store that keeps of each object only what `ingest` keeps.
    pub fn with_ingest(what: &'static str, owner_of: OwnerOf<C>, ingest: Ingest<C>) -> Arc<Self> {
        Self::build(what, owner_of, Some(ingest), None, None)
    }

    /// A store of the children the operator applies (owner by [`our_owner`]): an object one
    /// of our objects controls is kept whole (as `ingest` keeps it), any other object the
    /// watch brings (labelled by someone else) only as its metadata. Its watch asks for
    /// metadata only, and the store fetches the objects of ours (see `whole_if_ours`): a
    /// foreign object's body is never downloaded, however many are labelled.
    pub fn of_ours(what: &'static str, ingest: Option<Ingest<C>>) -> Arc<Self>
    where
        C: Default,
    {
        Self::build(
            what,
            our_owner(),
            ingest,
            Some(ours_whole::<C>),
            Some(bare::<C>),
        )
    }

    fn build(
        what: &'static str,
        owner_of: OwnerOf<C>,
        ingest: Option<Ingest<C>>,
        guard: Option<fn(C) -> C>,
        bare: Option<fn(ObjectMeta) -> C>,
    ) -> Arc<Self> {
        Arc::new(Self {
            entries: DashMap::new(),
            by_owner: DashMap::new(),
            tombstones: DashMap::new(),
            written: ReadYourWrites::default(),
            owner_of,
            synced: Synced::new(what),
            ingest,
            guard,
            bare,
            share: RwLock::new(Arc::new(Ownership::default())),
            restarts: Restarts::default(),
            relisted: watch::Sender::new((0, 0)),
            streams: AtomicUsize::new(0),
        })
    }

    /// Whether the children of `owner` are this member's to keep.
    fn keeps(&self, owner: &KindKey) -> bool {
        let share = self.share.read().unwrap_or_else(PoisonError::into_inner);
        share.owns_object(&owner.kind, &owner.namespace, &owner.name)
    }

    /// Keeps only the children of `share`'s owners from now on: the others' are dropped at
    /// once; when the share may hold owners whose children were not kept, the watches list
    /// again and the future resolves once every one of them did (at once otherwise).
    pub fn keep_share(&self, share: Arc<Ownership>) -> BoxFuture<'static, ()> {
        let grows = {
            let mut current = self.share.write().unwrap_or_else(PoisonError::into_inner);
            let grows = !share.within(&current);
            *current = share;
            grows
        };
        let dropped: Vec<(ObjectKey, KindKey)> = self
            .entries
            .iter()
            .filter_map(|e| {
                let owner = e.value().owner.clone()?;
                (!self.keeps(&owner)).then(|| (e.key().clone(), owner))
            })
            .collect();
        for (key, owner) in dropped {
            self.entries.remove(&key);
            self.tombstones.remove(&key);
            self.unindex(&owner, &key.name);
        }
        let theirs =
            |_: &ObjectKey, ours: &C| (self.owner_of)(ours).is_some_and(|o| !self.keeps(&o));
        for (key, ours) in self.written.forget_where(theirs) {
            self.unindex_written(&key, &ours);
        }
        let streams = self.streams.load(Ordering::SeqCst);
        if !grows || streams == 0 {
            return Box::pin(std::future::ready(()));
        }
        let mut relisted = self.relisted.subscribe();
        let generation = self.restarts.restart();
        Box::pin(async move {
            let _ = relisted
                .wait_for(|(at, done)| *at > generation || (*at == generation && *done >= streams))
                .await;
        })
    }

    /// One watch is done listing for `generation` (or cannot list: read as empty).
    fn relisted_one(&self, generation: Generation) {
        self.relisted.send_modify(|(at, done)| {
            if generation > *at {
                *at = generation;
                *done = 1;
            } else if generation == *at {
                *done += 1;
            }
        });
    }

    /// `object` as this store would keep it.
    pub fn kept_form(&self, object: C) -> C {
        let object = match self.guard {
            Some(guard) => guard(object),
            None => object,
        };
        match &self.ingest {
            Some(ingest) => (ingest.keep)(object),
            None => object,
        }
    }

    /// Whether `object` may be written: it holds everything this store drops.
    pub fn complete(&self, object: &C) -> bool {
        self.ingest.as_ref().is_none_or(|i| (i.complete)(object))
    }

    /// Waits until every watch delivered its first list.
    pub async fn wait_synced(&self, limit: Duration) -> Result<(), NotSynced> {
        self.synced.wait(limit).await
    }

    /// Whether every watch delivered its first list (for [`super::wait_synced`]).
    pub fn synced(&self) -> &Synced {
        &self.synced
    }

    /// The owner's children, except those this operator just deleted, by name: the applier
    /// deletes the unwanted ones in this order, and a hash set's order changes from run to run.
    pub fn children_of(&self, owner: &KindKey) -> Vec<Arc<C>> {
        let Some(names) = self.by_owner.get(owner) else {
            return Vec::new();
        };
        let mut names: Vec<&String> = names.iter().collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|name| {
                let key = ObjectKey::new(owner.namespace.as_str(), name.as_str());
                self.visible(&key)
            })
            .collect()
    }

    /// Every owner with at least one child cached, sorted (the orphan sweep acts in this order).
    pub fn owners(&self) -> Vec<KindKey> {
        let mut owners: Vec<KindKey> = self.by_owner.iter().map(|e| e.key().clone()).collect();
        owners.sort();
        owners
    }

    /// One child by key (whatever its owner), unless this operator just deleted it.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<C>> {
        self.visible(key)
    }

    /// One child by key as [`Self::get`], only when this store keeps it whole: a guarded store
    /// keeps a foreign object's metadata only, which a reader of its body must fetch instead.
    pub fn get_whole(&self, key: &ObjectKey) -> Option<Arc<C>> {
        self.visible(key)
            .filter(|object| self.guard.is_none() || controlled_by_ours(object.as_ref()))
    }

    fn visible(&self, key: &ObjectKey) -> Option<Arc<C>> {
        let watched = match self.entries.get(key).map(|e| e.object.get()) {
            Some(Ok(watched)) => Some(watched),
            Some(Err(error)) => {
                // Its own JSON: cannot happen short of a bug; read as absent, logged.
                tracing::warn!(%key, %error, "cached child not decoded");
                None
            }
            None => None,
        };
        let object = match watched {
            Some(watched) if self.written.is_empty() => watched,
            Some(watched) => self.written.freshest(key, watched),
            None => self.written.unseen(key)?,
        };
        let hidden = !self.tombstones.is_empty()
            && self
                .tombstones
                .get(key)
                .is_some_and(|uid| *uid == object.uid());
        (!hidden).then_some(object)
    }

    /// Hides a child this operator deleted until the watch reports it gone. A new object under
    /// the same name (another uid) is visible again.
    pub fn deleted(&self, key: &ObjectKey, uid: Option<String>) {
        self.tombstones.insert(key.clone(), uid);
        if let Some(ours) = self.written.take(key)
            && !self.entries.contains_key(key)
        {
            self.unindex_written(key, &ours);
        }
    }

    /// Remembers what the server answered to this operator's create or apply of a child (or
    /// the child found under a taken name), until the watch reports that version: the next
    /// pass judges it instead of an older copy or none.
    pub fn wrote(&self, child: C) {
        let Some(key) = ObjectKey::of(&child) else {
            return;
        };
        // Kept as a watched copy is: what the ingest drops (a Secret's keys) is not kept here.
        let owner = (self.owner_of)(&child);
        // Written for an owner that is no longer ours (moved meanwhile): not kept, as its watch
        // event will not be.
        if owner.as_ref().is_some_and(|o| !self.keeps(o)) {
            return;
        }
        let mut child = self.kept_form(child);
        // The watch drops managed fields too (see `stream`): the copy costs no more.
        child.managed_fields_mut().clear();
        if let Some(owner) = owner {
            self.by_owner
                .entry(owner)
                .or_default()
                .insert(key.name.clone());
        }
        self.written.wrote(&key, child);
    }

    /// Writes the watch has not caught up with yet (tests, benchmarks).
    pub fn writes_in_flight(&self) -> usize {
        self.written.in_flight()
    }

    /// Drops a write's owner index entry when nothing watched holds its name.
    fn unindex_written(&self, key: &ObjectKey, ours: &C) {
        if let Some(owner) = (self.owner_of)(ours) {
            self.unindex(&owner, &key.name);
        }
    }

    /// Starts one watch per watched namespace (or one for all), selected by `config`; yields
    /// the owners to wake.
    pub fn watch(
        self: &Arc<Self>,
        client: &Client,
        scope: &WatchScope,
        config: watcher::Config,
    ) -> Vec<Wakeups> {
        let namespaces = scope.namespaces();
        self.synced.expect(namespaces.len());
        self.streams.fetch_add(namespaces.len(), Ordering::SeqCst);
        scope
            .apis::<C>(client)
            .into_iter()
            .zip(namespaces)
            .map(|(api, namespace)| self.clone().stream(api, namespace, config.clone()))
            .collect()
    }

    fn stream(
        self: Arc<Self>,
        api: Api<C>,
        namespace: Option<String>,
        config: watcher::Config,
    ) -> Wakeups {
        let mut relist = Relist::default();
        let mut first = true;
        // The last relist generation this watch reported done.
        let mut reported: Generation = 0;
        let restarts = self.restarts.subscribe();
        // A member that owns nothing yet would keep none of the children it lists (but those of
        // no owner of ours): it lists when its first share asks (`keep_share`), passes wait
        // for that list as for any first one.
        let first_list = {
            let share = self.share.read().unwrap_or_else(PoisonError::into_inner);
            FirstList::for_share(&share)
        };
        let store = self.clone();
        let namespace_of = namespace.clone();
        restartable(
            move || match store.bare {
                Some(bare) => {
                    store
                        .clone()
                        .meta_events(&api, namespace_of.as_deref(), config.clone(), bare)
                }
                None => raw_events(api.clone(), config.clone()),
            },
            restarts,
            first_list,
        )
            .flat_map(move |(generation, result)| {
                let owners = match result {
                    Ok(event) => {
                        // Served again once the watch makes progress (`Init` comes before a
                        // list that may still fail): the owners it failed are woken.
                        let revived = !matches!(event, watcher::Event::Init)
                            && self.synced.set_served(true);
                        let done = matches!(event, watcher::Event::InitDone);
                        let mut owners = self.apply(event, namespace.as_deref(), &mut relist);
                        if revived {
                            owners.extend(self.by_owner.iter().map(|e| e.key().clone()));
                        }
                        // Until the first list is done no pass has read this store (each waits
                        // for it to sync): waking the owners of what it brings would only queue
                        // a second pass behind each first one.
                        if first {
                            owners.clear();
                        }
                        if done && std::mem::take(&mut first) {
                            self.synced.one_done();
                        }
                        if done && generation > reported {
                            reported = generation;
                            self.relisted_one(generation);
                        }
                        owners
                    }
                    Err(error) => {
                        let kind = C::kind(&());
                        let listed_before = !first;
                        let unreadable = unreadable(&error);
                        if unreadable && std::mem::take(&mut first) {
                            tracing::warn!(%kind, namespace = ?namespace, %error, "cannot be listed: read as empty");
                            self.synced.one_done();
                        } else {
                            tracing::warn!(%kind, %error, "watch error, resuming");
                        }
                        if unreadable && generation > reported {
                            reported = generation;
                            self.relisted_one(generation);
                        }
                        // Listed before, not served now: the cache is the last list, which
                        // nothing will correct. Passes fail until it is served again, and the
                        // owners of what it holds are woken to say so.
                        if listed_before && not_served(&error) && self.synced.set_served(false) {
                            tracing::warn!(%kind, "no longer served: passes reading it fail until it is");
                            // A resumed watch says nothing until something changes: list
                            // again instead, so the end of that list says it is back.
                            self.restarts.restart();
                            self.by_owner.iter().map(|e| e.key().clone()).collect()
                        } else {
                            Vec::new()
                        }
                    }
                };
                futures::stream::iter(owners)
            })
            .boxed()
    }

    /// A guarded store's events: the watch brings metadata only, and an object one of our
    /// objects controls is fetched whole (or taken from this store or from our own write when
    /// it holds that version already). A list is answered once it is complete: the objects of
    /// ours it needs come from one list of full objects when that brings few others
    /// (`UNWANTED_IN_A_LIST`: an operator's restart, where nearly all are ours), else one by
    /// one (someone labelled many objects). A fetch that keeps failing lists the watch again.
    fn meta_events(
        self: Arc<Self>,
        api: &Api<C>,
        namespace: Option<&str>,
        config: watcher::Config,
        bare: fn(ObjectMeta) -> C,
    ) -> BoxStream<'static, Result<watcher::Event<C>, watcher::Error>> {
        let client = api.clone().into_client();
        // `PartialObjectMeta` makes kube ask for metadata only (lists and watches).
        let metadata: Api<PartialObjectMeta<C>> = match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let full = api.clone();
        let events = backoff_until_progress(watcher(metadata, config.clone())).boxed();
        // The objects of the list under way (between `Init` and `InitDone`).
        let listing: Option<Vec<PartialObjectMeta<C>>> = None;
        futures::stream::unfold((events, listing), move |(mut events, mut listing)| {
            let store = self.clone();
            let full = full.clone();
            let config = config.clone();
            async move {
                loop {
                    let answer = match events.next().await? {
                        Err(error) => vec![Err(error)],
                        Ok(watcher::Event::Init) => {
                            listing = Some(Vec::new());
                            vec![Ok(watcher::Event::Init)]
                        }
                        Ok(watcher::Event::InitApply(meta)) => {
                            listing.get_or_insert_with(Vec::new).push(meta);
                            continue;
                        }
                        Ok(watcher::Event::InitDone) => {
                            let metas = listing.take().unwrap_or_default();
                            match store.listed(&full, &config, metas, bare).await {
                                Ok(objects) => objects
                                    .into_iter()
                                    .map(|o| Ok(watcher::Event::InitApply(o)))
                                    .chain([Ok(watcher::Event::InitDone)])
                                    .collect(),
                                Err(error) => vec![Err(error)],
                            }
                        }
                        Ok(watcher::Event::Apply(meta)) => {
                            let client = full.clone().into_client();
                            match store.whole_if_ours(&client, meta, bare).await {
                                Ok(Some(object)) => vec![Ok(watcher::Event::Apply(object))],
                                Ok(None) => Vec::new(),
                                Err(error) => vec![Err(error)],
                            }
                        }
                        Ok(watcher::Event::Delete(meta)) => {
                            vec![Ok(watcher::Event::Delete(bare(meta.metadata)))]
                        }
                    };
                    return Some((answer, (events, listing)));
                }
            }
        })
        .flat_map(futures::stream::iter)
        .boxed()
    }

    /// What this store needs of one listed or changed object: `Ok` as it keeps it without a
    /// fetch (its metadata, a copy it holds at that version), or `Err` with its key when it is
    /// ours and must be fetched whole.
    fn without_fetch(
        &self,
        meta: PartialObjectMeta<C>,
        bare: fn(ObjectMeta) -> C,
    ) -> Result<C, ObjectKey> {
        let ours = controlled_by_ours(&meta);
        let probe = bare(meta.metadata);
        if !ours {
            return Ok(probe);
        }
        let (Some(key), Some(owner)) = (ObjectKey::of(&probe), (self.owner_of)(&probe)) else {
            return Ok(probe);
        };
        // Another member's: the store keeps nothing of it.
        if !self.keeps(&owner) {
            return Ok(probe);
        }
        self.copy_at(&key, probe.resource_version().as_deref())
            .ok_or(key)
    }

    /// The objects of a complete metadata list as the store receives them (see `meta_events`);
    /// one gone meanwhile is left out (the list's end removes it).
    async fn listed(
        &self,
        api: &Api<C>,
        config: &watcher::Config,
        metas: Vec<PartialObjectMeta<C>>,
        bare: fn(ObjectMeta) -> C,
    ) -> Result<Vec<C>, watcher::Error> {
        let judged: Vec<Result<C, ObjectKey>> = metas
            .into_iter()
            .map(|meta| self.without_fetch(meta, bare))
            .collect();
        let wanted: HashSet<ObjectKey> = judged
            .iter()
            .filter_map(|j| j.as_ref().err().cloned())
            .collect();
        if wanted.is_empty() {
            return Ok(judged.into_iter().filter_map(Result::ok).collect());
        }
        let unwanted = judged.len() - wanted.len();
        let mut fetched: HashMap<ObjectKey, C> = HashMap::with_capacity(wanted.len());
        if unwanted <= UNWANTED_IN_A_LIST {
            let mut params = ListParams::default().limit(LIST_PAGE);
            params.label_selector.clone_from(&config.label_selector);
            params.field_selector.clone_from(&config.field_selector);
            loop {
                let page = api
                    .list(&params)
                    .await
                    .map_err(watcher::Error::InitialListFailed)?;
                for mut object in page.items {
                    if let Some(key) = ObjectKey::of(&object).filter(|k| wanted.contains(k)) {
                        object.managed_fields_mut().clear();
                        fetched.insert(key, object);
                    }
                }
                match page.metadata.continue_.filter(|c| !c.is_empty()) {
                    Some(token) => params.continue_token = Some(token),
                    None => break,
                }
            }
        } else {
            let client = api.clone().into_client();
            let fetches: Vec<(ObjectKey, Option<C>)> = futures::stream::iter(wanted)
                .map(|key| {
                    let client = client.clone();
                    async move {
                        let found = self.fetch(&client, &key).await?;
                        Ok::<_, watcher::Error>((key, found))
                    }
                })
                .buffered(FETCHES)
                .try_collect()
                .await?;
            fetched.extend(
                fetches
                    .into_iter()
                    .filter_map(|(key, found)| Some((key, found?))),
            );
        }
        Ok(judged
            .into_iter()
            .filter_map(|judged| match judged {
                Ok(object) => Some(object),
                Err(key) => fetched.remove(&key),
            })
            .collect())
    }

    /// One changed object as the store receives it (see `meta_events`). `None`: it is gone
    /// already (its deletion follows).
    async fn whole_if_ours(
        &self,
        client: &Client,
        meta: PartialObjectMeta<C>,
        bare: fn(ObjectMeta) -> C,
    ) -> Result<Option<C>, watcher::Error> {
        match self.without_fetch(meta, bare) {
            Ok(object) => Ok(Some(object)),
            Err(key) => self.fetch(client, &key).await,
        }
    }

    /// A child of ours, read whole; tried again a few times, then the watch lists anew.
    async fn fetch(&self, client: &Client, key: &ObjectKey) -> Result<Option<C>, watcher::Error> {
        let api: Api<C> = Api::namespaced(client.clone(), &key.namespace);
        let mut tries = 0;
        loop {
            match api.get_opt(&key.name).await {
                Ok(found) => {
                    return Ok(found.map(|mut object| {
                        object.managed_fields_mut().clear();
                        object
                    }));
                }
                Err(error) if tries < FETCH_TRIES => {
                    tries += 1;
                    tracing::debug!(kind = %C::kind(&()), %key, %error, "fetching a child of ours, again");
                    tokio::time::sleep(Duration::from_millis(200 << tries)).await;
                }
                Err(error) => {
                    tracing::warn!(kind = %C::kind(&()), %key, %error, "a child of ours cannot be fetched: listing again");
                    self.restarts.restart();
                    return Err(watcher::Error::WatchFailed(error));
                }
            }
        }
    }

    /// The whole copy of `key` at `version` this store holds, watched or written by us.
    fn copy_at(&self, key: &ObjectKey, version: Option<&str>) -> Option<C> {
        let version = version?;
        let watched = self
            .entries
            .get(key)
            .filter(|e| e.version.as_deref() == Some(version))
            .and_then(|e| e.object.get().ok());
        watched
            .or_else(|| {
                self.written
                    .unseen(key)
                    .filter(|w| w.resource_version().as_deref() == Some(version))
            })
            .filter(|copy| controlled_by_ours(copy.as_ref()))
            .map(Arc::unwrap_or_clone)
    }

    /// Applies one watch event of the watch covering `namespace` (`None`: all); returns the
    /// owners to wake.
    pub fn apply(
        &self,
        event: watcher::Event<C>,
        namespace: Option<&str>,
        relist: &mut Relist<ObjectKey>,
    ) -> Vec<KindKey> {
        match event {
            watcher::Event::Init => {
                relist.start();
                Vec::new()
            }
            watcher::Event::InitApply(child) => {
                if let Some(key) = ObjectKey::of(&child) {
                    relist.listed(key);
                }
                self.upsert(child)
            }
            watcher::Event::InitDone => {
                let known: Vec<ObjectKey> = self
                    .entries
                    .iter()
                    .filter(|e| namespace.is_none_or(|ns| e.key().namespace == ns))
                    .map(|e| e.key().clone())
                    .collect();
                let mut woken: HashSet<KindKey> = HashSet::new();
                for key in relist.finish(&known) {
                    woken.extend(self.remove(&key));
                }
                // A write the fresh list did not hold may have been deleted meanwhile: trust the
                // list (at worst the next pass POSTs again and is answered 409).
                for (key, ours) in self.written.forget_where(|key, _| {
                    namespace.is_none_or(|ns| key.namespace == ns)
                        && !self.entries.contains_key(key)
                }) {
                    self.unindex_written(&key, &ours);
                }
                // Sorted: the owners are woken in this order (a hash set's order is random).
                let mut woken: Vec<KindKey> = woken.into_iter().collect();
                woken.sort();
                woken
            }
            watcher::Event::Apply(child) => self.upsert(child),
            watcher::Event::Delete(child) => match ObjectKey::of(&child) {
                Some(key) => self.remove(&key).into_iter().collect(),
                None => Vec::new(),
            },
        }
    }

    fn upsert(&self, child: C) -> Vec<KindKey> {
        let Some(key) = ObjectKey::of(&child) else {
            return Vec::new();
        };
        let owner = (self.owner_of)(&child);
        if let Some(theirs) = owner.as_ref().filter(|o| !self.keeps(o)) {
            return self.not_kept(&key, theirs);
        }
        let child = self.kept_form(child);
        let version = child.resource_version();
        // Another object under a deleted child's name is not the one deleted.
        let uid = child.uid();
        self.tombstones
            .remove_if(&key, |_, deleted| *deleted != uid);
        self.written.seen(&key, &child);
        let previous = self.entries.insert(
            key.clone(),
            Entry {
                object: Kept::new(child),
                version: version.clone(),
                owner: owner.clone(),
            },
        );
        let mut woken = Vec::new();
        let old_owner = previous.as_ref().and_then(|p| p.owner.clone());
        if old_owner != owner
            && let Some(old) = &old_owner
        {
            self.unindex(old, &key.name);
            woken.push(old.clone());
        }
        // A relist repeats unchanged children: their owners need not wake.
        let unchanged = previous
            .is_some_and(|p| old_owner == owner && version.is_some() && p.version == version);
        if let Some(owner) = owner {
            self.by_owner
                .entry(owner.clone())
                .or_default()
                .insert(key.name);
            if !unchanged {
                woken.push(owner);
            }
        }
        woken
    }

    /// A child of another member's owner: nothing of it is kept. Were it kept under an owner of
    /// ours before (its owner changed), it goes from there and that owner wakes.
    fn not_kept(&self, key: &ObjectKey, theirs: &KindKey) -> Vec<KindKey> {
        self.tombstones.remove(key);
        if let Some(ours) = self.written.take(key) {
            self.unindex_written(key, &ours);
        }
        let Some((_, entry)) = self.entries.remove(key) else {
            return Vec::new();
        };
        match entry.owner {
            Some(owner) if owner != *theirs => {
                self.unindex(&owner, &key.name);
                vec![owner]
            }
            _ => Vec::new(),
        }
    }

    fn remove(&self, key: &ObjectKey) -> Option<KindKey> {
        self.tombstones.remove(key);
        let ours = self.written.take(key);
        let Some((_, entry)) = self.entries.remove(key) else {
            let ours = ours?;
            self.unindex_written(key, &ours);
            return (self.owner_of)(ours.as_ref());
        };
        let owner = entry.owner?;
        self.unindex(&owner, &key.name);
        Some(owner)
    }

    fn unindex(&self, owner: &KindKey, name: &str) {
        let empty = self.by_owner.get_mut(owner).is_some_and(|mut names| {
            names.remove(name);
            names.is_empty()
        });
        if empty {
            self.by_owner.remove_if(owner, |_, names| names.is_empty());
        }
    }

    /// Children cached and owners indexed (tests, benchmarks).
    pub fn counts(&self) -> (usize, usize) {
        (self.entries.len(), self.by_owner.len())
    }
}

impl<C> FollowsShare for ChildStore<C>
where
    C: StoredChild,
{
    fn follow_share(&self, share: Arc<Ownership>) -> BoxFuture<'static, ()> {
        self.keep_share(share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::RoleBinding;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    const LABEL: &str = "example.dev/owner";

    fn rb(name: &str, owner: &str, uid: &str, rv: &str) -> RoleBinding {
        RoleBinding {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(uid.into()),
                resource_version: Some(rv.into()),
                labels: Some([(LABEL.to_string(), owner.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn owner(name: &str) -> KindKey {
        KindKey::new("Owner", "ns", name)
    }

    fn store() -> Arc<ChildStore<RoleBinding>> {
        ChildStore::new("RoleBindings", owner_label("Owner", LABEL))
    }

    fn names(store: &ChildStore<RoleBinding>, of: &str) -> Vec<String> {
        let mut names: Vec<String> = store
            .children_of(&owner(of))
            .iter()
            .map(|c| c.name_any())
            .collect();
        names.sort();
        names
    }

    /// Owner names `o0`, `o1`, ... split by a static ring of two: (index 0's, index 1's).
    fn split_owners() -> (Ownership, Vec<String>, Vec<String>) {
        use crate::ring::{Ring, object_key};
        let half = Ring::Static { index: 0, total: 2 };
        let (ours, theirs): (Vec<String>, Vec<String>) = (0..16)
            .map(|i| format!("o{i}"))
            .partition(|n| half.owns(object_key("Owner", "ns", n)));
        assert!(ours.len() >= 2 && theirs.len() >= 2);
        (Ownership::single(half), ours, theirs)
    }

    #[tokio::test]
    async fn a_member_keeps_only_the_children_of_its_shares_owners() {
        let store = store();
        let (half, ours, theirs) = split_owners();
        let mut relist = Relist::default();
        for (i, name) in ours.iter().chain(&theirs).enumerate() {
            let child = rb(&format!("c-{name}"), name, &format!("u{i}"), "1");
            store.apply(watcher::Event::Apply(child), Some("ns"), &mut relist);
        }
        let all = ours.len() + theirs.len();
        assert_eq!(store.counts(), (all, all), "one replica keeps every child");

        // Narrowed to half: the other half's children go at once; nothing to list again.
        store.follow_share(Arc::new(half.clone())).await;
        assert_eq!(store.counts(), (ours.len(), ours.len()));
        assert!(names(&store, &theirs[0]).is_empty());
        assert_eq!(names(&store, &ours[0]), vec![format!("c-{}", ours[0])]);

        // Their children's changes are neither kept nor woken for; a child moving from one of
        // our owners to one of theirs leaves ours (which wakes).
        let woken = store.apply(
            watcher::Event::Apply(rb("c-new", &theirs[1], "u-new", "2")),
            Some("ns"),
            &mut relist,
        );
        assert!(woken.is_empty());
        let moved = rb(&format!("c-{}", ours[1]), &theirs[1], "u1", "3");
        let woken = store.apply(watcher::Event::Apply(moved), Some("ns"), &mut relist);
        assert_eq!(woken, vec![owner(&ours[1])]);
        assert_eq!(store.counts(), (ours.len() - 1, ours.len() - 1));
        // A write of ours for their owner is not kept either.
        store.wrote(rb("c-w", &theirs[0], "u-w", "4"));
        assert_eq!(store.writes_in_flight(), 0);
        store.wrote(rb("c-w", &ours[0], "u-w", "4"));
        assert_eq!(store.writes_in_flight(), 1);
        // Unwatched (no stream), so growing back resolves at once; the kept half stays.
        store.follow_share(Arc::new(Ownership::default())).await;
        assert_eq!(store.counts().0, ours.len() - 1);
    }

    #[test]
    fn children_are_indexed_by_owner_and_follow_it() {
        let store = store();
        let mut relist = Relist::default();
        let woken = store.apply(
            watcher::Event::Apply(rb("x", "a", "u1", "1")),
            Some("ns"),
            &mut relist,
        );
        assert_eq!(woken, vec![owner("a")]);
        assert_eq!(names(&store, "a"), vec!["x"]);
        // Moved to another owner: both wake, the index follows.
        let woken = store.apply(
            watcher::Event::Apply(rb("x", "b", "u1", "2")),
            Some("ns"),
            &mut relist,
        );
        assert_eq!(woken, vec![owner("a"), owner("b")]);
        assert!(names(&store, "a").is_empty());
        assert_eq!(names(&store, "b"), vec!["x"]);
        let woken = store.apply(
            watcher::Event::Delete(rb("x", "b", "u1", "2")),
            Some("ns"),
            &mut relist,
        );
        assert_eq!(woken, vec![owner("b")]);
        assert_eq!(store.counts(), (0, 0));
    }

    #[test]
    fn the_relist_diff_drops_what_vanished_and_wakes_only_changes() {
        let store = store();
        let mut relist = Relist::default();
        for (name, who) in [("one", "a"), ("two", "b"), ("three", "c")] {
            store.apply(
                watcher::Event::Apply(rb(name, who, name, "1")),
                Some("ns"),
                &mut relist,
            );
        }
        store.apply(watcher::Event::Init, Some("ns"), &mut relist);
        let unchanged = store.apply(
            watcher::Event::InitApply(rb("one", "a", "one", "1")),
            Some("ns"),
            &mut relist,
        );
        assert!(unchanged.is_empty(), "an unchanged child wakes nobody");
        let changed = store.apply(
            watcher::Event::InitApply(rb("two", "b", "two", "5")),
            Some("ns"),
            &mut relist,
        );
        assert_eq!(changed, vec![owner("b")]);
        let gone = store.apply(watcher::Event::InitDone, Some("ns"), &mut relist);
        assert_eq!(gone, vec![owner("c")], "deleted while disconnected");
        assert!(names(&store, "c").is_empty());
    }

    #[test]
    fn a_relist_of_one_namespace_keeps_the_others() {
        let store = store();
        let mut relist = Relist::default();
        let mut other = rb("elsewhere", "a", "u", "1");
        other.metadata.namespace = Some("other".into());
        store.apply(watcher::Event::Apply(other), Some("other"), &mut relist);
        store.apply(watcher::Event::Init, Some("ns"), &mut relist);
        assert!(
            store
                .apply(watcher::Event::InitDone, Some("ns"), &mut relist)
                .is_empty()
        );
        assert_eq!(store.counts().0, 1);
    }

    #[test]
    fn a_child_we_deleted_is_hidden_until_the_watch_reports_it() {
        let store = store();
        let mut relist = Relist::default();
        store.apply(
            watcher::Event::Apply(rb("x", "a", "u1", "1")),
            Some("ns"),
            &mut relist,
        );
        store.deleted(&ObjectKey::new("ns", "x"), Some("u1".into()));
        assert!(names(&store, "a").is_empty(), "not judged twice");
        // A late update of the same object keeps it hidden.
        store.apply(
            watcher::Event::Apply(rb("x", "a", "u1", "2")),
            Some("ns"),
            &mut relist,
        );
        assert!(names(&store, "a").is_empty());
        let woken = store.apply(
            watcher::Event::Delete(rb("x", "a", "u1", "2")),
            Some("ns"),
            &mut relist,
        );
        assert_eq!(woken, vec![owner("a")], "the owner still wakes");
        // Recreated under the same name (another uid): visible.
        store.deleted(&ObjectKey::new("ns", "x"), Some("u1".into()));
        store.apply(
            watcher::Event::Apply(rb("x", "a", "u2", "3")),
            Some("ns"),
            &mut relist,
        );
        assert_eq!(names(&store, "a"), vec!["x"]);
    }

    #[test]
    fn a_store_can_keep_metadata_only() {
        use k8s_openapi::api::core::v1::Secret;
        use kube::core::{PartialObjectMeta, PartialObjectMetaExt};
        let store: Arc<ChildStore<PartialObjectMeta<Secret>>> =
            ChildStore::new("Secrets", owner_label("Owner", LABEL));
        let meta = ObjectMeta {
            name: Some("tls".into()),
            namespace: Some("ns".into()),
            labels: Some([(LABEL.to_string(), "a".to_string())].into()),
            ..Default::default()
        }
        .into_response_partial::<Secret>();
        let mut relist = Relist::default();
        let woken = store.apply(watcher::Event::Apply(meta), Some("ns"), &mut relist);
        assert_eq!(woken, vec![owner("a")]);
        assert_eq!(store.children_of(&owner("a")).len(), 1);
    }

    #[test]
    fn a_store_of_ours_keeps_whole_only_what_one_of_our_objects_controls() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let reference = |api_version: &str, kind: &str, controller: bool| OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "web".into(),
            uid: "owner-uid".into(),
            controller: Some(controller),
            block_owner_deletion: None,
        };
        let map = |name: &str, owner: Option<OwnerReference>| ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                resource_version: Some("1".into()),
                labels: Some(
                    [
                        (COMPONENT_LABEL.to_string(), "pgadmin".to_string()),
                        (INSTANCE_LABEL.to_string(), "web".to_string()),
                    ]
                    .into(),
                ),
                annotations: Some([("note".to_string(), "big".to_string())].into()),
                owner_references: owner.map(|r| vec![r]),
                ..Default::default()
            },
            data: Some([("blob".to_string(), "payload".to_string())].into()),
            ..Default::default()
        };
        let store = ChildStore::<ConfigMap>::of_ours("ConfigMaps", None);
        let ours = crate::api::GROUP.to_owned() + "/v1alpha1";
        let cases = [
            ("ours", Some(reference(&ours, "PgAdmin", true)), true),
            ("labelled", None, false),
            (
                "not-controller",
                Some(reference(&ours, "PgAdmin", false)),
                false,
            ),
            (
                "other-group",
                Some(reference("apps/v1", "PgAdmin", true)),
                false,
            ),
            // A kind of ours that owns no children.
            (
                "other-kind",
                Some(reference(&ours, "PgAccessRequest", true)),
                false,
            ),
        ];
        let mut relist = Relist::default();
        for (name, owner, whole) in cases {
            store.apply(
                watcher::Event::Apply(map(name, owner)),
                Some("ns"),
                &mut relist,
            );
            let key = ObjectKey::new("ns", name);
            let kept = store.get(&key).expect("cached");
            assert_eq!(kept.data.is_some(), whole, "{name}");
            assert_eq!(kept.metadata.annotations.is_some(), whole, "{name}");
            // Filed under its owner either way: the applier judges the name taken.
            assert_eq!(kept.metadata.labels, map(name, None).metadata.labels);
            assert_eq!(kept.metadata.uid, Some(format!("uid-{name}")));
            assert_eq!(store.get_whole(&key).is_some(), whole, "{name}");
        }
        // The one controlled by a PgAccessRequest is filed under that request.
        assert_eq!(
            store
                .children_of(&KindKey::new("PgAdmin", "ns", "web"))
                .len(),
            4
        );
        // Kept twice, the same (the applier compares kept forms).
        let foreign = store.kept_form(map("labelled", None));
        assert_eq!(store.kept_form(foreign.clone()), foreign);
        // A plain store keeps every object whole.
        let plain = ChildStore::<ConfigMap>::new("ConfigMaps", our_owner());
        assert!(plain.kept_form(map("labelled", None)).data.is_some());
    }

    #[test]
    fn a_guarded_store_fetches_only_ours_it_does_not_hold_at_that_version() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::core::PartialObjectMetaExt;
        let ours = crate::api::GROUP.to_owned() + "/v1alpha1";
        let meta = |name: &str, rv: &str, controlled: bool| ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some(rv.into()),
            labels: Some(
                [
                    (COMPONENT_LABEL.to_string(), "pgadmin".to_string()),
                    (INSTANCE_LABEL.to_string(), "web".to_string()),
                    ("extra".to_string(), "x".repeat(1024)),
                ]
                .into(),
            ),
            annotations: Some([("note".to_string(), "big".to_string())].into()),
            owner_references: controlled.then(|| {
                vec![OwnerReference {
                    api_version: ours.clone(),
                    kind: "PgAdmin".into(),
                    name: "web".into(),
                    uid: "owner-uid".into(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]
            }),
            ..Default::default()
        };
        let store = ChildStore::<ConfigMap>::of_ours("ConfigMaps", None);
        let bare = store.bare.expect("a guarded store watches metadata");
        let partial = |m: ObjectMeta| m.into_response_partial::<ConfigMap>();
        // A foreign object: its metadata, without annotations or labels not ours.
        let foreign = store
            .without_fetch(partial(meta("theirs", "1", false)), bare)
            .expect("kept without a fetch");
        assert_eq!(foreign.data, None);
        assert_eq!(foreign.metadata.annotations, None);
        assert_eq!(foreign.metadata.labels.as_ref().map(|l| l.len()), Some(2));
        // Ours, not held: fetched.
        assert_eq!(
            store
                .without_fetch(partial(meta("mine", "1", true)), bare)
                .err(),
            Some(ObjectKey::new("ns", "mine"))
        );
        // Held at that version (watched, or our own write): taken from the store, whole.
        let whole = |rv: &str| ConfigMap {
            metadata: meta("mine", rv, true),
            data: Some([("k".to_string(), "v".to_string())].into()),
            ..Default::default()
        };
        let mut relist = Relist::default();
        store.apply(watcher::Event::Apply(whole("1")), Some("ns"), &mut relist);
        let copy = store
            .without_fetch(partial(meta("mine", "1", true)), bare)
            .expect("held");
        assert_eq!(copy.data, whole("1").data);
        assert!(
            store
                .without_fetch(partial(meta("mine", "2", true)), bare)
                .is_err()
        );
        store.wrote(whole("2"));
        assert!(
            store
                .without_fetch(partial(meta("mine", "2", true)), bare)
                .is_ok()
        );
        // Another member's: nothing to fetch, the store keeps nothing of it.
        use crate::ring::{Ring, object_key};
        let half = Ring::Static { index: 0, total: 2 };
        let theirs = (0..16)
            .map(|i| format!("p{i}"))
            .find(|n| !half.owns(object_key("PgAdmin", "ns", n)))
            .expect("a PgAdmin of the other member");
        // No watch runs: nothing to list again, nothing to wait for.
        drop(store.keep_share(Arc::new(Ownership::single(half))));
        let mut other = meta("elsewhere", "1", true);
        if let Some(labels) = other.labels.as_mut() {
            labels.insert(INSTANCE_LABEL.to_string(), theirs.clone());
        }
        if let Some(refs) = other.owner_references.as_mut() {
            refs[0].name = theirs;
        }
        assert!(store.without_fetch(partial(other), bare).is_ok());
    }

    #[test]
    fn a_store_keeps_what_its_ingest_keeps_of_every_object_it_receives() {
        fn drop_subjects(mut rb: RoleBinding) -> RoleBinding {
            rb.subjects = None;
            rb
        }
        let store = ChildStore::with_ingest(
            "RoleBindings",
            owner_label("Owner", LABEL),
            Ingest {
                keep: drop_subjects,
                complete: |rb: &RoleBinding| rb.subjects.is_some(),
            },
        );
        let mut relist = Relist::default();
        let mut full = rb("x", "a", "u1", "1");
        full.subjects = Some(Vec::new());
        for event in [
            watcher::Event::Apply(full.clone()),
            watcher::Event::InitApply(full.clone()),
        ] {
            store.apply(event, Some("ns"), &mut relist);
            let kept = store.get(&ObjectKey::new("ns", "x")).unwrap();
            assert_eq!(kept.subjects, None);
            assert_eq!(names(&store, "a"), vec!["x"]);
        }
        assert!(store.complete(&full));
        assert!(!store.complete(&store.kept_form(full.clone())));
        // What our own write returned is kept in the same form until the watch reports it.
        let mut ours = full.clone();
        ours.metadata.name = Some("z".into());
        store.wrote(ours);
        assert_eq!(store.writes_in_flight(), 1);
        assert_eq!(
            store.get(&ObjectKey::new("ns", "z")).unwrap().subjects,
            None
        );
        assert!(
            store.dump().iter().all(|rb| rb.get("subjects").is_none()),
            "{:?}",
            store.dump()
        );
        // A store without a hook keeps objects whole, every one complete.
        let plain =
            super::ChildStore::<RoleBinding>::new("RoleBindings", owner_label("Owner", LABEL));
        let mut object = rb("y", "a", "u2", "1");
        object.subjects = Some(Vec::new());
        assert_eq!(plain.kept_form(object.clone()), object);
        assert!(plain.complete(&RoleBinding::default()));
    }

    #[test]
    fn controller_owner_reads_our_group_only() {
        let owned = |api_version: &str, controller: bool| RoleBinding {
            metadata: ObjectMeta {
                name: Some("x".into()),
                namespace: Some("ns".into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: api_version.into(),
                    kind: "PgAdmin".into(),
                    name: "web".into(),
                    uid: "u".into(),
                    controller: Some(controller),
                    block_owner_deletion: None,
                }]),
                ..Default::default()
            },
            ..Default::default()
        };
        let of = controller_owner::<RoleBinding>(crate::api::GROUP);
        assert_eq!(
            of(&owned("pgtoolbox.fyannk.dev/v1alpha1", true)),
            Some(KindKey::new("PgAdmin", "ns", "web"))
        );
        assert_eq!(of(&owned("pgtoolbox.fyannk.dev/v1alpha1", false)), None);
        assert_eq!(of(&owned("apps/v1", true)), None);
    }

    #[test]
    fn our_owner_reads_the_controller_reference_then_the_component_labels() {
        use k8s_openapi::api::core::v1::Pod;
        let of = our_owner::<Pod>();
        let pod = |labels: &[(&str, &str)], owner: Option<(&str, &str)>| Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("team-a".into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                owner_references: owner.map(|(api_version, kind)| {
                    vec![OwnerReference {
                        api_version: api_version.into(),
                        kind: kind.into(),
                        name: "owner".into(),
                        uid: "u".into(),
                        controller: Some(true),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let labels = [
            (COMPONENT_LABEL, "pgadmin-register"),
            (INSTANCE_LABEL, "admin"),
        ];
        // A Job's Pod: its controller is the Job, not ours; the labels name the PgAdmin.
        assert_eq!(
            of(&pod(&labels, Some(("batch/v1", "Job")))),
            Some(KindKey::new("PgAdmin", "team-a", "admin"))
        );
        assert_eq!(
            of(&pod(
                &[],
                Some(("pgtoolbox.fyannk.dev/v1alpha1", "EvidenceAgent"))
            )),
            Some(KindKey::new("EvidenceAgent", "team-a", "owner"))
        );
        assert_eq!(
            of(&pod(
                &[(COMPONENT_LABEL, "unknown"), (INSTANCE_LABEL, "x")],
                None
            )),
            None
        );
        assert_eq!(of(&pod(&[], Some(("apps/v1", "ReplicaSet")))), None);
    }

    #[test]
    fn a_refused_or_unserved_list_reads_as_empty_and_other_errors_retry() {
        let failed = |code: u16| {
            let status = serde_json::json!({"status": "Failure", "code": code});
            watcher::Error::InitialListFailed(kube::Error::Api(
                serde_json::from_value(status).expect("a Status"),
            ))
        };
        assert!(unreadable(&failed(403)));
        assert!(unreadable(&failed(404)));
        assert!(!unreadable(&failed(500)));
        assert!(!unreadable(&failed(429)));
    }
}
