//! What the operator keeps of a ReplicaSet of its Deployments: the workload verdict reads
//! which Deployment controls it (ownerReferences), its revision and its `ReplicaFailure`
//! condition; the spec (a whole pod template) is dropped.

use k8s_openapi::api::apps::v1::{
    ReplicaSet, ReplicaSetCondition, ReplicaSetSpec, ReplicaSetStatus,
};

use super::meta::keep_meta;
use crate::reconcile::workload::REVISION_ANNOTATION;

/// The ReplicaSet annotations a pass reads: the Deployment revision it runs.
pub const REPLICA_SET_ANNOTATIONS: &[&str] = &[REVISION_ANNOTATION];

/// `rs` as the store keeps it: metadata, the replica count and the conditions. Keeping a kept
/// ReplicaSet changes nothing.
pub fn keep_replica_set(rs: ReplicaSet) -> ReplicaSet {
    ReplicaSet {
        metadata: keep_meta(rs.metadata, REPLICA_SET_ANNOTATIONS),
        // Required by the type: an empty selector and no template.
        spec: ReplicaSetSpec::default(),
        status: rs.status.map(|s| ReplicaSetStatus {
            replicas: s.replicas,
            conditions: s
                .conditions
                .map(|cs| cs.into_iter().map(keep_condition).collect()),
            ..ReplicaSetStatus::default()
        }),
    }
}

/// Whether `rs` holds what `keep_replica_set` drops: the API server admits no ReplicaSet
/// without a pod template, so one without is a kept copy (never to be written).
pub fn replica_set_is_complete(rs: &ReplicaSet) -> bool {
    rs.spec.template.is_some()
}

fn keep_condition(c: ReplicaSetCondition) -> ReplicaSetCondition {
    ReplicaSetCondition {
        type_: c.type_,
        status: c.status,
        reason: c.reason,
        message: c.message,
        ..ReplicaSetCondition::default()
    }
}
