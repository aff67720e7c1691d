//! `ServersSynced` (pure): the registration Job of the current offered-set hash, started only
//! once a pgAdmin Pod is Ready, decides it.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

use sha2::{Digest, Sha256};

use crate::api::PodTemplate;
use crate::conditions::reasons::{common, pgadmin};
use crate::conditions::{ConditionStatus, Verdict, message_matches};
use crate::reconcile::children::child_name;

/// The registration Job of an offered-set hash: `<name>-pgadmin-register-<hash8>`.
pub fn registration_job_name(owner: &str, hash: &str) -> String {
    child_name(
        owner,
        &format!("pgadmin-register-{}", super::servers_file::hash8(hash)),
    )
}

/// What names a Job beside pgAdmin (the registration Job, the upgrade backup Job): what the Job
/// is for (the offered-set hash, the target image) alone, or with the object's `podTemplate`
/// block digested in. A Job's Pod template cannot be changed once created, so a new block is a
/// new Job (the same work done again, on the new placement). `base` alone without a block (or
/// an empty one), else the SHA-256 of `base` and the block.
pub fn with_block(base: &str, block: Option<&PodTemplate>) -> String {
    let Some(block) = block.filter(|b| **b != PodTemplate::default()) else {
        return base.to_owned();
    };
    let mut hasher = Sha256::new();
    hasher.update(base.as_bytes());
    hasher.update([0]);
    // serde_json writes maps sorted and fields in declaration order: stable bytes.
    hasher.update(serde_json::to_vec(block).unwrap_or_default());
    hex::encode(hasher.finalize())
}

/// Where a Job stands, from its status conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    Running,
    Complete,
    /// The Job's own fact: its Failed condition's reason and message.
    Failed {
        fact: String,
    },
}

pub fn job_state(job: &Job) -> JobState {
    let conditions = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let holds = |t: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == t && c.status == "True")
    };
    if holds("Complete").is_some() {
        return JobState::Complete;
    }
    if let Some(c) = holds("Failed") {
        let reason = c.reason.as_deref().unwrap_or("Failed");
        let fact = match c.message.as_deref() {
            Some(m) if !m.is_empty() => format!("{reason}: {m}"),
            _ => reason.to_owned(),
        };
        return JobState::Failed { fact };
    }
    JobState::Running
}

/// Whether a pgAdmin Pod (not a Job's) is Ready and not terminating.
pub fn pgadmin_pod_ready(pods: &[Pod]) -> bool {
    pods.iter().any(|p| {
        let component = p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app.kubernetes.io/component"))
            .map(String::as_str);
        component == Some(crate::reconcile::children::Component::PgAdmin.as_str())
            && p.metadata.deletion_timestamp.is_none()
            && p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    })
}

/// What the pass knows of the registration.
pub struct RegistrationFacts<'a> {
    pub job_name: &'a str,
    pub servers: usize,
    pub pod_ready: bool,
    /// The Job of the current hash as the cache shows it; `None` before it exists.
    pub job: Option<JobState>,
}

/// Whether the Job of the current hash is wanted now: once a pgAdmin Pod is Ready, and kept
/// while it exists (a pgAdmin restart does not delete a registration on its way).
pub fn job_wanted(facts: &RegistrationFacts<'_>) -> bool {
    facts.pod_ready || facts.job.is_some()
}

pub fn servers_synced(facts: &RegistrationFacts<'_>) -> Verdict {
    let job = facts.job_name;
    let n = facts.servers;
    match &facts.job {
        Some(JobState::Complete) => Verdict::holds(
            common::AS_EXPECTED,
            format!("Job {job} registered the offered set ({n} servers)"),
        ),
        Some(JobState::Failed { fact }) => Verdict::fails(
            pgadmin::REGISTRATION_FAILED,
            format!("Job {job} failed: {fact}; delete it to run the registration again"),
        ),
        Some(JobState::Running) => Verdict::unknown(
            pgadmin::REGISTRATION_RUNNING,
            format!("Job {job} registers the offered set ({n} servers)"),
        ),
        None if facts.pod_ready => Verdict::unknown(
            pgadmin::REGISTRATION_RUNNING,
            format!("Job {job} is starting to register the offered set ({n} servers)"),
        ),
        None => Verdict::unknown(
            pgadmin::PGADMIN_NOT_RUNNING,
            format!(
                "pgAdmin has no Ready Pod yet: the offered set ({n} servers) is registered once it has"
            ),
        ),
    }
}

/// The `ServersRegistered` Event's note when this pass finds the registration done and the
/// stored condition did not say so.
pub fn servers_registered_event(
    verdict: &Verdict,
    stored: Option<(ConditionStatus, &str)>,
) -> Option<String> {
    // The stored message may be a digest (a hibernated object's copy).
    let already = stored
        .is_some_and(|(s, m)| s == ConditionStatus::True && message_matches(m, &verdict.message));
    (verdict.status == ConditionStatus::True && !already).then(|| verdict.message.clone())
}
