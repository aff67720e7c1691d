//! The upgrade gate (pure): with a settings database and `upgradeBackup.enabled`, an image
//! change first runs the backup Job `<name>-pgadmin-upgrade-backup-<hash8>` while the old image
//! keeps running; its success releases the rollout, its failure keeps the old image (a stall).
//! The skip annotation releases exactly the image it names, without a backup.

use crate::conditions::Reason;
use crate::conditions::reasons::pgadmin;
use crate::reconcile::children::hashed_child_name;

use super::registration::JobState;

/// `pgtoolbox.fyannk.dev/skip-upgrade-backup: <target image>`.
pub const SKIP_UPGRADE_BACKUP_ANNOTATION: &str = "pgtoolbox.fyannk.dev/skip-upgrade-backup";

/// The backup Job before rolling out `target`.
pub fn upgrade_backup_job_name(owner: &str, target: &str) -> String {
    hashed_child_name(owner, "pgadmin-upgrade-backup", target.as_bytes())
}

pub struct UpgradeFacts<'a> {
    /// `status.image`: the image running now (`None` before the first rollout).
    pub running: Option<&'a str>,
    pub target: &'a str,
    /// `spec.configDatabase` is set and `spec.upgradeBackup.enabled`.
    pub backup_required: bool,
    pub skip_annotation: Option<&'a str>,
    /// The backup Job of `target`, as the cache shows it.
    pub backup: Option<JobState>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpgradeGate {
    /// Render `image`; an Event of the release when this pass releases it; the completed
    /// backup Job, kept until the new image runs (so the release holds meanwhile).
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

    /// The backup Job to keep this pass, if any.
    pub fn job(&self) -> Option<&str> {
        match self {
            UpgradeGate::Roll { backup, .. } => backup.as_deref(),
            UpgradeGate::BackingUp { job, .. } | UpgradeGate::Failed { job, .. } => Some(job),
        }
    }
}

pub fn upgrade_gate(owner: &str, facts: &UpgradeFacts<'_>) -> UpgradeGate {
    let target = facts.target.to_owned();
    let roll = |event| UpgradeGate::Roll {
        image: target.clone(),
        event,
        backup: None,
    };
    let Some(running) = facts.running.filter(|r| *r != facts.target) else {
        return roll(None);
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
    let job = upgrade_backup_job_name(owner, facts.target);
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
        let job = upgrade_backup_job_name("p", new);
        assert!(job.starts_with("p-pgadmin-upgrade-backup-"), "{job}");
        let facts = |running, required, skip, backup| UpgradeFacts {
            running,
            target: new,
            backup_required: required,
            skip_annotation: skip,
            backup,
        };
        let cases: Vec<(&str, UpgradeFacts<'_>, &str, Option<Reason>, bool)> = vec![
            (
                "first rollout",
                facts(None, true, None, None),
                new,
                None,
                false,
            ),
            (
                "unchanged",
                facts(Some(new), true, None, None),
                new,
                None,
                false,
            ),
            (
                "no backup required",
                facts(Some(old), false, None, None),
                new,
                None,
                false,
            ),
            (
                "backup starts",
                facts(Some(old), true, None, None),
                old,
                None,
                true,
            ),
            (
                "backup runs",
                facts(Some(old), true, None, Some(JobState::Running)),
                old,
                None,
                true,
            ),
            (
                "backup done",
                facts(Some(old), true, None, Some(JobState::Complete)),
                new,
                Some(pgadmin::UPGRADE_BACKUP_COMPLETED),
                true,
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
                ),
                old,
                None,
                true,
            ),
            (
                "skip names the target",
                facts(Some(old), true, Some(new), None),
                new,
                Some(pgadmin::UPGRADE_BACKUP_SKIPPED),
                false,
            ),
            (
                "skip names another image",
                facts(Some(old), true, Some("docker.io/dpage/pgadmin4:9.11"), None),
                old,
                None,
                true,
            ),
        ];
        for (name, f, image, event, has_job) in cases {
            let gate = upgrade_gate("p", &f);
            assert_eq!(gate.image(), image, "{name}");
            assert_eq!(gate.job().is_some(), has_job, "{name}");
            let got = match &gate {
                UpgradeGate::Roll { event, .. } => event.as_ref().map(|(r, _)| *r),
                _ => None,
            };
            assert_eq!(got, event, "{name}");
        }
    }
}
