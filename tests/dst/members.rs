//! Dynamic sharding (`--shards auto`, issue 30) under seeded schedules: one to five members,
//! each the real `Membership` (its Lease renewals, the ring's hand-off) against the in-process
//! sim on the paused clock, with joins, graceful leaves, crashes, Lease latency and skewed
//! Lease clocks. What each member's share is, and when it changes, is recorded as the operator
//! would apply it (`Resharder::also`); the checks: at most one writer per object at any
//! instant, every object judged by exactly one member once the churn is over, and no object
//! left without an owner (its timers late) for longer than the Lease's duration plus the
//! hand-off's own steps.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::jiff::SignedDuration;
use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::supervisor::leader::LeaderConfig;
use pgtoolbox_operator::testing::supervisor::members::{Membership, member_config};
use pgtoolbox_operator::testing::supervisor::shard::{Ownership, Ring, object_key};
use pgtoolbox_operator::testing::supervisor::{Clock, OperatorBuilder};
use pgtoolbox_sim::{InProcessSim, SimConfig};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::transport::{Log, Transport, Who};

const NS: &str = "default";
const LEASES: &str = "*:coordination.k8s.io/leases:*";
const OBJECTS: usize = 60;
/// Virtual time of churn, then of quiet for the members to settle.
const CHURN: Duration = Duration::from_secs(180);
const QUIET: Duration = Duration::from_secs(90);

