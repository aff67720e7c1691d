//! What the operator keeps of the children it only observes and never applies: the ReplicaSets
//! and Pods of its Deployments and Jobs. Passes read a few of their fields (owner references,
//! labels, the revision, conditions, container waiting states, the Pod's address), so the
//! children stores keep those and drop the rest as each child arrives (issue 16: a whole Pod
//! or ReplicaSet was most of what a workload object kept).
//!
//! Children the operator applies (Deployments, Services, Jobs, ...) are kept whole: the applier
//! compares each desired field with the cached one.
//!
//! The tests run every reader on whole objects and on their kept form and require the same
//! answers; a reader of a new field fails them until the projection keeps that field.

mod meta;
mod pod;
mod replica_set;

pub use meta::keep_meta;
pub use pod::{keep_pod, pod_is_complete};
pub use replica_set::{keep_replica_set, replica_set_is_complete};

#[cfg(test)]
mod tests;
