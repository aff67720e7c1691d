//! `explain` on one object per kind, failing and Ready, with the operator running against the
//! simulated cluster: the report is held against tests/golden/explain/*.txt.

use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use super::explain_support::assert_golden;

#[tokio::test]
async fn explain_pgaccessrequest_missing_binding_and_granted() {
    use super::pgar_support::{NS, start};
    let env = start().await;
    env.request("missing", 3600).await;
    // Ready first (AwaitingDecision), so its Events are the same on every run.
    env.wait_reason("missing", "RoleBindingSynced", "AwaitingDecision")
        .await;
    env.decide("missing", "Approved", "bob").await;
    env.request("granted", 3600).await;
    // Bound first, approved once the operator had time to see the binding: approved at once,
    // the approval can overtake the binding's watch event and draw a RoleBindingMissing Warning
    // before the binding is seen, which would change this report's Events (seen once in four
    // runs on a loaded machine; the operator then turns AccessGranted by itself).
    env.bind("granted", &["alice"], super::pgar_support::ROLE)
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    env.decide("granted", "Approved", "bob").await;
    env.wait_reason("missing", "RoleBindingSynced", "RoleBindingMissing")
        .await;
    env.wait_reason("granted", "RoleBindingSynced", "AccessGranted")
        .await;
    assert_golden(&env.client, NS, "pgar/missing", "pgaccessrequest-failing").await;
    assert_golden(
        &env.client,
        NS,
        "pgaccessrequest/granted",
        "pgaccessrequest-ready",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_console_image_pull_and_ready_with_a_broad_peer() {
    use super::console_support::{IMAGE, NS, settings, start, with_controllers};
    let env = start(with_controllers(), settings(), true).await;
    super::harness::fault_instance(&env.sim, NS, "pull", WorkloadFault::ImagePullBackOff);
    env.console("pull", json!({"image": IMAGE})).await;
    // Published by a Route whose ingress policy admits every namespace: Ready, not confined.
    env.console(
        "ops",
        json!({"image": IMAGE, "exposure": {
            "type": "route", "hostname": "ops.apps.sim.local",
            "networkPolicy": {"from": [{"namespaceSelector": {}}]},
        }}),
    )
    .await;
    env.wait("pull", "WorkloadReady", "ImagePullFailed").await;
    env.ready("ops").await;
    assert_golden(&env.client, NS, "pgtc/pull", "console-failing").await;
    assert_golden(&env.client, NS, "PgToolBoxConsole/ops", "console-ready").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_pgadmin_failed_registration_and_ready() {
    use super::pgadmin_support::{IMAGE, NS, cluster_config, start};
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.sim
        .admin()
        .add_workload_fault(
            NS,
            "app.kubernetes.io/component=pgadmin-register,app.kubernetes.io/instance=failing",
            WorkloadFault::JobFailed,
        )
        .expect("fault");
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    let spec = json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}}});
    // A first PgAdmin Ready means the operator knows the Cluster: the Events of the two
    // explained are then the same on every run.
    env.pgadmin("warm-up", spec.clone()).await;
    env.wait_reason("warm-up", "Ready", "AsExpected").await;
    env.pgadmin("ok", spec.clone()).await;
    env.pgadmin("failing", spec).await;
    env.wait_reason("ok", "Ready", "AsExpected").await;
    env.wait_reason("failing", "ServersSynced", "RegistrationFailed")
        .await;
    assert_golden(&env.client, NS, "pga/failing", "pgadmin-failing").await;
    assert_golden(&env.client, NS, "pgadmins/ok", "pgadmin-ready").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_evidenceagent_unready_pod_and_ready() {
    use super::evidence_agent::{IMAGE, NS, start, with_controllers};
    use super::evidence_agent_tls::ready_store;
    let env = start(with_controllers(), OperatorSettings::default()).await;
    ready_store(&env).await;
    super::harness::fault_instance(&env._sim, NS, "unready", WorkloadFault::NotReady);
    // A first agent Ready means the operator knows the Cluster and its store: the Events of
    // the two explained are then the same on every run.
    env.agent("warm-up", "orders", Some(IMAGE), "operator")
        .await;
    env.wait_reason("warm-up", "Ready", "AsExpected").await;
    env.agent("audit", "orders", Some(IMAGE), "operator").await;
    env.agent("unready", "orders", Some(IMAGE), "operator")
        .await;
    env.wait_reason("audit", "Ready", "AsExpected").await;
    env.wait_reason("unready", "WorkloadReady", "PodNotReady")
        .await;
    assert_golden(&env.client, NS, "pgev/unready", "evidenceagent-failing").await;
    assert_golden(
        &env.client,
        NS,
        "evidenceagent/audit",
        "evidenceagent-ready",
    )
    .await;
}
