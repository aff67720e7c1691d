//! Table-driven tests over objects shaped like `kubectl get -o yaml` of real clusters.

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use serde::de::DeserializeOwned;

use super::*;
use crate::conditions::reasons::common;
use crate::conditions::{ConditionStatus, Reason};

fn load<T: DeserializeOwned>(yaml: &str) -> T {
    serde_yaml_ng::from_str(yaml).expect("fixture parses")
}

const DEADLINE: &str = include_str!("fixtures/deployment_deadline.yaml");
const RS_CURRENT: &str = include_str!("fixtures/replicaset_current.yaml");
const RS_QUOTA: &str = include_str!("fixtures/replicaset_quota.yaml");
const RS_OLD: &str = include_str!("fixtures/replicaset_old.yaml");
const IMAGE_PULL: &str = include_str!("fixtures/pod_image_pull_backoff.yaml");
const CRASH: &str = include_str!("fixtures/pod_crash_loop.yaml");
const KEY_MISSING: &str = include_str!("fixtures/pod_config_error_key.yaml");
const SECRET_MISSING: &str = include_str!("fixtures/pod_config_error_secret.yaml");
const UNSCHEDULABLE: &str = include_str!("fixtures/pod_unschedulable.yaml");
const EVICTED: &str = include_str!("fixtures/pod_evicted.yaml");
const NOT_READY: &str = include_str!("fixtures/pod_running_not_ready.yaml");
const READY: &str = include_str!("fixtures/pod_ready.yaml");
const CREATING: &str = include_str!("fixtures/pod_container_creating.yaml");

/// The deadline fixture with its Progressing condition as the controller writes it while a
/// rollout moves, and the given replica counts.
fn progressing(updated: i32, replicas: i32, available: i32) -> Deployment {
    let mut d: Deployment = load(DEADLINE);
    let status = d.status.as_mut().expect("status");
    status.updated_replicas = Some(updated);
    status.replicas = Some(replicas);
    status.available_replicas = Some(available);
    for c in status.conditions.iter_mut().flatten() {
        if c.type_.as_deref() == Some("Progressing") {
            *c = DeploymentCondition {
                type_: Some("Progressing".into()),
                status: Some("True".into()),
                reason: Some("ReplicaSetUpdated".into()),
                message: Some("ReplicaSet \"orders-console-7d4b9c6f5d\" is progressing.".into()),
                ..c.clone()
            };
        }
    }
    d
}

fn complete() -> Deployment {
    let mut d = progressing(2, 2, 2);
    for c in d
        .status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .expect("conditions")
    {
        if c.type_.as_deref() == Some("Progressing") {
            c.reason = Some("NewReplicaSetAvailable".into());
            c.message = Some(
                "ReplicaSet \"orders-console-7d4b9c6f5d\" has successfully progressed.".into(),
            );
        }
    }
    d
}

fn unobserved() -> Deployment {
    let mut d = complete();
    d.metadata.generation = Some(3);
    d
}

struct Case {
    name: &'static str,
    deployment: Option<Deployment>,
    replica_sets: Vec<&'static str>,
    pods: Vec<&'static str>,
    status: ConditionStatus,
    reason: Reason,
    message_has: &'static [&'static str],
}

