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

/// Two `run --leader-elect` replicas; SIGTERM to the leader. It releases the Lease as it stops
/// (client-go's ReleaseOnCancel), so the standby takes over well before the Lease's 15 s
/// duration of silence would let it; without the release it could not before then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_releases_the_lease_and_the_standby_takes_over_at_once() {
    use std::process::Stdio;
    let (sim, client) = crate::harness::TestOperator::new().start_cluster().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let namespace = "pgtoolbox-system";
    crate::sim_support::namespace(&client, namespace).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let replica = |name: &str| {
        let mut command = crate::cli_support::operator_run(&kubeconfig);
        command
            .args(["--leader-elect", "--leader-election-namespace", namespace])
            .env("POD_NAME", name)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command.spawn().expect("the binary starts")
    };
    let holder_name = || async {
        leases
            .get_opt("pgtoolbox-operator")
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec?.holder_identity)
            .unwrap_or_default()
    };
    let mut first = replica("replica-a");
    crate::wait_support::eventually(Duration::from_secs(60), "replica-a leads", || async {
        holder_name().await.starts_with("replica-a-")
    })
    .await;
    let _second = replica("replica-b");
    // The standby is up and trying (its retries read the Lease): give it a few of them.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(holder_name().await.starts_with("replica-a-"));

    let pid = first.id().expect("pid").to_string();
    let signalled = std::time::Instant::now();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(sent.expect("kill runs").success());
    let status = first.wait().await.expect("replica-a exits");
    assert!(status.success(), "SIGTERM is a clean stop: {status:?}");
    crate::wait_support::eventually(Duration::from_secs(14), "replica-b takes over", || async {
        holder_name().await.starts_with("replica-b-")
    })
    .await;
    // The figure docs/operations.md quotes (measured, not asserted).
    eprintln!("take-over after SIGTERM: {:?}", signalled.elapsed());
}
