//! One schedule, run: the sim and the operator on one current-thread runtime with a paused,
//! auto-advancing clock, the driver acting the schedule out, an observer sampling the store.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use pgtoolbox_operator::cli::register_all_with;
use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::actors::access_request::REQUEST_LABEL;
use pgtoolbox_operator::testing::children::OperatorCaches;
use pgtoolbox_operator::testing::supervisor::{
    Clock, Operator, OperatorBuilder, OperatorSettings, random,
};
use pgtoolbox_sim::{InProcessSim, SimConfig};
use serde_json::{Value, json};

use crate::logs::Captured;
use crate::schedule::{Fault, Mix, Step};
use crate::transport::{Log, Transport, Who};

pub const NS: &str = "team-a";
pub const ROLE: &str = "cnpg-viewer";
/// [`ROLE`] as an installation has it (a request for a missing one says ClusterRoleNotFound).
const ROLE_MANIFEST: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n\
    metadata:\n  name: cnpg-viewer\nrules:\n- apiGroups: [postgresql.cnpg.io]\n  \
    resources: [clusters]\n  verbs: [get]\n";
pub const SUBJECT: &str = "alice";
/// The instant every schedule starts at, so timestamps repeat from run to run.
pub const EPOCH: &str = "2030-01-01T00:00:00Z";
pub const ORPHAN_GRACE: Duration = Duration::from_secs(60);
/// After the last step and the faults, the system has this long to settle: longer than the
/// longest retry backoff (5 min, up to twice that with jitter) a burst of failures can leave.
pub const SETTLE: Duration = Duration::from_secs(11 * 60);
/// The longest quiet window checked at the end.
pub const QUIET: Duration = Duration::from_secs(3 * 60);
const SAMPLE: Duration = Duration::from_secs(2);

/// The stored objects at one instant.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub at_ms: u64,
    pub requests: Vec<Arc<Value>>,
    pub bindings: Vec<Arc<Value>>,
    pub clusters: Vec<String>,
    /// Consoles, PgAdmins and EvidenceAgents (workload schedules).
    pub workloads: Vec<Arc<Value>>,
    /// What the workload oracle reads: the ObjectStore, the grant, the credential Secret.
    pub inputs: Vec<Arc<Value>>,
    /// The Pods of the workloads' namespace (whether one started while a fault was on).
    pub pods: Vec<Arc<Value>>,
    /// The PgAdmins' upgrade backup Jobs, as the sim's Job controller left them.
    pub jobs: Vec<Arc<Value>>,
    /// The Ingresses, Routes and HTTPRoutes of the workloads' namespace.
    pub exposures: Vec<Arc<Value>>,
}

/// What a finished schedule leaves for the checkers.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub log: Vec<crate::transport::Entry>,
    pub snapshots: Vec<Snapshot>,
    /// Windows (ms) in which the operator could not act: down, or a 403 in force.
    pub blocked: Vec<(u64, u64)>,
    /// Requests (by name) whose RoleBinding someone tampered with or bound without approval.
    pub tampered: Vec<String>,
    pub bound: Vec<String>,
    /// When the settle phase ended (the final snapshot) and the quiet window closed.
    pub settled_ms: u64,
    pub quiet_until_ms: u64,
    pub mix: Option<Mix>,
    /// The CloudNativePG release the simulated cluster ran.
    pub cnpg: crate::schedule::Cnpg,
    /// The simulated cluster's faults still on at the end (workload schedules).
    pub workload_faults: Vec<pgtoolbox_sim::cluster::WorkloadFaultRule>,
    /// Each of those with when (ms) it was last turned on.
    pub fault_since: Vec<(pgtoolbox_sim::cluster::WorkloadFaultRule, u64)>,
    /// Every fault of the simulated cluster turned on at some point.
    pub faults_ever: Vec<pgtoolbox_sim::cluster::WorkloadFaultRule>,
    /// The operator's log lines (every incarnation) and the Secret values it must not show.
    pub log_lines: Vec<String>,
    pub secret_values: Vec<String>,
    /// `(incarnation, ms)` at which each replica process ended (two-replica schedules).
    pub ended: Vec<(u32, u64)>,
    /// What the operator held once the quiet window closed: `(kind, what, namespace/name)` for
    /// live and hibernated actors, restarts, armed timers and reference-index registrations.
    pub held: Vec<(String, &'static str, String)>,
    /// The objects of the operator's kinds that existed then: `(kind, namespace/name)`.
    pub existing: Vec<(String, String)>,
    /// What each incarnation's caches held when it stopped (`OperatorCaches::dump`).
    pub cache_dumps: Vec<String>,
    /// What the kind supervisors held of each object of their kinds (decoded or packed), once
    /// the quiet window closed.
    pub supervisor_copies: Vec<String>,
    /// The Secret values the operator wrote itself (its CA, the agents' serving keys): no cache
    /// may hold them either (a violation names them as the operator's own).
    pub own_secret_values: Vec<String>,
}

