//! The simulated CloudNativePG bootstraps a Cluster from a Backup object as CNPG does: from a
//! completed Backup it becomes healthy ("Primary instance (from backup)"); while the Backup is
//! missing no instance is created, the Cluster stays "Setting up primary" and a Warning
//! `ErrorNoBackup` says which Backup is missing (CNPG's `getOriginBackup`).

use serde_json::{Value, json};

use crate::sim_net_support::{api, create, start_cluster};
use crate::wait_support::{events_of, until_json, wait_event_of};

const CNPG: &str = "postgresql.cnpg.io";

fn recovering(name: &str, backup: &str) -> Value {
    json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"instances": 1, "storage": {"size": "1Gi"},
            "bootstrap": {"recovery": {"backup": {"name": backup}}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovery_bootstraps_from_a_completed_backup_and_waits_for_a_missing_one() {
    let (_sim, client) = start_cluster().await;
    let clusters = api(&client, Some("default"), CNPG, "Cluster", "clusters");
    let backups = api(&client, Some("default"), CNPG, "Backup", "backups");
    let pods = api(&client, Some("default"), "", "Pod", "pods");

    create(
        &backups,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Backup",
            "metadata": {"name": "nightly"}, "spec": {"cluster": {"name": "pg"}}}),
    )
    .await;
    let (code, text) = crate::sim_support::raw(
        &client,
        "PATCH",
        "/apis/postgresql.cnpg.io/v1/namespaces/default/backups/nightly/status",
        "application/merge-patch+json",
        json!({"status": {"phase": "completed", "stoppedAt": "2026-12-07T03:00:00Z"}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{text}");

    create(&clusters, recovering("restored", "nightly")).await;
    create(&clusters, recovering("orphan", "no-such-backup")).await;

    let restored = until_json(&clusters, "restored", "the restored Cluster healthy", |c| {
        c.pointer("/status/phase") == Some(&json!("Cluster in healthy state"))
    })
    .await;
    assert_eq!(restored["status"]["readyInstances"], 1, "{restored}");
    let events = events_of(&client, "default", "restored").await;
    assert!(
        events
            .iter()
            .any(|e| e.1 == "CreatingInstance" && e.2 == "Primary instance (from backup)"),
        "{events:?}"
    );

    let (kind, _, note) = wait_event_of(&client, "default", "orphan", "ErrorNoBackup").await;
    assert_eq!(kind, "Warning");
    assert_eq!(note, "Backup object \"default/no-such-backup\" is missing");
    let orphan = until_json(&clusters, "orphan", "the orphan's status", |c| {
        c.pointer("/status/phase").is_some()
    })
    .await;
    assert_eq!(orphan["status"]["phase"], "Setting up primary", "{orphan}");
    assert_eq!(orphan["status"]["readyInstances"], 0, "{orphan}");
    assert!(
        pods.get_opt("orphan-1").await.expect("read").is_none(),
        "no instance is created without its Backup"
    );
}