#[test]
fn workload_verdicts_over_real_shapes() {
    use ConditionStatus::{False, True, Unknown};
    let cases = vec![
        Case {
            name: "not in the cache yet",
            deployment: None,
            replica_sets: vec![],
            pods: vec![],
            status: Unknown,
            reason: common::RECONCILING,
            message_has: &["Deployment orders-console is not observed yet"],
        },
        Case {
            name: "complete at its generation",
            deployment: Some(complete()),
            replica_sets: vec![RS_CURRENT],
            pods: vec![READY],
            status: True,
            reason: common::AS_EXPECTED,
            message_has: &["2 of 2 replicas"],
        },
        Case {
            name: "complete, an evicted Pod is ignored",
            deployment: Some(complete()),
            replica_sets: vec![RS_CURRENT],
            pods: vec![READY, EVICTED],
            status: True,
            reason: common::AS_EXPECTED,
            message_has: &[],
        },
        Case {
            name: "spec change not observed by the controller",
            deployment: Some(unobserved()),
            replica_sets: vec![RS_CURRENT],
            pods: vec![CRASH],
            status: False,
            reason: common::ROLLOUT_IN_PROGRESS,
            message_has: &["generation 3 is not observed", "(observed 2)"],
        },
        Case {
            name: "rollout moving, nothing wrong",
            deployment: Some(progressing(1, 3, 2)),
            replica_sets: vec![RS_CURRENT, RS_OLD],
            pods: vec![READY],
            status: False,
            reason: common::ROLLOUT_IN_PROGRESS,
            message_has: &["1 of 2 replicas run the current template"],
        },
        Case {
            name: "old replicas terminating",
            deployment: Some(progressing(2, 3, 2)),
            replica_sets: vec![RS_CURRENT, RS_OLD],
            pods: vec![READY],
            status: False,
            reason: common::ROLLOUT_IN_PROGRESS,
            message_has: &["1 replicas of an older template remain"],
        },
        Case {
            name: "image pull back-off",
            deployment: Some(progressing(1, 3, 2)),
            replica_sets: vec![RS_CURRENT, RS_OLD],
            pods: vec![IMAGE_PULL, READY],
            status: False,
            reason: common::IMAGE_PULL_FAILED,
            message_has: &[
                "Pod orders-console-7d4b9c6f5d-q7zrm: container console: ImagePullBackOff: Back-off pulling image \"quay.io/fyannk/pgtoolbox-console:1.4.0\"",
            ],
        },
        Case {
            name: "crash loop, with the last exit",
            deployment: Some(progressing(1, 3, 2)),
            replica_sets: vec![RS_CURRENT],
            pods: vec![CRASH],
            status: False,
            reason: common::CRASH_LOOP_BACK_OFF,
            message_has: &["CrashLoopBackOff (last exit code 1, Error): back-off 2m40s"],
        },
        Case {
            name: "missing key of a Secret",
            deployment: Some(progressing(1, 3, 2)),
            replica_sets: vec![RS_CURRENT],
            pods: vec![KEY_MISSING],
            status: False,
            reason: common::SECRET_KEY_MISSING,
            message_has: &["couldn't find key client-secret in Secret team-a/orders-oidc"],
        },
        Case {
            name: "missing Secret beats every other Pod fact",
            deployment: Some(progressing(1, 3, 2)),
            replica_sets: vec![RS_CURRENT],
            pods: vec![
                CRASH,
                IMAGE_PULL,
                KEY_MISSING,
                SECRET_MISSING,
                UNSCHEDULABLE,
            ],
            status: False,
            reason: common::SECRET_NOT_FOUND,
            message_has: &[
                "Pod orders-console-7d4b9c6f5d-h9wqd",
                "secret \"orders-oidc\" not found",
            ],
        },
        Case {
            name: "unschedulable as the scheduler says it",
            deployment: Some(progressing(1, 3, 2)),
            replica_sets: vec![RS_CURRENT],
            pods: vec![UNSCHEDULABLE, NOT_READY],
            status: False,
            reason: common::POD_UNSCHEDULABLE,
            message_has: &[
                "Unschedulable: 0/3 nodes are available",
                "2 Insufficient cpu",
            ],
        },
        Case {
            name: "running but not Ready",
            deployment: Some(progressing(1, 3, 2)),
            replica_sets: vec![RS_CURRENT],
            pods: vec![NOT_READY, READY, EVICTED],
            status: False,
            reason: common::POD_NOT_READY,
            message_has: &[
                "Ready=False (ContainersNotReady): containers with unready status: [console]",
            ],
        },
        Case {
            name: "past its deadline, no Pod says why",
            deployment: Some(load(DEADLINE)),
            replica_sets: vec![RS_CURRENT, RS_OLD],
            pods: vec![NOT_READY],
            status: False,
            reason: common::ROLLOUT_STUCK,
            message_has: &[
                "ProgressDeadlineExceeded: ReplicaSet \"orders-console-7d4b9c6f5d\" has timed out progressing.",
            ],
        },
        Case {
            name: "past its deadline behind a Pod fact: the fact, the deadline said",
            deployment: Some(load(DEADLINE)),
            replica_sets: vec![RS_CURRENT, RS_OLD],
            pods: vec![IMAGE_PULL],
            status: False,
            reason: common::IMAGE_PULL_FAILED,
            message_has: &["ImagePullBackOff", "exceeded its progress deadline"],
        },
        Case {
            name: "quota: the ReplicaSet's FailedCreate, message carried",
            deployment: Some(load(DEADLINE)),
            replica_sets: vec![RS_QUOTA, RS_OLD],
            pods: vec![],
            status: False,
            reason: common::REPLICA_FAILURE,
            message_has: &[
                "ReplicaSet orders-console-7d4b9c6f5d: FailedCreate: pods \"orders-console-7d4b9c6f5d-x8k2p\" is forbidden: exceeded quota: compute-resources",
            ],
        },
        Case {
            name: "a Pod creating its containers is the rollout's progress, not PodNotReady",
            deployment: Some(progressing(2, 2, 1)),
            replica_sets: vec![RS_CURRENT],
            pods: vec![CREATING, READY],
            status: False,
            reason: common::ROLLOUT_IN_PROGRESS,
            message_has: &["1 of 2 updated replicas are available"],
        },
        Case {
            name: "a Pod running not Ready beats one starting",
            deployment: Some(progressing(2, 2, 0)),
            replica_sets: vec![RS_CURRENT],
            pods: vec![CREATING, NOT_READY],
            status: False,
            reason: common::POD_NOT_READY,
            message_has: &["ContainersNotReady"],
        },
        Case {
            name: "an old ReplicaSet's crashing Pod is not the news",
            deployment: Some(progressing(1, 3, 2)),
            replica_sets: vec![RS_OLD, RS_CURRENT],
            pods: vec![READY],
            status: False,
            reason: common::ROLLOUT_IN_PROGRESS,
            message_has: &[],
        },
    ];
    for case in cases {
        let replica_sets: Vec<ReplicaSet> = case.replica_sets.iter().map(|y| load(y)).collect();
        let pods: Vec<Pod> = case.pods.iter().map(|y| load(y)).collect();
        let verdict = workload_verdict(
            "orders-console",
            case.deployment.as_ref(),
            &replica_sets,
            &pods,
        );
        assert_eq!(verdict.status, case.status, "{}: {verdict:?}", case.name);
        assert_eq!(verdict.reason, case.reason, "{}: {verdict:?}", case.name);
        for part in case.message_has {
            assert!(
                verdict.message.contains(part),
                "{}: {:?} lacks {part:?}",
                case.name,
                verdict.message
            );
        }
        assert!(
            !verdict.message.to_lowercase().contains("waiting"),
            "{}: {}",
            case.name,
            verdict.message
        );
    }
}

