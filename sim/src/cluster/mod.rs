//! The simulated cluster: components that act on the store as a cluster's controllers, scheduler
//! and kubelets do, so Deployments get Pods, Pods run, Jobs finish.
//!
//! Components run inside the server process on its store (not over HTTP), so the API's fault
//! rules and request counters never see them, and their writes are cheap. Each write still goes
//! through [`crate::apiserver::ops`]: it gets the next resourceVersion, a watch event, generation and
//! managedFields like any client write.
//!
//! # Adding a component
//!
//! 1. Implement [`Component`] in a file of this directory: its `name` (the field manager of its
//!    writes, e.g. `kube-scheduler`), the `primary` kind it reconciles, the `secondary` kinds
//!    whose changes should wake it, and `map` from such a change to the primary keys to
//!    reconcile (the default follows the changed object's controller ownerReference).
//! 2. `reconcile` reads and writes through [`Ctx::tx`] (one store lock for the whole
//!    read-modify-write, so no conflicts), records Events with [`Tx::event`], asks
//!    [`Ctx::fault`] whether a workload fault acts on an object, draws random choices from
//!    [`Ctx::rng_for`] with its own stream name (so a seed reproduces them), and answers
//!    [`Next::After`] to be called again later (timers: start delays, deadlines, back-offs).
//!    Keep `map` cheap: it runs for every change of the watched kinds (index what you need
//!    rather than listing a namespace per change).
//! 3. Objects that exist from the start (Nodes, a StorageClass) are created in `setup`, which runs
//!    before the server answers its first request.
//! 4. Add it to [`components`] (network components: chain their own list there).
//!
//! A runner per component subscribes to the store's change stream, batches and de-duplicates
//! keys, and resyncs (every primary object) when it falls behind or the workload faults change.

pub(crate) mod admission;
pub(crate) mod cnpg;
mod deployment;
mod endpoints;
mod image_rules;
mod job;
mod kubelet;
pub(crate) mod net;
mod nodes;
pub mod pki;
pub(crate) mod quota;
mod replicaset;
pub(crate) mod root_ca;
mod scheduler;
pub(crate) mod secret_data;
mod storage;
mod tx;
pub(crate) mod util;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::Instant;

use crate::apiserver::error::ApiError;
use crate::apiserver::server::Server;
use crate::store::objects::{Event, ObjKey, ResKey};

pub use crate::apiserver::workload_faults::{WorkloadFault, WorkloadFaultRule, WorkloadFaults};
pub use tx::{EventKind, Tx};

/// A kind a component reads or writes, at the version it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

impl Kind {
    pub const fn new(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        plural: &'static str,
    ) -> Self {
        Self {
            group,
            version,
            kind,
            plural,
        }
    }

    pub fn res(&self) -> ResKey {
        (self.group.to_string(), self.plural.to_string())
    }

    pub fn is(&self, res: &ResKey) -> bool {
        res.0 == self.group && res.1 == self.plural
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

pub const NAMESPACES: Kind = Kind::new("", "v1", "Namespace", "namespaces");
pub const NODES: Kind = Kind::new("", "v1", "Node", "nodes");
pub const PODS: Kind = Kind::new("", "v1", "Pod", "pods");
pub const SERVICES: Kind = Kind::new("", "v1", "Service", "services");
pub const ENDPOINTS: Kind = Kind::new("", "v1", "Endpoints", "endpoints");
pub const SECRETS: Kind = Kind::new("", "v1", "Secret", "secrets");
pub const CONFIGMAPS: Kind = Kind::new("", "v1", "ConfigMap", "configmaps");
pub const EVENTS: Kind = Kind::new("", "v1", "Event", "events");
pub const DEPLOYMENTS: Kind = Kind::new("apps", "v1", "Deployment", "deployments");
pub const REPLICASETS: Kind = Kind::new("apps", "v1", "ReplicaSet", "replicasets");
pub const JOBS: Kind = Kind::new("batch", "v1", "Job", "jobs");

/// What a reconcile wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Done,
    /// Reconcile this key again after the delay (unless a change wakes it earlier).
    After(Duration),
}

impl Next {
    /// The earlier of two requests (`Done` is "never").
    pub fn min(self, other: Next) -> Next {
        match (self, other) {
            (Next::Done, o) | (o, Next::Done) => o,
            (Next::After(a), Next::After(b)) => Next::After(a.min(b)),
        }
    }
}

/// One simulated component. See the module documentation for how to add one.
pub trait Component: Send + Sync + 'static {
    /// The field manager of its writes and the name in logs (`kube-scheduler`, `kubelet`).
    fn name(&self) -> &'static str;
    /// The kind `reconcile` is called for.
    fn primary(&self) -> Kind;
    /// Other kinds whose changes wake it (through `map`).
    fn secondary(&self) -> Vec<Kind> {
        Vec::new()
    }
    /// Primary keys to reconcile after `event` (of the primary or a secondary kind).
    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        default_map(self.primary(), ctx, event)
    }
    /// Create what exists from the start; runs before the server answers requests.
    fn setup(&self, _ctx: &Ctx) -> Result<(), ApiError> {
        Ok(())
    }
    /// Bring the primary object `key` (perhaps deleted) one step toward what the real
    /// component would make of it.
    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError>;
}

