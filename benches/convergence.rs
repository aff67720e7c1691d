//! Convergence of N PgAccessRequests on the embedded API server: our actor runtime against
//! kube-runtime's `Controller` running the same reconcile code, and against a plain client
//! issuing the same writes (the ceiling). See BENCHMARKS.md for the figures.
//!
//! Run: `cargo bench --bench convergence` (N = 1,000 and 10,000, three runs each), scaled by
//! `CONVERGENCE_N=1000,10000,100000`, `CONVERGENCE_RUNS`, `CONVERGENCE_QUIET_SECS` (30),
//! `CONVERGENCE_EXPIRY_SECS` (3), `CONVERGENCE_DRIVERS=raw,controller,ours`,
//! `CONVERGENCE_FIRST_PASSES` (ours' cold-start bound, 0 = none); each run's raw
//! figures are appended to `CONVERGENCE_OUT` (JSON lines) when set. CI runs
//! `cargo bench --bench convergence -- --smoke` (N = 1,000, one run, a 3 s quiet phase).
//!
//! Every (driver, N, run) is its own child process (this binary with `--child`), so memory and
//! CPU figures of one never include another.
//!
//! Ours ends with a restart (`common/restart.rs`): a new operator over the converged requests,
//! timed until every request had its pass, its writes counted (goal 0), against a plain paged
//! list of the requests and their RoleBindings in the same run (goal <= 1.5x).

#[path = "common/mod.rs"]
mod common;
#[path = "convergence/drivers.rs"]
mod drivers;
#[path = "convergence/observe.rs"]
mod observe;
#[path = "convergence/report.rs"]
mod report;
#[path = "convergence/seed.rs"]
mod seed;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, ListParams};
use pgtoolbox_operator::api::{PgAccessRequest, render_crds_yaml};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::{Sim, SimConfig};
use serde::{Deserialize, Serialize};

use common::allocator;
use common::child::{self, env_or};
use common::measure;
use common::phases::{Quiet, quiet_phase, writes_settled};
use common::restart::{self, Restart, paged_list};
use drivers::Driver;
use observe::Observer;

/// Every driver runs on the operator binary's allocator (src/main.rs), so the comparison stays
/// fair and ours is measured as it ships.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Concurrent writes allowed to every driver (the operator's default budget).
const WRITE_BUDGET: usize = 32;
/// The request whose RoleBinding is changed after the quiet phase (an approved one).
const CHANGED_INDEX: usize = 4;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub driver: String,
    pub n: usize,
    pub seed_s: f64,
    /// Start of the driver until every request has a status.
    pub status_s: f64,
    /// Start of the driver until every request shows its final reason (expiries included).
    pub converged_s: f64,
    /// Start of the driver until its last write (Events trail the status writes).
    pub writes_done_s: f64,
    /// From the expiry instant until the last expired request was seen.
    pub expiry_lag_ms: f64,
    pub requests_by_verb: BTreeMap<String, u64>,
    pub requests_by_verb_resource: BTreeMap<String, u64>,
    pub answers_by_code: BTreeMap<u16, u64>,
    pub writes: u64,
    pub rss_before_kb: u64,
    pub rss_after_kb: u64,
    /// RSS after convergence once the allocator returned its free pages (live memory).
    pub rss_live_kb: u64,
    pub peak_kb: u64,
    pub peak_reset: bool,
    pub cpu_run_s: f64,
    /// Of `cpu_run_s`, the embedded API server's threads; the rest is the driver's (with the
    /// bench's observer, the same for every driver).
    #[serde(default)]
    pub cpu_server_s: f64,
    pub quiet: Option<Quiet>,
    pub change_latency_ms: Option<f64>,
    /// Ours: (live actors, hibernated objects) when memory was measured.
    #[serde(default)]
    pub actors_at_measure: Option<(i64, i64)>,
    /// Ours: a second operator started over the converged requests.
    #[serde(default)]
    pub restart: Option<Restart>,
    /// Heap in use (jemalloc's `stats.allocated`) before the driver and when memory was measured, KiB.
    #[serde(default)]
    pub heap_before_kb: u64,
    #[serde(default)]
    pub heap_live_kb: u64,
    /// Which run of its N (1-based), so ratios are taken within one run.
    #[serde(default)]
    pub run: usize,
}

