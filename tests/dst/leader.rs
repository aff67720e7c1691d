//! Two operator replicas electing on one Lease (as `run --leader-elect` does): only the holder
//! runs its kinds. The schedule's lease faults (renewals slowed or refused past the deadline,
//! the Lease taken by someone else, the leader crashing, both crashing), and the invariant
//! they threaten: at most one writer.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::SignedDuration;
use kube::api::{Api, PostParams};
use pgtoolbox_operator::testing::supervisor::Clock;
use pgtoolbox_operator::testing::supervisor::leader::{LeaderConfig, acquire};
use pgtoolbox_sim::InProcessSim;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::json;

use crate::invariants::{Violation, violation};
use crate::schedule::{Mix, Step};
use crate::transport::{Entry, Log, Transport, Who};
use crate::world::{Booted, History, boot};

/// Where the replicas' Lease lives (the operator's namespace, as in a workload schedule).
pub const LEASE_NS: &str = crate::workloads::OPERATOR_NS;
const LEASE_NAME: &str = "pgtoolbox-operator";
const LEASES: &str = "*:coordination.k8s.io/leases:*";
/// A replica whose process exited (lease lost) is restarted after this, as a kubelet would.
const RESTART: Duration = Duration::from_secs(5);

/// One schedule in this many runs two replicas.
const ONE_IN: u64 = 16;

/// What a two-replica schedule does to the election.
#[derive(Clone, Debug)]
pub enum LeaderStep {
    /// Every Lease request (both replicas') answered after `millis`, `count` times: a renewal
    /// that lands after the holder's deadline.
    LeaseLatency { millis: u64, count: u32 },
    /// Lease updates refused (403) for `secs`: the holder cannot renew, nobody can take over.
    LeaseRefused { secs: u64 },
    /// Someone else writes the Lease as theirs (a third replica, a person): the holder must
    /// notice at its next renewal.
    Steal,
    /// Both replicas crash and come back after `down_secs`.
    CrashBoth { down_secs: u64 },
}

/// Does `seed` run two replicas? A fraction of both mixes, so the CI budget barely grows.
pub fn elects(seed: u64) -> bool {
    seed % ONE_IN == 3
}

/// `schedule` with one to three lease faults inserted at random points (drawn from `seed`).
/// A schedule's `Crash` crashes the replica leading then.
pub fn with_leader_steps(seed: u64, mut schedule: Vec<Step>) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x1EAD_E125);
    for _ in 0..rng.random_range(1..=3) {
        let step = match rng.random_range(0..4) {
            0 => LeaderStep::LeaseLatency {
                millis: rng.random_range(3_000..25_000),
                count: rng.random_range(1..4),
            },
            1 => LeaderStep::LeaseRefused {
                secs: rng.random_range(5..40),
            },
            2 => LeaderStep::Steal,
            _ => LeaderStep::CrashBoth {
                down_secs: rng.random_range(0..20),
            },
        };
        let at = rng.random_range(0..=schedule.len());
        schedule.insert(at, Step::Leader(step));
    }
    schedule
}

pub fn runs_two_replicas(schedule: &[Step]) -> bool {
    schedule.iter().any(|s| matches!(s, Step::Leader(_)))
}

/// The cluster's time of day (the schedule started at [`crate::world::EPOCH`]).
fn cluster_now(start: tokio::time::Instant) -> k8s_openapi::jiff::Timestamp {
    crate::world::epoch() + SignedDuration::try_from(start.elapsed()).unwrap_or_default()
}

/// The replica's name in the Lease, and back: `replica-<incarnation>`.
fn identity(incarnation: u32) -> String {
    format!("replica-{incarnation}")
}

fn incarnation_of(identity: &str) -> Option<u32> {
    identity.strip_prefix("replica-")?.parse().ok()
}

/// What every replica process shares with the world.
#[derive(Clone)]
pub struct Ctx {
    pub sim: InProcessSim,
    pub log: Log,
    pub start: tokio::time::Instant,
    pub mix: Mix,
    pub seed: u64,
    pub blocked: Arc<Mutex<Vec<(u64, u64)>>>,
    pub incarnations: Arc<AtomicU32>,
    /// `(incarnation, ms)` at which each process ended (crashed, or exited on a lost lease).
    pub ended: Arc<Mutex<Vec<(u32, u64)>>>,
    /// Since when (ms) no replica's operator has been running.
    leaderless_since: Arc<Mutex<Option<u64>>>,
}

