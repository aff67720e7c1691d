//! Medians over the runs, printed as the Markdown tables of BENCHMARKS.md.

use std::collections::BTreeMap;

use super::RunResult;
use super::common::restart;
use super::common::stats::median;

/// Medians of one driver at one N.
struct Summary {
    runs: usize,
    status_s: f64,
    converged_s: f64,
    writes_done_s: f64,
    expiry_lag_ms: f64,
    writes_per_object: f64,
    verbs: BTreeMap<String, f64>,
    /// Growth of the whole process (sim included) from before the driver started, KiB.
    growth_kb: f64,
    /// The same once the allocator gave its free pages back.
    live_growth_kb: f64,
    peak_growth_kb: f64,
    cpu_run_s: f64,
    /// Of which the embedded API server's threads.
    cpu_server_s: f64,
    quiet_writes_max: Option<u64>,
    quiet_requests_max: Option<u64>,
    quiet_cpu_pct: Option<f64>,
    change_ms: Option<f64>,
    /// Growth of the heap in use (the allocator's statistics), KiB: live memory without fragmentation.
    heap_growth_kb: f64,
    /// Ours: the run with the most live actors when memory was measured (live, hibernated).
    actors_at_measure: Option<(i64, i64)>,
    /// Ours: the restart over the converged requests.
    restart: Option<restart::Summary>,
}

fn summarise(runs: &[&RunResult]) -> Summary {
    let m = |f: &dyn Fn(&RunResult) -> f64| median(runs.iter().map(|r| f(r)).collect());
    let n = runs.first().map_or(1, |r| r.n.max(1)) as f64;
    let mut verbs = BTreeMap::new();
    for verb in runs.iter().flat_map(|r| r.requests_by_verb.keys()) {
        verbs.entry(verb.clone()).or_insert_with(|| {
            m(&|r: &RunResult| r.requests_by_verb.get(verb).copied().unwrap_or(0) as f64)
        });
    }
    let quiet: Vec<_> = runs.iter().filter_map(|r| r.quiet.as_ref()).collect();
    Summary {
        runs: runs.len(),
        status_s: m(&|r| r.status_s),
        converged_s: m(&|r| r.converged_s),
        writes_done_s: m(&|r| r.writes_done_s),
        expiry_lag_ms: m(&|r| r.expiry_lag_ms),
        writes_per_object: m(&|r| r.writes as f64 / n),
        verbs,
        growth_kb: m(&|r| r.rss_after_kb as f64 - r.rss_before_kb as f64),
        live_growth_kb: m(&|r| r.rss_live_kb as f64 - r.rss_before_kb as f64),
        peak_growth_kb: m(&|r| r.peak_kb as f64 - r.rss_before_kb as f64),
        cpu_run_s: m(&|r| r.cpu_run_s),
        cpu_server_s: m(&|r| r.cpu_server_s),
        quiet_writes_max: quiet.iter().map(|q| q.writes).max(),
        quiet_requests_max: quiet.iter().map(|q| q.requests).max(),
        quiet_cpu_pct: (!quiet.is_empty())
            .then(|| median(quiet.iter().map(|q| 100.0 * q.cpu_s / q.seconds).collect())),
        change_ms: (!quiet.is_empty()).then(|| m(&|r| r.change_latency_ms.unwrap_or(f64::NAN))),
        heap_growth_kb: m(&|r| r.heap_live_kb as f64 - r.heap_before_kb as f64),
        actors_at_measure: runs
            .iter()
            .filter_map(|r| r.actors_at_measure)
            .max_by_key(|(live, _)| *live),
        restart: restart::summarise(runs.iter().filter_map(|r| r.restart.as_ref())),
    }
}

fn opt<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "–".into(), |v| v.to_string())
}

