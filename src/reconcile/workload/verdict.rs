//! The `WorkloadReady` verdict of a Deployment-backed kind.
//!
//! Ready is judged as `kubectl rollout status` judges a Deployment. When it is not ready, the
//! reason is the most useful fact an SRE can act on, in this order (the seed lists the reasons
//! without ranking them):
//! 1. `ReplicaFailure`: no Pod can be created (a quota, an admission refusal); there is no Pod
//!    to look at.
//! 2. A Pod's fact, worst Pod first: `SecretNotFound`, `SecretKeyMissing`, `ImagePullFailed`,
//!    `CrashLoopBackOff`, `PodUnschedulable`.
//! 3. `RolloutStuck`: the progress deadline passed and no Pod says why.
//! 4. `PodNotReady`: a Pod runs but is not Ready.
//! 5. `RolloutInProgress`: replicas are being replaced and nothing is wrong (a Pod still
//!    Pending without a problem, or creating its containers, is starting, not "not Ready").
//!
//! A passed deadline behind a reason of 1 or 2 is said in the message. Only Pods of the current
//! ReplicaSet count: an old Pod crashing while the rollout replaces it is not the news.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::pods::{PodFact, PodFactKind, is_active, pod_fact};
use crate::conditions::Verdict;
use crate::conditions::reasons::common;

/// The revision the deployment controller stamps on a Deployment and each of its ReplicaSets.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";

/// Where a Deployment's rollout stands, as `kubectl rollout status` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rollout {
    /// The controller has not observed the current generation.
    NotObserved { generation: i64, observed: i64 },
    /// Progressing=False/ProgressDeadlineExceeded at the current generation.
    Stuck { message: String },
    /// Replicas are still being updated, replaced or made available.
    InProgress { detail: String },
    /// Every desired replica runs the current template and is available.
    Complete { replicas: i32 },
}