#[test]
fn the_deployment_copy_of_replica_failure_counts_without_the_replica_set() {
    let mut d = progressing(0, 0, 0);
    d.status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .expect("conditions")
        .push(DeploymentCondition {
            type_: Some("ReplicaFailure".into()),
            status: Some("True".into()),
            reason: Some("FailedCreate".into()),
            message: Some(
                "pods \"orders-console-7d4b9c6f5d-x8k2p\" is forbidden: exceeded quota: q".into(),
            ),
            ..Default::default()
        });
    let verdict = workload_verdict("orders-console", Some(&d), &[], &[]);
    assert_eq!(verdict.reason, common::REPLICA_FAILURE);
    assert!(
        verdict
            .message
            .starts_with("Deployment orders-console: FailedCreate: pods"),
        "{}",
        verdict.message
    );
}

#[test]
fn several_pods_with_one_fact_are_counted() {
    let d = progressing(1, 3, 0);
    let mut second: Pod = load(IMAGE_PULL);
    second.metadata.name = Some("orders-console-7d4b9c6f5d-a0000".into());
    let pods = vec![load(IMAGE_PULL), second];
    let verdict = workload_verdict("orders-console", Some(&d), &[load(RS_CURRENT)], &pods);
    // Pods are named in order, so the message is the same whatever the cache order.
    assert!(
        verdict
            .message
            .starts_with("Pod orders-console-7d4b9c6f5d-a0000:"),
        "{}",
        verdict.message
    );
    assert!(
        verdict.message.ends_with("(and 1 more Pod)"),
        "{}",
        verdict.message
    );
}

#[test]
fn pod_activity_follows_the_replica_set_controller() {
    let cases: &[(&str, &str, bool)] = &[
        ("evicted (Failed)", EVICTED, false),
        ("running", READY, true),
        ("pending", UNSCHEDULABLE, true),
    ];
    for (name, yaml, active) in cases {
        assert_eq!(is_active(&load(yaml)), *active, "{name}");
    }
    let mut succeeded: Pod = load(READY);
    succeeded.status.as_mut().expect("status").phase = Some("Succeeded".into());
    assert!(!is_active(&succeeded));
    let mut terminating: Pod = load(READY);
    terminating.metadata.deletion_timestamp = load("\"2026-11-30T10:50:00Z\"");
    assert!(!is_active(&terminating));
}