pub fn print(results: &[RunResult], runs: usize, quiet_secs: u64) {
    let mut ns: Vec<usize> = results.iter().map(|r| r.n).collect();
    ns.sort_unstable();
    ns.dedup();
    println!("\nMedians over {runs} run(s) per row; quiet phase {quiet_secs} s.\n");
    for n in ns {
        let mut by_driver: BTreeMap<&str, Summary> = BTreeMap::new();
        for driver in ["raw", "controller", "ours"] {
            let runs: Vec<&RunResult> = results
                .iter()
                .filter(|r| r.n == n && r.driver == driver)
                .collect();
            if !runs.is_empty() {
                by_driver.insert(driver, summarise(&runs));
            }
        }
        print_table(n, &by_driver);
        print_same_run_ratios(n, results);
    }
}

/// Ours against the other drivers within each run (the machine's load changes between runs,
/// not within one), then the median of those ratios.
fn print_same_run_ratios(n: usize, results: &[RunResult]) {
    let of = |driver: &str, run: usize| {
        results
            .iter()
            .find(|r| r.n == n && r.run == run && r.driver == driver)
    };
    let nf = n.max(1) as f64;
    let beyond =
        |r: &RunResult, raw: &RunResult, field: fn(&RunResult) -> f64| (field(r) - field(raw)) / nf;
    let live = |r: &RunResult| r.rss_live_kb as f64 - r.rss_before_kb as f64;
    let heap = |r: &RunResult| r.heap_live_kb as f64 - r.heap_before_kb as f64;
    let mut columns: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut runs: Vec<usize> = results.iter().filter(|r| r.n == n).map(|r| r.run).collect();
    runs.sort_unstable();
    runs.dedup();
    for run in runs {
        let (Some(ours), Some(raw)) = (of("ours", run), of("raw", run)) else {
            continue;
        };
        let driver_cpu = |r: &RunResult| r.cpu_run_s - r.cpu_server_s;
        let mut line = vec![
            ("converged / raw", ours.converged_s / raw.converged_s),
            ("last write / raw", ours.writes_done_s / raw.writes_done_s),
            ("server CPU / raw's", ours.cpu_server_s / raw.cpu_server_s),
            ("driver CPU / raw's", driver_cpu(ours) / driver_cpu(raw)),
            ("ours live beyond raw (KB/object)", beyond(ours, raw, live)),
            ("ours heap beyond raw (KB/object)", beyond(ours, raw, heap)),
        ];
        if let Some(controller) = of("controller", run) {
            line.extend([
                (
                    "converged / Controller",
                    ours.converged_s / controller.converged_s,
                ),
                (
                    "last write / Controller",
                    ours.writes_done_s / controller.writes_done_s,
                ),
                (
                    "Controller live beyond raw (KB/object)",
                    beyond(controller, raw, live),
                ),
                (
                    "Controller heap beyond raw (KB/object)",
                    beyond(controller, raw, heap),
                ),
            ]);
        }
        let text: Vec<String> = line.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
        println!("- run {run}: {}", text.join(", "));
        for (k, v) in line {
            columns.entry(k).or_default().push(v);
        }
    }
    let text: Vec<String> = columns
        .into_iter()
        .map(|(k, v)| format!("{k} {:.2}", median(v)))
        .collect();
    if !text.is_empty() {
        println!("- medians of the same-run figures: {}\n", text.join(", "));
    }
}

