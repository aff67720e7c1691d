//! EvidenceAgent against the simulated cluster's faults and fixes: the OpenShift service CA
//! paused then resumed, an ObjectStore fixed under a stalled agent, a credential key missing,
//! and the workload's failures (image pull, crash loop, unready, stuck rollout, unschedulable).

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::EvidenceAgent;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use super::evidence_agent::{
    IMAGE, NS, assert_stalled, condition_of, start, state, static_s3, with_controllers,
};
use super::evidence_agent_tls::{events, ready_store};
use super::sim_net_support::api;

#[tokio::test]
async fn evidence_service_ca_paused_then_resumed() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    ready_store(&env).await;
    super::harness::fault_instance(&env._sim, NS, "paused", WorkloadFault::ServiceCaPaused);
    env.agent("paused", "orders", Some(IMAGE), "openshift")
        .await;
    let obj = env
        .wait_reason("paused", "ServingCertificateReady", "ServiceCAPending")
        .await;
    assert_eq!(
        state(&obj, "Ready"),
        ("False".into(), "ServiceCAPending".into())
    );
    let pending = condition_of(&obj, "ServingCertificateReady").expect("condition");
    assert!(
        pending.message.contains("paused-evidence-tls")
            && pending.message.contains("paused-evidence-ca"),
        "{}",
        pending.message
    );
    assert_ne!(state(&obj, "Stalled").0, "True", "waiting is not a stall");
    // Quiet: a child on its way is no Warning.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let recorded = events(&env, "paused").await;
    assert!(
        recorded
            .iter()
            .all(|(reason, _, _)| reason != "ServiceCAPending"),
        "{recorded:?}"
    );
    env._sim.admin().clear_workload_faults(None);
    env.wait_reason("paused", "Ready", "AsExpected").await;
}

#[tokio::test]
async fn evidence_object_store_fixed_resolves_the_stall() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    env.credentials("orders-s3").await;
    env.cluster("orders", Some("orders-store")).await;
    env.object_store("orders-store", static_s3("s3://Orders_Backups/x"))
        .await;
    env.agent("fixme", "orders", Some(IMAGE), "operator").await;
    assert_stalled(&env, "fixme", "DestinationInvalid", "Orders_Backups").await;
    // Only the ObjectStore changes: the reference index wakes the agent.
    api(
        &env.client,
        Some(NS),
        "barmancloud.cnpg.io",
        "ObjectStore",
        "objectstores",
    )
    .patch(
        "orders-store",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"configuration": {"destinationPath": "s3://orders-backups/x"}}}),
        ),
    )
    .await
    .expect("ObjectStore fixed");
    let obj = env.wait_reason("fixme", "Ready", "AsExpected").await;
    assert_eq!(state(&obj, "Stalled").0, "False");
    let store = obj
        .status
        .and_then(|s| s.object_store)
        .expect("objectStore");
    assert_eq!(
        store.destination_path.as_deref(),
        Some("s3://orders-backups/x")
    );
}

#[tokio::test]
async fn evidence_missing_credential_key_is_secret_key_missing() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    let partial: Secret = serde_json::from_value(json!({
        "metadata": {"name": "orders-s3", "namespace": NS},
        "stringData": {"ACCESS_KEY_ID": "AKIA0000"}
    }))
    .expect("secret");
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), NS);
    secrets
        .create(&PostParams::default(), &partial)
        .await
        .expect("secret created");
    env.cluster("orders", Some("orders-store")).await;
    env.object_store("orders-store", static_s3("s3://orders-backups"))
        .await;
    env.agent("nokey", "orders", Some(IMAGE), "operator").await;
    let obj = env
        .wait_reason("nokey", "WorkloadReady", "SecretKeyMissing")
        .await;
    let workload = condition_of(&obj, "WorkloadReady").expect("WorkloadReady");
    assert!(
        workload.message.contains("ACCESS_SECRET_KEY"),
        "{}",
        workload.message
    );
    // The key is added: a new version of the Secret rolls the agent, which starts.
    secrets
        .patch(
            "orders-s3",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"ACCESS_SECRET_KEY": "secret"}})),
        )
        .await
        .expect("key added");
    env.wait_reason("nokey", "Ready", "AsExpected").await;
}

/// WorkloadReady copies the simulated cluster's facts about the agent's Deployment and Pods.
#[tokio::test]
async fn evidence_workload_reasons_come_from_the_cluster() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    ready_store(&env).await;
    let admin = env._sim.admin();
    for (agent, fault) in [
        ("pull", WorkloadFault::ImagePullBackOff),
        ("crash", WorkloadFault::CrashLoopBackOff),
        ("unready", WorkloadFault::NotReady),
        ("stuck", WorkloadFault::ProgressDeadlineExceeded),
    ] {
        admin
            .add_workload_fault(NS, &format!("app.kubernetes.io/instance={agent}"), fault)
            .expect("fault added");
        env.agent(agent, "orders", Some(IMAGE), "operator").await;
    }
    // Requests no Node can hold.
    let huge: EvidenceAgent = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "EvidenceAgent",
        "metadata": {"name": "huge", "namespace": NS},
        "spec": {
            "cluster": {"name": "orders"},
            "image": IMAGE,
            "resources": {"requests": {"cpu": "500"}}
        }
    }))
    .expect("agent");
    env.agents()
        .create(&PostParams::default(), &huge)
        .await
        .expect("agent created");
    for (agent, reason, needle) in [
        ("pull", "ImagePullFailed", "evidence-agent"),
        ("crash", "CrashLoopBackOff", "agent"),
        ("unready", "PodNotReady", "unready-evidence"),
        ("stuck", "RolloutStuck", "ProgressDeadlineExceeded"),
        ("huge", "PodUnschedulable", "Insufficient cpu"),
    ] {
        let obj = env.wait_reason(agent, "WorkloadReady", reason).await;
        let workload = condition_of(&obj, "WorkloadReady").expect("WorkloadReady");
        assert_eq!(workload.status, "False", "{agent}");
        assert!(
            workload.message.contains(needle),
            "{agent}: {}",
            workload.message
        );
        assert_eq!(state(&obj, "Ready").1, reason, "{agent}");
        // The certificate is fine: the workload decides.
        assert_eq!(state(&obj, "ServingCertificateReady").0, "True", "{agent}");
    }
    admin.clear_workload_faults(None);
    for agent in ["pull", "crash", "unready", "stuck"] {
        env.wait_reason(agent, "Ready", "AsExpected").await;
    }
}