/// Knobs a test turns; the defaults are what CI runs.
#[derive(Clone, Debug)]
pub struct Options {
    pub steps: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self { steps: 24 }
    }
}

pub fn epoch() -> Timestamp {
    EPOCH.parse().unwrap_or(Timestamp::UNIX_EPOCH)
}

/// Runs `schedule` from `seed` and returns its history.
pub fn run(seed: u64, mix: Mix, schedule: &[Step], crds: &str) -> History {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    random::seed_thread(Some(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    // kube's watcher draws its backoff jitter from fastrand's thread-local generator.
    fastrand::seed(seed ^ 0x5EED_F00D);
    let captured = Captured::default();
    let mut history = {
        let _logs = tracing::subscriber::set_default(captured.subscriber());
        runtime.block_on(World::run(seed, mix, schedule, crds))
    };
    history.log_lines = captured.lines();
    drop(runtime);
    random::seed_thread(None);
    pgtoolbox_sim::ops::follow_tokio_clock(None);
    history
}

pub(crate) struct World {
    pub(crate) sim: InProcessSim,
    log: Log,
    start: tokio::time::Instant,
    pub(crate) driver: kube::Client,
    pub(crate) seed: u64,
    pub(crate) mix: Mix,
    /// Bumped at every credential written, so each is distinct.
    pub(crate) secret_version: u32,
    operator: Option<(Operator, Arc<AtomicBool>)>,
    shared_actors: Option<pgtoolbox_operator::testing::actors::shared::SharedActors>,
    caches: Option<OperatorCaches>,
    incarnation: Arc<AtomicU32>,
    /// Two replicas electing on a Lease instead of one operator (`crate::leader`).
    replicas: Option<crate::leader::Replicas>,
    blocked: Arc<Mutex<Vec<(u64, u64)>>>,
    ended: Arc<Mutex<Vec<(u32, u64)>>>,
    snapshots: Arc<Mutex<Vec<Snapshot>>>,
    tampered: Vec<String>,
    bound: Vec<String>,
    cache_dumps: Vec<String>,
    /// The kind supervisors' copies of their objects, at the final census.
    supervisor_copies: Vec<String>,
    /// The simulated cluster's faults on, with when each was turned on.
    pub(crate) fault_since: Vec<(pgtoolbox_sim::cluster::WorkloadFaultRule, u64)>,
    pub(crate) faults_ever: Vec<pgtoolbox_sim::cluster::WorkloadFaultRule>,
}

impl World {
    async fn run(seed: u64, mix: Mix, schedule: &[Step], crds: &str) -> History {
        pgtoolbox_sim::ops::follow_tokio_clock(EPOCH.parse::<jiff::Timestamp>().ok());
        let cnpg = crate::schedule::Cnpg::of(schedule);
        let sim = InProcessSim::start(SimConfig {
            extra_crds: std::iter::once(crds.to_string())
                .chain(crate::workloads::external_crds(cnpg))
                .chain(std::iter::once(ROLE_MANIFEST.to_string()))
                .collect(),
            external_crds: false,
            seed: Some(seed),
            controllers: mix == Mix::Workloads,
            pod_start: Duration::from_secs(2),
            ..SimConfig::default()
        })
        .expect("the in-process sim starts");
        let log = Log::default();
        let start = tokio::time::Instant::now();
        let driver = Transport {
            held_until: Default::default(),
            sim: sim.clone(),
            who: Who::Driver,
            alive: Arc::new(AtomicBool::new(true)),
            log: log.clone(),
            start,
        }
        .client();
        let mut world = World {
            sim,
            log,
            start,
            driver,
            seed,
            mix,
            secret_version: 0,
            operator: None,
            shared_actors: None,
            caches: None,
            incarnation: Arc::default(),
            replicas: None,
            blocked: Arc::default(),
            ended: Arc::default(),
            snapshots: Arc::default(),
            tampered: Vec::new(),
            bound: Vec::new(),
            cache_dumps: Vec::new(),
            supervisor_copies: Vec::new(),
            fault_since: Vec::new(),
            faults_ever: Vec::new(),
        };
        world.setup().await;
        if mix == Mix::Workloads {
            world.setup_workloads().await;
        }
        if crate::leader::runs_two_replicas(schedule) {
            world.start_replicas().await;
        } else {
            world.start_operator().await;
        }
        let observer = tokio::spawn(observe(
            world.sim.clone(),
            mix,
            start,
            world.snapshots.clone(),
        ));
        for step in schedule {
            world.act(step).await;
            world.snapshot();
        }
        // Faults of the API stop (the simulated cluster's stay, for the oracle); a crashed
        // operator is back; the system settles.
        let workload_faults = world.sim.admin().workload_faults();
        world.sim.admin().clear_faults();
        for rule in &workload_faults {
            let _ =
                world
                    .sim
                    .admin()
                    .add_workload_fault(&rule.namespace, &rule.selector, rule.fault);
        }
        world.close_blocked();
        if world.operator.is_none() && world.replicas.is_none() {
            world.start_operator().await;
        }
        tokio::time::sleep(SETTLE).await;
        world.snapshot();
        let settled_ms = world.now_ms();
        let quiet = world.quiet_window();
        tokio::time::sleep(quiet).await;
        world.snapshot();
        observer.abort();
        let quiet_until_ms = world.now_ms();
        let (held, existing) = world.census().await;
        world.crash().await;
        let mut secret_values = crate::logs::secret_values(&world.sim);
        let own_secret_values = crate::logs::own_secret_values(&world.sim);
        // Credentials rotated away or deleted count too.
        secret_values
            .extend((1..=world.secret_version).map(|v| crate::workloads::credential(seed, v)));
        let blocked = world.blocked.lock().map(|b| b.clone()).unwrap_or_default();
        let ended = world.ended.lock().map(|e| e.clone()).unwrap_or_default();
        let snapshots = world
            .snapshots
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        History {
            log: world.log.entries(),
            snapshots,
            blocked,
            tampered: world.tampered,
            bound: world.bound,
            settled_ms,
            quiet_until_ms,
            mix: Some(mix),
            cnpg,
            workload_faults,
            fault_since: world.fault_since.clone(),
            faults_ever: world.faults_ever.clone(),
            log_lines: Vec::new(),
            secret_values,
            held,
            existing,
            ended,
            cache_dumps: world.cache_dumps,
            supervisor_copies: world.supervisor_copies,
            own_secret_values,
        }
    }

    /// What the operator holds per object, and which objects of its kinds exist.
    async fn census(&mut self) -> (Vec<(String, &'static str, String)>, Vec<(String, String)>) {
        // With two replicas, the one leading: taken from it (the world ends right after).
        let leader = self.replicas.as_mut().and_then(|r| r.take_leader());
        let (operator, caches) = match &leader {
            Some(booted) => (Some(&booted.operator), Some(&booted.caches)),
            None => (self.operator.as_ref().map(|(o, _)| o), self.caches.as_ref()),
        };
        let mut held = Vec::new();
        let mut copies = Vec::new();
        if let Some(operator) = operator {
            for kind in operator.census().await {
                copies.extend(kind.copies.iter().cloned());
                for (what, keys) in [
                    ("live actor", &kind.live),
                    ("hibernated entry", &kind.hibernated),
                    ("pending restart", &kind.restarting),
                    ("armed timer", &kind.timers),
                ] {
                    held.extend(
                        keys.iter()
                            .map(|k| (kind.kind.clone(), what, k.to_string())),
                    );
                }
            }
        }
        if let Some(caches) = caches {
            for (index, user) in caches.registered_users() {
                let what = match index {
                    "secrets" => "Secret index entry",
                    "clusters" => "Cluster index entry",
                    _ => "reference index entry",
                };
                held.push((user.kind.clone(), what, user.object_key().to_string()));
            }
        }
        let existing = crate::kinds::OUR_KINDS
            .iter()
            .zip([
                "pgaccessrequests",
                "pgtoolboxconsoles",
                "pgadmins",
                "evidenceagents",
            ])
            .flat_map(|(kind, plural)| {
                self.sim
                    .objects(crate::kinds::GROUP, plural)
                    .into_iter()
                    .map(move |o| {
                        let key = format!(
                            "{}/{}",
                            o["metadata"]["namespace"].as_str().unwrap_or_default(),
                            o["metadata"]["name"].as_str().unwrap_or_default()
                        );
                        (kind.to_string(), key)
                    })
            })
            .collect();
        self.supervisor_copies = copies;
        (held, existing)
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    pub(crate) fn now(&self) -> Timestamp {
        epoch()
            .checked_add(SignedDuration::try_from(self.start.elapsed()).unwrap_or_default())
            .unwrap_or_else(|_| epoch())
    }

    fn snapshot(&self) {
        let snap = snapshot_of(&self.sim, self.mix, self.now_ms());
        if let Ok(mut s) = self.snapshots.lock() {
            s.push(snap);
        }
    }

    /// Up to [`QUIET`], ending before the next instant some request still waits for.
    fn quiet_window(&self) -> Duration {
        let now = self.now();
        let next = self
            .sim
            .objects("pgtoolbox.fyannk.dev", "pgaccessrequests")
            .iter()
            .filter(|r| !is_terminal(phase_of(r)))
            .filter_map(|r| expires_at(r))
            .chain(
                self.sim
                    .objects(crate::kinds::GROUP, "evidenceagents")
                    .iter()
                    .filter_map(|a| World::renewal_of(a)),
            )
            .filter(|at| *at > now)
            .min();
        let until_next = next
            .map(|at| Duration::try_from(at.duration_since(now)).unwrap_or_default())
            .unwrap_or(QUIET);
        until_next.saturating_sub(Duration::from_secs(2)).min(QUIET)
    }

    async fn setup(&self) {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.driver.clone());
        let ns = serde_json::from_value(json!({"metadata": {"name": NS}})).expect("namespace");
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("namespace created");
        // Objects the operator must never touch: a RoleBinding of nobody's request.
        let rb: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "team-admins", "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}],
        }))
        .expect("rolebinding");
        self.bindings()
            .create(&PostParams::default(), &rb)
            .await
            .expect("unrelated rolebinding created");
    }

    async fn start_operator(&mut self) {
        let incarnation = self.incarnation.fetch_add(1, Ordering::SeqCst) + 1;
        let alive = Arc::new(AtomicBool::new(true));
        let client = Transport {
            held_until: Default::default(),
            sim: self.sim.clone(),
            who: Who::Operator(incarnation),
            alive: alive.clone(),
            log: self.log.clone(),
            start: self.start,
        }
        .client();
        let booted = boot(self.mix, &client, self.now(), &self.blocked, self.start).await;
        self.shared_actors = booted.shared_actors;
        self.caches = Some(booted.caches);
        self.operator = Some((booted.operator, alive));
    }

    /// Two replicas, each waiting for the Lease in the operator's namespace.
    async fn start_replicas(&mut self) {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.driver.clone());
        let ns = json!({"metadata": {"name": crate::leader::LEASE_NS}});
        if let Ok(ns) = serde_json::from_value(ns) {
            // Already there in a workload schedule.
            let _ = namespaces.create(&PostParams::default(), &ns).await;
        }
        let ctx = crate::leader::Ctx::new(
            self.sim.clone(),
            self.log.clone(),
            self.start,
            self.mix,
            self.seed,
            self.blocked.clone(),
            self.incarnation.clone(),
        );
        self.ended = ctx.ended.clone();
        self.replicas = Some(crate::leader::Replicas::start(ctx));
    }

    /// The process dies: its connection is cut at once, its actors are told to stop.
    async fn crash(&mut self) {
        if let Some(replicas) = self.replicas.as_mut() {
            replicas.crash_all().await;
        }
        if let Some((operator, alive)) = self.operator.take() {
            alive.store(false, Ordering::SeqCst);
            operator.shutdown(Duration::ZERO).await;
        }
        if let Some(actors) = self.shared_actors.take() {
            actors.stop().await;
        }
        // What the process kept in memory, as it dies.
        if let Some(caches) = self.caches.take() {
            self.cache_dumps.push(caches.dump());
        }
    }

    fn block(&self, from: u64, to: u64) {
        if let Ok(mut b) = self.blocked.lock() {
            b.push((from, to));
        }
    }

    /// Any window still open ends now (faults were cleared).
    fn close_blocked(&self) {
        let now = self.now_ms();
        if let Ok(mut b) = self.blocked.lock() {
            for w in b.iter_mut() {
                w.1 = w.1.min(now);
            }
        }
    }

    fn requests(&self) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: "pgtoolbox.fyannk.dev".into(),
            version: "v1alpha1".into(),
            api_version: "pgtoolbox.fyannk.dev/v1alpha1".into(),
            kind: "PgAccessRequest".into(),
            plural: "pgaccessrequests".into(),
        };
        Api::namespaced_with(self.driver.clone(), NS, &resource)
    }

    fn clusters(&self) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: "postgresql.cnpg.io".into(),
            version: "v1".into(),
            api_version: "postgresql.cnpg.io/v1".into(),
            kind: "Cluster".into(),
            plural: "clusters".into(),
        };
        Api::namespaced_with(self.driver.clone(), NS, &resource)
    }

    fn bindings(&self) -> Api<RoleBinding> {
        Api::namespaced(self.driver.clone(), NS)
    }

    async fn act(&mut self, step: &Step) {
        // The driver's answers are in the log; a refused step is part of the schedule.
        if self.act_workload(step).await {
            return;
        }
        match step {
            Step::Create {
                req,
                expires_in,
                cluster,
            } => {
                let expires = self.now() + SignedDuration::from_secs(*expires_in);
                let mut spec = json!({
                    "subject": {"kind": "User", "name": SUBJECT},
                    "clusterRole": ROLE,
                    "expiresAt": expires.to_string(),
                    "reason": "incident",
                });
                if let Some(c) = cluster {
                    spec["cluster"] = json!(format!("c{c}"));
                }
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
                    "kind": "PgAccessRequest",
                    "metadata": {"name": format!("r{req}"), "namespace": NS},
                    "spec": spec,
                }))
                .expect("request");
                let _ = self.requests().create(&PostParams::default(), &obj).await;
            }
            Step::Approve { req, approver } => {
                self.bind(*req, &[SUBJECT]).await;
                self.decide(*req, "Approved", approver).await;
            }
            Step::Bind { req } => self.bind(*req, &[SUBJECT]).await,
            Step::Decide {
                req,
                phase,
                approver,
            } => self.decide(*req, phase, approver).await,
            Step::Tamper { req } => {
                let name = format!("pgar-r{req}");
                if let Ok(mut rb) = self.bindings().get(&name).await {
                    rb.subjects
                        .get_or_insert_with(Vec::new)
                        .push(user("mallory"));
                    rb.metadata.managed_fields = None;
                    if self
                        .bindings()
                        .replace(&name, &PostParams::default(), &rb)
                        .await
                        .is_ok()
                    {
                        self.tampered.push(format!("r{req}"));
                    }
                }
            }
            Step::Unbind { req } => {
                let _ = self
                    .bindings()
                    .delete(&format!("pgar-r{req}"), &DeleteParams::default())
                    .await;
            }
            Step::Shorten { req, secs } => {
                let at = self.now() + SignedDuration::from_secs(*secs);
                let patch = json!({"spec": {"expiresAt": at.to_string()}});
                let _ = self
                    .requests()
                    .patch(
                        &format!("r{req}"),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await;
            }
            Step::DeleteRequest { req } => {
                let _ = self
                    .requests()
                    .delete(&format!("r{req}"), &DeleteParams::default())
                    .await;
            }
            Step::Touch { req } => {
                let patch =
                    json!({"metadata": {"annotations": {"touched-at": self.now_ms().to_string()}}});
                let _ = self
                    .requests()
                    .patch(
                        &format!("r{req}"),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await;
            }
            Step::CreateCluster { cluster } if self.mix == Mix::Workloads => {
                self.cluster(NS, &format!("c{cluster}")).await;
            }
            Step::CreateCluster { cluster } => {
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "postgresql.cnpg.io/v1",
                    "kind": "Cluster",
                    "metadata": {"name": format!("c{cluster}"), "namespace": NS},
                    "spec": {"instances": 1, "storage": {"size": "1Gi"}},
                }))
                .expect("cluster");
                let _ = self.clusters().create(&PostParams::default(), &obj).await;
            }
            Step::DeleteCluster { cluster } => {
                let _ = self
                    .clusters()
                    .delete(&format!("c{cluster}"), &DeleteParams::default())
                    .await;
            }
            Step::Fault(fault) => self.fault(fault),
            Step::Crash { down_secs } if self.replicas.is_some() => {
                if let Some(replicas) = self.replicas.as_mut() {
                    replicas.crash_leader(Duration::from_secs(*down_secs)).await;
                }
            }
            Step::Leader(step) => {
                if let Some(replicas) = self.replicas.as_mut() {
                    replicas.act(step).await;
                }
            }
            Step::Crash { down_secs } => {
                let from = self.now_ms();
                self.crash().await;
                tokio::time::sleep(Duration::from_secs(*down_secs)).await;
                self.block(from, self.now_ms());
                self.start_operator().await;
            }
            Step::Sleep { millis } => tokio::time::sleep(Duration::from_millis(*millis)).await,
            Step::JumpToExpiry { req, offset } => {
                let stored = self.sim.object(
                    "pgtoolbox.fyannk.dev",
                    "pgaccessrequests",
                    NS,
                    &format!("r{req}"),
                );
                if let Some(at) = stored.as_deref().and_then(expires_at) {
                    let target = at + SignedDuration::from_secs(*offset);
                    let wait = target.duration_since(self.now());
                    if let Ok(wait) = Duration::try_from(wait) {
                        tokio::time::sleep(wait.min(Duration::from_secs(2 * 3600))).await;
                    }
                }
            }
            // Workload steps were acted out above.
            _ => {}
        }
    }

    fn fault(&self, fault: &Fault) {
        let admin = self.sim.admin();
        match fault {
            Fault::DropWatches => admin.drop_watches(),
            Fault::Gone => admin.force_gone_next_watch(),
            Fault::Errors {
                pattern,
                code,
                count,
            } => {
                let _ = admin.inject_errors(pattern, *code, *count);
            }
            Fault::Latency {
                pattern,
                millis,
                count,
            } => {
                let _ = admin.inject_latency(pattern, Duration::from_millis(*millis), Some(*count));
            }
            Fault::Deny { pattern, secs } => {
                let _ = admin.deny(pattern);
                self.lift_after(*secs, move |admin| admin.clear_deny());
            }
            Fault::Unauthorized { secs } => {
                admin.set_unauthorized(true);
                self.lift_after(*secs, |admin| admin.set_unauthorized(false));
            }
            Fault::Unserved { group, secs } => {
                admin.unserve(group);
                let group = *group;
                self.lift_after(*secs, move |admin| admin.serve(group));
            }
        }
    }

    /// A fault in force for `secs` (a window the operator cannot act in), then lifted.
    fn lift_after(&self, secs: u64, lift: impl FnOnce(&pgtoolbox_sim::Admin) + Send + 'static) {
        let from = self.now_ms();
        self.block(from, from + secs * 1000);
        let admin = self.sim.admin();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(secs)).await;
            lift(&admin);
        });
    }

    async fn bind(&mut self, req: usize, users: &[&str]) {
        // A console binds only a request it shows, one that exists.
        let name = format!("r{req}");
        if self
            .sim
            .object("pgtoolbox.fyannk.dev", "pgaccessrequests", NS, &name)
            .is_none()
        {
            return;
        }
        let rb = RoleBinding {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(format!("pgar-r{req}")),
                namespace: Some(NS.into()),
                labels: Some([(REQUEST_LABEL.to_string(), format!("r{req}"))].into()),
                ..Default::default()
            },
            role_ref: k8s_openapi::api::rbac::v1::RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "ClusterRole".into(),
                name: ROLE.into(),
            },
            subjects: Some(users.iter().map(|u| user(u)).collect()),
        };
        if self
            .bindings()
            .create(&PostParams::default(), &rb)
            .await
            .is_ok()
        {
            self.bound.push(format!("r{req}"));
        }
    }

    async fn decide(&self, req: usize, phase: &str, approver: &str) {
        let patch = json!({"status": {
            "phase": phase,
            "approver": approver,
            "decidedAt": self.now().to_string(),
            "roleBindingName": format!("pgar-r{req}"),
        }});
        let _ = self
            .requests()
            .patch_status(
                &format!("r{req}"),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await;
    }
}

