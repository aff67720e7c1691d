//! A step no seed of the budget draws tests nothing: the steps the workload oracle has verdicts
//! for are counted over the budget's schedules (generated only, not run), and each must appear.

use std::collections::BTreeMap;

use crate::schedule::{EgressTo, Step};

/// The labels of the steps that must be reached, with how often the budget draws each.
fn counted(seeds: impl Iterator<Item = u64>, steps: usize) -> BTreeMap<String, usize> {
    let mut wanted: BTreeMap<String, usize> = std::iter::once(None)
        .chain(EgressTo::ALL.map(Some))
        .map(|to| format!("Egress({to:?})"))
        .chain(
            [
                "ConfigDatabase(true)",
                "ConfigDatabase(false)",
                "SkipBackup",
            ]
            .map(String::from),
        )
        .map(|label| (label, 0))
        .collect();
    for seed in seeds {
        for step in crate::schedule_of(seed, steps) {
            let label = match step {
                Step::Egress { to, .. } => format!("Egress({to:?})"),
                Step::ConfigDatabase { on, .. } => format!("ConfigDatabase({on})"),
                Step::SkipBackup { .. } => "SkipBackup".into(),
                _ => continue,
            };
            if let Some(n) = wanted.get_mut(&label) {
                *n += 1;
            }
        }
    }
    wanted
}

/// True when every step with a verdict is drawn by the workload seeds `seeds`.
pub fn every_step_reached(seeds: impl Iterator<Item = u64>, steps: usize) -> bool {
    let counts = counted(seeds, steps);
    let missing: Vec<&String> = counts
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(label, _)| label)
        .collect();
    println!("dst: steps drawn by the workload seeds: {counts:?}");
    if !missing.is_empty() {
        eprintln!("DST COVERAGE: no workload seed of the budget draws {missing:?}");
    }
    missing.is_empty()
}