pub fn rollout_state(deployment: &Deployment) -> Rollout {
    let generation = deployment.metadata.generation.unwrap_or(0);
    let status = deployment.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or(0);
    if observed < generation {
        return Rollout::NotObserved {
            generation,
            observed,
        };
    }
    let stuck = status.conditions.iter().flatten().find(|c| {
        c.type_.as_deref() == Some("Progressing")
            && c.status.as_deref() == Some("False")
            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    if let Some(c) = stuck {
        return Rollout::Stuck {
            message: c.message.clone().unwrap_or_default(),
        };
    }
    let desired = deployment.spec.replicas.unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let replicas = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let detail = if updated < desired {
        format!("{updated} of {desired} replicas run the current template")
    } else if replicas > updated {
        format!(
            "{} replicas of an older template remain",
            replicas - updated
        )
    } else if available < updated {
        format!("{available} of {updated} updated replicas are available")
    } else {
        return Rollout::Complete { replicas: desired };
    };
    Rollout::InProgress { detail }
}

/// The `WorkloadReady` verdict. `name` is the Deployment's name, for when it is not in the
/// cache yet; `replica_sets` and `pods` are the children the store holds (any owner: only the
/// Deployment's current ReplicaSet and its active Pods are read).
pub fn workload_verdict(
    name: &str,
    deployment: Option<&Deployment>,
    replica_sets: &[ReplicaSet],
    pods: &[Pod],
) -> Verdict {
    let Some(deployment) = deployment else {
        return Verdict::unknown(
            common::RECONCILING,
            format!("Deployment {name} is not observed yet"),
        );
    };
    let name = deployment.metadata.name.as_deref().unwrap_or(name);
    let (stuck, in_progress) = match rollout_state(deployment) {
        Rollout::Complete { replicas } => {
            return Verdict::holds(
                common::AS_EXPECTED,
                format!(
                    "Deployment {name}: {replicas} of {replicas} replicas run the current template and are available"
                ),
            );
        }
        Rollout::NotObserved {
            generation,
            observed,
        } => {
            return Verdict::fails(
                common::ROLLOUT_IN_PROGRESS,
                format!(
                    "Deployment {name}: generation {generation} is not observed by the deployment controller (observed {observed})"
                ),
            );
        }
        Rollout::Stuck { message } => (Some(message), None),
        Rollout::InProgress { detail } => (None, Some(detail)),
    };
    let deadline = if stuck.is_some() {
        "; the rollout exceeded its progress deadline"
    } else {
        ""
    };
    let current = current_replica_set(deployment, replica_sets);
    if let Some(failure) = replica_failure(deployment, current) {
        return Verdict::fails(common::REPLICA_FAILURE, format!("{failure}{deadline}"));
    }
    let facts = current_pod_facts(current, pods);
    let problem = |f: &&PodFact| !matches!(f.kind, PodFactKind::NotReady | PodFactKind::Starting);
    if let Some(worst) = facts.first().filter(problem) {
        return Verdict::fails(
            worst.kind.reason(),
            format!("{}{deadline}", describe(worst, &facts)),
        );
    }
    if let Some(message) = stuck {
        return Verdict::fails(
            common::ROLLOUT_STUCK,
            format!("Deployment {name}: ProgressDeadlineExceeded: {message}"),
        );
    }
    if let Some(worst) = facts.first().filter(|f| f.kind == PodFactKind::NotReady) {
        return Verdict::fails(common::POD_NOT_READY, describe(worst, &facts));
    }
    Verdict::fails(
        common::ROLLOUT_IN_PROGRESS,
        format!("Deployment {name}: {}", in_progress.unwrap_or_default()),
    )
}

/// "Pod P: fact (and N more Pods with the same reason)".
fn describe(worst: &PodFact, all: &[PodFact]) -> String {
    let same = all.iter().filter(|f| f.kind == worst.kind).count();
    let more = match same {
        0 | 1 => String::new(),
        2 => " (and 1 more Pod)".to_owned(),
        n => format!(" (and {} more Pods)", n - 1),
    };
    format!("Pod {}: {}{more}", worst.pod, worst.detail)
}

fn controlled_by(meta: &ObjectMeta, kind: &str, owner: &ObjectMeta) -> bool {
    meta.owner_references.iter().flatten().any(|r| {
        r.controller == Some(true)
            && r.kind == kind
            && match owner.uid.as_deref() {
                Some(uid) => r.uid == uid,
                None => owner.name.as_deref() == Some(r.name.as_str()),
            }
    })
}

fn revision(meta: &ObjectMeta) -> Option<i64> {
    meta.annotations
        .as_ref()?
        .get(REVISION_ANNOTATION)?
        .parse()
        .ok()
}

/// The ReplicaSet of the Deployment's current revision (the newest one, if the Deployment
/// carries no revision yet).
fn current_replica_set<'a>(
    deployment: &Deployment,
    replica_sets: &'a [ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let owned = replica_sets
        .iter()
        .filter(|rs| controlled_by(&rs.metadata, "Deployment", &deployment.metadata));
    match revision(&deployment.metadata) {
        Some(wanted) => owned
            .into_iter()
            .find(|rs| revision(&rs.metadata) == Some(wanted)),
        None => owned.max_by_key(|rs| revision(&rs.metadata)),
    }
}

/// The current ReplicaSet's `ReplicaFailure`, else the Deployment's copy of one.
fn replica_failure(deployment: &Deployment, current: Option<&ReplicaSet>) -> Option<String> {
    let from_rs = current.and_then(|rs| {
        let c = rs.status.as_ref()?.conditions.iter().flatten().find(|c| {
            c.type_.as_deref() == Some("ReplicaFailure") && c.status.as_deref() == Some("True")
        })?;
        Some(format!(
            "ReplicaSet {}: {}: {}",
            rs.metadata.name.as_deref().unwrap_or_default(),
            c.reason.as_deref().unwrap_or("ReplicaFailure"),
            c.message.as_deref().unwrap_or_default()
        ))
    });
    from_rs.or_else(|| {
        let c = deployment
            .status
            .as_ref()?
            .conditions
            .iter()
            .flatten()
            .find(|c| {
                c.type_.as_deref() == Some("ReplicaFailure") && c.status.as_deref() == Some("True")
            })?;
        Some(format!(
            "Deployment {}: {}: {}",
            deployment.metadata.name.as_deref().unwrap_or_default(),
            c.reason.as_deref().unwrap_or("ReplicaFailure"),
            c.message.as_deref().unwrap_or_default()
        ))
    })
}

/// Facts of the current ReplicaSet's active Pods, worst first, then by Pod name.
fn current_pod_facts(current: Option<&ReplicaSet>, pods: &[Pod]) -> Vec<PodFact> {
    let Some(rs) = current else {
        return Vec::new();
    };
    let mut facts: Vec<PodFact> = pods
        .iter()
        .filter(|p| is_active(p) && controlled_by(&p.metadata, "ReplicaSet", &rs.metadata))
        .filter_map(pod_fact)
        .collect();
    facts.sort_by(|a, b| a.kind.cmp(&b.kind).then_with(|| a.pod.cmp(&b.pod)));
    facts
}