fn main() {
    let args = child::args();
    if let Some(args) = child::child_args(&args) {
        run_child(args);
    }
    let smoke = args.iter().any(|a| a == "--smoke");
    let ns: Vec<usize> = if smoke {
        vec![1_000]
    } else {
        std::env::var("CONVERGENCE_N")
            .unwrap_or_else(|_| "1000,10000".into())
            .split(',')
            .filter_map(|v| v.trim().parse().ok())
            .collect()
    };
    let runs = if smoke {
        1
    } else {
        env_or("CONVERGENCE_RUNS", 3)
    };
    let quiet = if smoke {
        3
    } else {
        env_or("CONVERGENCE_QUIET_SECS", 30)
    };
    let expiry = env_or("CONVERGENCE_EXPIRY_SECS", 3);
    // The smoke run must fail fast in CI rather than hang.
    let timeout = if smoke { 45 } else { 1800 };
    let drivers: Vec<Driver> = std::env::var("CONVERGENCE_DRIVERS")
        .map(|list| list.split(',').filter_map(Driver::parse).collect())
        .unwrap_or_else(|_| Driver::ALL.to_vec());
    let started = Instant::now();
    let mut results = Vec::new();
    for &n in &ns {
        for run in 1..=runs {
            for &driver in &drivers {
                eprintln!("== {} n={n} run {run}/{runs}", driver.name());
                match spawn_child(driver, n, quiet, expiry, timeout) {
                    Ok(mut result) => {
                        result.run = run;
                        child::save("CONVERGENCE_OUT", &result);
                        results.push(result);
                    }
                    Err(err) => {
                        eprintln!("convergence run failed: {err}");
                        std::process::exit(1);
                    }
                }
            }
        }
    }
    report::print(&results, runs, quiet);
    eprintln!("total {:.1} s", started.elapsed().as_secs_f64());
}

fn spawn_child(
    driver: Driver,
    n: usize,
    quiet: u64,
    expiry: u64,
    timeout: u64,
) -> Result<RunResult, String> {
    child::spawn(&[
        driver.name().to_owned(),
        n.to_string(),
        quiet.to_string(),
        expiry.to_string(),
        timeout.to_string(),
    ])
}

fn run_child(args: &[String]) -> ! {
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let driver = Driver::parse(&arg(0)).expect("driver name");
    let n: usize = arg(1).parse().expect("object count");
    let quiet: u64 = arg(2).parse().expect("quiet seconds");
    let expiry: u64 = arg(3).parse().expect("expiry seconds");
    let timeout = Duration::from_secs(arg(4).parse().expect("timeout seconds"));
    let result = child::runtime().block_on(run(driver, n, quiet, expiry, timeout));
    child::finish(&result)
}

