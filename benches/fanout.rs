//! Secret fan-out: N objects each using a few of M Secrets, then K Secret changes one after
//! the other. Counts that every change wakes exactly its users (passes per object, before and
//! after) and times each change until all its users' passes are done, for our runtime against
//! kube-runtime's `Controller` with `.watches()` on Secrets. See BENCHMARKS.md.
//!
//! Run: `cargo bench --bench fanout` (100,000 objects, 10,000 Secrets, 3 uses each, 1,000
//! changes, 3 runs per driver); scaled by `FANOUT_OBJECTS`, `FANOUT_SECRETS`, `FANOUT_USES`,
//! `FANOUT_CHANGES`, `FANOUT_RUNS`, `FANOUT_DRIVERS=controller,ours`; each run's figures are
//! appended to `FANOUT_OUT` (JSON lines) when set. `-- --smoke`: 2,000 objects, 200 Secrets,
//! 100 changes, one run (a few seconds).
//!
//! Every (driver, run) is its own child process.

#[path = "common/mod.rs"]
mod common;
#[path = "fanout/drivers.rs"]
mod drivers;
#[path = "fanout/world.rs"]
mod world;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use pgtoolbox_sim::{Sim, SimConfig};
use serde::{Deserialize, Serialize};

use common::child::{self, env_or};
use common::measure;
use common::stats::{group_by, median, percentile};
use drivers::Driver;
use world::{NAMESPACE, Passes, Scale};

/// How long nothing may pass before the changes start, and after the last one before the
/// final count (a wrongly routed or late wake-up shows up in that time).
const SETTLE: Duration = Duration::from_secs(2);

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub driver: String,
    pub objects: usize,
    pub secrets: usize,
    pub uses: usize,
    pub changes: usize,
    pub seed_s: f64,
    /// Start of the driver until every object passed once.
    pub first_passes_s: f64,
    /// Ours: (live actors, hibernated objects) when the changes began.
    pub actors_before_changes: Option<(i64, i64)>,
    /// Per change: from the patch request until every user's pass was done.
    pub latencies_ms: Vec<f64>,
    pub users_per_change: f64,
    /// Passes the changes must cause (the users of each changed Secret) and those counted.
    pub wakes_expected: u64,
    pub wakes_counted: u64,
    /// Objects whose pass count over the change phase differs from the changes of their
    /// Secrets (woken too often, or not at all).
    pub objects_off: usize,
    /// Ours: Secret events the router saw and the wake-ups it sent during the changes.
    pub router_events: Option<u64>,
    pub router_wakeups: Option<u64>,
    pub cpu_changes_s: f64,
    pub rss_kb: u64,
}

fn main() {
    let args = child::args();
    if let Some(args) = child::child_args(&args) {
        run_child(args);
    }
    let smoke = args.iter().any(|a| a == "--smoke");
    let scale = if smoke {
        Scale {
            objects: 2_000,
            secrets: 200,
            uses: 3,
            changes: 100,
        }
    } else {
        Scale {
            objects: env_or("FANOUT_OBJECTS", 100_000),
            secrets: env_or("FANOUT_SECRETS", 10_000),
            uses: env_or("FANOUT_USES", 3),
            changes: env_or("FANOUT_CHANGES", 1_000),
        }
    };
    let runs = if smoke { 1 } else { env_or("FANOUT_RUNS", 3) };
    let drivers: Vec<Driver> = std::env::var("FANOUT_DRIVERS")
        .map(|list| list.split(',').filter_map(Driver::parse).collect())
        .unwrap_or_else(|_| Driver::ALL.to_vec());
    let plan = (1..=runs).flat_map(|run| {
        drivers.iter().map(move |driver| {
            let label = format!("fanout {} run {run}/{runs} {scale:?}", driver.name());
            let args = [
                driver.name().to_owned(),
                scale.objects.to_string(),
                scale.secrets.to_string(),
                scale.uses.to_string(),
                scale.changes.to_string(),
            ];
            (label, args.to_vec())
        })
    });
    let results: Vec<RunResult> = child::spawn_each("FANOUT_OUT", plan);
    report(&results);
    if results.iter().any(|r| r.objects_off > 0) {
        eprintln!("some change woke other objects than its users, or missed one");
        std::process::exit(1);
    }
}

fn run_child(args: &[String]) -> ! {
    let arg = |i: usize| -> usize { args.get(i).and_then(|v| v.parse().ok()).unwrap_or(0) };
    let driver = args
        .first()
        .and_then(|d| Driver::parse(d))
        .expect("driver name");
    let scale = Scale {
        objects: arg(1),
        secrets: arg(2),
        uses: arg(3),
        changes: arg(4),
    };
    let result = child::runtime().block_on(run(driver, scale));
    child::finish(&result)
}

