//! The upgrade gate (pure): with a settings database and `upgradeBackup.enabled`, an image
//! change first runs the backup Job `<name>-pgadmin-upgrade-backup-<hash8>` while the old image
//! keeps running; its success releases the rollout, its failure keeps the old image (a stall).
//! The skip annotation releases exactly the image it names, without a backup.
//!
//! The completed Job stays, untouched, so its logs can be read: the backup Job of the running
//! image is the latest backup, kept while that image runs. The next image change drops it: a
//! new backup Job supersedes it at once; an upgrade without a backup drops it once the new
//! image runs. A Job is never kept past its image's run, so an upgrade back to an image always
//! gets a backup of its own rather than finding an old complete Job under the same name.

use crate::conditions::Reason;
use crate::conditions::reasons::pgadmin;
use crate::reconcile::children::hashed_child_name;

use super::registration::{JobState, with_block};
use crate::api::PodTemplate;

/// `pgtoolbox.fyannk.dev/skip-upgrade-backup: <target image>`.
pub const SKIP_UPGRADE_BACKUP_ANNOTATION: &str = "pgtoolbox.fyannk.dev/skip-upgrade-backup";

/// The backup Job before rolling out `target`, with the object's `podTemplate` block (a Job's
/// Pod template cannot change: a new block is a new backup Job, placed as told).
pub fn upgrade_backup_job_name(owner: &str, target: &str, block: Option<&PodTemplate>) -> String {
    hashed_child_name(
        owner,
        "pgadmin-upgrade-backup",
        with_block(target, block).as_bytes(),
    )
}

pub struct UpgradeFacts<'a> {
    /// `status.image`: the image running now (`None` before the first rollout).
    pub running: Option<&'a str>,
    pub target: &'a str,
    /// The object's `podTemplate` block, part of the backup Jobs' names.
    pub block: Option<&'a PodTemplate>,
    /// `spec.configDatabase` is set and `spec.upgradeBackup.enabled`.
    pub backup_required: bool,
    pub skip_annotation: Option<&'a str>,
    /// The backup Job of `target`, as the cache shows it.
    pub backup: Option<JobState>,
    /// The backup Job of `running` (made before it was rolled out), as the cache shows it.
    pub running_backup: Option<JobState>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpgradeGate {
    /// Render `image`; an Event of the release when this pass releases it; a completed backup
    /// Job kept as it is: the target's while the release waits for the new image to run, or
    /// the running image's (the latest backup) until the next image change.
    Roll {
        image: String,
        event: Option<(Reason, String)>,
        backup: Option<String>,
    },
    /// Keep `image` and run (or wait for) the backup Job.
    BackingUp { image: String, job: String },
    /// Keep `image`: the backup failed (`UpgradeBackupFailed`, a stall), with the Job's fact.
    Failed {
        image: String,
        job: String,
        fact: String,
    },
}

impl UpgradeGate {
    /// The image to render this pass.
    pub fn image(&self) -> &str {
        match self {
            UpgradeGate::Roll { image, .. }
            | UpgradeGate::BackingUp { image, .. }
            | UpgradeGate::Failed { image, .. } => image,
        }
    }

    /// The backup Job to render and apply this pass, if any: the one an image change waits for.
    pub fn job(&self) -> Option<&str> {
        match self {
            UpgradeGate::Roll { .. } => None,
            UpgradeGate::BackingUp { job, .. } | UpgradeGate::Failed { job, .. } => Some(job),
        }
    }

    /// The completed backup Job to keep as it is this pass (never rewritten: a Job's template
    /// cannot change), if any. Every other backup Job of the PgAdmin goes.
    pub fn kept_job(&self) -> Option<&str> {
        match self {
            UpgradeGate::Roll { backup, .. } => backup.as_deref(),
            UpgradeGate::BackingUp { .. } | UpgradeGate::Failed { .. } => None,
        }
    }
}