/// `(namespace, name)` of a stored object.
pub fn key_of(obj: &Value) -> ObjKey {
    let s = |f: &str| {
        obj.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (s("namespace"), s("name"))
}

/// The changed object itself when it is of the primary kind, else the owner its controller
/// ownerReference names when that owner is of the primary kind.
pub fn default_map(primary: Kind, _ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
    if primary.is(&event.res) {
        return vec![key_of(&event.object)];
    }
    controller_of(&event.object, primary)
        .map(|name| vec![(event.namespace.clone(), name)])
        .unwrap_or_default()
}

/// The name of the controller ownerReference of `obj` when it is of `kind`.
pub fn controller_of(obj: &Value, kind: Kind) -> Option<String> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && r.get("kind").and_then(Value::as_str) == Some(kind.kind)
                && r.get("apiVersion").and_then(Value::as_str) == Some(&kind.api_version())
        })
        .and_then(|r| r.get("name")?.as_str().map(str::to_string))
}

/// Wall-clock time as the server stamps it (timestamps, deadlines in status fields).
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock;

impl Clock {
    pub fn now(&self) -> jiff::Timestamp {
        crate::apiserver::ops::now()
    }

    /// RFC 3339 with second precision, as status timestamps are written.
    pub fn rfc3339(&self) -> String {
        crate::apiserver::ops::now_rfc3339()
    }

    /// Time elapsed since an RFC 3339 timestamp (zero if it is in the future or unreadable).
    pub fn since(&self, stamp: &str) -> Duration {
        stamp
            .parse::<jiff::Timestamp>()
            .ok()
            .and_then(|t| Duration::try_from(self.now().duration_since(t)).ok())
            .unwrap_or_default()
    }
}

/// What every component reconciles with: the server, the clock, the seeded random source.
pub struct Ctx {
    pub server: Arc<Server>,
    pub clock: Clock,
    seed: u64,
    /// One random stream per user, so one component's draws do not shift another's when
    /// their work interleaves differently.
    rngs: Mutex<HashMap<&'static str, StdRng>>,
    /// Recorded Events by (involved uid, type, reason, message), so a repeat bumps `count`.
    pub(crate) events: Mutex<HashMap<tx::EventKey, ObjKey>>,
    pub(crate) admission: admission::State,
}

impl Ctx {
    pub fn new(server: Arc<Server>) -> Self {
        let seed = server.config.seed.unwrap_or_else(rand::random);
        Self {
            server,
            clock: Clock,
            seed,
            rngs: Mutex::new(HashMap::new()),
            events: Mutex::new(HashMap::new()),
            admission: admission::State::default(),
        }
    }

    /// Lock the store for one read-modify-write; writes are recorded under `manager`.
    pub fn tx(&self, manager: &str) -> Tx<'_> {
        Tx::new(self, manager)
    }

    /// Draw from the shared seeded random stream (`SimConfig::seed`). Prefer [`Ctx::rng_for`]
    /// with the component's name: draws there do not depend on other components' timing.
    pub fn rng<T>(&self, f: impl FnOnce(&mut StdRng) -> T) -> T {
        self.rng_for("shared", f)
    }

    /// Draw from the seeded random stream `stream` (`SimConfig::seed` mixed with the name).
    pub fn rng_for<T>(&self, stream: &'static str, f: impl FnOnce(&mut StdRng) -> T) -> T {
        let mut rngs = self.rngs.lock().unwrap_or_else(|p| p.into_inner());
        let rng = rngs
            .entry(stream)
            .or_insert_with(|| StdRng::seed_from_u64(self.seed ^ util::fnv64(stream.as_bytes())));
        f(rng)
    }

    pub fn faults(&self) -> &WorkloadFaults {
        &self.server.workload_faults
    }

    /// Is a rule of `fault` acting on `obj`?
    pub fn fault(&self, fault: WorkloadFault, obj: &Value) -> bool {
        self.server.workload_faults.active(fault, obj)
    }
}

