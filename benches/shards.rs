//! N active members (issue 30): the same N PgAccessRequests brought to their statuses by 1, 2
//! or 4 operator processes on this machine (`pgtoolbox-operator run`, one alone in the
//! single-replica mode, several with `--shards auto`); per member, the memory it grew by, its
//! peak and CPU; the writes; then one member SIGKILLed and the time until a drift made right
//! after is repaired on a sample of requests, those of the killed member included (they wait
//! for its Lease to expire). See BENCHMARKS.md.
//!
//! Run: `cargo bench --bench shards` (N = 100,000, members 1, 2 and 4, three runs), scaled by
//! `SHARDS_N`, `SHARDS_MEMBERS=1,2,4`, `SHARDS_RUNS`, `SHARDS_SAMPLE` (drifted requests in the
//! hand-off, 200), `SHARDS_EXPIRY_SECS` (0: the expiring requests are due before the members
//! start), `SHARDS_TIMEOUT_SECS` (1800, the wait for convergence); each run's figures are
//! appended to `SHARDS_OUT` (JSON lines) when set; `SHARDS_OPERATOR_LOG=<prefix>` keeps member
//! i's log in `<prefix>.<i>`. `SHARDS_PLACEMENT=namespace` places requests by namespace on a
//! server offering KEP-5866's shardSelector (server-side sharded watches; `SHARDS_GATE=off`:
//! the same without the server's filtering), watching the `SEED_NAMESPACES` (10) namespaces
//! requests are seeded in one by one (`WATCH_NAMESPACES`, also with
//! `SHARDS_WATCH_NAMESPACES=1` for the default placement).
//! `-- --smoke`: N = 1,000, members 1 and 2, one run, a sample of 50.
//!
//! Every (N, members, run) is its own child process holding the embedded API server; the
//! members are its children.

#[path = "common/mod.rs"]
mod common;
#[path = "shards/handoff.rs"]
mod handoff;
#[path = "shards/members.rs"]
mod members;
// Shared with the convergence bench, which uses more of them.
#[allow(dead_code)]
#[path = "convergence/observe.rs"]
mod observe;
#[path = "shards/report.rs"]
mod report;
#[allow(dead_code)]
#[path = "convergence/seed.rs"]
mod seed;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use pgtoolbox_operator::api::render_crds_yaml;
use pgtoolbox_sim::{Sim, SimConfig};
use serde::{Deserialize, Serialize};

use common::child::{self, env_or};
use common::measure;
use common::phases::writes_settled;
use handoff::HandOff;
use observe::Observer;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub members: usize,
    pub n: usize,
    pub run: usize,
    /// From the members' start until every request showed its final reason.
    pub converged_s: f64,
    /// From the members' start until the API server saw no write for a second.
    pub writes_done_s: f64,
    /// Every write until then (Lease renewals included), all members together.
    pub writes: u64,
    /// A single replica with nothing to reconcile, KiB: what each member's growth is taken from.
    pub idle_rss_kb: u64,
    /// The same replica's live heap (jemalloc's allocated bytes), KiB.
    #[serde(default)]
    pub idle_heap_kb: u64,
    pub per_member: Vec<MemberFigures>,
    /// The Lease timings of the members, s.
    pub lease_s: f64,
    pub renew_s: f64,
    /// Several members: the hand-off after one of them was SIGKILLed.
    pub hand_off: Option<HandOff>,
    /// Members that exited on their own (name, status, seconds after the start): their figures
    /// read 0 and the hand-off is skipped when fewer than two are left.
    #[serde(default)]
    pub exits: Vec<String>,
    /// The 1-minute load average at the start and at convergence.
    pub load: (f64, f64),
    /// `object` or `namespace` (`SHARDS_PLACEMENT`), the watches and where the share is
    /// filtered (`members::describe`), and over how many namespaces.
    #[serde(default)]
    pub placement: String,
    #[serde(default)]
    pub namespaces: usize,
    /// Lists and watches the server filtered by a shard selector (namespace placement).
    #[serde(default)]
    pub shard_selected: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MemberFigures {
    /// Its RSS at rest once converged (idle actors hibernated), and its peak, KiB.
    pub rss_kb: u64,
    pub peak_kb: u64,
    /// Its allocator's live heap and resident pages at rest, KiB (from its `/metrics`): what
    /// RSS holds beyond the live heap is the allocator's (fragmentation, pages not yet purged).
    #[serde(default)]
    pub heap_allocated_kb: u64,
    #[serde(default)]
    pub heap_resident_kb: u64,
    /// CPU since its start, s.
    pub cpu_s: f64,
    /// The requests the ring gives it (all of them for a single replica).
    pub owned: usize,
}

