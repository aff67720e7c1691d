//! Every reader of an observed child gives the same answer on the whole object (as `kubectl get
//! -o yaml` prints it) and on what the store keeps of it.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use serde::de::DeserializeOwned;

use super::*;
use crate::children::{OperatorCaches, our_owner};
use crate::conditions::Verdict;
use crate::messages::{KindKey, ObjectKey};
use crate::reconcile::console::{ConsolePod, PodAddress, TRUST_ANNOTATION, pod_address};
use crate::reconcile::pgadmin::pgadmin_pod_ready;
use crate::reconcile::workload::{
    PodFact, REVISION_ANNOTATION, is_active, pod_fact, workload_verdict,
};

fn load<T: DeserializeOwned>(yaml: &str) -> T {
    serde_yaml_ng::from_str(yaml).expect("fixture parses")
}

const CONSOLE_POD: &str = include_str!("fixtures/pod_console_full.yaml");
const PGADMIN_TERMINATING: &str = include_str!("fixtures/pod_pgadmin_terminating.yaml");
const PGADMIN_READY: &str = include_str!("fixtures/pod_pgadmin_ready.yaml");
const REGISTRATION_POD: &str = include_str!("fixtures/pod_pgadmin_registration.yaml");
const CONSOLE_RS: &str = include_str!("fixtures/replicaset_console_full.yaml");
const DEADLINE: &str = include_str!("../workload/fixtures/deployment_deadline.yaml");

/// Every Pod fixture: ours, and the workload verdict's (one per fact it tells).
const PODS: &[&str] = &[
    CONSOLE_POD,
    PGADMIN_TERMINATING,
    PGADMIN_READY,
    REGISTRATION_POD,
    include_str!("../workload/fixtures/pod_config_error_key.yaml"),
    include_str!("../workload/fixtures/pod_config_error_secret.yaml"),
    include_str!("../workload/fixtures/pod_container_creating.yaml"),
    include_str!("../workload/fixtures/pod_crash_loop.yaml"),
    include_str!("../workload/fixtures/pod_evicted.yaml"),
    include_str!("../workload/fixtures/pod_image_pull_backoff.yaml"),
    include_str!("../workload/fixtures/pod_ready.yaml"),
    include_str!("../workload/fixtures/pod_running_not_ready.yaml"),
    include_str!("../workload/fixtures/pod_unschedulable.yaml"),
];

const REPLICA_SETS: &[&str] = &[
    CONSOLE_RS,
    include_str!("../workload/fixtures/replicaset_current.yaml"),
    include_str!("../workload/fixtures/replicaset_old.yaml"),
    include_str!("../workload/fixtures/replicaset_quota.yaml"),
];

fn pods() -> Vec<Pod> {
    PODS.iter().map(|y| load(y)).collect()
}

fn replica_sets() -> Vec<ReplicaSet> {
    REPLICA_SETS.iter().map(|y| load(y)).collect()
}

/// What the stores and the passes read of a Pod.
#[derive(Debug, PartialEq)]
struct PodReading {
    key: Option<ObjectKey>,
    uid: Option<String>,
    version: Option<String>,
    owner: Option<KindKey>,
    active: bool,
    fact: Option<PodFact>,
    address: Option<PodAddress>,
    console: ConsolePod,
    pgadmin_ready: bool,
}

fn read_pod(pod: &Pod) -> PodReading {
    PodReading {
        key: ObjectKey::of(pod),
        uid: pod.uid(),
        version: pod.resource_version(),
        owner: our_owner::<Pod>()(pod),
        active: is_active(pod),
        fact: pod_fact(pod),
        address: pod_address(pod),
        console: ConsolePod::of(pod),
        pgadmin_ready: pgadmin_pod_ready(std::slice::from_ref(pod)),
    }
}

/// The Deployments the verdict is judged against: past its deadline, rolling out, and rolling
/// out without a revision (the newest ReplicaSet is then the current one).
fn deployments() -> Vec<Deployment> {
    let stuck: Deployment = load(DEADLINE);
    let mut rolling = stuck.clone();
    if let Some(status) = rolling.status.as_mut() {
        status.updated_replicas = Some(1);
        status.conditions = Some(vec![DeploymentCondition {
            type_: Some("Progressing".into()),
            status: Some("True".into()),
            reason: Some("ReplicaSetUpdated".into()),
            ..DeploymentCondition::default()
        }]);
    }
    let mut unrevised = rolling.clone();
    if let Some(annotations) = unrevised.metadata.annotations.as_mut() {
        annotations.remove(REVISION_ANNOTATION);
    }
    vec![stuck, rolling, unrevised]
}

/// Every verdict over the given children: all of them, each ReplicaSet alone with all Pods,
/// and each ReplicaSet with each Pod alone (so every Pod's fact is the one told once).
fn verdicts(replica_sets: &[ReplicaSet], pods: &[Pod]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for deployment in deployments() {
        let d = Some(&deployment);
        out.push(workload_verdict("orders-console", d, replica_sets, pods));
        for rs in replica_sets {
            let rs = std::slice::from_ref(rs);
            out.push(workload_verdict("orders-console", d, rs, pods));
            for pod in pods {
                let pod = std::slice::from_ref(pod);
                out.push(workload_verdict("orders-console", d, rs, pod));
            }
        }
    }
    out
}

