//! A restarted operator over Ready EvidenceAgents that share a Cluster and an ObjectStore: the
//! first passes all find the contents they read not read yet, and read each shared object
//! once between them, not once each.

use pgtoolbox_operator::testing::supervisor::OperatorSettings;

use super::evidence_agent::{IMAGE, start, static_s3, with_controllers};
use super::wait_support::until_passes;

const AGENTS: usize = 6;

#[tokio::test]
async fn restarted_first_passes_read_a_shared_cluster_and_object_store_once() {
    let mut env = start(with_controllers(), OperatorSettings::default()).await;
    env.credentials("orders-s3").await;
    env.cluster("orders", Some("orders-store")).await;
    env.object_store("orders-store", static_s3("s3://orders-backups/team-a"))
        .await;
    for i in 0..AGENTS {
        env.agent(&format!("ev{i}"), "orders", Some(IMAGE), "openshift")
            .await;
    }
    for i in 0..AGENTS {
        env.wait_reason(&format!("ev{i}"), "Ready", "AsExpected")
            .await;
    }

    env._sim.admin().reset_stats();
    env.restart_operator(OperatorSettings::default()).await;
    let what = "every agent's first pass after the restart";
    until_passes(&env.shared, "EvidenceAgent", 0, AGENTS as u64, what).await;

    let stats = env._sim.admin().stats();
    let gets = |resource: &str| {
        let key = format!("get {resource}");
        stats.by_verb_resource.get(&key).copied().unwrap_or(0)
    };
    assert_eq!(
        gets("postgresql.cnpg.io/clusters"),
        1,
        "{:?}",
        stats.by_verb_resource
    );
    assert_eq!(
        gets("barmancloud.cnpg.io/objectstores"),
        1,
        "{:?}",
        stats.by_verb_resource
    );
}