/// Every component, in start order.
pub fn components() -> Vec<Arc<dyn Component>> {
    let mut all = core_components();
    all.extend(net::components());
    all.extend(cnpg::components());
    all
}

/// Nodes, scheduler, kubelet, workload controllers, quota, services, storage.
fn core_components() -> Vec<Arc<dyn Component>> {
    vec![
        Arc::new(nodes::Nodes),
        Arc::new(scheduler::Scheduler::default()),
        Arc::new(kubelet::Kubelet::default()),
        Arc::new(storage::Storage),
        Arc::new(replicaset::ReplicaSets),
        Arc::new(deployment::Deployments),
        Arc::new(job::Jobs),
        Arc::new(endpoints::Endpoints::default()),
        Arc::new(quota::QuotaController),
        Arc::new(root_ca::RootCa::default()),
    ]
}

/// The running simulation: its context and components.
pub struct Cluster {
    ctx: Arc<Ctx>,
    components: Vec<Arc<dyn Component>>,
}

impl Cluster {
    /// Build the components and run their `setup` (before the server answers requests).
    pub fn setup(server: Arc<Server>) -> Result<Self, ApiError> {
        let ctx = Arc::new(Ctx::new(server.clone()));
        // Admission and graceful deletion act from now on.
        let _ = server.cluster.set(ctx.clone());
        let components = components();
        for c in &components {
            c.setup(&ctx)?;
        }
        Ok(Self { ctx, components })
    }

    /// Start one runner task per component on the current runtime; they end with it.
    pub fn spawn(&self) {
        for c in &self.components {
            tokio::spawn(run(self.ctx.clone(), c.clone()));
        }
    }
}

/// Keys waiting for their time, earliest first; `due` keeps each key's earliest time so a
/// later request for the same key adds nothing.
#[derive(Default)]
struct Timers {
    heap: BinaryHeap<Reverse<(Instant, ObjKey)>>,
    due: HashMap<ObjKey, Instant>,
}

impl Timers {
    fn add(&mut self, key: ObjKey, at: Instant) {
        match self.due.get(&key) {
            Some(t) if *t <= at => {}
            _ => {
                self.due.insert(key.clone(), at);
                self.heap.push(Reverse((at, key)));
            }
        }
    }

    fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// Move every key that is due into `queue`.
    fn pop_due(&mut self, now: Instant, queue: &mut BTreeSet<ObjKey>) {
        while let Some(Reverse((t, _))) = self.heap.peek() {
            if *t > now {
                break;
            }
            let Some(Reverse((t, key))) = self.heap.pop() else {
                break;
            };
            if self.due.get(&key) == Some(&t) {
                self.due.remove(&key);
                queue.insert(key);
            }
        }
    }
}

/// Every primary key, and the live subscription started under the same lock (no gap).
fn resync(
    ctx: &Ctx,
    primary: Kind,
    queue: &mut BTreeSet<ObjKey>,
) -> tokio::sync::broadcast::Receiver<Arc<Event>> {
    let l = ctx.server.store.lock();
    for obj in l.list(&primary.res(), None) {
        queue.insert(key_of(&obj));
    }
    ctx.server.store.subscribe_locked(&l)
}

/// Reconciles between yields, so a resync of 10k objects does not starve the API.
const BATCH: usize = 64;

