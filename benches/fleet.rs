//! Mixed fleet on the simulated cluster: the same number of PgToolBoxConsoles, PgAdmins and
//! EvidenceAgents created while the operator runs (the real binary, `pgtoolbox-operator run`,
//! in its own process, so its memory and CPU are its own), until every one is Ready; requests
//! and writes per object; the operator's RSS per object; a quiet phase; and the same with 1%
//! of the objects whose Pod cannot pull its image, to see whether the healthy 99% slow down.
//! See BENCHMARKS.md.
//!
//! Run: `cargo bench --bench fleet` (2,000 of each kind over 20 namespaces, both scenarios,
//! 3 runs); scaled by `FLEET_PER_KIND`, `FLEET_NAMESPACES`, `FLEET_RUNS`, `FLEET_QUIET_SECS`
//! (10), `FLEET_SCENARIOS=healthy,faulty`; each run's figures are appended to `FLEET_OUT`
//! (JSON lines) when set; the operator's log is appended to `FLEET_OPERATOR_LOG=<file>`
//! (default `target/fleet-operator.log`; its filter `FLEET_OPERATOR_RUST_LOG`, default `warn`;
//! with several members, member i's in `<file>.<i>`);
//! `FLEET_MEMBERS=N` (1) runs N operator processes with `--shards auto` instead of one (the
//! operator figures are then their sums, and the report adds each member's; no restart phase);
//! `FLEET_READY_TIMEOUT_SECS` (900) bounds the wait for Ready. After each healthy run, a
//! `ceiling` run replays what the operator made with the fewest writes (`fleet/ceiling.rs`)
//! and the report gives ours / ceiling; `FLEET_CEILING=0` skips it. After each healthy run,
//! once the operator stopped, a driver caches the same objects with kube-runtime reflectors
//! (whole, then without managedFields; `fleet/footprint.rs`) and the report gives the memory
//! per object of ours, of those caches and the JSON floor; `FLEET_CONTROLLER_FOOTPRINT=0`
//! skips it. Each healthy run also has a restart (`fleet/restart.rs`): a new operator process
//! over the Ready fleet, timed until every object had its pass, its writes counted (goal 0),
//! against a plain paged list of the fleet and its children in the same run;
//! `FLEET_RESTART=0` skips it.
//! `-- --smoke`: 50 of each kind, 2 namespaces, one run of each scenario.
//!
//! Every (scenario, run) is its own child process holding the simulated cluster; the operator
//! is a grandchild.

#[path = "fleet/ceiling.rs"]
mod ceiling;
#[path = "common/mod.rs"]
mod common;
#[path = "fleet/footprint.rs"]
mod footprint;
#[path = "fleet/restart.rs"]
mod restart;
#[path = "fleet/world.rs"]
mod world;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pgtoolbox_sim::cluster::WorkloadFault;
use pgtoolbox_sim::{Sim, SimConfig};
use serde::{Deserialize, Serialize};

use common::child::{self, env_or};
use common::members::{self, Member};
use common::phases::{Quiet, quiet_phase_of, writes_settled};
use common::stats::{group_by, median, ratio_of_medians};
use common::{measure, operator};
use world::{Fleet, FleetKind, Observer};

