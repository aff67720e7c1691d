//! Medians over the runs of each (N, members), printed as the Markdown table of BENCHMARKS.md.

use std::collections::BTreeMap;

use super::common::stats::median;
use super::{HandOff, RunResult};

/// KiB to kB (the table's unit, as the fleet bench's).
const KB_PER_KIB: f64 = 1.024;

pub fn print(results: &[RunResult]) {
    let mut groups: BTreeMap<(usize, usize), Vec<&RunResult>> = BTreeMap::new();
    for r in results {
        groups.entry((r.n, r.members)).or_default().push(r);
    }
    println!(
        "| N | members | runs | converged (s) | writes done (s) | writes / request | requests owned per member | RSS growth per member (kB / request of N) | live heap growth per member (kB / request of N) | RSS growth, all members (MiB) | peak per member (MiB) | CPU per member (s) | hand-off: slowest repair (s) | p50 repair (ms) | killed member's share: first–last repair (s) | survivors' p50 (ms) | Lease (s) | load average |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for ((n, members), runs) in &groups {
        let med = |f: &dyn Fn(&RunResult) -> f64| median(runs.iter().map(|r| f(r)).collect());
        let objects = *n as f64;
        let growth_kib = |r: &RunResult| -> Vec<f64> {
            r.per_member
                .iter()
                .map(|m| m.rss_kb as f64 - r.idle_rss_kb as f64)
                .collect()
        };
        // The allocator's live bytes (no fragmentation, no pages awaiting a purge).
        let heap_growth_kib = |r: &RunResult| -> Vec<f64> {
            r.per_member
                .iter()
                .map(|m| m.heap_allocated_kb as f64 - r.idle_heap_kb as f64)
                .collect()
        };
        let mean = |values: Vec<f64>| values.iter().sum::<f64>() / values.len().max(1) as f64;
        let owned = |pick: fn(f64, f64) -> f64| {
            med(&|r| {
                r.per_member
                    .iter()
                    .map(|m| m.owned as f64 * 100.0 / objects)
                    .fold(f64::NAN, pick)
            })
        };
        let hand_off =
            |f: &dyn Fn(&HandOff) -> f64| med(&|r| r.hand_off.as_ref().map_or(f64::NAN, f));
        let fold_killed = |h: &HandOff, pick: fn(f64, f64) -> f64| {
            h.killed_ms.iter().copied().fold(f64::NAN, pick) / 1e3
        };
        let dash = |value: f64, digits: usize| {
            if value.is_nan() {
                "–".to_owned()
            } else {
                format!("{value:.digits$}")
            }
        };
        let span = |from: f64, to: f64| {
            if from.is_nan() {
                "–".to_owned()
            } else {
                format!("{from:.1}–{to:.1}")
            }
        };
        let first = runs[0];
        println!(
            "| {n} | {members} | {} | {:.1} | {:.1} | {:.2} | {:.0}–{:.0}% | {:.2} (min {:.2}, max {:.2}) | {:.2} | {:.0} | {:.0} | {:.1} | {} | {} | {} | {} | {:.0} (renewed every {:.0}) | {:.1}–{:.1} |",
            runs.len(),
            med(&|r| r.converged_s),
            med(&|r| r.writes_done_s),
            med(&|r| r.writes as f64) / objects,
            owned(f64::min),
            owned(f64::max),
            med(&|r| mean(growth_kib(r))) * KB_PER_KIB / objects,
            med(&|r| growth_kib(r).into_iter().fold(f64::NAN, f64::min)) * KB_PER_KIB / objects,
            med(&|r| growth_kib(r).into_iter().fold(f64::NAN, f64::max)) * KB_PER_KIB / objects,
            med(&|r| mean(heap_growth_kib(r))) * KB_PER_KIB / objects,
            med(&|r| growth_kib(r).iter().sum::<f64>()) / 1024.0,
            med(&|r| r
                .per_member
                .iter()
                .map(|m| m.peak_kb as f64)
                .fold(f64::NAN, f64::max))
                / 1024.0,
            med(&|r| mean(r.per_member.iter().map(|m| m.cpu_s).collect())),
            dash(hand_off(&|h| h.max_ms() / 1e3), 1),
            dash(hand_off(&|h| h.p50_ms()), 0),
            span(
                hand_off(&|h| fold_killed(h, f64::min)),
                hand_off(&|h| fold_killed(h, f64::max))
            ),
            dash(hand_off(&|h| median(h.survivors_ms.clone())), 0),
            first.lease_s,
            first.renew_s,
            runs.iter()
                .map(|r| r.load.0.min(r.load.1))
                .fold(f64::NAN, f64::min),
            runs.iter()
                .map(|r| r.load.0.max(r.load.1))
                .fold(f64::NAN, f64::max),
        );
    }
    for r in results.iter().filter(|r| !r.exits.is_empty()) {
        println!(
            "- N={}, {} members, run {}: exited on their own: {}",
            r.n,
            r.members,
            r.run,
            r.exits.join("; ")
        );
    }
    for ((n, members), runs) in &groups {
        let shares: Vec<String> = runs
            .iter()
            .filter_map(|r| r.hand_off.as_ref())
            .map(|h| format!("{} of {}", h.killed_owned, h.sample))
            .collect();
        if !shares.is_empty() {
            println!(
                "- N={n}, {members} members: sampled drifts owned by the killed member, per run: {}",
                shares.join(", ")
            );
        }
    }
}
