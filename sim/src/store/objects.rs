//! The object store: every object as JSON, one global resourceVersion counter, and a bounded
//! history of changes that watches resume from.
//!
//! One mutex guards everything; critical sections only move `Arc`s and small maps, and the
//! broadcast of each change happens under the same lock so a new watcher never misses or
//! duplicates an event between its history replay and its live subscription.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;
use tokio::time::Instant;

/// `(group, plural)`: objects of every served version of a kind share one table.
pub type ResKey = (String, String);
/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type ObjKey = (String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// Who writes, as the admission request's `userInfo` shows it, and through which subresource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requester {
    pub username: String,
    pub groups: Vec<String>,
    /// `status`, `scale`, ...; empty for the resource itself.
    pub subresource: String,
}

/// One committed change, as watches see it.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub res: ResKey,
    pub namespace: String,
    pub kind: EventType,
    pub object: Arc<Value>,
    /// The state before the change (MODIFIED, DELETED), so filtered watches can tell an
    /// object entering or leaving their selection (sent as ADDED / DELETED, as a real server
    /// does) and a paged list can be served from its first page's snapshot.
    pub previous: Option<Arc<Value>>,
}

/// The state behind the lock.
#[derive(Debug, Default)]
pub struct Inner {
    rv: u64,
    tables: HashMap<ResKey, BTreeMap<ObjKey, Arc<Value>>>,
    /// uid -> where the live object with that uid is stored.
    uids: HashMap<String, (ResKey, ObjKey)>,
    /// owner uid -> objects whose ownerReferences name it, so collecting dependents does not
    /// scan the whole store.
    dependents: HashMap<String, HashSet<(ResKey, ObjKey)>>,
    history: VecDeque<Arc<Event>>,
    /// When each event of `history` was recorded (the same order).
    recorded: VecDeque<Instant>,
    history_cap: usize,
    /// Events older than this are compacted, as etcd's periodic compaction (kube-apiserver's
    /// `--etcd-compaction-interval`, 5 min) does: what a continue token or a watch from an
    /// older version can no longer be served from. `None`: only the count bounds the history.
    compaction: Option<Duration>,
    /// Events at or below this version have left the history.
    compacted: u64,
    uid_seq: u64,
    uid_seed: u64,
}

impl Inner {
    /// Whether an event recorded `at` has been compacted by `now`.
    fn expired(&self, at: Instant, now: Instant) -> bool {
        self.compaction
            .is_some_and(|interval| now.saturating_duration_since(at) > interval)
    }
}

pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Why a watch cannot start from the version it asked for.
#[derive(Debug, PartialEq)]
pub struct TooOld {
    pub requested: u64,
    pub oldest: u64,
}

pub struct Store {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Event>>,
}

impl Store {
    /// Compacts the changes older than `interval` (besides the count bound).
    pub fn compacting_after(self, interval: Duration) -> Self {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .compaction = Some(interval);
        self
    }

    pub fn new(history_cap: usize, fanout_buffer: usize) -> Self {
        let (tx, _) = broadcast::channel(fanout_buffer.max(16));
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x5eed);
        let inner = Inner {
            history_cap: history_cap.max(1),
            uid_seed: seed,
            rv: 1,
            ..Inner::default()
        };
        Self {
            inner: Mutex::new(inner),
            tx,
        }
    }

    /// Derive uids from `seed` instead of the start time, so a seeded run names its objects
    /// the same every time.
    pub fn seed_uids(&self, seed: u64) {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .uid_seed = seed;
    }

    /// Lock the store for one operation. A poisoned lock (a panic mid-write) still holds
    /// consistent maps because every write is a single insert/remove, so recover it.
    pub fn lock(&self) -> Locked<'_> {
        let guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Locked {
            guard,
            tx: &self.tx,
            dry_run: false,
            field_validation: FieldValidation::Ignore,
            warnings: None,
            field_manager: None,
            admission: None,
        }
    }

    /// Lock for a `dryRun=All` request: the same checks run, nothing is stored or announced.
    pub fn lock_dry_run(&self) -> Locked<'_> {
        let mut l = self.lock();
        l.dry_run = true;
        l
    }

    pub fn subscribe_locked(&self, _proof: &Locked<'_>) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
}

