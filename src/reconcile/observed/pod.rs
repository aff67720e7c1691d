//! What the operator keeps of a Pod (of its Deployments' ReplicaSets and of its Jobs): the
//! fields the workload verdict (`reconcile::workload`), the console's trust analysis
//! (`ConsolePod::of`) and the pgAdmin registration (`pgadmin_pod_ready`) read.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodCondition, PodSpec,
    PodStatus,
};

use super::meta::keep_meta;
use crate::reconcile::console::TRUST_ANNOTATION;

/// The Pod annotations a pass reads: the console's trust grant.
pub const POD_ANNOTATIONS: &[&str] = &[TRUST_ANNOTATION];

/// `pod` as the store keeps it: metadata, its Node, and of its status the phase, the address,
/// the conditions and each container's waiting state and last exit; the spec's containers,
/// volumes and the rest are dropped. Keeping a kept Pod changes nothing.
pub fn keep_pod(pod: Pod) -> Pod {
    Pod {
        metadata: keep_meta(pod.metadata, POD_ANNOTATIONS),
        spec: pod.spec.and_then(|s| s.node_name).map(|node| PodSpec {
            node_name: Some(node),
            ..PodSpec::default()
        }),
        status: pod.status.map(keep_status),
    }
}

/// Whether `pod` holds what `keep_pod` drops: the API server admits no Pod without a
/// container, so a Pod without one is a kept copy (never to be written).
pub fn pod_is_complete(pod: &Pod) -> bool {
    pod.spec.as_ref().is_some_and(|s| !s.containers.is_empty())
}

fn keep_status(status: PodStatus) -> PodStatus {
    let containers = |list: Option<Vec<ContainerStatus>>| {
        list.map(|l| l.into_iter().map(keep_container).collect())
    };
    PodStatus {
        phase: status.phase,
        pod_ip: status.pod_ip,
        conditions: status
            .conditions
            .map(|cs| cs.into_iter().map(keep_condition).collect()),
        init_container_statuses: containers(status.init_container_statuses),
        container_statuses: containers(status.container_statuses),
        ..PodStatus::default()
    }
}

fn keep_condition(c: PodCondition) -> PodCondition {
    PodCondition {
        type_: c.type_,
        status: c.status,
        reason: c.reason,
        message: c.message,
        ..PodCondition::default()
    }
}

/// A container's name, readiness, restarts, waiting state and last exit (code and reason).
/// `image` and `imageID` are required by the type and left empty.
fn keep_container(c: ContainerStatus) -> ContainerStatus {
    let waiting = c.state.and_then(|s| s.waiting).map(|w| ContainerState {
        waiting: Some(w),
        ..ContainerState::default()
    });
    let last_exit = c
        .last_state
        .and_then(|s| s.terminated)
        .map(|t| ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: t.exit_code,
                reason: t.reason,
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        });
    ContainerStatus {
        name: c.name,
        ready: c.ready,
        restart_count: c.restart_count,
        state: waiting,
        last_state: last_exit,
        ..ContainerStatus::default()
    }
}
