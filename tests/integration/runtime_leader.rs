//! Leader election on the embedded API server: one holder; a successor after expiry.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use pgtoolbox_operator::testing::supervisor::leader::{LeaderConfig, acquire};

use crate::sim_support::start;

fn config(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(2),
        renew_every: Duration::from_millis(300),
        retry_every: Duration::from_millis(100),
        renew_deadline: Duration::from_millis(1300),
        ..LeaderConfig::new("default", identity)
    }
}

async fn holder(api: &Api<Lease>) -> Option<(String, i32)> {
    let spec = api.get("pgtoolbox-operator").await.ok()?.spec?;
    Some((spec.holder_identity?, spec.lease_transitions?))
}

#[tokio::test]
async fn one_replica_leads_and_another_takes_over_after_the_lease_expires() {
    let (_sim, client) = start().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let first = acquire(client.clone(), config("first")).await;
    assert_eq!(holder(&leases).await, Some(("first".into(), 0)));

    let second = tokio::spawn(acquire(client.clone(), config("second")));
    // Renewals keep the lease with the first replica well past its duration.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!second.is_finished(), "the second replica must wait");
    assert_eq!(holder(&leases).await.map(|h| h.0), Some("first".into()));

    drop(first); // stops renewing, like a crashed replica
    let _second = tokio::time::timeout(Duration::from_secs(10), second)
        .await
        .expect("the second replica takes over after expiry")
        .unwrap();
    assert_eq!(holder(&leases).await, Some(("second".into(), 1)));
}