fn print_table(n: usize, by_driver: &BTreeMap<&str, Summary>) {
    let nf = n as f64;
    println!("### N = {n}\n");
    println!(
        "| driver | runs | all statuses (s) | converged (s) | last write (s) | expiry lag (ms) | writes/object | requests by verb | process RSS growth (KB/object) | live growth, heap trimmed (KB/object) | peak growth (KB/object) | CPU (s) | quiet: requests / writes / CPU | change latency (ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (driver, s) in by_driver {
        let verbs: Vec<String> = s.verbs.iter().map(|(v, c)| format!("{v} {c:.0}")).collect();
        let quiet = match (s.quiet_requests_max, s.quiet_writes_max, s.quiet_cpu_pct) {
            (Some(r), Some(w), Some(c)) => format!("{r} / {w} / {c:.1}%"),
            _ => "–".into(),
        };
        println!(
            "| {driver} | {} | {:.2} | {:.2} | {:.2} | {:.0} | {:.2} | {} | {:.2} | {:.2} | {:.2} | {:.1} | {quiet} | {} |",
            s.runs,
            s.status_s,
            s.converged_s,
            s.writes_done_s,
            s.expiry_lag_ms,
            s.writes_per_object,
            verbs.join(", "),
            s.growth_kb / nf,
            s.live_growth_kb / nf,
            s.peak_growth_kb / nf,
            s.cpu_run_s,
            opt(s.change_ms.map(|v| format!("{v:.1}"))),
        );
    }
    println!();
    for (driver, s) in by_driver {
        println!(
            "- {driver} CPU per object until its last write: the API server's threads {:.3} ms, the driver's (with the bench's observer) {:.3} ms",
            1e3 * s.cpu_server_s / nf,
            1e3 * (s.cpu_run_s - s.cpu_server_s) / nf,
        );
    }
    let (Some(ours), raw, controller) = (
        by_driver.get("ours"),
        by_driver.get("raw"),
        by_driver.get("controller"),
    ) else {
        return;
    };
    // The sim grows the same under every driver (same objects, same writes): what a driver
    // grows beyond the raw client is that driver's own memory.
    let share = |s: &Summary| raw.map(|r| (s.growth_kb - r.growth_kb) / nf);
    let live_share = |s: &Summary| raw.map(|r| (s.live_growth_kb - r.live_growth_kb) / nf);
    let ratio = |a: f64, b: f64| format!("{:.2}×", a / b);
    if let Some(raw) = raw {
        println!(
            "- ours / raw ceiling: all statuses {}, converged {}, last write {}, process growth {}",
            ratio(ours.status_s, raw.status_s),
            ratio(ours.converged_s, raw.converged_s),
            ratio(ours.writes_done_s, raw.writes_done_s),
            ratio(ours.growth_kb, raw.growth_kb)
        );
    }
    if let Some(controller) = controller {
        println!(
            "- ours / Controller: all statuses {}, converged {}, last write {}, process growth {}, peak growth {}",
            ratio(ours.status_s, controller.status_s),
            ratio(ours.converged_s, controller.converged_s),
            ratio(ours.writes_done_s, controller.writes_done_s),
            ratio(ours.growth_kb, controller.growth_kb),
            ratio(ours.peak_growth_kb, controller.peak_growth_kb)
        );
        if let (Some(a), Some(b)) = (share(ours), share(controller)) {
            println!(
                "- runtime's own memory (growth beyond raw): ours {a:.2} KB/object, Controller {b:.2} KB/object ({})",
                ratio(a, b)
            );
        }
        if let (Some(a), Some(b)) = (live_share(ours), live_share(controller)) {
            println!(
                "- the same, live (heap trimmed): ours {a:.2} KB/object, Controller {b:.2} KB/object ({})",
                ratio(a, b)
            );
        }
    } else if let (Some(a), Some(b)) = (share(ours), live_share(ours)) {
        println!(
            "- runtime's own memory (growth beyond raw): ours {a:.2} KB/object; live (heap trimmed) {b:.2} KB/object"
        );
    }
    if let Some(raw) = raw {
        println!(
            "- heap in use (allocator statistics) growth beyond raw: ours {:.2} KB/object{}",
            (ours.heap_growth_kb - raw.heap_growth_kb) / nf,
            controller.map_or(String::new(), |c| format!(
                ", Controller {:.2} KB/object",
                (c.heap_growth_kb - raw.heap_growth_kb) / nf
            ))
        );
    }
    if let Some(r) = &ours.restart {
        println!(
            "{}",
            r.line(
                "ours restarted over the converged requests",
                "the requests and their RoleBindings",
                nf
            )
        );
    }
    if let Some((live, asleep)) = ours.actors_at_measure {
        println!(
            "- ours when memory was measured: {live} live actors, {asleep} hibernated objects"
        );
    }
    println!();
}