#[test]
fn config_errors_about_config_maps_are_not_secret_reasons() {
    let mut pod: Pod = load(KEY_MISSING);
    let waiting = pod
        .status
        .as_mut()
        .and_then(|s| s.container_statuses.as_mut())
        .expect("statuses")[0]
        .state
        .as_mut()
        .and_then(|s| s.waiting.as_mut())
        .expect("waiting");
    waiting.message = Some("configmap \"orders-settings\" not found".into());
    let fact = pod_fact(&pod).expect("a fact");
    assert_eq!(fact.kind, PodFactKind::NotReady);
    assert!(
        fact.detail
            .contains("CreateContainerConfigError: configmap \"orders-settings\" not found")
    );
}

#[test]
fn copied_facts_are_bounded() {
    let mut pod: Pod = load(UNSCHEDULABLE);
    for c in pod
        .status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .expect("conditions")
    {
        c.message = Some("é".repeat(2000));
    }
    let fact = pod_fact(&pod).expect("a fact");
    assert!(fact.detail.len() <= 490, "{}", fact.detail.len());
    assert!(fact.detail.ends_with('…'));
}

fn template(image: &str) -> PodTemplateSpec {
    load(&format!(
        "metadata:\n  labels:\n    app.kubernetes.io/instance: orders\nspec:\n  containers:\n  - name: console\n    image: {image}\n"
    ))
}

fn secret(name: &str, value: &[u8]) -> SecretDigest {
    let data = [("client-secret".to_owned(), ByteString(value.to_vec()))]
        .into_iter()
        .collect();
    SecretDigest::of(name, Some("Opaque"), Some(&data))
}

#[test]
fn the_workload_hash_moves_with_template_and_secret_contents_only() {
    let base = workload_hash(
        &template("a:1"),
        &[secret("oidc", b"s1"), secret("tls", b"t")],
    );
    assert_eq!(base.len(), 16);
    let cases: &[(&str, String, bool)] = &[
        (
            "same inputs",
            workload_hash(
                &template("a:1"),
                &[secret("oidc", b"s1"), secret("tls", b"t")],
            ),
            true,
        ),
        (
            "secrets in another order",
            workload_hash(
                &template("a:1"),
                &[secret("tls", b"t"), secret("oidc", b"s1")],
            ),
            true,
        ),
        (
            "a changed image",
            workload_hash(
                &template("a:2"),
                &[secret("oidc", b"s1"), secret("tls", b"t")],
            ),
            false,
        ),
        (
            "a changed Secret value",
            workload_hash(
                &template("a:1"),
                &[secret("oidc", b"s2"), secret("tls", b"t")],
            ),
            false,
        ),
        (
            "a Secret gone",
            workload_hash(
                &template("a:1"),
                &[SecretDigest::of("oidc", None, None), secret("tls", b"t")],
            ),
            false,
        ),
        (
            "a Secret fewer",
            workload_hash(&template("a:1"), &[secret("oidc", b"s1")]),
            false,
        ),
    ];
    for (name, hash, same) in cases {
        assert_eq!(hash == &base, *same, "{name}");
    }
}

#[test]
fn stamping_the_hash_is_idempotent() {
    let mut t = template("a:1");
    let first = stamp_workload_hash(&mut t, &[secret("oidc", b"s1")]);
    let second = stamp_workload_hash(&mut t, &[secret("oidc", b"s1")]);
    assert_eq!(first, second);
    let annotations = t.metadata.and_then(|m| m.annotations).expect("annotations");
    assert_eq!(annotations.get(WORKLOAD_HASH_ANNOTATION), Some(&first));
}

#[test]
fn a_secret_as_read_digests_like_its_data() {
    let secret: k8s_openapi::api::core::v1::Secret =
        load("metadata:\n  name: oidc\ntype: Opaque\ndata:\n  client-secret: czE=\n");
    assert_eq!(
        SecretDigest::of_secret("oidc", Some(&secret)),
        secret_digest_of("oidc", b"s1")
    );
    assert_eq!(
        SecretDigest::of_secret("oidc", None),
        SecretDigest::of("oidc", None, None)
    );
    assert_ne!(
        SecretDigest::of_secret("oidc", None),
        secret_digest_of("oidc", b"s1")
    );
}

#[test]
fn a_secret_known_by_its_version_rolls_when_the_version_moves() {
    let template = PodTemplateSpec::default();
    let hash = |secrets: &[SecretDigest]| workload_hash(&template, secrets);
    let v1 = [SecretDigest::of_version("s3", Some("41"))];
    let v2 = [SecretDigest::of_version("s3", Some("42"))];
    let gone = [SecretDigest::of_version("s3", None)];
    assert_eq!(
        hash(&v1),
        hash(&[SecretDigest::of_version("s3", Some("41"))])
    );
    assert_ne!(hash(&v1), hash(&v2), "a new version is a new hash");
    assert_ne!(hash(&v1), hash(&gone));
    assert_eq!(
        gone[0],
        SecretDigest::of("s3", None, None),
        "absent is absent"
    );
    assert_ne!(
        hash(&[SecretDigest::of_version("other", Some("41"))]),
        hash(&v1),
        "the name counts"
    );
}