/// The operator's allocator, so that the Controller-footprint driver's memory compares with its.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
/// One faulty object in this many, in the `faulty` scenario.
const FAULTY_EVERY: usize = 100;
/// The scenario of the ceiling runs (see `fleet/ceiling.rs`).
const CEILING: &str = "ceiling";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub scenario: String,
    pub per_kind: usize,
    pub objects: usize,
    pub faulty: usize,
    /// From the first create until every healthy object was seen Ready (by a watch).
    pub healthy_ready_s: Option<f64>,
    pub ready_by_kind_s: Vec<(String, f64)>,
    /// Until the API server saw no write for a second.
    pub writes_done_s: f64,
    /// The operator's requests and writes, from the first create until the writes settled,
    /// creates of the fleet itself taken out (the observer's watches opened before).
    pub requests: u64,
    pub writes: u64,
    pub by_verb_resource: BTreeMap<String, u64>,
    /// The API server's answers by HTTP status (409s: creates of children already there).
    #[serde(default)]
    pub by_code: BTreeMap<u16, u64>,
    /// The error answers by `code verb group/resource` (which requests the 409s were).
    #[serde(default)]
    pub errors_by_verb_resource: BTreeMap<String, u64>,
    pub operator_rss_before_kb: u64,
    pub operator_rss_after_kb: u64,
    pub operator_peak_kb: u64,
    pub operator_cpu_s: f64,
    /// Operator processes (`FLEET_MEMBERS`); the operator figures are their sums.
    #[serde(default)]
    pub members: usize,
    /// Each member's RSS growth over the run, KiB (several members only).
    #[serde(default)]
    pub member_rss_growth_kb: Vec<u64>,
    pub quiet: Quiet,
    /// The 1-minute load average when the objects were created and when they were all Ready.
    #[serde(default)]
    pub load: (f64, f64),
    /// The same objects in a kube-runtime-style cache (`fleet/footprint.rs`), healthy runs.
    #[serde(default)]
    pub controller: Option<footprint::Footprints>,
    /// Healthy runs: a new operator process over the Ready fleet (`fleet/restart.rs`).
    #[serde(default)]
    pub restart: Option<common::restart::Restart>,
}

fn main() {
    let args = child::args();
    if let Some(args) = child::child_args(&args) {
        run_child(args);
    }
    if args.first().map(String::as_str) == Some(ceiling::DRIVER_ARG) {
        ceiling::drive(&args[1..]);
    }
    if args.first().map(String::as_str) == Some(footprint::DRIVER_ARG) {
        footprint::drive(&args[1..]);
    }
    let smoke = args.iter().any(|a| a == "--smoke");
    let (per_kind, namespaces, runs) = if smoke {
        (50, 2, 1)
    } else {
        (
            env_or("FLEET_PER_KIND", 2_000),
            env_or("FLEET_NAMESPACES", 20),
            env_or("FLEET_RUNS", 3),
        )
    };
    let quiet = if smoke {
        3
    } else {
        env_or("FLEET_QUIET_SECS", 10)
    };
    let scenarios: Vec<String> = std::env::var("FLEET_SCENARIOS")
        .unwrap_or_else(|_| "healthy,faulty".into())
        .split(',')
        .map(str::to_owned)
        .collect();
    // The ceiling replays what the healthy run of the same number made (`fleet/ceiling.rs`).
    let with_ceiling = env_or("FLEET_CEILING", 1) != 0 && scenarios.iter().any(|s| s == "healthy");
    let dumps = tempfile::tempdir().expect("temp dir");
    let plan = (1..=runs).flat_map(|run| {
        let dump = dumps.path().join(format!("run-{run}.json"));
        let dump = dump.to_string_lossy().into_owned();
        let mut steps: Vec<String> = scenarios.clone();
        if with_ceiling {
            steps.push(CEILING.to_owned());
        }
        steps.into_iter().map(move |scenario| {
            let label = format!("fleet {scenario} run {run}/{runs}: {per_kind} of each kind");
            let keeps = with_ceiling && (scenario == "healthy" || scenario == CEILING);
            let args = [
                scenario,
                per_kind.to_string(),
                namespaces.to_string(),
                quiet.to_string(),
                if keeps { dump.clone() } else { String::new() },
            ];
            (label, args.to_vec())
        })
    });
    let results: Vec<RunResult> = child::spawn_each("FLEET_OUT", plan);
    report(&results);
}

fn run_child(args: &[String]) -> ! {
    let arg = |i: usize| -> usize { args.get(i).and_then(|v| v.parse().ok()).unwrap_or(0) };
    let scenario = args.first().cloned().unwrap_or_default();
    let fleet = Fleet {
        per_kind: arg(1),
        namespaces: arg(2).max(1),
        faulty_every: if scenario == "faulty" {
            FAULTY_EVERY
        } else {
            0
        },
    };
    let dump = args
        .get(4)
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from);
    let result = child::runtime().block_on(run(scenario, fleet, arg(3) as u64, dump));
    child::finish(&result)
}

/// `FLEET_OPERATOR_LOG`: where the operator's log is appended; `target/fleet-operator.log` by
/// default, so a member that exits on its own leaves why (its default filter is `warn`).
fn operator_log() -> std::path::PathBuf {
    std::env::var_os("FLEET_OPERATOR_LOG")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fleet-operator.log")
        })
}