/// One child's work.
struct Plan {
    members: usize,
    n: usize,
    run: usize,
    sample: usize,
    expiry: Duration,
    timeout: Duration,
}

impl Plan {
    fn to_args(&self) -> Vec<String> {
        [
            self.members,
            self.n,
            self.run,
            self.sample,
            self.expiry.as_secs() as usize,
            self.timeout.as_secs() as usize,
        ]
        .iter()
        .map(usize::to_string)
        .collect()
    }

    fn from_args(args: &[String]) -> Self {
        let arg = |i: usize| -> usize {
            args.get(i)
                .and_then(|v| v.parse().ok())
                .expect("numeric child argument")
        };
        Self {
            members: arg(0),
            n: arg(1),
            run: arg(2),
            sample: arg(3),
            expiry: Duration::from_secs(arg(4) as u64),
            timeout: Duration::from_secs(arg(5) as u64),
        }
    }
}

fn list_of(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect()
}

fn main() {
    let args = child::args();
    if let Some(args) = child::child_args(&args) {
        let plan = Plan::from_args(args);
        let result = child::runtime().block_on(run(plan));
        child::finish(&result);
    }
    let smoke = args.iter().any(|a| a == "--smoke");
    let (ns, member_counts, runs, sample, timeout) = if smoke {
        (vec![1_000], vec![1, 2], 1, 50, 180)
    } else {
        (
            list_of("SHARDS_N", "100000"),
            list_of("SHARDS_MEMBERS", "1,2,4"),
            env_or("SHARDS_RUNS", 3),
            env_or("SHARDS_SAMPLE", 200),
            env_or("SHARDS_TIMEOUT_SECS", 1800),
        )
    };
    // By default the expiring requests are due before the members start: their first pass
    // expires them, and the convergence time is not floored by an expiry instant.
    let expiry = Duration::from_secs(env_or("SHARDS_EXPIRY_SECS", 0));
    let started = Instant::now();
    let mut plan = Vec::new();
    for &n in &ns {
        for run in 1..=runs {
            for &members in &member_counts {
                let step = Plan {
                    members,
                    n,
                    run,
                    sample,
                    expiry,
                    timeout: Duration::from_secs(timeout),
                };
                let label = format!("shards n={n} members={members} run {run}/{runs}");
                plan.push((label, step.to_args()));
            }
        }
    }
    let results: Vec<RunResult> = child::spawn_each("SHARDS_OUT", plan);
    report::print(&results);
    eprintln!("total {:.1} s", started.elapsed().as_secs_f64());
}