async fn run(driver: Driver, scale: Scale) -> RunResult {
    let sim = Sim::start(SimConfig::default()).await.expect("sim starts");
    let client = sim.client();
    let seeding = Instant::now();
    world::seed(&client, scale).await;
    let seed_s = seeding.elapsed().as_secs_f64();
    let users = scale.users();
    eprintln!("   seeded in {seed_s:.1} s");

    let passes = Passes::new(scale.objects);
    let start = Instant::now();
    let running = drivers::start(driver, &client, passes.clone()).await;
    passes.all_passed_once().await;
    let first_passes_s = start.elapsed().as_secs_f64();
    passes_settled(&passes).await;
    // Ours changes wake hibernated objects, as in a long-running operator.
    let actors_before_changes = running.actors_settled(Duration::from_secs(15)).await;
    eprintln!(
        "   {}: first passes in {first_passes_s:.2} s; actors (live, hibernated) {actors_before_changes:?}",
        driver.name()
    );

    let router_before = running.router_counts().await;
    let before = passes.snapshot();
    let cpu_before = measure::cpu_seconds();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let mut latencies_ms = Vec::with_capacity(scale.changes);
    let mut expected = vec![0u32; scale.objects];
    for c in 0..scale.changes {
        let s = scale.changed_secret(c);
        let its_users = &users[s];
        for &u in its_users {
            expected[u as usize] += 1;
        }
        let counts = passes.of(its_users);
        let changed = Instant::now();
        world::change_secret(&secrets, s, c).await;
        tokio::time::timeout(
            Duration::from_secs(60),
            passes.passed_since(its_users, &counts),
        )
        .await
        .expect("every user of the changed Secret passes within a minute");
        latencies_ms.push(changed.elapsed().as_secs_f64() * 1e3);
    }
    let cpu_changes_s = measure::cpu_seconds() - cpu_before;
    passes_settled(&passes).await;
    let after = passes.snapshot();
    let router_after = running.router_counts().await;
    running.stop().await;
    let counted: Vec<u32> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let objects_off = counted
        .iter()
        .zip(&expected)
        .filter(|(c, e)| c != e)
        .count();
    let result = RunResult {
        driver: driver.name().into(),
        objects: scale.objects,
        secrets: scale.secrets,
        uses: scale.uses,
        changes: scale.changes,
        seed_s,
        first_passes_s,
        actors_before_changes,
        users_per_change: expected.iter().map(|&e| f64::from(e)).sum::<f64>()
            / scale.changes.max(1) as f64,
        wakes_expected: expected.iter().map(|&e| u64::from(e)).sum(),
        wakes_counted: counted.iter().map(|&c| u64::from(c)).sum(),
        objects_off,
        router_events: router_before
            .zip(router_after)
            .map(|(b, a)| a.0.saturating_sub(b.0)),
        router_wakeups: router_before
            .zip(router_after)
            .map(|(b, a)| a.1.saturating_sub(b.1)),
        cpu_changes_s,
        rss_kb: measure::rss_kb(),
        latencies_ms,
    };
    eprintln!(
        "   {}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; wakes {} of {} expected, {} objects off",
        driver.name(),
        percentile(&result.latencies_ms, 50.0),
        percentile(&result.latencies_ms, 99.0),
        percentile(&result.latencies_ms, 100.0),
        result.wakes_counted,
        result.wakes_expected,
        result.objects_off
    );
    result
}

/// Waits until no pass happened for [`SETTLE`].
async fn passes_settled(passes: &Passes) {
    let mut seen = passes.total();
    let mut still_since = Instant::now();
    while still_since.elapsed() < SETTLE {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = passes.total();
        if now != seen {
            seen = now;
            still_since = Instant::now();
        }
    }
}

/// One Markdown table: per driver, medians over the runs of each run's figures.
fn report(results: &[RunResult]) {
    let by_driver = group_by(results, |r| r.driver.as_str());
    println!(
        "| driver | runs | objects / Secrets / uses / changes | users per change | first passes (s) | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) | wakes counted / expected | objects off | CPU of the changes (s) | RSS (MiB) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (driver, runs) in by_driver {
        let med = |f: &dyn Fn(&RunResult) -> f64| median(runs.iter().map(|r| f(r)).collect());
        let first = runs[0];
        println!(
            "| {driver} | {} | {} / {} / {} / {} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {} / {} | {} | {:.2} | {:.0} |",
            runs.len(),
            first.objects,
            first.secrets,
            first.uses,
            first.changes,
            first.users_per_change,
            med(&|r| r.first_passes_s),
            med(&|r| percentile(&r.latencies_ms, 50.0)),
            med(&|r| percentile(&r.latencies_ms, 90.0)),
            med(&|r| percentile(&r.latencies_ms, 99.0)),
            med(&|r| percentile(&r.latencies_ms, 100.0)),
            runs.iter().map(|r| r.wakes_counted).sum::<u64>(),
            runs.iter().map(|r| r.wakes_expected).sum::<u64>(),
            runs.iter().map(|r| r.objects_off).sum::<usize>(),
            med(&|r| r.cpu_changes_s),
            med(&|r| r.rss_kb as f64 / 1024.0),
        );
    }
}