/// The `fieldValidation` of a write: what becomes of fields the kind's schema does not know.
/// A real server's default (no parameter) is `Warn`; kubectl sends `Strict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    /// Pruned silently.
    Ignore,
    /// Pruned, each named in a `Warning` header of the answer.
    Warn,
    /// Refused (400 `strict decoding error`).
    Strict,
}

impl FieldValidation {
    /// The query parameter's value; anything but `Strict` and `Ignore` warns.
    pub fn from_query(value: Option<&str>) -> Self {
        match value {
            Some("Strict") => Self::Strict,
            Some("Ignore") => Self::Ignore,
            _ => Self::Warn,
        }
    }
}

/// The warnings of one request, shared between its store lock and its answer.
pub type Warnings = Arc<Mutex<Vec<String>>>;

/// A held store lock with the write operations that keep history and watchers in step.
pub struct Locked<'a> {
    guard: MutexGuard<'a, Inner>,
    tx: &'a broadcast::Sender<Arc<Event>>,
    dry_run: bool,
    /// `fieldValidation` of the request: unknown fields pruned silently, pruned with a
    /// warning, or refused.
    field_validation: FieldValidation,
    /// Where the warnings of the request go (its `Warning` headers).
    warnings: Option<Warnings>,
    /// `fieldManager` of a non-apply write, recorded in managedFields as an Update.
    field_manager: Option<String>,
    /// Who writes, for the admission policies; `None` for the sim's own components.
    admission: Option<Arc<Requester>>,
}

