//! A restarted operator over Ready EvidenceAgents that share a Cluster and an ObjectStore: the
//! first passes all find the contents they read not read yet, and read each shared object
//! once between them, not once each; and each agent passes once, however early its first
//! pass starts.

use std::time::Duration;

use pgtoolbox_operator::testing::supervisor::OperatorSettings;

use super::evidence_agent::{Env, IMAGE, start, static_s3, with_controllers};
use super::wait_support::{passes_of, until_passes};

const AGENTS: usize = 6;

async fn ready_agents() -> Env {
    let env = start(with_controllers(), OperatorSettings::default()).await;
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
    env
}

/// With no start-up spread, every first pass starts before the children caches have listed
/// and waits for them: the children those lists bring must not queue a second pass each.
#[tokio::test]
async fn first_passes_started_before_the_caches_listed_run_once() {
    let mut env = ready_agents().await;
    let settings = OperatorSettings {
        startup_jitter: Duration::ZERO,
        ..OperatorSettings::default()
    };
    env._sim.admin().reset_stats();
    env.restart_operator(settings).await;
    let what = "every agent's first pass after the restart";
    until_passes(&env.shared, "EvidenceAgent", 0, AGENTS as u64, what).await;
    // A second pass queued behind a first one runs within milliseconds; give it ample time.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(passes_of(&env.shared, "EvidenceAgent"), AGENTS as u64);
    let stats = env._sim.admin().stats();
    assert_eq!(stats.writes(), 0, "{:?}", stats.by_verb_resource);
}

#[tokio::test]
async fn restarted_first_passes_read_a_shared_cluster_and_object_store_once() {
    let mut env = ready_agents().await;
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
