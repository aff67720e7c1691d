//! The facts of an object's children, from the same pure readings the reconcilers use: a
//! Deployment's rollout, a Pod's worst fact, a Job's outcome, an exposure's admission, the
//! ingress NetworkPolicy's peers judged broad or not, a RoleBinding bound exactly or not.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::ResourceExt;
use kube::api::DynamicObject;

use super::report::ChildFact;
use crate::api::{AccessSubject, GatewayParentRef};
use crate::reconcile::access_request::{binds_exactly, describe};
use crate::reconcile::console::{NodeCidrs, PodAddress, broad_peer};
use crate::reconcile::exposure::{
    Admission, http_route_admission, ingress_admission, route_admission,
};
use crate::reconcile::pgadmin::{JobState, job_state};
use crate::reconcile::workload::{Rollout, is_active, pod_fact, rollout_state};

fn fact(kind: &str, name: String, state: &str, detail: String, healthy: bool) -> ChildFact {
    ChildFact {
        kind: kind.to_owned(),
        name,
        state: state.to_owned(),
        detail,
        healthy,
    }
}

pub fn deployment_fact(deployment: &Deployment) -> ChildFact {
    let name = deployment.name_any();
    let (state, detail, healthy) = match rollout_state(deployment) {
        Rollout::Complete { replicas } => (
            "Complete",
            format!("{replicas} of {replicas} replicas run the current template and are available"),
            true,
        ),
        Rollout::InProgress { detail } => ("InProgress", detail, false),
        Rollout::Stuck { message } => ("ProgressDeadlineExceeded", message, false),
        Rollout::NotObserved {
            generation,
            observed,
        } => (
            "NotObserved",
            format!(
                "generation {generation} not observed by the deployment controller (observed {observed})"
            ),
            false,
        ),
    };
    fact("Deployment", name, state, detail, healthy)
}

/// An active Pod's fact (its worst problem, named by the registered reason), or Ready; Pods
/// that are gone or finished (Failed, Succeeded, terminating) are not the news.
pub fn pod_child_fact(pod: &Pod) -> Option<ChildFact> {
    if !is_active(pod) {
        return None;
    }
    Some(match pod_fact(pod) {
        Some(f) => fact("Pod", f.pod, f.kind.reason().as_str(), f.detail, false),
        None => fact(
            "Pod",
            pod.name_any(),
            "Ready",
            "every container is ready".into(),
            true,
        ),
    })
}

pub fn job_fact(job: &Job) -> ChildFact {
    let (state, detail, healthy) = match job_state(job) {
        JobState::Running => ("Running", "the Job has not finished".to_owned(), true),
        JobState::Complete => ("Complete", "the Job succeeded".to_owned(), true),
        JobState::Failed { fact } => ("Failed", fact, false),
    };
    fact("Job", job.name_any(), state, detail, healthy)
}

fn admission_fact(kind: &str, name: String, admission: Admission, refused: &str) -> ChildFact {
    match admission {
        Admission::Admitted { host, by } => {
            let host = host.map(|h| format!("{h} ")).unwrap_or_default();
            fact(
                kind,
                name,
                "Admitted",
                format!("{host}by {}", by.join(", ")),
                true,
            )
        }
        Admission::Refused {
            by,
            reason,
            message,
        } => fact(
            kind,
            name,
            refused,
            format!("{by}: {reason}: {message}"),
            false,
        ),
        Admission::Pending { detail } => fact(kind, name, "Pending", detail, false),
    }
}

pub fn route_fact(route: &DynamicObject) -> ChildFact {
    admission_fact(
        "Route",
        route.name_any(),
        route_admission(route),
        "NotAdmitted",
    )
}

pub fn ingress_fact(ingress: &Ingress) -> ChildFact {
    admission_fact(
        "Ingress",
        ingress.name_any(),
        ingress_admission(ingress),
        "NotAdmitted",
    )
}

pub fn http_route_fact(route: &DynamicObject, parent: &GatewayParentRef) -> ChildFact {
    admission_fact(
        "HTTPRoute",
        route.name_any(),
        http_route_admission(route, parent),
        "NotAccepted",
    )
}

/// A console's ingress NetworkPolicy: each `from` peer judged broad is one fact; a policy
/// with none is confined.
pub fn ingress_policy_facts(
    policy: &NetworkPolicy,
    pods: &[PodAddress],
    nodes: &NodeCidrs,
) -> Vec<ChildFact> {
    let name = policy.name_any();
    let peers: Vec<_> = policy
        .spec
        .iter()
        .flat_map(|s| s.ingress.iter().flatten())
        .flat_map(|rule| rule.from.iter().flatten())
        .collect();
    let broad: Vec<ChildFact> = peers
        .iter()
        .enumerate()
        .filter_map(|(i, peer)| {
            let why = broad_peer(peer, pods, nodes)?;
            Some(fact(
                "NetworkPolicy",
                name.clone(),
                "BroadPeer",
                format!("from[{i}]: {why}"),
                false,
            ))
        })
        .collect();
    if !broad.is_empty() {
        return broad;
    }
    let detail = match peers.len() {
        0 => "admits no peer".to_owned(),
        1 => "its one peer pins who may connect".to_owned(),
        n => format!("each of its {n} peers pins who may connect"),
    };
    vec![fact("NetworkPolicy", name, "Confined", detail, true)]
}

/// A RoleBinding of an access request: exactly the subject to the ClusterRole, or not.
pub fn role_binding_fact(
    binding: &RoleBinding,
    subject: &AccessSubject,
    cluster_role: &str,
) -> ChildFact {
    let name = binding.name_any();
    if binds_exactly(binding, subject, cluster_role) {
        return fact(
            "RoleBinding",
            name,
            "BindsExactly",
            format!("{} to ClusterRole {cluster_role}", describe(subject)),
            true,
        );
    }
    let subjects: Vec<String> = binding
        .subjects
        .iter()
        .flatten()
        .map(|s| format!("{} {}", s.kind, s.name))
        .collect();
    fact(
        "RoleBinding",
        name,
        "BindsOther",
        format!(
            "binds [{}] to {} {}, not {} to ClusterRole {cluster_role}",
            subjects.join(", "),
            binding.role_ref.kind,
            binding.role_ref.name,
            describe(subject)
        ),
        false,
    )
}