fn user(name: &str) -> k8s_openapi::api::rbac::v1::Subject {
    k8s_openapi::api::rbac::v1::Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "User".into(),
        name: name.into(),
        namespace: None,
    }
}

async fn observe(
    sim: InProcessSim,
    mix: Mix,
    start: tokio::time::Instant,
    out: Arc<Mutex<Vec<Snapshot>>>,
) {
    loop {
        tokio::time::sleep(SAMPLE).await;
        let snap = snapshot_of(&sim, mix, start.elapsed().as_millis() as u64);
        if let Ok(mut s) = out.lock() {
            s.push(snap);
        }
    }
}

pub fn snapshot_of(sim: &InProcessSim, mix: Mix, at_ms: u64) -> Snapshot {
    let in_ns = |o: &Arc<Value>| o["metadata"]["namespace"] == NS;
    let (workloads, inputs, pods, jobs, exposures) = match mix {
        Mix::Access => (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()),
        Mix::Workloads => (
            crate::kinds::Workload::ALL
                .iter()
                .flat_map(|w| sim.objects(crate::kinds::GROUP, w.plural()))
                .filter(in_ns)
                .collect(),
            crate::workloads::inputs(sim),
            sim.objects("", "pods").into_iter().filter(in_ns).collect(),
            sim.objects("batch", "jobs")
                .into_iter()
                .filter(in_ns)
                .filter(crate::workloads::is_backup_job)
                .collect(),
            crate::workloads::exposures(sim),
        ),
    };
    Snapshot {
        workloads,
        inputs,
        pods,
        jobs,
        exposures,
        at_ms,
        requests: sim
            .objects("pgtoolbox.fyannk.dev", "pgaccessrequests")
            .into_iter()
            .filter(in_ns)
            .collect(),
        bindings: sim
            .objects("rbac.authorization.k8s.io", "rolebindings")
            .into_iter()
            .filter(in_ns)
            .collect(),
        clusters: sim
            .objects("postgresql.cnpg.io", "clusters")
            .into_iter()
            .filter(in_ns)
            .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_string))
            .collect(),
    }
}

