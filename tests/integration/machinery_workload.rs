//! The shared child machinery's `WorkloadReady` against the simulated cluster: every reason of the shared
//! workload facts from its real trigger, and the recovery after each is cleared.

use k8s_openapi::api::core::v1::{ResourceQuota, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use pgtoolbox_operator::testing::conditions::ConditionType;
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use super::machinery_support::{DEADLINE, ENV_SECRET, NS, start};

const W: ConditionType = ConditionType::WorkloadReady;
const SELECTOR: &str = "app.kubernetes.io/instance=web";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_ready_shows_every_reason_of_the_shared_facts_and_recovers() {
    let mut env = start(&[]).await;
    let admin = env.sim.admin();
    let at = env.mark();
    env.create(
        "web",
        json!({"image": "ghcr.io/pgtoolbox/console:0.1.0", "replicas": 1}),
        json!({}),
    )
    .await;
    // The Pod takes a moment to start: the rollout is seen in progress, then Ready.
    let at = env.step(at, "web", W, "False", "RolloutInProgress").await;
    env.until(at, "web", W, "True", "AsExpected").await;
    env.until(at, "web", ConditionType::Ready, "True", "AsExpected")
        .await;
    env.until(
        0,
        "web",
        ConditionType::ExposureReady,
        "True",
        "NotRequested",
    )
    .await;
    let at = env.mark();

    // A Pod that runs but is not Ready.
    admin
        .add_workload_fault(NS, SELECTOR, WorkloadFault::NotReady)
        .unwrap();
    let msg = env.until(at, "web", W, "False", "PodNotReady").await;
    assert!(msg.contains("web-console-"), "names the Pod: {msg}");
    admin.clear_workload_faults(None);
    let at = env.step(at, "web", W, "True", "AsExpected").await;

    // Containers that keep exiting.
    admin
        .add_workload_fault(NS, SELECTOR, WorkloadFault::CrashLoopBackOff)
        .unwrap();
    let at = env.step(at, "web", W, "False", "CrashLoopBackOff").await;
    admin.clear_workload_faults(None);
    let at = env.step(at, "web", W, "True", "AsExpected").await;

    // An image that cannot be pulled, met by a new rollout.
    admin
        .add_workload_fault(NS, SELECTOR, WorkloadFault::ImagePullBackOff)
        .unwrap();
    env.merge(
        "web",
        json!({"spec": {"image": "ghcr.io/pgtoolbox/console:0.1.1"}}),
    )
    .await;
    let at = env.step(at, "web", W, "False", "ImagePullFailed").await;
    admin.clear_workload_faults(None);
    let at = env.step(at, "web", W, "True", "AsExpected").await;

    // An env var from a Secret that does not exist, then from a key it lacks.
    env.merge(
        "web",
        json!({"metadata": {"annotations": {ENV_SECRET: "web-token/token"}}}),
    )
    .await;
    let msg = env.until(at, "web", W, "False", "SecretNotFound").await;
    assert!(msg.contains("web-token"), "names the Secret: {msg}");
    let at = env.mark();
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), NS);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "web-token"}, "stringData": {"other": "x"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let at = env.step(at, "web", W, "False", "SecretKeyMissing").await;
    secrets
        .patch(
            "web-token",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"stringData": {"token": "t"}})),
        )
        .await
        .unwrap();
    let at = env.step(at, "web", W, "True", "AsExpected").await;

    // A request no Node can satisfy.
    env.merge(
        "web",
        json!({"spec": {"resources": {"requests": {"cpu": "1000"}}}}),
    )
    .await;
    let at = env.step(at, "web", W, "False", "PodUnschedulable").await;
    env.merge("web", json!({"spec": {"resources": null}})).await;
    let at = env.step(at, "web", W, "True", "AsExpected").await;

    // A quota that refuses the new ReplicaSet's Pod.
    let quotas: Api<ResourceQuota> = Api::namespaced(env.client.clone(), NS);
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "pods"}, "spec": {"hard": {"pods": "1"}},
    }))
    .unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    env.merge(
        "web",
        json!({"spec": {"image": "ghcr.io/pgtoolbox/console:0.1.2"}}),
    )
    .await;
    let msg = env.until(at, "web", W, "False", "ReplicaFailure").await;
    assert!(msg.contains("quota"), "carries the quota message: {msg}");
    let at = env.mark();
    quotas
        .delete("pods", &DeleteParams::default())
        .await
        .unwrap();
    let at = env.step(at, "web", W, "True", "AsExpected").await;

    // A rollout past its progress deadline.
    admin
        .add_workload_fault(NS, SELECTOR, WorkloadFault::ProgressDeadlineExceeded)
        .unwrap();
    env.merge("web", json!({"metadata": {"annotations": {DEADLINE: "5"}}}))
        .await;
    let at = env.step(at, "web", W, "False", "RolloutStuck").await;
    admin.clear_workload_faults(None);
    env.step(at, "web", W, "True", "AsExpected").await;
    env.stop().await;
}