/// Seeds of the CI budget (`DST_MEMBER_SCHEDULES`).
pub fn budget() -> u64 {
    std::env::var("DST_MEMBER_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32)
}

fn keys() -> Vec<u64> {
    (0..OBJECTS)
        .map(|i| object_key("PgAdmin", "team", &format!("o{i}")))
        .collect()
}

#[derive(Clone, Debug)]
enum Change {
    /// The member applied this share (after draining what it lost).
    Applied(Ownership),
    /// The member's process ended (crashed, left, or stopped on a lost Lease).
    Ended,
}

/// The schedule's record: (virtual ms, member, change), in order.
type Journal = Arc<Mutex<Vec<(u64, String, Change)>>>;

fn note(journal: &Journal, start: tokio::time::Instant, who: &str, change: Change) {
    let at = start.elapsed().as_millis() as u64;
    journal
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((at, who.to_string(), change));
}

/// One member process: joins, runs until told to leave or its membership is lost.
struct Process {
    task: tokio::task::JoinHandle<()>,
    leave: tokio::sync::oneshot::Sender<()>,
    alive: Arc<AtomicBool>,
    /// Until when (virtual ms) its requests are held: a partition from the API server.
    held_until: Arc<AtomicU64>,
}

struct World {
    sim: InProcessSim,
    log: Log,
    start: tokio::time::Instant,
    seed: u64,
    journal: Journal,
    live: BTreeMap<String, Process>,
    joined: u32,
    /// When latency was injected on the Leases, and how much it delays in all (each of the
    /// requests it slows by its millis).
    latencies: Vec<(u64, u64)>,
    /// Virtual ms of every churn event.
    events: Vec<u64>,
}

impl World {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn config(&self, identity: &str, incarnation: u32) -> LeaderConfig {
        // Each member's Lease clock is off the cluster's by up to 30 s: expiry is judged on
        // the reader's own clock, so it must not matter.
        let mut rng = StdRng::seed_from_u64(self.seed ^ (u64::from(incarnation) << 32));
        let skew = SignedDuration::from_secs(rng.random_range(-30..=30));
        LeaderConfig {
            clock: Clock::following_tokio(crate::world::epoch() + skew),
            ..member_config(NS, identity)
        }
    }

    async fn join(&mut self) {
        self.joined += 1;
        let identity = format!("member-{}", self.joined);
        let alive = Arc::new(AtomicBool::new(true));
        let held_until = Arc::new(AtomicU64::new(0));
        let client = Transport {
            sim: self.sim.clone(),
            who: Who::Operator(self.joined),
            alive: alive.clone(),
            log: self.log.clone(),
            start: self.start,
            held_until: held_until.clone(),
        }
        .client();
        let config = self.config(&identity, self.joined);
        let (leave, told) = tokio::sync::oneshot::channel();
        let (journal, start, who) = (self.journal.clone(), self.start, identity.clone());
        let task = tokio::spawn(async move {
            // No kinds: the share is what is checked, recorded as the operator applies it.
            let operator = OperatorBuilder::new(client.clone(), Arc::new(Shared::default()))
                .ownership(Ownership::single(Ring::Nothing))
                .start()
                .await
                .expect("an operator without kinds starts");
            // Once its process ends a member applies nothing more (its kinds are stopped).
            let ended = Arc::new(AtomicBool::new(false));
            let recorder = {
                let (journal, who, ended) = (journal.clone(), who.clone(), ended.clone());
                move |ownership: Arc<Ownership>| {
                    let running = !ended.load(Ordering::SeqCst);
                    if running {
                        note(&journal, start, &who, Change::Applied((*ownership).clone()));
                    }
                    std::future::ready(running)
                }
            };
            let mut membership =
                Membership::join(client, config, operator.resharder().also(recorder));
            tokio::select! {
                _ = membership.lost() => {}
                _ = told => {}
            }
            // As `run` ends: the work stops, then the Lease goes.
            ended.store(true, Ordering::SeqCst);
            note(&journal, start, &who, Change::Ended);
            operator.shutdown(Duration::ZERO).await;
            membership.leave().await;
        });
        let process = Process {
            task,
            leave,
            alive,
            held_until,
        };
        self.live.insert(identity, process);
    }

    /// Ends a process at once: nothing more of it reaches the server, its Lease is left.
    fn crash(&mut self, identity: &str) {
        if let Some(process) = self.live.remove(identity) {
            process.task.abort();
            process.alive.store(false, Ordering::SeqCst);
            note(&self.journal, self.start, identity, Change::Ended);
        }
    }

    /// Cuts a process off from the API server for `span`: nothing it sends arrives before.
    fn partition(&mut self, identity: &str, span: Duration) {
        if let Some(process) = self.live.get(identity) {
            let until = self.now_ms() + span.as_millis() as u64;
            process.held_until.store(until, Ordering::SeqCst);
        }
    }

    fn leave(&mut self, identity: &str) {
        if let Some(process) = self.live.remove(identity) {
            let _ = process.leave.send(());
        }
    }

    fn pick(&self, rng: &mut StdRng) -> Option<String> {
        let running: Vec<&String> = self
            .live
            .iter()
            .filter(|(_, p)| !p.task.is_finished())
            .map(|(id, _)| id)
            .collect();
        (!running.is_empty()).then(|| running[rng.random_range(0..running.len())].clone())
    }

    /// A process that ended by itself (its membership lost) is started again, as a
    /// Deployment's pod would be; so is one when none is left.
    async fn restart_ended(&mut self) {
        let before = self.live.len();
        self.live.retain(|_, p| !p.task.is_finished());
        for _ in self.live.len()..before.max(1) {
            self.join().await;
        }
    }

    /// The last churn event, with nothing after it but the quiet: a member crashed, or one
    /// cut off from the API server for twice the Lease's duration. Random churn piles events
    /// into every gap (each widens the bound a gap is judged by), so a member counted gone
    /// too late, or one writing past its renewal deadline, would hide in most schedules.
    async fn closing_scene(&mut self, rng: &mut StdRng) {
        if self.live.len() < 2 {
            self.join().await;
            self.events.push(self.now_ms());
        }
        // The others agree a view first: the scene starts from a settled ring.
        tokio::time::sleep(Duration::from_secs(30)).await;
        self.restart_ended().await;
        let Some(id) = self.pick(rng) else {
            return;
        };
        self.events.push(self.now_ms());
        if rng.random_bool(0.5) {
            self.crash(&id);
        } else {
            let lease = member_config(NS, &id).lease_duration;
            self.partition(&id, 2 * lease);
        }
    }

    async fn churn(&mut self, rng: &mut StdRng) {
        let first = rng.random_range(1..=5);
        for _ in 0..first {
            self.join().await;
        }
        while self.start.elapsed() < CHURN {
            tokio::time::sleep(Duration::from_millis(rng.random_range(500..20_000))).await;
            self.restart_ended().await;
            self.events.push(self.now_ms());
            let size = self.live.len();
            match rng.random_range(0..4) {
                0 if size < 5 => self.join().await,
                1 if size > 1 => {
                    if let Some(id) = self.pick(rng) {
                        self.crash(&id);
                    }
                }
                2 if size > 1 => {
                    if let Some(id) = self.pick(rng) {
                        self.leave(&id);
                    }
                }
                3 => {
                    let millis = rng.random_range(1_000..14_000);
                    let count = rng.random_range(1..4);
                    let admin = self.sim.admin();
                    let _ =
                        admin.inject_latency(LEASES, Duration::from_millis(millis), Some(count));
                    self.latencies
                        .push((self.now_ms(), millis * u64::from(count)));
                }
                _ => {}
            }
        }
        self.closing_scene(rng).await;
        let quiet_until = self.start.elapsed() + QUIET;
        while self.start.elapsed() < quiet_until {
            tokio::time::sleep(Duration::from_secs(5)).await;
            self.restart_ended().await;
        }
    }
}

/// Runs the schedule of `seed`; returns what its checks found.
pub fn run(seed: u64) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    pgtoolbox_operator::testing::supervisor::random::seed_thread(Some(seed));
    let (journal, latencies, events, end) = runtime.block_on(async {
        pgtoolbox_sim::ops::follow_tokio_clock(crate::world::EPOCH.parse::<jiff::Timestamp>().ok());
        let sim = InProcessSim::start(SimConfig {
            seed: Some(seed),
            ..SimConfig::default()
        })
        .expect("the in-process sim starts");
        let start = tokio::time::Instant::now();
        let mut world = World {
            sim,
            log: Log::default(),
            start,
            seed,
            journal: Journal::default(),
            live: BTreeMap::new(),
            joined: 0,
            latencies: Vec::new(),
            events: Vec::new(),
        };
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5_4A2D);
        world.churn(&mut rng).await;
        let end = world.now_ms();
        for (_, process) in std::mem::take(&mut world.live) {
            process.task.abort();
        }
        let journal = world
            .journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        (journal, world.latencies, world.events, end)
    });
    drop(runtime);
    pgtoolbox_operator::testing::supervisor::random::seed_thread(None);
    pgtoolbox_sim::ops::follow_tokio_clock(None);
    if std::env::var_os("DST_VERBOSE").is_some() {
        for (at, who, change) in &journal {
            let what = match change {
                Change::Applied(o) => format!("applies {:?}", o.rings().last()),
                Change::Ended => "ends".into(),
            };
            println!("{at:>8} {who} {what}");
        }
    }
    check(&journal, &latencies, &events, end)
}

