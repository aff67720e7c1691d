//! The shared `podTemplate` block (api.md, "Pod template") on the Pods of each kind, judged by
//! the simulated scheduler and kubelet: every Node carries a taint only the block tolerates, so
//! a Pod runs only if the block reached it; without the toleration it stays Pending and the
//! kind says `PodUnschedulable` in the scheduler's words; a pull secret that does not exist
//! gives the kubelet's `FailedToRetrieveImagePullSecret` Event; a changed block rolls once.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::shared_support::job_starting_with;
use super::wait_support::{core_events_of, until_list, wait_for};

const NS: &str = "team-a";
/// The taint of every Node in these tests: dedicated database nodes.
const TAINT: &str = "node(s) had untolerated taint {dedicated: db}";

/// Taints every Node `dedicated=db:NoSchedule` (Pods already bound stay).
async fn taint_every_node(client: &kube::Client) {
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes.list(&ListParams::default()).await.expect("nodes");
    assert!(!list.items.is_empty(), "the simulated cluster has Nodes");
    for node in list.items {
        let name = node.metadata.name.expect("a name");
        nodes
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"taints": [
                    {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}})),
            )
            .await
            .expect("tainted");
    }
}

/// The PriorityClass the block names (the API server refuses a Pod naming one that does not
/// exist).
async fn priority_class(client: &kube::Client) {
    let api: Api<k8s_openapi::api::scheduling::v1::PriorityClass> = Api::all(client.clone());
    let class = serde_json::from_value(json!({
        "metadata": {"name": "tools"}, "value": 1000, "description": "tooling Pods"}))
    .expect("PriorityClass");
    api.create(&PostParams::default(), &class)
        .await
        .expect("PriorityClass created");
}

/// The block of these tests: every field set, the pull secret missing.
fn block() -> Value {
    json!({
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "type", "operator": "In", "values": ["sim"]}]}]}}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway"}],
        "priorityClassName": "tools",
        "imagePullSecrets": [{"name": "registry"}],
        "labels": {"team": "a", "app.kubernetes.io/instance": "forged"},
        "annotations": {"example.com/owner": "dba"},
    })
}

/// The block without its toleration.
fn untolerated() -> Value {
    let mut b = block();
    b.as_object_mut().expect("an object").remove("tolerations");
    b
}

/// Waits for a Pod of `instance` and `component` bound to a Node, and checks the block on it
/// and the kubelet's Event for the missing pull secret.
async fn assert_placed(client: &kube::Client, instance: &str, component: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let lp = ListParams::default().labels(&format!(
        "app.kubernetes.io/instance={instance},app.kubernetes.io/component={component}"
    ));
    let found = until_list(&pods, &lp, &format!("a bound {component} Pod"), |ps| {
        ps.iter().any(|p| {
            p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
                && p.metadata.deletion_timestamp.is_none()
        })
    })
    .await;
    let pod = found
        .into_iter()
        .find(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
        .expect("bound");
    let v = serde_json::to_value(&pod).expect("json");
    let spec = &v["spec"];
    assert_eq!(
        spec["nodeSelector"]["kubernetes.io/os"], "linux",
        "{component}"
    );
    assert!(
        spec["tolerations"].to_string().contains("\"dedicated\""),
        "{component}: {}",
        spec["tolerations"]
    );
    assert_eq!(
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchExpressions"][0]["key"],
        "type"
    );
    assert_eq!(
        spec["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"],
        instance,
        "{component}: a constraint without a selector counts the workload's own Pods"
    );
    assert_eq!(spec["priorityClassName"], "tools", "{component}");
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "registry"}]));
    let labels = &v["metadata"]["labels"];
    assert_eq!(labels["team"], "a", "{component}");
    assert_eq!(
        labels["app.kubernetes.io/instance"], instance,
        "{component}: the operator's label wins"
    );
    assert_eq!(v["metadata"]["annotations"]["example.com/owner"], "dba");
    let name = pod.metadata.name.clone().expect("a name");
    let message = wait_for("the kubelet's pull secret Event", || async {
        let events = core_events_of(client, NS, &name).await;
        events
            .iter()
            .find(|e| e.1 == "FailedToRetrieveImagePullSecret")
            .map(|e| (e.0.clone(), e.2.clone()))
            .ok_or(format!("events: {events:#?}"))
    })
    .await;
    assert_eq!(
        message,
        (
            "Warning".to_owned(),
            "Unable to retrieve some image pull secrets (registry); attempting to pull the image \
             may not succeed."
                .to_owned()
        )
    );
    pod
}

/// The ReplicaSets of a Deployment (one per pod template it rolled to).
async fn replica_sets(client: &kube::Client, instance: &str) -> usize {
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), NS);
    let lp = ListParams::default().labels(&format!("app.kubernetes.io/instance={instance}"));
    api.list(&lp).await.expect("ReplicaSets").items.len()
}