pub fn phase_of(request: &Value) -> &str {
    request["status"]["phase"].as_str().unwrap_or("Pending")
}

pub fn is_terminal(phase: &str) -> bool {
    matches!(phase, "Denied" | "Revoked" | "Expired")
}

pub fn expires_at(request: &Value) -> Option<Timestamp> {
    request["spec"]["expiresAt"].as_str()?.parse().ok()
}

/// One operator process's running parts.
pub(crate) struct Booted {
    pub(crate) operator: Operator,
    pub(crate) shared_actors: Option<pgtoolbox_operator::testing::actors::shared::SharedActors>,
    pub(crate) caches: OperatorCaches,
}

impl Booted {
    /// Its actors are told to stop, given `bound` to finish.
    pub(crate) async fn stop(self, bound: Duration) {
        self.operator.shutdown(bound).await;
        if let Some(actors) = self.shared_actors {
            actors.stop().await;
        }
    }
}

/// Starts an operator on `client` as `run` does (in a workload schedule the shared actors
/// first; a start refused by a fault in force is tried again, a window recorded in `blocked`).
pub(crate) async fn boot(
    mix: Mix,
    client: &kube::Client,
    now: Timestamp,
    blocked: &Mutex<Vec<(u64, u64)>>,
    start: tokio::time::Instant,
) -> Booted {
    let settings = OperatorSettings {
        access_request_orphan_grace: ORPHAN_GRACE,
        clock: Clock::following_tokio(now),
        ..OperatorSettings::default()
    };
    let (shared, shared_actors) = match mix {
        Mix::Access => (Arc::new(Shared::new(settings)), None),
        Mix::Workloads => {
            // As `run`: a start refused by a fault in force fails, and is tried again.
            let settings = crate::workloads::settings(settings);
            let from = start.elapsed().as_millis() as u64;
            let actors = loop {
                match crate::workloads::start_shared(client, settings.clone()).await {
                    Some(actors) => break actors,
                    None => tokio::time::sleep(Duration::from_secs(5)).await,
                }
            };
            if let Ok(mut b) = blocked.lock() {
                b.push((from, start.elapsed().as_millis() as u64));
            }
            (actors.shared.clone(), Some(actors))
        }
    };
    let caches = OperatorCaches::new().sharing_secrets(shared.secrets.routed_index());
    let operator = register_all_with(OperatorBuilder::new(client.clone(), shared), caches.clone())
        .start()
        .await
        .expect("operator starts");
    Booted {
        operator,
        shared_actors,
        caches,
    }
}