#[test]
fn every_reader_of_a_pod_reads_the_same_of_its_kept_form() {
    let readings: Vec<PodReading> = pods().iter().map(read_pod).collect();
    // Each reader says yes of some fixture, or its comparison would prove little.
    assert!(readings.iter().any(|r| r.pgadmin_ready));
    assert!(readings.iter().any(|r| r.console.grant.is_some()));
    assert!(readings.iter().any(|r| r.console.deleting_since.is_some()));
    assert!(readings.iter().any(|r| !r.active));
    assert!(
        readings
            .iter()
            .any(|r| r.address.as_ref().is_some_and(|a| a.node.is_some()))
    );
    assert!(readings.iter().any(|r| r.fact.is_none()));
    assert!(readings.iter().any(|r| r.owner.is_some()));
    for pod in pods() {
        let kept = keep_pod(pod.clone());
        assert_eq!(read_pod(&kept), read_pod(&pod), "{}", pod.name_any());
    }
}

#[test]
fn the_workload_verdict_is_the_same_over_kept_children() {
    let (replica_sets, pods) = (replica_sets(), pods());
    let kept_sets: Vec<ReplicaSet> = replica_sets.iter().cloned().map(keep_replica_set).collect();
    let kept_pods: Vec<Pod> = pods.iter().cloned().map(keep_pod).collect();
    let whole = verdicts(&replica_sets, &pods);
    // The fixtures tell more than one story, or the comparison would prove little.
    let reasons: std::collections::HashSet<_> = whole.iter().map(|v| v.reason).collect();
    assert!(reasons.len() >= 6, "{reasons:?}");
    assert_eq!(verdicts(&kept_sets, &kept_pods), whole);
    for (rs, kept) in replica_sets.iter().zip(&kept_sets) {
        assert_eq!(ObjectKey::of(kept), ObjectKey::of(rs));
        assert_eq!(kept.uid(), rs.uid());
        assert_eq!(kept.resource_version(), rs.resource_version());
        assert_eq!(
            our_owner::<ReplicaSet>()(kept),
            our_owner::<ReplicaSet>()(rs)
        );
    }
}

#[test]
fn the_bulk_of_a_pod_is_dropped_and_only_read_annotations_stay() {
    let pod: Pod = load(CONSOLE_POD);
    let mut watched = pod.clone();
    // The watch drops managed fields before the store sees a child.
    watched.metadata.managed_fields = None;
    let kept = keep_pod(pod);
    let json = serde_json::to_string(&kept).expect("encodes");
    for dropped in [
        "managedFields",
        "volumes",
        "env",
        "readinessProbe",
        "tolerations",
        "sha256",
        "cri-o://",
        "hostIP",
        "lastTransitionTime",
        "startedAt",
        "k8s.ovn.org/pod-networks",
        "workload-hash",
    ] {
        assert!(!json.contains(dropped), "{dropped} kept: {json}");
    }
    let annotations: Vec<&String> = kept.annotations().keys().collect();
    assert_eq!(annotations, [TRUST_ANNOTATION]);
    let watched_len = serde_json::to_vec(&watched).expect("encodes").len();
    assert!(
        json.len() * 3 < watched_len,
        "kept {} bytes of {watched_len}",
        json.len()
    );

    let rs: ReplicaSet = load(CONSOLE_RS);
    let kept = keep_replica_set(rs);
    let json = serde_json::to_string(&kept).expect("encodes");
    for dropped in [
        "managedFields",
        "\"template\"",
        "desired-replicas",
        "availableReplicas",
    ] {
        assert!(!json.contains(dropped), "{dropped} kept: {json}");
    }
    assert!(json.contains(REVISION_ANNOTATION) && json.contains("ReplicaFailure"));
}

#[test]
fn keeping_twice_changes_nothing_and_a_kept_copy_is_never_complete() {
    for pod in pods() {
        let kept = keep_pod(pod.clone());
        assert_eq!(keep_pod(kept.clone()), kept);
        assert!(pod_is_complete(&pod) && !pod_is_complete(&kept));
    }
    for rs in replica_sets() {
        let kept = keep_replica_set(rs.clone());
        assert_eq!(keep_replica_set(kept.clone()), kept);
        assert!(replica_set_is_complete(&rs) && !replica_set_is_complete(&kept));
    }
}

#[test]
fn the_operator_stores_keep_observed_children_projected_and_applied_ones_whole() {
    let caches = OperatorCaches::new();
    let pod: Pod = load(CONSOLE_POD);
    assert_eq!(caches.pods.kept_form(pod.clone()), keep_pod(pod));
    let rs: ReplicaSet = load(CONSOLE_RS);
    assert_eq!(
        caches.replica_sets.kept_form(rs.clone()),
        keep_replica_set(rs)
    );
    // An applied child one of our objects controls is kept whole; one labelled by anyone
    // else only as its metadata (issue 46).
    let mut deployment: Deployment = load(DEADLINE);
    deployment.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: format!("{}/v1alpha1", crate::api::GROUP),
            kind: "PgToolBoxConsole".into(),
            name: "ops".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
    ]);
    assert_eq!(caches.deployments.kept_form(deployment.clone()), deployment);
    deployment.metadata.owner_references = None;
    let foreign = caches.deployments.kept_form(deployment.clone());
    assert_eq!(foreign.spec, Default::default());
    assert_eq!(foreign.metadata.name, deployment.metadata.name);
}
