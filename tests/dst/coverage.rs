//! A step no seed of the budget draws tests nothing: the steps the workload oracle has verdicts
//! for are counted over the budget's schedules (generated only, not run), and each must appear.

use std::collections::BTreeMap;

use pgtoolbox_sim::cluster::WorkloadFault;

use crate::kinds::Workload;
use crate::schedule::{CA_FAULTS, Cnpg, EgressTo, ImageState, Peers, Step, WORKLOADS};

/// A PgAdmin's image changed while it has a settings database: backed up first.
const UPGRADE_WITH_BACKUP: &str = "SetImage(PgAdmin with a settings database)";
/// The same while a Job fault is on for it: the backup fails.
const FAILING_UPGRADE: &str = "SetImage(PgAdmin with a settings database, Jobs failing)";

/// The sim's CloudNativePG leaves the settings objects of a PgAdmin with a settings database
/// unapplied.
const NOT_APPLIED: &str = "WorkloadFault(NotApplied on a PgAdmin with a settings database)";

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
                NOT_APPLIED,
            ]
            .map(String::from),
        )
        .chain(CA_FAULTS.map(|f| format!("ClusterCa({})", f.name())))
        .chain(Peers::ALL.map(|from| format!("ConsolePeers(Some({from:?}))")))
        .chain(["AllowAll(true)".to_string()])
        .chain(Cnpg::OLDER.map(|c| format!("ConfigDatabase(true) on Cnpg({c:?})")))
        .chain(
            [Workload::Console, Workload::PgAdmin]
                .into_iter()
                .flat_map(|kind| ImageState::ALL.map(move |image| (kind, image)))
                .flat_map(|(kind, image)| {
                    [false, true].map(move |pause| refused_hostname(kind, image, pause))
                }),
        )
        .map(|label| (label, 0))
        .collect();
    for seed in seeds {
        // Which PgAdmins have a settings database, and which meet a Job fault.
        let mut database = [false; WORKLOADS];
        let mut jobs_failing = [false; WORKLOADS];
        let schedule = crate::schedule_of(seed, steps);
        let cnpg = Cnpg::of(&schedule);
        for step in schedule {
            let label = match step {
                Step::ConfigDatabase { on: true, .. } if cnpg != Cnpg::Current => {
                    format!("ConfigDatabase(true) on Cnpg({cnpg:?})")
                }
                Step::Egress { to, .. } => format!("Egress({to:?})"),
                Step::ConfigDatabase { n, on } => {
                    database[n] = on;
                    format!("ConfigDatabase({on})")
                }
                Step::SkipBackup { .. } => "SkipBackup".into(),
                Step::RefusedHostname {
                    kind, image, pause, ..
                } => refused_hostname(kind, image, pause),
                Step::ConsolePeers { from, .. } => format!("ConsolePeers({from:?})"),
                Step::AllowAll { present: true } => "AllowAll(true)".into(),
                Step::ClusterCa {
                    fault, on: true, ..
                } => format!("ClusterCa({})", fault.name()),
                Step::WorkloadFault {
                    fault: WorkloadFault::NotApplied,
                    target,
                    on: true,
                } if (0..WORKLOADS)
                    .any(|n| database[n] && target.is_none_or(|t| t == (Workload::PgAdmin, n))) =>
                {
                    NOT_APPLIED.into()
                }
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

fn refused_hostname(kind: Workload, image: ImageState, pause: bool) -> String {
    format!("RefusedHostname({kind:?}, image {image:?}, paused {pause})")
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

/// Reasons the oracle has verdicts for that a budget's schedules must settle on at least once
/// (`condition/reason`): drawing a step is not enough when its effect can be undone later in
/// the same schedule.
const SETTLED: [&str; 11] = [
    "ConfigurationValid/HostnameNotAllowed",
    "ConfigurationValid/ExposurePolicyInvalid",
    "Ready/ReconciliationPaused",
    "ConfigurationValid/DatabaseAPIUnavailable",
    "ConfigurationValid/DatabaseRoleAPIUnavailable",
    "ConfigurationValid/PasswordGenerationUnavailable",
    "InstanceCABundleComplete/InstanceCAMissing",
    "ExposureConfined/ExposurePeersBroad",
    "ExposureConfined/ExposurePolicyBypassed",
    "WorkloadReady/ConfigDatabaseNotReady",
    "WorkloadReady/UpgradeBackupFailed",
];

/// The `condition/reason`s of the workloads' failing conditions once the schedule settled.
pub fn settled_reasons(h: &crate::world::History) -> Vec<String> {
    let Some(settled) = h.snapshots.iter().rev().find(|s| s.at_ms <= h.settled_ms) else {
        return Vec::new();
    };
    let mut out: Vec<String> = settled
        .workloads
        .iter()
        .flat_map(|w| {
            w["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|c| c["status"] != "True")
        .map(|c| {
            format!(
                "{}/{}",
                c["type"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default()
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// True when each reason of `SETTLED` is among `reasons` (the settled reasons of the budget's
/// schedules, one list per schedule); prints how many schedules settled on each.
pub fn every_reason_reached(reasons: &[Vec<String>]) -> bool {
    let counts: BTreeMap<&str, usize> = SETTLED
        .iter()
        .map(|r| {
            (
                *r,
                reasons.iter().filter(|s| s.iter().any(|x| x == r)).count(),
            )
        })
        .collect();
    println!("dst: schedules settling on each reason: {counts:?}");
    // Every failing reason settled on, required or not: what the budget reaches beyond SETTLED.
    let mut all: BTreeMap<&str, usize> = BTreeMap::new();
    for reason in reasons.iter().flatten() {
        *all.entry(reason.as_str()).or_default() += 1;
    }
    println!("dst: schedules settling on any failing reason: {all:?}");
    let missing: Vec<&&str> = counts
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(r, _)| r)
        .collect();
    if !missing.is_empty() {
        eprintln!("DST COVERAGE: no workload schedule of the budget settles on {missing:?}");
    }
    missing.is_empty()
}