impl Ctx {
    pub fn new(
        sim: InProcessSim,
        log: Log,
        start: tokio::time::Instant,
        mix: Mix,
        seed: u64,
        blocked: Arc<Mutex<Vec<(u64, u64)>>>,
        incarnations: Arc<AtomicU32>,
    ) -> Self {
        Self {
            sim,
            log,
            start,
            mix,
            seed,
            blocked,
            incarnations,
            ended: Arc::default(),
            leaderless_since: Arc::new(Mutex::new(Some(0))),
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// An operator started running: the window without one (the operator could not act) ends.
    fn leading(&self) {
        let now = self.now_ms();
        let since = self.leaderless_since.lock().ok().and_then(|mut s| s.take());
        if let (Some(from), Ok(mut blocked)) = (since, self.blocked.lock()) {
            blocked.push((from, now));
        }
    }

    /// The running operator stopped (lost lease, crash): a window without one opens.
    fn leaderless(&self) {
        let now = self.now_ms();
        if let Ok(mut since) = self.leaderless_since.lock() {
            since.get_or_insert(now);
        }
    }

    /// The process of `incarnation` is gone.
    fn ended(&self, incarnation: u32) {
        let now = self.now_ms();
        if let Ok(mut ended) = self.ended.lock() {
            ended.push((incarnation, now));
        }
    }

    /// Each incarnation's Lease clock is off the cluster's by up to 30 s either way: the
    /// election must not depend on the replicas' clocks agreeing.
    fn lease_clock(&self, incarnation: u32) -> Clock {
        let mut rng = StdRng::seed_from_u64(self.seed ^ (u64::from(incarnation) << 32));
        let skew = SignedDuration::from_secs(rng.random_range(-30..=30));
        let now = cluster_now(self.start);
        Clock::following_tokio(now + skew)
    }
}

/// One replica: a process that waits for the Lease, runs the operator while it holds it, and
/// exits when it loses it (restarted after [`RESTART`]).
struct Replica {
    task: tokio::task::JoinHandle<()>,
    slot: Arc<Mutex<Process>>,
}

#[derive(Default)]
struct Process {
    incarnation: u32,
    alive: Option<Arc<AtomicBool>>,
    booted: Option<Booted>,
}

/// The two replicas of a schedule.
pub struct Replicas {
    ctx: Ctx,
    replicas: Vec<Replica>,
}

impl Replicas {
    pub fn start(ctx: Ctx) -> Self {
        let replicas = (0..2).map(|_| Replica::spawn(ctx.clone())).collect();
        Self { ctx, replicas }
    }

    /// The replica running the operator now (else the first).
    fn leader(&self) -> usize {
        self.replicas
            .iter()
            .position(|r| r.slot.lock().is_ok_and(|p| p.booted.is_some()))
            .unwrap_or(0)
    }

    /// The leader's process dies and is started again after `down`.
    pub async fn crash_leader(&mut self, down: Duration) {
        let i = self.leader();
        self.replicas[i].crash(&self.ctx).await;
        tokio::time::sleep(down).await;
        self.replicas[i] = Replica::spawn(self.ctx.clone());
    }

    pub async fn crash_all(&mut self) {
        for r in &self.replicas {
            r.crash(&self.ctx).await;
        }
    }

    pub async fn crash_both(&mut self, down: Duration) {
        self.crash_all().await;
        tokio::time::sleep(down).await;
        self.replicas = (0..2).map(|_| Replica::spawn(self.ctx.clone())).collect();
    }

    /// The running operator, taken out for the final census (the world ends right after).
    pub fn take_leader(&mut self) -> Option<Booted> {
        let i = self.leader();
        self.replicas[i].slot.lock().ok()?.booted.take()
    }

    /// Acts `step` out. The windows without a running operator it causes are recorded as
    /// they happen (a refused renewal ends the leadership, a standby takes over later).
    pub async fn act(&mut self, step: &LeaderStep) {
        let admin = self.ctx.sim.admin();
        match step {
            LeaderStep::LeaseLatency { millis, count } => {
                let _ = admin.inject_latency(LEASES, Duration::from_millis(*millis), Some(*count));
            }
            LeaderStep::LeaseRefused { secs } => {
                let _ = admin.deny("update:coordination.k8s.io/leases:*");
                let secs = *secs;
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(secs)).await;
                    admin.clear_deny();
                });
            }
            LeaderStep::Steal => steal(&self.ctx).await,
            LeaderStep::CrashBoth { down_secs } => {
                self.crash_both(Duration::from_secs(*down_secs)).await;
            }
        }
    }
}

/// The driver writes the Lease as held by `intruder`, renewed now.
async fn steal(ctx: &Ctx) {
    let driver = Transport {
        held_until: Default::default(),
        sim: ctx.sim.clone(),
        who: Who::Driver,
        alive: Arc::new(AtomicBool::new(true)),
        log: ctx.log.clone(),
        start: ctx.start,
    }
    .client();
    let leases: Api<Lease> = Api::namespaced(driver, LEASE_NS);
    let Ok(mut lease) = leases.get(LEASE_NAME).await else {
        return;
    };
    let now = cluster_now(ctx.start);
    if let Some(spec) = lease.spec.as_mut() {
        spec.holder_identity = Some("intruder".into());
        spec.renew_time = serde_json::from_value(json!(now.to_string())).ok();
    }
    let _ = leases
        .replace(LEASE_NAME, &PostParams::default(), &lease)
        .await;
}

impl Replica {
    fn spawn(ctx: Ctx) -> Self {
        let slot = Arc::new(Mutex::new(Process::default()));
        let task = tokio::spawn(process(ctx, slot.clone()));
        Self { task, slot }
    }