async fn run(
    driver: Driver,
    n: usize,
    quiet_secs: u64,
    expiry_secs: u64,
    timeout: Duration,
) -> RunResult {
    let crds = render_crds_yaml().expect("CRDs render");
    let sim = Sim::start(SimConfig {
        extra_crds: vec![crds],
        ..SimConfig::default()
    })
    .await
    .expect("sim starts");
    let client = sim.client();
    let seeding = Instant::now();
    let mut fleet = seed::seed(&client, n).await;
    let mut observer = Observer::start(&client, n).await;
    let seed_s = seeding.elapsed().as_secs_f64();
    let expires_at =
        seed::arm_expiries(&client, &mut fleet, Duration::from_secs(expiry_secs)).await;
    eprintln!("   seeded {n} in {seed_s:.1} s");

    let settings = OperatorSettings {
        max_inflight_writes: WRITE_BUDGET,
        // Every driver starts all first passes at once; the jitter would only add a floor.
        startup_jitter: Duration::ZERO,
        // `CONVERGENCE_FIRST_PASSES=0`: no cold-start bound (all actors live at once), to
        // measure what the bound saves.
        first_passes_at_once: Some(env_or(
            "CONVERGENCE_FIRST_PASSES",
            OperatorSettings::default()
                .first_passes_at_once
                .unwrap_or(0),
        ))
        .filter(|at_once| *at_once > 0),
        ..OperatorSettings::default()
    };
    allocator::trim_heap();
    let rss_before_kb = measure::rss_kb();
    let heap_before_kb = allocator::heap_in_use_kb();
    let peak_reset = measure::reset_peak();
    let cpu_before = measure::cpu_seconds();
    let server_cpu_before = measure::threads_cpu_seconds(pgtoolbox_sim::THREAD_NAME);
    sim.admin().reset_stats();
    let start = Instant::now();
    let running = drivers::start(driver, &client, &settings, fleet).await;
    observer.all_with_status(timeout).await;
    let status_s = start.elapsed().as_secs_f64();
    observer.all_converged(timeout).await;
    let converged_s = start.elapsed().as_secs_f64();
    let writes_done_s = writes_settled(&sim, start).await;
    let stats = sim.stats();
    let cpu_run_s = measure::cpu_seconds() - cpu_before;
    let cpu_server_s = measure::threads_cpu_seconds(pgtoolbox_sim::THREAD_NAME) - server_cpu_before;
    // Memory is measured at rest: ours once its idle actors hibernated (1 s linger).
    let actors_at_measure = running.actors_settled(Duration::from_secs(15)).await;
    if let Some((live, asleep)) = actors_at_measure {
        eprintln!("   at measurement: {live} live actors, {asleep} hibernated objects");
    }
    let rss_after_kb = measure::rss_kb();
    let peak_kb = measure::peak_kb();
    allocator::trim_heap();
    let rss_live_kb = measure::rss_kb();
    let heap_live_kb = allocator::heap_in_use_kb();
    let expiry_lag_ms = observer.last_expiry_seen().map_or(0.0, |seen| {
        let at = std::time::SystemTime::from(expires_at);
        let seen_wall = std::time::SystemTime::now() - seen.elapsed();
        seen_wall
            .duration_since(at)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    });
    eprintln!(
        "   {}: status {status_s:.2} s, converged {converged_s:.2} s, writes done {writes_done_s:.2} s, {} writes, RSS {} -> {} MiB",
        driver.name(),
        stats.writes(),
        rss_before_kb / 1024,
        rss_after_kb / 1024
    );
    eprintln!(
        "   live after trim {} MiB; answers {:?}; {:?}",
        rss_live_kb / 1024,
        stats.by_code,
        stats.by_verb_resource
    );

    let (quiet, change_latency_ms) = if driver == Driver::Raw {
        (None, None)
    } else {
        let quiet = quiet_phase(&sim, quiet_secs).await;
        let latency = binding_change(&client, &mut observer).await;
        (Some(quiet), Some(latency))
    };
    running.stop().await;
    let restart = if driver == Driver::Ours {
        Some(restart_phase(&sim, &client, &settings, n, timeout).await)
    } else {
        None
    };
    RunResult {
        driver: driver.name().into(),
        n,
        seed_s,
        status_s,
        converged_s,
        writes_done_s,
        expiry_lag_ms,
        writes: stats.writes(),
        requests_by_verb: stats.by_verb,
        requests_by_verb_resource: stats.by_verb_resource,
        answers_by_code: stats.by_code,
        rss_before_kb,
        rss_after_kb,
        rss_live_kb,
        peak_kb,
        peak_reset,
        cpu_run_s,
        cpu_server_s,
        quiet,
        change_latency_ms,
        actors_at_measure,
        restart,
        heap_before_kb,
        heap_live_kb,
        run: 0,
    }
}

/// Ours stopped, a new operator over the converged requests: until every request was judged
/// (its pass ran) and what that cost; then the plain paged list of the requests and their
/// RoleBindings.
async fn restart_phase(
    sim: &Sim,
    client: &kube::Client,
    settings: &OperatorSettings,
    n: usize,
    timeout: Duration,
) -> Restart {
    sim.admin().reset_stats();
    let start = Instant::now();
    let running = drivers::start(Driver::Ours, client, settings, Vec::new()).await;
    running.passes_reached(1, timeout).await;
    let first_pass_s = start.elapsed().as_secs_f64();
    let passes = running
        .passes_reached(n as u64, timeout)
        .await
        .unwrap_or_default();
    let judged_s = start.elapsed().as_secs_f64();
    let judged = restart::settled(sim, start, [first_pass_s, judged_s], passes).await;
    running.stop().await;
    let listing = Instant::now();
    let all = ListParams::default();
    let requests = paged_list(&Api::<PgAccessRequest>::all(client.clone()), &all).await;
    let bindings = paged_list(&Api::<RoleBinding>::all(client.clone()), &all).await;
    let list_s = listing.elapsed().as_secs_f64();
    judged.listed(
        list_s,
        &format!("{requests} requests and {bindings} RoleBindings"),
    )
}

/// A second subject is added to an approved request's RoleBinding; the time until its status
/// reports the drift (the binding is deleted in the same pass, before the status write).
async fn binding_change(client: &kube::Client, observer: &mut Observer) -> f64 {
    let start = seed::drift_binding(client, CHANGED_INDEX).await;
    let seen = observer
        .reached_at(
            &[CHANGED_INDEX],
            "RoleBindingDrifted",
            Duration::from_secs(60),
        )
        .await;
    let latency = seen[0].saturating_duration_since(start).as_secs_f64() * 1e3;
    eprintln!("   RoleBinding change seen in status after {latency:.1} ms");
    latency
}
