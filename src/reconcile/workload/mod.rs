//! The workload facts every Deployment-backed kind shares (pure): from the Deployment, its
//! ReplicaSets and Pods as the caches hold them, the `WorkloadReady` verdict; and the workload
//! hash stamped on the pod template.

mod hash;
mod placement;
mod pods;
mod probe;
mod security;
mod verdict;

#[cfg(test)]
pub use hash::workload_hash;
pub use hash::{
    SecretDigest, WORKLOAD_HASH_ANNOTATION, current_workload_hash, rollout_started,
    stamp_workload_hash,
};
pub use placement::finish_pod;
#[cfg(test)]
pub use pods::{PodFact, PodFactKind};
pub use pods::{is_active, pod_fact};
pub use probe::readiness_probe;
pub use security::dns_egress_rule;
#[cfg(test)]
pub use security::restricted_violations;
pub use verdict::{REVISION_ANNOTATION, Rollout, rollout_state, workload_verdict};

#[cfg(test)]
mod tests;