    /// The process dies: its connection is cut, its election and start abandoned, its
    /// operator's actors told to stop.
    async fn crash(&self, ctx: &Ctx) {
        self.task.abort();
        let (incarnation, alive, booted) = match self.slot.lock() {
            Ok(mut p) => (p.incarnation, p.alive.take(), p.booted.take()),
            Err(_) => return,
        };
        let Some(alive) = alive else { return };
        alive.store(false, Ordering::SeqCst);
        ctx.ended(incarnation);
        if let Some(booted) = booted {
            ctx.leaderless();
            booted.stop(Duration::ZERO).await;
        }
    }
}

/// Incarnation after incarnation, as `run --leader-elect` under a kubelet: acquire the Lease,
/// start the operator (abandoned if the Lease is lost meanwhile), run it until the Lease is
/// lost, stop it within the time the Lease leaves, exit.
async fn process(ctx: Ctx, slot: Arc<Mutex<Process>>) {
    loop {
        let incarnation = ctx.incarnations.fetch_add(1, Ordering::SeqCst) + 1;
        let alive = Arc::new(AtomicBool::new(true));
        if let Ok(mut p) = slot.lock() {
            p.incarnation = incarnation;
            p.alive = Some(alive.clone());
        }
        let client = Transport {
            held_until: Default::default(),
            sim: ctx.sim.clone(),
            who: Who::Operator(incarnation),
            alive: alive.clone(),
            log: ctx.log.clone(),
            start: ctx.start,
        }
        .client();
        let config = LeaderConfig {
            clock: ctx.lease_clock(incarnation),
            ..LeaderConfig::new(LEASE_NS, identity(incarnation))
        };
        let mut held = acquire(client.clone(), config).await;
        let now = cluster_now(ctx.start);
        let booted = tokio::select! {
            booted = boot(ctx.mix, &client, now, &ctx.blocked, ctx.start) => Some(booted),
            _ = held.lost() => None,
        };
        if let Some(booted) = booted {
            ctx.leading();
            if let Ok(mut p) = slot.lock() {
                p.booted = Some(booted);
            }
            held.lost().await;
            let booted = slot.lock().ok().and_then(|mut p| p.booted.take());
            if let Some(booted) = booted {
                ctx.leaderless();
                booted.stop(held.stop_within()).await;
            }
        }
        // The process exits: whatever it still had in flight goes with it.
        alive.store(false, Ordering::SeqCst);
        if let Ok(mut p) = slot.lock() {
            p.alive = None;
        }
        ctx.ended(incarnation);
        drop(held);
        tokio::time::sleep(RESTART).await;
    }
}

pub fn is_lease(e: &Entry) -> bool {
    e.target()
        .is_some_and(|t| t.group == "coordination.k8s.io" && t.plural == "leases")
}

/// `at-most-one-writer`: an operator incarnation writes (Lease aside) only while the Lease is
/// its own or, the Lease taken by someone else, until its own lease time has run out
/// (`leaseDurationSeconds` from the moment it sent its last successful renewal, on its own
/// clock); and never while another incarnation that held the Lease is still running within
/// its own lease time.
pub fn at_most_one_writer(h: &History) -> Vec<Violation> {
    if !h.log.iter().any(is_lease) {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Per incarnation: until when (ms) its own lease time runs.
    let mut own_until: std::collections::HashMap<u32, u64> = Default::default();
    let mut holder: Option<String> = None;
    let ended = |i: u32, at: u64| h.ended.iter().any(|(j, when)| *j == i && *when <= at);
    for e in &h.log {
        let Who::Operator(writer) = e.who else {
            if is_lease(e) && e.is_write() && e.status < 300 {
                holder = lease_holder(e);
            }
            continue;
        };
        if !e.is_write() {
            continue;
        }
        if is_lease(e) {
            if e.status < 300 {
                holder = lease_holder(e);
                let seconds = e
                    .after
                    .as_ref()
                    .and_then(|l| l["spec"]["leaseDurationSeconds"].as_u64())
                    .unwrap_or(15);
                own_until.insert(writer, e.sent_ms + seconds * 1000);
            }
            continue;
        }
        let holds = holder.as_deref().and_then(incarnation_of) == Some(writer);
        let own = own_until.get(&writer).copied().unwrap_or(0);
        if !holds && e.at_ms > own {
            out.push(violation(
                "at-most-one-writer",
                format!(
                    "operator {writer} {} {} at {} ms while the Lease was {holder:?}'s and its \
                     own lease time had run out at {own} ms",
                    e.method, e.uri, e.at_ms
                ),
            ));
        }
        for (other, until) in &own_until {
            if *other != writer && *until >= e.at_ms && !ended(*other, e.at_ms) {
                out.push(violation(
                    "at-most-one-writer",
                    format!(
                        "operator {writer} {} {} at {} ms while operator {other}, still \
                         running, counted on its lease until {until} ms",
                        e.method, e.uri, e.at_ms
                    ),
                ));
            }
        }
    }
    out
}

fn lease_holder(e: &Entry) -> Option<String> {
    e.after.as_ref()?["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_string)
}
