//! A step no seed of the budget draws tests nothing: the steps the workload oracle has verdicts
//! for are counted over the budget's schedules (generated only, not run), and each must appear.

use std::collections::BTreeMap;

use pgtoolbox_sim::cluster::WorkloadFault;

use crate::kinds::Workload;
use crate::schedule::{EgressTo, Step, WORKLOADS};

/// A PgAdmin's image changed while it has a settings database: backed up first.
const UPGRADE_WITH_BACKUP: &str = "SetImage(PgAdmin with a settings database)";
/// The same while a Job fault is on for it: the backup fails.
const FAILING_UPGRADE: &str = "SetImage(PgAdmin with a settings database, Jobs failing)";

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
                UPGRADE_WITH_BACKUP,
                FAILING_UPGRADE,
            ]
            .map(String::from),
        )
        .map(|label| (label, 0))
        .collect();
    for seed in seeds {
        // Which PgAdmins have a settings database, and which meet a Job fault.
        let mut database = [false; WORKLOADS];
        let mut jobs_failing = [false; WORKLOADS];
        for step in crate::schedule_of(seed, steps) {
            let label = match step {
                Step::Egress { to, .. } => format!("Egress({to:?})"),
                Step::ConfigDatabase { n, on } => {
                    database[n] = on;
                    format!("ConfigDatabase({on})")
                }
                Step::SkipBackup { .. } => "SkipBackup".into(),
                Step::WorkloadFault {
                    fault: WorkloadFault::JobFailed,
                    target,
                    on,
                } => {
                    for (n, failing) in jobs_failing.iter_mut().enumerate() {
                        if target.is_none_or(|t| t == (Workload::PgAdmin, n)) {
                            *failing = on;
                        }
                    }
                    continue;
                }
                Step::Upgrade {
                    n, backup_fails, ..
                } if database[n] => {
                    jobs_failing[n] |= backup_fails;
                    if jobs_failing[n] {
                        FAILING_UPGRADE.into()
                    } else {
                        UPGRADE_WITH_BACKUP.into()
                    }
                }
                Step::Upgrade {
                    n, backup_fails, ..
                } => {
                    jobs_failing[n] |= backup_fails;
                    continue;
                }
                Step::SetImage {
                    kind: Workload::PgAdmin,
                    n,
                    ..
                } if database[n] => {
                    if jobs_failing[n] {
                        FAILING_UPGRADE.into()
                    } else {
                        UPGRADE_WITH_BACKUP.into()
                    }
                }
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