pub fn upgrade_gate(owner: &str, facts: &UpgradeFacts<'_>) -> UpgradeGate {
    let target = facts.target.to_owned();
    let complete = |state: &Option<JobState>, image: &str| {
        (*state == Some(JobState::Complete))
            .then(|| upgrade_backup_job_name(owner, image, facts.block))
    };
    let Some(running) = facts.running.filter(|r| *r != facts.target) else {
        // No image change: the backup made before the target was rolled out is the latest.
        return UpgradeGate::Roll {
            image: target.clone(),
            event: None,
            backup: complete(&facts.backup, facts.target),
        };
    };
    // An image change without a backup keeps the running image's until the new one runs.
    let roll = |event| UpgradeGate::Roll {
        image: target.clone(),
        event,
        backup: complete(&facts.running_backup, running),
    };
    if !facts.backup_required {
        return roll(None);
    }
    if facts.skip_annotation == Some(facts.target) {
        return roll(Some((
            pgadmin::UPGRADE_BACKUP_SKIPPED,
            format!(
                "{SKIP_UPGRADE_BACKUP_ANNOTATION} names {target}: {running} is replaced without a backup of the settings database"
            ),
        )));
    }
    // From here the target's backup Job supersedes the running image's.
    let job = upgrade_backup_job_name(owner, facts.target, facts.block);
    match &facts.backup {
        Some(JobState::Complete) => UpgradeGate::Roll {
            image: target.clone(),
            event: Some((
                pgadmin::UPGRADE_BACKUP_COMPLETED,
                format!(
                    "Job {job} backed up the settings database before {running} is replaced by {target}"
                ),
            )),
            backup: Some(job),
        },
        Some(JobState::Failed { fact }) => UpgradeGate::Failed {
            image: running.to_owned(),
            job,
            fact: fact.clone(),
        },
        Some(JobState::Running) | None => UpgradeGate::BackingUp {
            image: running.to_owned(),
            job,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_change_waits_for_the_backup_unless_skipped() {
        let old = "docker.io/dpage/pgadmin4:9.9";
        let new = "docker.io/dpage/pgadmin4:9.10";
        let job = upgrade_backup_job_name("p", new, None);
        let old_job = upgrade_backup_job_name("p", old, None);
        assert!(job.starts_with("p-pgadmin-upgrade-backup-"), "{job}");
        assert_ne!(job, old_job);
        let done = Some(JobState::Complete);
        let facts = |running, required, skip, backup, running_backup| UpgradeFacts {
            running,
            target: new,
            block: None,
            backup_required: required,
            skip_annotation: skip,
            backup,
            running_backup,
        };
        // (situation, facts, image rendered, Event, Job applied, Job kept as it is)
        type Case<'a> = (
            &'a str,
            UpgradeFacts<'a>,
            &'a str,
            Option<Reason>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "first rollout",
                facts(None, true, None, None, None),
                new,
                None,
                None,
                None,
            ),
            (
                "unchanged",
                facts(Some(new), true, None, None, None),
                new,
                None,
                None,
                None,
            ),
            (
                "unchanged: the latest backup stays",
                facts(Some(new), true, None, done.clone(), done.clone()),
                new,
                None,
                None,
                Some(&job),
            ),
            (
                "unchanged: the latest backup stays without a backup required now",
                facts(Some(new), false, None, done.clone(), done.clone()),
                new,
                None,
                None,
                Some(&job),
            ),
            (
                "no backup required: the running image's backup stays until the new one runs",
                facts(Some(old), false, None, None, done.clone()),
                new,
                None,
                None,
                Some(&old_job),
            ),
            (
                "backup starts: it supersedes the running image's",
                facts(Some(old), true, None, None, done.clone()),
                old,
                None,
                Some(&job),
                None,
            ),
            (
                "backup runs",
                facts(Some(old), true, None, Some(JobState::Running), done.clone()),
                old,
                None,
                Some(&job),
                None,
            ),
            (
                "backup done: kept while the release rolls",
                facts(Some(old), true, None, done.clone(), done.clone()),
                new,
                Some(pgadmin::UPGRADE_BACKUP_COMPLETED),
                None,
                Some(&job),
            ),
            (
                "backup failed keeps the old image",
                facts(
                    Some(old),
                    true,
                    None,
                    Some(JobState::Failed {
                        fact: "BackoffLimitExceeded".into(),
                    }),
                    None,
                ),
                old,
                None,
                Some(&job),
                None,
            ),
            (
                "skip names the target: the running image's backup stays until the new one runs",
                facts(Some(old), true, Some(new), None, done.clone()),
                new,
                Some(pgadmin::UPGRADE_BACKUP_SKIPPED),
                None,
                Some(&old_job),
            ),
            (
                "skip names another image",
                facts(
                    Some(old),
                    true,
                    Some("docker.io/dpage/pgadmin4:9.11"),
                    None,
                    None,
                ),
                old,
                None,
                Some(&job),
                None,
            ),
            (
                "a backup Job still running is no backup to keep",
                facts(Some(new), true, None, Some(JobState::Running), None),
                new,
                None,
                None,
                None,
            ),
        ];
        for (name, f, image, event, applied, kept) in cases {
            let gate = upgrade_gate("p", &f);
            assert_eq!(gate.image(), image, "{name}");
            assert_eq!(gate.job(), applied, "{name}");
            assert_eq!(gate.kept_job(), kept, "{name}");
            let got = match &gate {
                UpgradeGate::Roll { event, .. } => event.as_ref().map(|(r, _)| *r),
                _ => None,
            };
            assert_eq!(got, event, "{name}");
        }
    }
}
