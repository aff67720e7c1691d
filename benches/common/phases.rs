//! Phases measured against the embedded API server: until its writes settle, and a quiet phase
//! in which nothing changes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pgtoolbox_sim::Sim;
use serde::{Deserialize, Serialize};

use super::measure;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Quiet {
    pub seconds: f64,
    pub requests: u64,
    pub writes: u64,
    pub by_verb_resource: BTreeMap<String, u64>,
    pub cpu_s: f64,
    pub rss_end_kb: u64,
}

/// Waits until the API server saw no write for a second; returns when the last one arrived
/// (seconds since `start`, 50 ms resolution).
pub async fn writes_settled(sim: &Sim, start: Instant) -> f64 {
    const STILL: Duration = Duration::from_secs(1);
    let mut seen = sim.stats().writes();
    let mut last_change = Instant::now();
    while last_change.elapsed() < STILL {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = sim.stats().writes();
        if now != seen {
            seen = now;
            last_change = Instant::now();
        }
    }
    last_change.duration_since(start).as_secs_f64()
}

/// Nothing changes for `seconds`: count the requests and CPU the process spends meanwhile.
pub async fn quiet_phase(sim: &Sim, seconds: u64) -> Quiet {
    quiet_phase_of(sim, seconds, &[]).await
}

/// [`quiet_phase`], with the CPU and memory of processes `pids` together (this one when none).
pub async fn quiet_phase_of(sim: &Sim, seconds: u64, pids: &[u32]) -> Quiet {
    let cpu_now = || {
        if pids.is_empty() {
            measure::cpu_seconds()
        } else {
            pids.iter()
                .map(|pid| measure::cpu_seconds_of_pid(*pid))
                .sum()
        }
    };
    let rss_now = || {
        if pids.is_empty() {
            measure::rss_kb()
        } else {
            pids.iter().map(|pid| measure::rss_kb_of(*pid)).sum()
        }
    };
    sim.admin().reset_stats();
    let cpu = cpu_now();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let stats = sim.stats();
    let quiet = Quiet {
        seconds: start.elapsed().as_secs_f64(),
        requests: stats.total,
        writes: stats.writes(),
        by_verb_resource: stats.by_verb_resource.clone(),
        cpu_s: cpu_now() - cpu,
        rss_end_kb: rss_now(),
    };
    eprintln!(
        "   quiet {:.0} s: {} requests, {} writes, {:.2} CPU s {:?}",
        quiet.seconds, quiet.requests, quiet.writes, quiet.cpu_s, quiet.by_verb_resource
    );
    quiet
}