impl Locked<'_> {
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// Per-request write options carried with the lock: how unknown fields are treated, and
    /// where the warnings go.
    pub fn set_field_validation(&mut self, mode: FieldValidation, warnings: Warnings) {
        self.field_validation = mode;
        self.warnings = Some(warnings);
    }

    pub fn field_validation(&self) -> FieldValidation {
        self.field_validation
    }

    /// `fieldValidation=Strict`: unknown fields are refused rather than pruned.
    pub fn strict_fields(&self) -> bool {
        self.field_validation == FieldValidation::Strict
    }

    /// Record a warning for the request's answer (nothing for the components' own writes).
    pub fn warn(&self, message: String) {
        if let Some(w) = &self.warnings {
            let mut w = w.lock().unwrap_or_else(|p| p.into_inner());
            if !w.contains(&message) {
                w.push(message);
            }
        }
    }

    pub fn set_field_manager(&mut self, manager: Option<String>) {
        self.field_manager = manager;
    }

    pub fn field_manager(&self) -> Option<&str> {
        self.field_manager.as_deref()
    }

    /// The requester whose writes through this lock the admission policies judge.
    pub fn set_admission_requester(&mut self, requester: Arc<Requester>) {
        self.admission = Some(requester);
    }

    pub fn admission_requester(&self) -> Option<Arc<Requester>> {
        self.admission.clone()
    }

    pub fn current_rv(&self) -> u64 {
        self.guard.rv
    }

    pub fn get(&self, res: &ResKey, key: &ObjKey) -> Option<Arc<Value>> {
        self.guard.tables.get(res).and_then(|t| t.get(key)).cloned()
    }

    /// The stored object with this uid, if it is alive.
    pub fn locate(&self, uid: &str) -> Option<(ResKey, ObjKey, Arc<Value>)> {
        let (res, key) = self.guard.uids.get(uid)?;
        self.get(res, key).map(|o| (res.clone(), key.clone(), o))
    }

    pub fn uid_alive(&self, uid: &str) -> bool {
        self.guard.uids.contains_key(uid)
    }

    /// Objects of one resource, optionally of one namespace, in key order.
    pub fn list(&self, res: &ResKey, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(table) = self.guard.tables.get(res) else {
            return Vec::new();
        };
        match namespace {
            None => table.values().cloned().collect(),
            Some(ns) => table
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, v)| v.clone())
                .collect(),
        }
    }

    /// Objects after `after` (exclusive) in key order, for paging.
    pub fn list_after(
        &self,
        res: &ResKey,
        namespace: Option<&str>,
        after: &ObjKey,
    ) -> Vec<Arc<Value>> {
        let Some(table) = self.guard.tables.get(res) else {
            return Vec::new();
        };
        use std::ops::Bound::{Excluded, Unbounded};
        table
            .range((Excluded(after.clone()), Unbounded))
            .take_while(|((n, _), _)| namespace.is_none_or(|ns| n == ns))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Objects after `after` (exclusive) in key order as they were at `rv`: the page of a
    /// paged list that began at `rv`, served from that snapshot as a real server serves every
    /// page from its first page's revision. The changes since `rv` are undone newest first;
    /// `TooOld` once the history no longer reaches back to `rv`.
    pub fn list_after_at(
        &self,
        res: &ResKey,
        namespace: Option<&str>,
        after: &ObjKey,
        rv: u64,
    ) -> Result<Vec<Arc<Value>>, TooOld> {
        use std::ops::Bound::{Excluded, Unbounded};
        let changes = self.events_since(rv)?;
        let mut snapshot: BTreeMap<ObjKey, Arc<Value>> = self
            .guard
            .tables
            .get(res)
            .map(|table| {
                table
                    .range((Excluded(after.clone()), Unbounded))
                    .take_while(|((n, _), _)| namespace.is_none_or(|ns| n == ns))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        for change in changes.iter().rev() {
            if change.res != *res || namespace.is_some_and(|ns| change.namespace != ns) {
                continue;
            }
            let name = change
                .object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let key = (change.namespace.clone(), name.to_string());
            if key <= *after {
                continue;
            }
            // What the key held before this change: nothing before a creation.
            let before = match change.kind {
                EventType::Deleted => {
                    Some(change.previous.clone().unwrap_or(change.object.clone()))
                }
                _ => change.previous.clone(),
            };
            match before {
                Some(object) => snapshot.insert(key, object),
                None => snapshot.remove(&key),
            };
        }
        Ok(snapshot.into_values().collect())
    }

    /// All resource tables holding at least one object of `namespace`.
    pub fn keys_in_namespace(&self, namespace: &str) -> Vec<(ResKey, ObjKey)> {
        let mut out = Vec::new();
        for (res, table) in &self.guard.tables {
            for (key, _) in table
                .range((namespace.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == namespace)
            {
                out.push((res.clone(), key.clone()));
            }
        }
        out
    }

    /// Every object whose ownerReferences name `owner_uid`.
    pub fn dependents_of(&self, owner_uid: &str) -> Vec<(ResKey, ObjKey, Arc<Value>)> {
        let Some(keys) = self.guard.dependents.get(owner_uid) else {
            return Vec::new();
        };
        let mut out: Vec<(ResKey, ObjKey, Arc<Value>)> = keys
            .iter()
            .filter_map(|(res, key)| self.get(res, key).map(|o| (res.clone(), key.clone(), o)))
            .collect();
        // Deterministic order, as a scan of the sorted tables would give.
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        out
    }

    fn index_owners(&mut self, res: &ResKey, key: &ObjKey, obj: &Value, add: bool) {
        for uid in owner_uids(obj) {
            if add {
                self.guard
                    .dependents
                    .entry(uid)
                    .or_default()
                    .insert((res.clone(), key.clone()));
            } else if let Some(set) = self.guard.dependents.get_mut(&uid) {
                set.remove(&(res.clone(), key.clone()));
                if set.is_empty() {
                    self.guard.dependents.remove(&uid);
                }
            }
        }
    }

    /// The next resourceVersion, to stamp an object before `put`.
    pub fn next_rv(&mut self) -> u64 {
        if self.dry_run {
            return self.guard.rv + 1;
        }
        self.guard.rv += 1;
        self.guard.rv
    }

    /// A fresh, unique uid in the UUID text format.
    pub fn new_uid(&mut self) -> String {
        self.guard.uid_seq += 1;
        let x = self.guard.uid_seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.guard.uid_seq;
        let y = self.guard.uid_seq;
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            (x >> 32) as u32,
            (x >> 16) as u16,
            (x & 0xfff) as u16,
            (y >> 48) & 0xfff,
            y & 0xffff_ffff_ffff
        )
    }

    /// Store `object` (already stamped with `rv`) and tell the watchers.
    pub fn put(
        &mut self,
        res: &ResKey,
        key: ObjKey,
        object: Value,
        rv: u64,
        kind: EventType,
    ) -> Arc<Value> {
        let object = Arc::new(object);
        if self.dry_run {
            return object;
        }
        if let Some(uid) = object.pointer("/metadata/uid").and_then(Value::as_str) {
            self.guard
                .uids
                .insert(uid.to_string(), (res.clone(), key.clone()));
        }
        let namespace = key.0.clone();
        let previous = self
            .guard
            .tables
            .entry(res.clone())
            .or_default()
            .insert(key.clone(), object.clone());
        if let Some(p) = &previous {
            self.index_owners(res, &key, p, false);
        }
        self.index_owners(res, &key, &object, true);
        self.record(Event {
            rv,
            res: res.clone(),
            namespace,
            kind,
            object: object.clone(),
            previous,
        });
        object
    }

    /// Remove an object; `last_state` (stamped with `rv`) is what the DELETED event carries.
    pub fn remove(&mut self, res: &ResKey, key: &ObjKey, last_state: Value, rv: u64) -> Arc<Value> {
        if self.dry_run {
            return Arc::new(last_state);
        }
        let stored = self.guard.tables.get_mut(res).and_then(|t| t.remove(key));
        if let Some(p) = &stored {
            self.index_owners(res, key, p, false);
        }
        if let Some(uid) = last_state.pointer("/metadata/uid").and_then(Value::as_str) {
            self.guard.uids.remove(uid);
        }
        let object = Arc::new(last_state);
        self.record(Event {
            rv,
            res: res.clone(),
            namespace: key.0.clone(),
            kind: EventType::Deleted,
            object: object.clone(),
            // The stored state as it was, for a snapshot read from before the deletion.
            previous: stored,
        });
        object
    }

    fn record(&mut self, event: Event) {
        let event = Arc::new(event);
        let inner = &mut *self.guard;
        let now = Instant::now();
        while inner.history.len() >= inner.history_cap
            || inner
                .recorded
                .front()
                .is_some_and(|at| inner.expired(*at, now))
        {
            let Some(old) = inner.history.pop_front() else {
                break;
            };
            inner.recorded.pop_front();
            inner.compacted = old.rv;
        }
        inner.history.push_back(event.clone());
        inner.recorded.push_back(now);
        // No receivers is normal (nobody watching).
        let _ = self.tx.send(event);
    }

    /// Events after `from`, or `TooOld` if the history no longer reaches back that far.
    pub fn events_since(&self, from: u64) -> Result<Vec<Arc<Event>>, TooOld> {
        let inner = &*self.guard;
        // Compacted since the last write too: a quiet server compacts all the same.
        let now = Instant::now();
        let expired = inner.recorded.partition_point(|at| inner.expired(*at, now));
        let compacted = match expired {
            0 => inner.compacted,
            n => inner.history[n - 1].rv.max(inner.compacted),
        };
        if from < compacted {
            return Err(TooOld {
                requested: from,
                oldest: compacted + 1,
            });
        }
        let start = inner.history.partition_point(|e| e.rv <= from);
        Ok(inner.history.iter().skip(start).cloned().collect())
    }

    /// Forget all history (used by the "force 410" fault and by tests).
    pub fn compact_all(&mut self) {
        let inner = &mut *self.guard;
        inner.history.clear();
        inner.recorded.clear();
        inner.compacted = inner.rv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res() -> ResKey {
        (String::new(), "configmaps".into())
    }

    /// Adds ConfigMap `c<i>` in namespace `ns`; returns its version.
    fn add_config_map(l: &mut Locked<'_>, i: usize) -> u64 {
        let rv = l.next_rv();
        l.put(
            &res(),
            ("ns".into(), format!("c{i}")),
            json!({"metadata": {"uid": format!("u{i}")}}),
            rv,
            EventType::Added,
        );
        rv
    }

    #[tokio::test(start_paused = true)]
    async fn changes_older_than_the_compaction_interval_are_gone_whatever_their_number() {
        let store = Store::new(1_000, 16).compacting_after(Duration::from_secs(300));
        let first = add_config_map(&mut store.lock(), 0);
        tokio::time::advance(Duration::from_secs(200)).await;
        let second = add_config_map(&mut store.lock(), 1);
        assert_eq!(store.lock().events_since(first - 1).unwrap().len(), 2);
        // 301 s after the first change, with no write since: it is compacted, the second not.
        tokio::time::advance(Duration::from_secs(101)).await;
        let l = store.lock();
        assert!(l.events_since(first - 1).is_err());
        assert_eq!(l.events_since(first).unwrap().len(), 1);
        assert_eq!(l.events_since(second).unwrap().len(), 0);
    }

    #[test]
    fn history_resumes_and_reports_too_old_after_compaction() {
        let store = Store::new(2, 16);
        let mut l = store.lock();
        let rvs: Vec<u64> = (0..3).map(|i| add_config_map(&mut l, i)).collect();
        let since = l.events_since(rvs[1]).unwrap();
        assert_eq!(since.len(), 1);
        assert_eq!(since[0].rv, rvs[2]);
        assert!(l.events_since(rvs[0] - 1).is_err());
    }

    #[test]
    fn namespace_listing_stays_inside_the_namespace() {
        let store = Store::new(10, 16);
        let mut l = store.lock();
        for (ns, name) in [("a", "x"), ("b", "y"), ("b", "z"), ("c", "w")] {
            let rv = l.next_rv();
            l.put(
                &res(),
                (ns.into(), name.into()),
                json!({}),
                rv,
                EventType::Added,
            );
        }
        assert_eq!(l.list(&res(), Some("b")).len(), 2);
        assert_eq!(l.list(&res(), None).len(), 4);
        assert_eq!(
            l.list_after(&res(), Some("b"), &("b".into(), "y".into()))
                .len(),
            1
        );
        assert_eq!(l.keys_in_namespace("c").len(), 1);
    }

    #[test]
    fn dependents_follow_owner_references_through_updates_and_removal() {
        let store = Store::new(10, 16);
        let mut l = store.lock();
        let owned = |uid: &str| json!({"metadata": {"ownerReferences": [{"uid": uid}]}});
        let key: ObjKey = ("ns".into(), "child".into());
        let rv = l.next_rv();
        l.put(&res(), key.clone(), owned("a"), rv, EventType::Added);
        assert_eq!(l.dependents_of("a").len(), 1);
        let rv = l.next_rv();
        l.put(&res(), key.clone(), owned("b"), rv, EventType::Modified);
        assert!(l.dependents_of("a").is_empty());
        assert_eq!(l.dependents_of("b").len(), 1);
        let rv = l.next_rv();
        l.remove(&res(), &key, owned("b"), rv);
        assert!(l.dependents_of("b").is_empty());
    }

    #[test]
    fn uids_are_unique() {
        let store = Store::new(10, 16);
        let mut l = store.lock();
        let a = l.new_uid();
        let b = l.new_uid();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
    }
}