async fn run(ctx: Arc<Ctx>, comp: Arc<dyn Component>) {
    let primary = comp.primary();
    let watched: HashSet<ResKey> = std::iter::once(primary)
        .chain(comp.secondary())
        .map(|k| k.res())
        .collect();
    let mut queue = BTreeSet::new();
    let mut timers = Timers::default();
    let mut rx = resync(&ctx, primary, &mut queue);
    let mut faults = ctx.faults().subscribe();
    loop {
        let mut done = 0;
        while let Some(key) = queue.pop_first() {
            match comp.reconcile(&ctx, &key) {
                Ok(Next::Done) => {}
                Ok(Next::After(d)) => timers.add(key, Instant::now() + d),
                Err(e) => {
                    tracing::debug!(component = comp.name(), ?key, error = %e, "reconcile failed; retrying");
                    timers.add(key, Instant::now() + Duration::from_secs(1));
                }
            }
            done += 1;
            if done % BATCH == 0 {
                tokio::task::yield_now().await;
                drain(&ctx, &*comp, &watched, &mut rx, &mut queue, primary);
            }
        }
        let wake = timers
            .next()
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        // A fixed priority rather than tokio's random pick: an event and a fault change (or a
        // timer) ready at once must be taken in the same order in every run of a seed.
        tokio::select! {
            biased;
            ev = rx.recv() => match ev {
                Ok(ev) => {
                    if watched.contains(&ev.res) {
                        queue.extend(comp.map(&ctx, &ev));
                    }
                    drain(&ctx, &*comp, &watched, &mut rx, &mut queue, primary);
                }
                Err(RecvError::Lagged(_)) => rx = resync(&ctx, primary, &mut queue),
                Err(RecvError::Closed) => return,
            },
            changed = faults.recv() => {
                if matches!(changed, Err(RecvError::Closed)) {
                    return;
                }
                // Changes made at once (a rule cleared, another added) make one resync.
                while !matches!(faults.try_recv(), Err(TryRecvError::Empty | TryRecvError::Closed)) {}
                rx = resync(&ctx, primary, &mut queue);
            }
            _ = tokio::time::sleep_until(wake) => {}
        }
        timers.pop_due(Instant::now(), &mut queue);
    }
}

/// Take every event already waiting, so a burst of changes becomes one reconcile per key.
fn drain(
    ctx: &Ctx,
    comp: &dyn Component,
    watched: &HashSet<ResKey>,
    rx: &mut tokio::sync::broadcast::Receiver<Arc<Event>>,
    queue: &mut BTreeSet<ObjKey>,
    primary: Kind,
) {
    loop {
        match rx.try_recv() {
            Ok(ev) => {
                if watched.contains(&ev.res) {
                    queue.extend(comp.map(ctx, &ev));
                }
            }
            Err(TryRecvError::Lagged(_)) => {
                *rx = resync(ctx, primary, queue);
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timers_keep_the_earliest_time_per_key() {
        let mut t = Timers::default();
        let now = Instant::now();
        let k = ("ns".to_string(), "a".to_string());
        t.add(k.clone(), now + Duration::from_secs(5));
        t.add(k.clone(), now + Duration::from_secs(1));
        t.add(k.clone(), now + Duration::from_secs(9));
        assert_eq!(t.next(), Some(now + Duration::from_secs(1)));
        let mut q = BTreeSet::new();
        t.pop_due(now, &mut q);
        assert!(q.is_empty());
        t.pop_due(now + Duration::from_secs(2), &mut q);
        assert_eq!(q.len(), 1);
        q.clear();
        t.pop_due(now + Duration::from_secs(10), &mut q);
        assert!(q.is_empty(), "the superseded later entry is dropped");
    }

    #[test]
    fn controller_owner_of_the_primary_kind_is_found() {
        let pod = json!({"metadata": {"namespace": "a", "name": "p", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]}});
        assert_eq!(controller_of(&pod, REPLICASETS).as_deref(), Some("rs"));
        assert_eq!(controller_of(&pod, DEPLOYMENTS), None);
    }

    #[test]
    fn next_min_prefers_the_earlier_wake() {
        let a = Next::After(Duration::from_secs(1));
        assert_eq!(Next::Done.min(a), a);
        assert_eq!(a.min(Next::After(Duration::from_secs(3))), a);
        assert_eq!(Next::Done.min(Next::Done), Next::Done);
    }

    #[test]
    fn clock_measures_time_since_a_stamp() {
        let c = Clock;
        assert!(c.since("2000-01-01T00:00:00Z") > Duration::from_secs(1));
        assert_eq!(c.since("not a time"), Duration::ZERO);
    }
}