async fn workload_hash(client: &kube::Client, deployment: &str) -> String {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let d = api.get(deployment).await.expect("Deployment");
    d.spec
        .template
        .metadata
        .and_then(|m| m.annotations)
        .and_then(|a| a.get("pgtoolbox.fyannk.dev/workload-hash").cloned())
        .expect("a workload hash")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_pods_carry_the_block_and_a_taint_without_toleration_is_unschedulable() {
    use super::console_support::{IMAGE, settings, start, with_controllers};
    let env = start(with_controllers(), settings(), true).await;
    priority_class(&env.client).await;
    taint_every_node(&env.client).await;

    env.console(
        "kept-out",
        json!({"image": IMAGE, "podTemplate": untolerated()}),
    )
    .await;
    let obj = env
        .wait("kept-out", "WorkloadReady", "PodUnschedulable")
        .await;
    let message = super::console_support::message(&obj, "WorkloadReady");
    assert!(message.contains(TAINT), "{message}");
    assert!(
        message.contains("Unschedulable: 0/3 nodes are available: 3 node(s) had untolerated taint"),
        "{message}"
    );

    env.console("placed", json!({"image": IMAGE, "podTemplate": block()}))
        .await;
    env.ready("placed").await;
    assert_placed(&env.client, "placed", "console").await;

    // A changed block: one new workload hash, one more ReplicaSet, and the Pod follows it.
    let before = workload_hash(&env.client, "placed-console").await;
    assert_eq!(replica_sets(&env.client, "placed").await, 1);
    let mut changed = block();
    changed["annotations"]["example.com/owner"] = json!("sre");
    env.merge("placed", json!({"spec": {"podTemplate": changed}}))
        .await;
    let after = wait_for("the new workload hash", || async {
        let now = workload_hash(&env.client, "placed-console").await;
        if now == before { Err(now) } else { Ok(now) }
    })
    .await;
    env.ready("placed").await;
    assert_eq!(replica_sets(&env.client, "placed").await, 2);
    assert_eq!(workload_hash(&env.client, "placed-console").await, after);

    // Tolerated at last: the kept-out console's Pod runs.
    env.merge("kept-out", json!({"spec": {"podTemplate": block()}}))
        .await;
    env.ready("kept-out").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evidence_agent_pods_carry_the_block() {
    use super::evidence_agent::{IMAGE, start, static_s3, with_controllers};
    use pgtoolbox_operator::testing::supervisor::OperatorSettings;
    let env = start(with_controllers(), OperatorSettings::default()).await;
    priority_class(&env.client).await;
    env.credentials("orders-s3").await;
    env.cluster("orders", Some("orders-store")).await;
    env.object_store("orders-store", static_s3("s3://orders-backups/team-a"))
        .await;
    taint_every_node(&env.client).await;
    env.agent("kept-out", "orders", Some(IMAGE), "operator")
        .await;
    env.agents()
        .patch(
            "kept-out",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"podTemplate": untolerated()}})),
        )
        .await
        .expect("patched");
    env.wait_reason("kept-out", "WorkloadReady", "PodUnschedulable")
        .await;
    env.agent("placed", "orders", Some(IMAGE), "operator").await;
    env.agents()
        .patch(
            "placed",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"podTemplate": block()}})),
        )
        .await
        .expect("patched");
    env.wait_reason("placed", "Ready", "AsExpected").await;
    assert_placed(&env.client, "placed", "evidence-agent").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgadmin_pod_and_registration_job_carry_the_block() {
    use super::pgadmin_support::{IMAGE, cluster_config, start, state};
    use pgtoolbox_operator::testing::supervisor::OperatorSettings;
    let env = start(cluster_config(), OperatorSettings::default()).await;
    priority_class(&env.client).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    // The Cluster's instance Pod is bound before the taint (NoSchedule evicts nothing).
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), NS);
    until_list(
        &pods,
        &ListParams::default().labels("cnpg.io/cluster=orders"),
        "the Cluster's instance Pod bound",
        |ps| {
            ps.iter()
                .any(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
        },
    )
    .await;
    taint_every_node(&env.client).await;
    let selector = json!({"matchLabels": {"team": "a"}});
    env.pgadmin(
        "kept-out",
        json!({"image": IMAGE, "clusterSelector": selector, "podTemplate": untolerated()}),
    )
    .await;
    env.wait_reason("kept-out", "WorkloadReady", "PodUnschedulable")
        .await;
    env.pgadmin(
        "placed",
        json!({"image": IMAGE, "clusterSelector": selector, "podTemplate": block()}),
    )
    .await;
    env.wait("placed", "Ready and registered", |o| {
        state(o, "Ready").0 == "True" && state(o, "ServersSynced").0 == "True"
    })
    .await;
    assert_placed(&env.client, "placed", "pgadmin").await;
    // The registration Job's Pod: the block, beside pgAdmin's Pod (its own affinity kept).
    let job = job_starting_with(
        &env.client,
        NS,
        "app.kubernetes.io/instance=placed",
        "placed-pgadmin-register-",
    )
    .await;
    let template = serde_json::to_value(&job.spec.expect("spec").template).expect("json");
    assert_eq!(template["spec"]["priorityClassName"], "tools");
    assert!(
        template["spec"]["affinity"]["podAffinity"].is_object(),
        "{}",
        template["spec"]["affinity"]
    );
    assert_placed(&env.client, "placed", "pgadmin-register").await;
}