async fn run(plan: Plan) -> RunResult {
    let crds = render_crds_yaml().expect("CRDs render");
    let sim = Sim::start(SimConfig {
        extra_crds: vec![crds],
        sharded_list_and_watch: members::server_sharding(),
        ..SimConfig::default()
    })
    .await
    .expect("sim starts");
    let client = sim.client();
    let namespace: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": members::operator_namespace()}
    }))
    .expect("namespace manifest");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("operator namespace created");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)
        .expect("kubeconfig written");
    let (idle_rss_kb, idle_heap_kb) = members::idle_kb(&sim, &kubeconfig).await;

    let seeding = Instant::now();
    let mut fleet = seed::seed(&client, plan.n).await;
    let mut observer = Observer::start(&client, plan.n).await;
    seed::arm_expiries(&client, &mut fleet, plan.expiry).await;
    drop(fleet);
    eprintln!(
        "   seeded {} in {:.1} s; an idle replica holds {} MiB",
        plan.n,
        seeding.elapsed().as_secs_f64(),
        idle_rss_kb / 1024
    );

    sim.admin().reset_stats();
    let load_start = measure::load_average();
    let start = Instant::now();
    let mut running = members::start(&kubeconfig, plan.members);
    let mut exits = Vec::new();
    {
        let converged = observer.all_converged(plan.timeout);
        tokio::pin!(converged);
        loop {
            tokio::select! {
                _ = &mut converged => break,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {
                    note_exits(&mut running, start, &mut exits);
                }
            }
        }
    }
    let converged_s = start.elapsed().as_secs_f64();
    let load_end = measure::load_average();
    let writes_done_s = writes_settled(&sim, start).await;
    let writes = sim.stats().writes();
    let shard_selected: u64 = sim.stats().shard_selected.values().sum();
    // Idle actors hibernate after a second: memory is measured at rest.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let owned = owned_per_member(&client, &running, plan.n).await;
    let mut per_member = Vec::new();
    for (member, owned) in running.iter().zip(owned) {
        let (heap_allocated_kb, heap_resident_kb) = member.heap_kb().await.unwrap_or((0, 0));
        per_member.push(MemberFigures {
            rss_kb: measure::rss_kb_of(member.pid()),
            peak_kb: measure::peak_kb_of(member.pid()),
            heap_allocated_kb,
            heap_resident_kb,
            cpu_s: measure::cpu_seconds_of_pid(member.pid()),
            owned,
        });
    }
    eprintln!(
        "   {} member(s): converged {converged_s:.1} s, writes done {writes_done_s:.1} s, {:.2} writes per request; per member RSS MiB {:?}, live heap MiB {:?} (idle {}), allocator resident MiB {:?}, CPU s {:?}, owned {:?}",
        plan.members,
        writes as f64 / plan.n as f64,
        per_member
            .iter()
            .map(|m| m.rss_kb / 1024)
            .collect::<Vec<_>>(),
        per_member
            .iter()
            .map(|m| m.heap_allocated_kb / 1024)
            .collect::<Vec<_>>(),
        idle_heap_kb / 1024,
        per_member
            .iter()
            .map(|m| m.heap_resident_kb / 1024)
            .collect::<Vec<_>>(),
        per_member
            .iter()
            .map(|m| (m.cpu_s * 10.0).round() / 10.0)
            .collect::<Vec<_>>(),
        per_member.iter().map(|m| m.owned).collect::<Vec<_>>(),
    );
    if shard_selected > 0 {
        eprintln!(
            "   placed by namespace over {} namespaces: {shard_selected} lists and watches filtered by the server",
            seed::namespaces()
        );
    }
    note_exits(&mut running, start, &mut exits);
    // The victim is the last member still running.
    let gone = |m: &members::Member| exits.iter().any(|e| e.starts_with(&format!("{}:", m.name)));
    let alive = running.iter().filter(|m| !gone(m)).count();
    let victim = running.iter_mut().rev().find(|m| !gone(m));
    let hand_off = match victim {
        Some(victim) if alive > 1 => {
            let sample = handoff::sample(plan.n, plan.sample);
            let hand_off = handoff::measure(&client, &mut observer, victim, &sample).await;
            eprintln!(
                "   hand-off: max {:.1} s, p50 {:.0} ms over {} drifts ({} of the killed member's)",
                hand_off.max_ms() / 1e3,
                hand_off.p50_ms(),
                hand_off.sample,
                hand_off.killed_owned
            );
            Some(hand_off)
        }
        _ => None,
    };
    drop(running);
    let lease = members::lease_config();
    RunResult {
        members: plan.members,
        n: plan.n,
        run: plan.run,
        converged_s,
        writes_done_s,
        writes,
        idle_rss_kb,
        idle_heap_kb,
        per_member,
        lease_s: lease.lease_duration.as_secs_f64(),
        renew_s: lease.renew_every.as_secs_f64(),
        hand_off,
        exits,
        load: (load_start, load_end),
        placement: members::describe(),
        namespaces: seed::namespaces(),
        shard_selected,
    }
}

/// Records the members that exited on their own since the last look, when and how.
fn note_exits(running: &mut [members::Member], start: Instant, exits: &mut Vec<String>) {
    for member in running {
        let Some(status) = member.exited() else {
            continue;
        };
        if exits
            .iter()
            .any(|e| e.starts_with(&format!("{}:", member.name)))
        {
            continue;
        }
        let exit = format!(
            "{}: {status} by {:.0} s",
            member.name,
            start.elapsed().as_secs_f64()
        );
        eprintln!("   member exited on its own: {exit}");
        exits.push(exit);
    }
}

/// How many of the `n` requests the ring gives each member (all of them to a single replica).
async fn owned_per_member(
    client: &kube::Client,
    running: &[members::Member],
    n: usize,
) -> Vec<usize> {
    if running.len() < 2 {
        return vec![n; running.len()];
    }
    let identities = members::identities(client).await;
    let rings = members::rings(&identities);
    // An identity is its member's `POD_NAME` and a suffix.
    let member_of: Vec<Option<usize>> = identities
        .iter()
        .map(|id| {
            running
                .iter()
                .position(|m| id.starts_with(&format!("{}-", m.name)))
        })
        .collect();
    let mut owned = vec![0; running.len()];
    for index in 0..n {
        if let Some(member) = members::owner_of(&rings, index).and_then(|i| member_of[i]) {
            owned[member] += 1;
        }
    }
    owned
}
