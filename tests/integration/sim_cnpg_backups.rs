//! The simulated CloudNativePG takes backups as CNPG does: a Backup of a Cluster configured
//! for barman-cloud goes pending → started → running → completed with barman's fields and
//! moves the Cluster's backup times; one of a Cluster without a backup section fails with
//! CNPG's error; one of a missing Cluster waits `pending`; a ScheduledBackup with
//! `immediate: true` makes its Backup at once, and one on a schedule makes
//! `<name>-<YYYYMMDDhhmmss>` at the schedule's time.

use kube::api::ListParams;
use serde_json::{Value, json};

use crate::sim_net_support::{api, condition, create, start_cluster};
use crate::wait_support::{until_json, until_list, wait_event_of};

const CNPG: &str = "postgresql.cnpg.io";

fn backup(name: &str, cluster: &str) -> Value {
    json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Backup",
        "metadata": {"name": name}, "spec": {"cluster": {"name": cluster}}})
}

fn phase(b: &Value) -> &str {
    b.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_completes_with_barmans_fields_and_moves_the_clusters_backup_times() {
    let (_sim, client) = start_cluster().await;
    let clusters = api(&client, Some("default"), CNPG, "Cluster", "clusters");
    let backups = api(&client, Some("default"), CNPG, "Backup", "backups");
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {"name": "pg"},
        "spec": {"instances": 2, "imageName": "ghcr.io/cloudnative-pg/postgresql:17.5",
            "backup": {"barmanObjectStore": {"destinationPath": "s3://backups/", "endpointURL": "http://minio:9000",
                "s3Credentials": {"accessKeyId": {"name": "minio", "key": "id"}, "secretAccessKey": {"name": "minio", "key": "secret"}}}}}}),
    )
    .await;
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {"name": "bare"},
        "spec": {"instances": 1}}),
    )
    .await;
    until_json(&clusters, "pg", "a primary", |c| {
        c.pointer("/status/currentPrimary") == Some(&json!("pg-1"))
    })
    .await;

    create(&backups, backup("pg-first", "pg")).await;
    let done = until_json(&backups, "pg-first", "completed", |b| {
        phase(b) == "completed"
    })
    .await;
    let st = &done["status"];
    assert_eq!(st["method"], "barmanObjectStore", "{st:#}");
    assert_eq!(
        st["instanceID"]["podName"], "pg-1",
        "runs on the primary: {st:#}"
    );
    assert_eq!(
        st["serverName"], "pg",
        "the Cluster's name without serverName: {st:#}"
    );
    assert_eq!(st["destinationPath"], "s3://backups/");
    assert_eq!(st["endpointURL"], "http://minio:9000");
    assert_eq!(st["s3Credentials"]["accessKeyId"]["name"], "minio");
    assert_eq!(st["majorVersion"], 17);
    let id = st["backupId"].as_str().expect("backupId");
    assert!(
        id.len() == 15 && id.as_bytes()[8] == b'T',
        "barman's id: {id}"
    );
    assert!(
        st["backupName"]
            .as_str()
            .is_some_and(|n| n.starts_with("backup-"))
    );
    assert_eq!(st["beginWal"].as_str().map(str::len), Some(24), "{st:#}");
    assert!(st["beginWal"].as_str().unwrap().starts_with("00000001"));
    assert!(st["beginLSN"].as_str().is_some_and(|l| l.contains('/')));
    assert!(st["endLSN"].as_str().is_some());
    assert!(st.get("error").is_none(), "{st:#}");
    for field in [
        "startedAt",
        "stoppedAt",
        "reconciliationStartedAt",
        "reconciliationTerminatedAt",
    ] {
        let t = st[field].as_str().unwrap_or_default();
        assert!(t.parse::<jiff::Timestamp>().is_ok(), "{field}: {t}");
    }
    assert!(st["startedAt"].as_str() <= st["stoppedAt"].as_str());
    wait_event_of(&client, "default", "pg-first", "Completed").await;

    let c = until_json(&clusters, "pg", "the backup recorded", |c| {
        c.pointer("/status/lastSuccessfulBackup").is_some()
    })
    .await;
    assert_eq!(
        c["status"]["lastSuccessfulBackup"], st["stoppedAt"],
        "{:#}",
        c["status"]
    );
    assert_eq!(c["status"]["firstRecoverabilityPoint"], st["stoppedAt"]);
    assert_eq!(
        c["status"]["lastSuccessfulBackupByMethod"]["barmanObjectStore"],
        st["stoppedAt"]
    );
    let cond = condition(&c, "/status/conditions", "LastBackupSucceeded").expect("condition");
    assert_eq!(
        (&cond["status"], &cond["reason"], &cond["message"]),
        (
            &json!("True"),
            &json!("LastBackupSucceeded"),
            &json!("Backup was successful")
        )
    );

    // A second backup (within the same second: its barman id is still its own) starts on a
    // later WAL segment; the first recoverability point stays.
    create(&backups, backup("pg-second", "pg")).await;
    let second = until_json(&backups, "pg-second", "completed", |b| {
        phase(b) == "completed"
    })
    .await;
    assert!(second["status"]["beginWal"].as_str() > st["beginWal"].as_str());
    assert_ne!(second["status"]["backupId"], st["backupId"]);
    assert!(second["status"]["startedAt"].as_str() <= second["status"]["stoppedAt"].as_str());
    let c = until_json(&clusters, "pg", "the second backup recorded", |c| {
        c.pointer("/status/lastSuccessfulBackup") == second.pointer("/status/stoppedAt")
    })
    .await;
    assert_eq!(c["status"]["firstRecoverabilityPoint"], st["stoppedAt"]);

    // No backup section: failed with CNPG's error, the Cluster records the failure.
    create(&backups, backup("bare-backup", "bare")).await;
    let failed = until_json(&backups, "bare-backup", "failed", |b| phase(b) == "failed").await;
    assert_eq!(
        failed["status"]["error"],
        "cannot proceed with the backup as the cluster has no backup section"
    );
    assert_eq!(failed["status"]["method"], "barmanObjectStore");
    let (kind, _, note) = wait_event_of(
        &client,
        "default",
        "bare-backup",
        "ClusterHasBackupConfigured",
    )
    .await;
    assert_eq!(kind, "Warning");
    assert!(note.contains("no backup section"), "{note}");
    let bare = until_json(&clusters, "bare", "the failure recorded", |c| {
        c.pointer("/status/lastFailedBackup").is_some()
    })
    .await;
    let cond = condition(&bare, "/status/conditions", "LastBackupSucceeded").expect("condition");
    assert_eq!(cond["reason"], "LastBackupFailed");
    assert_eq!(cond["status"], "False");
    assert!(bare.pointer("/status/lastSuccessfulBackup").is_none());

    // A missing Cluster: pending, retried (CNPG does not fail it).
    create(&backups, backup("ghost-backup", "ghost")).await;
    let pending = until_json(&backups, "ghost-backup", "pending", |b| {
        phase(b) == "pending"
    })
    .await;
    assert!(pending.pointer("/status/error").is_none());
    let (_, _, note) = wait_event_of(&client, "default", "ghost-backup", "FindingCluster").await;
    assert_eq!(note, "Unknown cluster ghost, will retry in 30 seconds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_backups_make_their_backups_at_once_and_on_schedule() {
    let (_sim, client) = start_cluster().await;
    let clusters = api(&client, Some("default"), CNPG, "Cluster", "clusters");
    let backups = api(&client, Some("default"), CNPG, "Backup", "backups");
    let scheduled = api(
        &client,
        Some("default"),
        CNPG,
        "ScheduledBackup",
        "scheduledbackups",
    );
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {"name": "pg"},
        "spec": {"instances": 1, "inheritedMetadata": {"labels": {"team": "a"}},
            "backup": {"barmanObjectStore": {"destinationPath": "s3://backups/"}}}}),
    )
    .await;
    until_json(&clusters, "pg", "a primary", |c| {
        c.pointer("/status/currentPrimary") == Some(&json!("pg-1"))
    })
    .await;

    // immediate: one Backup now, owned by the Cluster as backupOwnerReference asks.
    create(
        &scheduled,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "ScheduledBackup", "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 0 3 * * *", "immediate": true, "backupOwnerReference": "cluster",
            "cluster": {"name": "pg"}}}),
    )
    .await;
    let sb = until_json(&scheduled, "nightly", "scheduled", |s| {
        s.pointer("/status/lastScheduleTime").is_some()
    })
    .await;
    let last: jiff::Timestamp = sb["status"]["lastScheduleTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let next: jiff::Timestamp = sb["status"]["nextScheduleTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        next.strftime("%H:%M:%S").to_string(),
        "03:00:00",
        "the next time of the schedule: {:#}",
        sb["status"]
    );
    assert!(next > last);
    let name = format!("nightly-{}", last.strftime("%Y%m%d%H%M%S"));
    let made = until_json(&backups, &name, "completed", |b| phase(b) == "completed").await;
    let labels = &made["metadata"]["labels"];
    assert_eq!(labels["cnpg.io/scheduled-backup"], "nightly");
    assert_eq!(labels["cnpg.io/immediateBackup"], "true");
    assert_eq!(labels["cnpg.io/cluster"], "pg");
    assert_eq!(labels["team"], "a", "the Cluster's inherited labels");
    let owner = &made["metadata"]["ownerReferences"][0];
    assert_eq!(
        (&owner["kind"], &owner["name"], &owner["controller"]),
        (&json!("Cluster"), &json!("pg"), &json!(true))
    );
    let (_, _, note) = wait_event_of(&client, "default", "nightly", "BackupSchedule").await;
    assert!(
        note.starts_with("Scheduled immediate backup now")
            || note.starts_with("Next backup scheduled by"),
        "{note}"
    );

    create(
        &scheduled,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "ScheduledBackup", "metadata": {"name": "paused"},
        "spec": {"schedule": "* * * * * *", "immediate": true, "suspend": true, "cluster": {"name": "pg"}}}),
    )
    .await;
    // On a schedule (every two seconds), owned by the ScheduledBackup ("self").
    create(
        &scheduled,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "ScheduledBackup", "metadata": {"name": "often"},
        "spec": {"schedule": "*/2 * * * * *", "backupOwnerReference": "self", "cluster": {"name": "pg"}}}),
    )
    .await;
    let lp = ListParams::default().labels("cnpg.io/scheduled-backup=often");
    let made = until_list(&backups, &lp, "a Backup of the schedule", |items| {
        !items.is_empty()
    })
    .await;
    let b = serde_json::to_value(&made[0]).unwrap();
    let sb = until_json(&scheduled, "often", "its schedule time", |s| {
        s.pointer("/status/lastScheduleTime").is_some()
    })
    .await;
    let at: jiff::Timestamp = sb["status"]["lastScheduleTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(at.as_second() % 2, 0, "a time of the schedule: {at}");
    assert_eq!(
        b["metadata"]["name"],
        format!("often-{}", at.strftime("%Y%m%d%H%M%S")),
        "named after the schedule's time"
    );
    assert_eq!(b["metadata"]["labels"]["cnpg.io/immediateBackup"], "false");
    let owner = &b["metadata"]["ownerReferences"][0];
    assert_eq!(
        (&owner["kind"], &owner["name"]),
        (&json!("ScheduledBackup"), &json!("often"))
    );

    // Suspended (created before "often" made its Backup): nothing is made.
    let lp_paused = ListParams::default().labels("cnpg.io/scheduled-backup=paused");
    assert!(backups.list(&lp_paused).await.unwrap().items.is_empty());
    assert!(
        until_json(&scheduled, "paused", "stored", |_| true)
            .await
            .pointer("/status/lastScheduleTime")
            .is_none()
    );
}