/// `FLEET_OPERATOR_RUST_LOG`: the operator's tracing filter (default `warn`), to see where its
/// passes wait.
fn operator_filter(command: &mut std::process::Command) {
    if let Ok(filter) = std::env::var("FLEET_OPERATOR_RUST_LOG") {
        command.env("RUST_LOG", filter);
    }
}

/// The operator binary against the sim, its `/metrics` on `metrics_port` (0: any).
fn start_operator(kubeconfig: &std::path::Path, metrics_port: u16) -> std::process::Child {
    operator::start(
        kubeconfig,
        Some(operator_log().as_path()),
        metrics_port,
        operator_filter,
    )
}

/// `members` operator processes: one alone, or a `--shards auto` ring whose member i logs to
/// `FLEET_OPERATOR_LOG` with the extension `.<i>`.
fn start_operators(kubeconfig: &std::path::Path, members: usize) -> Vec<Member> {
    if members == 1 {
        let child = start_operator(kubeconfig, 0);
        return vec![Member {
            name: "operator".into(),
            child,
            metrics_port: 0,
        }];
    }
    let log_of = |i: usize| Some(operator_log().with_extension(i.to_string()));
    members::start(kubeconfig, members, log_of, operator_filter)
}

/// Resolves when an operator process exited on its own, naming it and its status (the
/// operator never exits while it works: it lost its Lease, or a kind failed).
async fn first_exit(operators: &mut [Member]) -> String {
    loop {
        for member in operators.iter_mut() {
            if let Some(status) = member.exited() {
                let log = operator_log();
                return format!(
                    "{} exited: {status} (the members' logs: {}.<i>)",
                    member.name,
                    log.with_extension("").display()
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the operator watches the three kinds (its caches listed them). A member that
/// exits meanwhile ends the bench with its status: it would never watch them.
async fn operator_watching(sim: &Sim, operators: &mut [Member]) {
    let watched = |stats: &pgtoolbox_sim::Stats| {
        FleetKind::ALL.iter().all(|k| {
            let plural = k.plural();
            stats
                .by_verb_resource
                .keys()
                .any(|key| key.starts_with("watch ") && key.ends_with(plural))
        })
    };
    let watching = async {
        while !watched(&sim.stats()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::select! {
        () = watching => {}
        exit = first_exit(operators) => panic!("before the operator watched the kinds: {exit}"),
    }
    // Its other caches list too: let them settle before the timed part.
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// `dump`: where the healthy run leaves what it made for the ceiling run, which reads it.
async fn run(
    scenario: String,
    fleet: Fleet,
    quiet_secs: u64,
    dump: Option<std::path::PathBuf>,
) -> RunResult {
    let ready_timeout = Duration::from_secs(env_or("FLEET_READY_TIMEOUT_SECS", 900));
    let is_ceiling = scenario == CEILING;
    // The driver does nothing once done: a second tells as much.
    let quiet_secs = if is_ceiling { 1 } else { quiet_secs };
    let crds = pgtoolbox_operator::api::render_crds_yaml().expect("CRDs render");
    let sim = Sim::start(SimConfig {
        extra_crds: vec![crds],
        controllers: true,
        // 110 Pods per Node, with room to spare.
        nodes: (fleet.pods() / 100 + 2) as u32,
        seed: Some(1),
        ..SimConfig::default()
    })
    .await
    .expect("sim starts");
    let client = sim.client();
    world::infrastructure(&client, fleet).await;
    if let Some(selector) = world::faulty_selector(fleet) {
        sim.admin()
            .add_workload_fault("", &selector, WorkloadFault::ImagePullBackOff)
            .expect("fault added");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)
        .expect("kubeconfig written");
    let members = env_or("FLEET_MEMBERS", 1usize).max(1);
    let mut operators = match (&dump, is_ceiling) {
        (Some(dump), true) => vec![Member {
            name: CEILING.into(),
            child: ceiling::start_driver(&kubeconfig, dump, fleet),
            metrics_port: 0,
        }],
        _ => start_operators(&kubeconfig, members),
    };
    let pids: Vec<u32> = operators.iter().map(Member::pid).collect();
    let rss_of =
        |pids: &[u32]| -> Vec<u64> { pids.iter().map(|p| measure::rss_kb_of(*p)).collect() };
    let cpu_of =
        |pids: &[u32]| -> f64 { pids.iter().map(|p| measure::cpu_seconds_of_pid(*p)).sum() };
    if !is_ceiling {
        operator_watching(&sim, &mut operators).await;
    }

    let rss_each_before = rss_of(&pids);
    let rss_before = rss_each_before.iter().sum();
    let cpu_before = cpu_of(&pids);
    let observer = Observer::start(&client);
    // Its list and watch requests before the counted part.
    tokio::time::sleep(Duration::from_millis(500)).await;
    sim.admin().reset_stats();
    let load_start = measure::load_average();
    let start = Instant::now();
    world::objects(&client, fleet).await;
    let created = start.elapsed().as_secs_f64();
    let ready = if is_ceiling {
        // The ceiling's driver may end once it wrote everything.
        observer.healthy_ready(fleet, start, ready_timeout).await
    } else {
        tokio::select! {
            ready = observer.healthy_ready(fleet, start, ready_timeout) => ready,
            exit = first_exit(&mut operators) => panic!("before the fleet was Ready: {exit}"),
        }
    };
    if ready.is_none() {
        world::diagnose(&client).await;
    }
    let load_end = measure::load_average();
    let writes_done_s = writes_settled(&sim, start).await;
    let stats = sim.stats();
    let operator_cpu_s = cpu_of(&pids) - cpu_before;
    if let (Some(path), false) = (&dump, is_ceiling) {
        let made = ceiling::dump(&client).await;
        let text = serde_json::to_string(&made).expect("dump serialises");
        std::fs::write(path, text).expect("dump written");
    }
    // Idle actors hibernate after a second: measure memory at rest.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_each_after = rss_of(&pids);
    let rss_after = rss_each_after.iter().sum();
    let peak = pids.iter().map(|p| measure::peak_kb_of(*p)).sum();
    let member_rss_growth_kb = match pids.len() {
        1 => Vec::new(),
        _ => rss_each_after
            .iter()
            .zip(&rss_each_before)
            .map(|(after, before)| after.saturating_sub(*before))
            .collect(),
    };
    let fleet_creates = fleet.objects() as u64;
    let mut result = RunResult {
        scenario: scenario.clone(),
        per_kind: fleet.per_kind,
        objects: fleet.objects(),
        faulty: (0..fleet.per_kind).filter(|&i| fleet.faulty(i)).count() * FleetKind::ALL.len(),
        healthy_ready_s: ready.as_ref().map(|(all, _)| *all),
        ready_by_kind_s: ready
            .map(|(_, by)| by.into_iter().map(|(k, s)| (format!("{k:?}"), s)).collect())
            .unwrap_or_default(),
        writes_done_s,
        requests: stats.total.saturating_sub(fleet_creates),
        writes: stats.writes().saturating_sub(fleet_creates),
        by_verb_resource: stats.by_verb_resource.clone(),
        by_code: stats.by_code.clone(),
        errors_by_verb_resource: stats.errors_by_verb_resource.clone(),
        operator_rss_before_kb: rss_before,
        operator_rss_after_kb: rss_after,
        operator_peak_kb: peak,
        operator_cpu_s,
        members: pids.len(),
        member_rss_growth_kb,
        quiet: quiet_phase_of(&sim, quiet_secs, &pids).await,
        load: (load_start, load_end),
        controller: None,
        restart: None,
    };
    eprintln!(
        "   {scenario}: created in {created:.1} s, healthy Ready {:?} s, writes done {writes_done_s:.1} s, {:.1} requests / {:.1} writes per object, operator RSS {} -> {} MiB, load {:.1} -> {:.1}, {} answers 409",
        result.healthy_ready_s,
        result.requests as f64 / fleet.objects() as f64,
        result.writes as f64 / fleet.objects() as f64,
        rss_before / 1024,
        rss_after / 1024,
        load_start,
        load_end,
        result.by_code.get(&409).copied().unwrap_or(0)
    );
    if !result.errors_by_verb_resource.is_empty() {
        eprintln!("   error answers: {:?}", result.errors_by_verb_resource);
    }
    if scenario == "healthy" && restart::enabled() && operators.len() == 1 {
        let phase = restart::phase(
            &sim,
            &client,
            &kubeconfig,
            &mut operators[0].child,
            fleet,
            ready_timeout,
        );
        result.restart = Some(phase.await);
    }
    operators.iter_mut().for_each(Member::kill);
    // With the operator stopped, nothing writes: the driver caches what it left.
    if footprint::wanted(&scenario) {
        result.controller = footprint::measure(&kubeconfig).await;
    }
    result
}

fn report(results: &[RunResult]) {
    let by_scenario = group_by(results, |r| r.scenario.as_str());
    println!(
        "| scenario | runs | objects (faulty) | healthy all Ready (s) | last Ready per kind (s) | writes done (s) | requests / object | writes / object | operator RSS growth (KB/object) | operator peak (MiB) | operator CPU (s) | quiet: requests / writes / CPU | load average |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (scenario, runs) in &by_scenario {
        let med = |f: &dyn Fn(&RunResult) -> f64| median(runs.iter().map(|r| f(r)).collect());
        let first = runs[0];
        let objects = first.objects as f64;
        let kinds: Vec<String> = first
            .ready_by_kind_s
            .iter()
            .enumerate()
            .map(|(i, (kind, _))| {
                let s = med(&|r| r.ready_by_kind_s.get(i).map_or(f64::NAN, |(_, s)| *s));
                format!("{kind} {s:.1}")
            })
            .collect();
        println!(
            "| {scenario} | {} | {} ({}) | {:.2} | {} | {:.2} | {:.1} | {:.2} | {:.2} | {:.0} | {:.1} | {} / {} / {:.1}% | {:.1}–{:.1} |",
            runs.len(),
            first.objects,
            first.faulty,
            med(&|r| r.healthy_ready_s.unwrap_or(f64::NAN)),
            kinds.join(", "),
            med(&|r| r.writes_done_s),
            med(&|r| r.requests as f64) / objects,
            med(&|r| r.writes as f64) / objects,
            med(&|r| r
                .operator_rss_after_kb
                .saturating_sub(r.operator_rss_before_kb) as f64)
                * 1.024
                / objects,
            med(&|r| r.operator_peak_kb as f64 / 1024.0),
            med(&|r| r.operator_cpu_s),
            runs.iter().map(|r| r.quiet.requests).max().unwrap_or(0),
            runs.iter().map(|r| r.quiet.writes).max().unwrap_or(0),
            med(&|r| r.quiet.cpu_s / r.quiet.seconds * 100.0),
            runs.iter()
                .map(|r| r.load.0.min(r.load.1))
                .fold(f64::NAN, f64::min),
            runs.iter()
                .map(|r| r.load.0.max(r.load.1))
                .fold(f64::NAN, f64::max),
        );
    }
    // Creates of children already there (a pass that ran before the watch reported the child
    // the previous pass created): the children store's read-your-writes should leave none.
    for (scenario, runs) in &by_scenario {
        let conflicts: Vec<u64> = runs
            .iter()
            .map(|r| r.by_code.get(&409).copied().unwrap_or(0))
            .collect();
        println!("- {scenario}: answers 409 per run: {conflicts:?}");
    }
    for (scenario, runs) in &by_scenario {
        restart::report(scenario, runs);
    }
    // Several members: what each grew by (its share of the fleet and its own caches).
    for (scenario, runs) in &by_scenario {
        for run in runs.iter().filter(|r| r.members > 1) {
            let per_object: Vec<f64> = run
                .member_rss_growth_kb
                .iter()
                .map(|kb| (*kb as f64 * 1.024 / run.objects as f64 * 100.0).round() / 100.0)
                .collect();
            println!(
                "- {scenario}: {} members, RSS growth per member (KB per object of the fleet): {per_object:?}",
                run.members
            );
        }
    }
    if let (Some(ours), Some(ceiling)) = (by_scenario.get("healthy"), by_scenario.get(CEILING)) {
        ceiling_report(ours, ceiling);
    }
    if let Some(healthy) = by_scenario.get("healthy") {
        footprint::report(healthy);
    }
    // Whether the faulty 1% slow the rest: run by run (the two scenarios of a run follow each
    // other, so they met about the same load), the faulty scenario's healthy objects against
    // the healthy scenario's.
    if let (Some(healthy), Some(faulty)) = (by_scenario.get("healthy"), by_scenario.get("faulty")) {
        let ratios: Vec<f64> = healthy
            .iter()
            .zip(faulty)
            .filter_map(|(h, f)| Some(f.healthy_ready_s? / h.healthy_ready_s?))
            .collect();
        println!(
            "\n- faulty / healthy, time until every healthy object is Ready: {:.2}× (median of {} runs: {:?})",
            median(ratios.clone()),
            ratios.len(),
            ratios
                .iter()
                .map(|r| (r * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
    }
}

/// The run's writes of Events (creates, and patches of a series), by the counters' keys
/// ("verb resource", the resource with its API group).
fn event_writes(run: &RunResult) -> u64 {
    run.by_verb_resource
        .iter()
        .filter(|(key, _)| {
            key.split_once(' ').is_some_and(|(verb, resource)| {
                verb != "get"
                    && verb != "list"
                    && verb != "watch"
                    && (resource == "events" || resource.ends_with(".k8s.io/events"))
            })
        })
        .map(|(_, count)| count)
        .sum()
}

/// Ours (the healthy scenario) against the ceiling, run by run and as the ratio of the medians,
/// each next to its goal; then the writes and requests per object by verb and resource.
fn ceiling_report(ours: &[&RunResult], ceiling: &[&RunResult]) {
    let per_object = |runs: &[&RunResult], f: &dyn Fn(&RunResult) -> f64| -> Vec<f64> {
        runs.iter().map(|r| f(r) / r.objects as f64).collect()
    };
    // (what, the run's figure, divided per object, goal)
    type Row<'a> = (&'a str, &'a dyn Fn(&RunResult) -> f64, bool, Option<f64>);
    let rows: [Row; 5] = [
        (
            "time to all Ready (s)",
            &|r| r.healthy_ready_s.unwrap_or(f64::NAN),
            false,
            Some(1.25),
        ),
        ("writes / object", &|r| r.writes as f64, true, Some(1.3)),
        // The ceiling writes no Events; the spec has the operator write some: what is left
        // once both sides' Events are taken out.
        (
            "writes but Events / object",
            &|r| r.writes.saturating_sub(event_writes(r)) as f64,
            true,
            Some(1.3),
        ),
        ("requests / object", &|r| r.requests as f64, true, None),
        (
            "driver CPU / object (ms)",
            &|r| r.operator_cpu_s * 1000.0,
            true,
            None,
        ),
    ];
    println!("\n| ours / ceiling (healthy) | ours | ceiling | ratio | per run | goal |");
    println!("|---|---|---|---|---|---|");
    for (what, f, divided, goal) in rows {
        let values = |runs: &[&RunResult]| {
            if divided {
                per_object(runs, f)
            } else {
                runs.iter().map(|r| f(r)).collect()
            }
        };
        let (r, per_run) = ratio_of_medians(&values(ours), &values(ceiling));
        let goal = goal.map_or("-".to_owned(), |g| {
            let verdict = if r.ratio <= g { "met" } else { "missed" };
            format!("<= {g}x: {verdict}")
        });
        println!(
            "| {what} | {:.2} | {:.2} | {:.2}x | {:?} | {goal} |",
            r.ours,
            r.ceiling,
            r.ratio,
            per_run
                .iter()
                .map(|x| (x * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
    }
    // Where the difference goes: the median count per object of each verb and resource.
    let keys: std::collections::BTreeSet<&String> = ours
        .iter()
        .chain(ceiling)
        .flat_map(|r| r.by_verb_resource.keys())
        .collect();
    println!("\n| verb resource (per object, medians) | ours | ceiling |");
    println!("|---|---|---|");
    for key in keys {
        let med = |runs: &[&RunResult]| {
            median(
                runs.iter()
                    .map(|r| {
                        r.by_verb_resource.get(key).copied().unwrap_or(0) as f64 / r.objects as f64
                    })
                    .collect(),
            )
        };
        println!("| {key} | {:.3} | {:.3} |", med(ours), med(ceiling));
    }
}