fn secret_digest_of(name: &str, value: &[u8]) -> SecretDigest {
    secret(name, value)
}

#[test]
fn an_init_container_is_named_as_one() {
    let mut pod: Pod = load(CRASH);
    let status = pod.status.as_mut().expect("status");
    status.init_container_statuses = status.container_statuses.take();
    let fact = pod_fact(&pod).expect("a fact");
    assert_eq!(fact.kind, PodFactKind::CrashLoopBackOff);
    assert!(
        fact.detail
            .starts_with("init container console: CrashLoopBackOff"),
        "{}",
        fact.detail
    );
}

#[test]
fn the_engine_takes_the_workload_verdict_and_ready_copies_it() {
    use crate::conditions::{
        ConditionType, Kind, PassFacts, StoredStatus, Timestamp, derive_status,
    };
    let verdict = workload_verdict(
        "orders-console",
        Some(&progressing(1, 3, 2)),
        &[load(RS_CURRENT)],
        &[load(KEY_MISSING)],
    );
    let facts = PassFacts::new(Kind::PgToolBoxConsole, 2)
        .with_aspect(
            ConditionType::ConfigurationValid,
            crate::conditions::Verdict::holds(common::AS_EXPECTED, "ok"),
        )
        .and_then(|f| f.with_aspect(ConditionType::WorkloadReady, verdict.clone()))
        .expect("a console may say this");
    let update = derive_status(&facts, StoredStatus::default(), Timestamp::UNIX_EPOCH);
    let ready = update
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(ready.reason, "SecretKeyMissing");
    assert_eq!(ready.message, verdict.message);
}

#[test]
fn every_image_pull_failure_the_kubelet_writes() {
    let cases = [
        (
            "ErrImagePull",
            "failed to pull and unpack image \"quay.io/fyannk/pgtoolbox-console:1.4.0\": failed to resolve reference \"quay.io/fyannk/pgtoolbox-console:1.4.0\": quay.io/fyannk/pgtoolbox-console:1.4.0: not found",
        ),
        (
            "InvalidImageName",
            "Failed to apply default image tag \"Quay.io/fyannk/console\": couldn't parse image name \"Quay.io/fyannk/console\": invalid reference format: repository name must be lowercase",
        ),
        (
            "ImagePullBackOff",
            "Back-off pulling image \"quay.io/fyannk/pgtoolbox-console:1.4.0\"",
        ),
    ];
    for (reason, message) in cases {
        let mut pod: Pod = load(IMAGE_PULL);
        let waiting = pod
            .status
            .as_mut()
            .and_then(|s| s.container_statuses.as_mut())
            .expect("statuses")[0]
            .state
            .as_mut()
            .and_then(|s| s.waiting.as_mut())
            .expect("waiting");
        waiting.reason = Some(reason.into());
        waiting.message = Some(message.into());
        let fact = pod_fact(&pod).expect("a fact");
        assert_eq!(fact.kind, PodFactKind::ImagePullFailed, "{reason}");
        assert_eq!(
            fact.detail,
            format!("container console: {reason}: {message}"),
            "{reason}"
        );
    }
}

#[test]
fn a_new_hash_on_an_existing_deployment_is_a_rollout() {
    let mut stamped: Deployment = load(DEADLINE);
    stamp_workload_hash(&mut stamped.spec.template, &[]);
    let old = current_workload_hash(&stamped).expect("stamped").to_owned();
    let unstamped: Deployment = load(DEADLINE);
    let cases: Vec<(&str, Option<&Deployment>, &str, Option<String>)> = vec![
        ("creation rolls nothing", None, "abc", None),
        ("same hash", Some(&stamped), old.as_str(), None),
        (
            "new hash",
            Some(&stamped),
            "abc",
            Some(format!(
                "Deployment orders-console rolls out a new pod template (workload hash abc, was {old})"
            )),
        ),
        (
            "first hash on a Deployment that had none",
            Some(&unstamped),
            "abc",
            Some("Deployment orders-console rolls out a new pod template (workload hash abc, was none)".into()),
        ),
    ];
    for (name, current, desired, expected) in cases {
        assert_eq!(rollout_started(current, desired), expected, "{name}");
    }
}
