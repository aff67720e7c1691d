//! `ServersSynced=Unknown PgAdminNotRunning` (issue 46, finding 14): while pgAdmin has no Ready
//! Pod, the registration waits and says so, and no registration Job runs; once the Pod is Ready
//! the servers are registered.

use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use super::pgadmin_support::{IMAGE, NS, cluster_config, condition_of, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_wait_unknown_while_pgadmin_has_no_ready_pod() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.sim
        .admin()
        .add_workload_fault(
            NS,
            "app.kubernetes.io/component=pgadmin",
            WorkloadFault::NotReady,
        )
        .expect("fault");
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.pgadmin(
        "idle",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}}}),
    )
    .await;
    let obj = env
        .wait_reason("idle", "ServersSynced", "PgAdminNotRunning")
        .await;
    let synced = condition_of(&obj, "ServersSynced").expect("ServersSynced");
    assert_eq!(synced.status, "Unknown", "{synced:?}");
    let egress = condition_of(&obj, "PgAdminEgressConfined").expect("PgAdminEgressConfined");
    assert_eq!(
        (egress.status.as_str(), egress.reason.as_str()),
        ("Unknown", "PgAdminNotRunning")
    );
    let jobs = env.jobs().await;
    assert!(
        jobs.iter().all(|j| !j
            .metadata
            .name
            .as_deref()
            .unwrap_or("")
            .starts_with("idle-pgadmin-register-")),
        "a registration Job ran before pgAdmin was Ready"
    );

    env.sim.admin().clear_workload_faults(None);
    let obj = env.wait_reason("idle", "ServersSynced", "AsExpected").await;
    assert_eq!(
        condition_of(&obj, "ServersSynced")
            .expect("ServersSynced")
            .status,
        "True"
    );
}