/// The three invariants over the journal.
fn check(
    journal: &[(u64, String, Change)],
    latencies: &[(u64, u64)],
    events: &[u64],
    end: u64,
) -> Vec<String> {
    let config = member_config(NS, "any");
    // A gap an event opens closes within the Lease's duration (a crashed member counted gone)
    // plus the hand-off's own steps: a few renewal and listing periods.
    let period = (config.renew_every + config.retry_every).as_millis() as u64;
    let per_event = config.lease_duration.as_millis() as u64 + 4 * period;
    // Each churn event in a gap may open its own hand-off; Lease latency injected then (or
    // shortly before) delays it by as much.
    let allowed = |since: u64, at: u64| {
        let events_in = events.iter().filter(|e| (since..=at).contains(*e)).count();
        let delays: u64 = latencies
            .iter()
            .filter(|(when, _)| (since.saturating_sub(per_event)..=at).contains(when))
            .map(|(_, delay)| delay)
            .sum();
        per_event * events_in.max(1) as u64 + delays
    };
    let mut out = Vec::new();
    let keys = keys();
    let mut held: BTreeMap<&str, &Ownership> = BTreeMap::new();
    let mut unowned_since: Vec<Option<u64>> = vec![Some(0); keys.len()];
    let mut events_seen = 0;
    for (at, who, change) in journal {
        match change {
            Change::Applied(ownership) => held.insert(who, ownership),
            Change::Ended => held.remove(who.as_str()),
        };
        for (i, key) in keys.iter().enumerate() {
            let writers: Vec<&&str> = held
                .iter()
                .filter(|(_, o)| o.owns(*key))
                .map(|(w, _)| w)
                .collect();
            if writers.len() > 1 {
                out.push(format!(
                    "at-most-one-writer: object {i} held by {writers:?} at {at} ms"
                ));
            }
            match (writers.len(), unowned_since[i]) {
                (0, None) => unowned_since[i] = Some(*at),
                (n, Some(since)) if n > 0 => {
                    let bound = allowed(since, *at);
                    if since > 0 && at - since > bound {
                        out.push(format!(
                            "expiry-late: object {i} without an owner from {since} to {at} ms \
                             (bound {bound} ms)"
                        ));
                    }
                    unowned_since[i] = None;
                }
                _ => {}
            }
        }
        events_seen += 1;
    }
    for (i, key) in keys.iter().enumerate() {
        let judges = held.values().filter(|o| o.owns(*key)).count();
        if judges != 1 {
            out.push(format!(
                "one-judge: object {i} judged by {judges} members at the end ({end} ms)"
            ));
        }
    }
    if events_seen == 0 {
        out.push("no member ever applied a share".into());
    }
    out
}
