//! The Backup reconciler of the operator and the instance manager's barman-cloud backup, after
//! cloudnative-pg's `internal/controller/backup_controller.go` and
//! `pkg/management/postgres/backup.go`: a Backup of a Cluster configured for barman-cloud goes
//! `started` → `running` → `completed` (with the fields barman reports: backup id and name,
//! begin/end WAL and LSN, start and stop times), and the Cluster's `lastSuccessfulBackup` and
//! `firstRecoverabilityPoint` follow. A Backup whose Cluster is missing stays `pending` (retried
//! every 30 seconds); one whose Cluster cannot be backed up this way is `failed` with CNPG's
//! error, the Cluster recording `lastFailedBackup` and `LastBackupSucceeded=False`.

use std::time::Duration;

use serde_json::{Value, json};

use super::cluster::pod_ready;
use super::{BACKUPS, CLUSTERS, MANAGER_NAME};
use crate::apiserver::error::ApiError;
use crate::cluster::net::conditions::{self, Cond};
use crate::cluster::net::text as s;
use crate::cluster::{Component, Ctx, EventKind, Kind, Next, PODS, Tx, key_of};
use crate::store::objects::{Event, ObjKey};

/// How long a simulated barman-cloud backup runs, from `running` to `completed`.
pub const BACKUP_DURATION: Duration = Duration::from_millis(300);
/// CNPG's retry when the Cluster or the target Pod is missing.
pub const RETRY: Duration = Duration::from_secs(30);

pub const PHASE_PENDING: &str = "pending";
pub const PHASE_STARTED: &str = "started";
pub const PHASE_RUNNING: &str = "running";
pub const PHASE_COMPLETED: &str = "completed";
pub const PHASE_FAILED: &str = "failed";

pub const METHOD_BARMAN: &str = "barmanObjectStore";
pub const METHOD_SNAPSHOT: &str = "volumeSnapshot";
pub const METHOD_PLUGIN: &str = "plugin";

/// The Cluster condition a backup sets (`ConditionBackup`).
pub const CONDITION: &str = "LastBackupSucceeded";

/// Go's `time.RFC3339` (what `metav1.Time` and CNPG's `Format(time.RFC3339)` write).
pub fn rfc3339(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// CNPG's `pgTime.ToCompactISO8601` (`20060102150405`), used in Backup and backup names.
pub fn compact(t: jiff::Timestamp) -> String {
    t.strftime("%Y%m%d%H%M%S").to_string()
}

/// Barman's backup id (`20060102T150405`).
pub fn barman_id(t: jiff::Timestamp) -> String {
    t.strftime("%Y%m%dT%H%M%S").to_string()
}

/// An LSN as PostgreSQL prints it (`0/2000028`).
pub fn lsn_text(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xffff_ffff)
}

/// The WAL segment file holding `lsn` on `timeline` (16 MiB segments).
pub fn wal_name(timeline: u64, lsn: u64) -> String {
    format!(
        "{timeline:08X}{:08X}{:08X}",
        lsn >> 32,
        (lsn & 0xffff_ffff) >> 24
    )
}

/// Why a Cluster cannot take this Backup (the Event reason and the error), as CNPG's
/// `checkPrerequisites` judges; `None` when it can.
pub fn prerequisite_failure(cluster: &Value, method: &str) -> Option<(&'static str, &'static str)> {
    if s(cluster, "/metadata/annotations/cnpg.io~1hibernation") == "on" {
        return Some(("ClusterIsHibernated", "cannot backup a hibernated cluster"));
    }
    if method == METHOD_PLUGIN {
        let plugins = cluster
            .pointer("/spec/plugins")
            .and_then(Value::as_array)
            .is_some_and(|p| !p.is_empty());
        return (!plugins).then_some((
            "ClusterHasNoBackupExecutorPlugin",
            "cannot proceed with the backup as the cluster has no plugin configured",
        ));
    }
    let Some(backup) = cluster.pointer("/spec/backup").filter(|b| !b.is_null()) else {
        return Some((
            "ClusterHasBackupConfigured",
            "cannot proceed with the backup as the cluster has no backup section",
        ));
    };
    if method == METHOD_SNAPSHOT {
        // The simulated cluster serves no VolumeSnapshot CRD.
        return Some((
            "ClusterHasNoVolumeSnapshotCRD",
            "cannot proceed with the backup as the Kubernetes cluster has no VolumeSnapshot support",
        ));
    }
    if backup.get("barmanObjectStore").is_none_or(|b| b.is_null()) {
        return Some((
            "ClusterHasNoBarmanSection",
            "no barmanObjectStore section defined on the target cluster",
        ));
    }
    None
}

/// The PostgreSQL major version of the Cluster's image tag (`...:17.5` → 17).
pub fn major_version(image: &str) -> Option<u64> {
    let tag = image.rsplit_once(':')?.1;
    tag.split(['.', '-']).next()?.parse().ok()
}

/// The instance a backup runs on: the current primary, or with `prefer-standby` (the
/// Backup's target, else the Cluster's `spec.backup.target`) the first ready replica.
fn target_pod(tx: &Tx<'_>, backup: &Value, cluster: &Value) -> Option<Value> {
    let ns = s(backup, "/metadata/namespace");
    let target = match s(backup, "/spec/target") {
        "" => s(cluster, "/spec/backup/target"),
        t => t,
    };
    let primary = s(cluster, "/status/currentPrimary");
    let mut pods: Vec<Value> = tx
        .list(PODS, Some(ns))
        .iter()
        .filter(|p| s(p, "/metadata/labels/cnpg.io~1cluster") == s(cluster, "/metadata/name"))
        .filter(|p| s(p, "/metadata/labels/cnpg.io~1podRole") == "instance")
        .map(|p| (**p).clone())
        .collect();
    pods.sort_by_key(|p| s(p, "/metadata/name").to_string());
    if target == "prefer-standby"
        && let Some(replica) = pods
            .iter()
            .find(|p| s(p, "/metadata/name") != primary && pod_ready(p))
    {
        return Some(replica.clone());
    }
    pods.into_iter().find(|p| s(p, "/metadata/name") == primary)
}

/// Keys of the Backups naming the changed Cluster (so a Cluster that appears starts them).
fn by_cluster(ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
    if BACKUPS.is(&event.res) {
        return vec![key_of(&event.object)];
    }
    let (ns, name) = key_of(&event.object);
    let l = ctx.server.store.lock();
    l.list(&BACKUPS.res(), Some(&ns))
        .iter()
        .filter(|b| s(b, "/spec/cluster/name") == name)
        .filter(|b| !matches!(s(b, "/status/phase"), PHASE_COMPLETED | PHASE_FAILED))
        .map(|b| key_of(b))
        .collect()
}

/// The object's `status`, made an empty object first when it has none.
pub fn status_mut(obj: &mut Value) -> &mut Value {
    if obj.get("status").is_none_or(|s| !s.is_object()) {
        obj["status"] = json!({});
    }
    &mut obj["status"]
}

/// Write the Cluster's status after `change`, when it changes anything.
fn patch_cluster(
    tx: &mut Tx<'_>,
    cluster: &Value,
    change: impl FnOnce(&mut Value),
) -> Result<(), ApiError> {
    let Some(living) = tx.get(
        CLUSTERS,
        s(cluster, "/metadata/namespace"),
        s(cluster, "/metadata/name"),
    ) else {
        return Ok(());
    };
    let mut next = (*living).clone();
    change(status_mut(&mut next));
    if next.get("status") != living.get("status") {
        tx.update_status(CLUSTERS, next)?;
    }
    Ok(())
}

fn set_condition(status: &mut Value, cond: &Cond<'_>, now: &str) {
    status["conditions"] =
        conditions::set(status.get("conditions").unwrap_or(&Value::Null), cond, now);
}

/// `FlagBackupAsFailed`: the Backup `failed` with `error` and its method; the Cluster (when
/// there is one) records `lastFailedBackup` and `LastBackupSucceeded=False/LastBackupFailed`.
fn fail(
    ctx: &Ctx,
    tx: &mut Tx<'_>,
    backup: &Value,
    cluster: Option<&Value>,
    error: &str,
) -> Result<(), ApiError> {
    let now = ctx.clock.now();
    let mut next = backup.clone();
    let method = backup
        .pointer("/spec/method")
        .cloned()
        .unwrap_or(json!(METHOD_BARMAN));
    let status = status_mut(&mut next);
    status["phase"] = json!(PHASE_FAILED);
    status["error"] = json!(error);
    status["method"] = method;
    status["reconciliationTerminatedAt"] = json!(rfc3339(now));
    tx.update_status(BACKUPS, next)?;
    if let Some(cluster) = cluster {
        let stamp = rfc3339(now);
        patch_cluster(tx, cluster, |st| {
            st["lastFailedBackup"] = json!(stamp);
            set_condition(
                st,
                &Cond::new(CONDITION, false, "LastBackupFailed", error),
                &stamp,
            );
        })?;
    }
    Ok(())
}

/// `SetAsPending`: phase `pending`, no error.
fn set_pending(tx: &mut Tx<'_>, backup: &Value) -> Result<(), ApiError> {
    if s(backup, "/status/phase") == PHASE_PENDING && backup.pointer("/status/error").is_none() {
        return Ok(());
    }
    let mut next = backup.clone();
    let status = status_mut(&mut next);
    status["phase"] = json!(PHASE_PENDING);
    if let Some(st) = status.as_object_mut() {
        st.remove("error");
    }
    tx.update_status(BACKUPS, next)?;
    Ok(())
}

/// The backup starts on `pod`: the operator's `SetAsStarted` (phase `started`, `instanceID`,
/// `method`, `majorVersion`), then the instance manager's `setupBackupStatus` (phase
/// `running`, barman's destination and server name, `backupName`).
fn start(
    ctx: &Ctx,
    tx: &mut Tx<'_>,
    backup: &Value,
    cluster: &Value,
    pod: &Value,
) -> Result<(), ApiError> {
    let now = ctx.clock.now();
    let stamp = rfc3339(now);
    let cluster_name = s(cluster, "/metadata/name");
    tx.event(
        backup,
        EventKind::Normal,
        "Starting",
        &format!("Starting backup for cluster {cluster_name}"),
        None,
    )?;
    let mut next = backup.clone();
    status_mut(&mut next);
    let container_id = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|c| s(c, "/name") == "postgres"))
        .map(|c| s(c, "/containerID").to_string())
        .unwrap_or_default();
    {
        let st = &mut next["status"];
        st["phase"] = json!(PHASE_STARTED);
        if let Some(o) = st.as_object_mut() {
            o.remove("error");
        }
        let mut instance = json!({"podName": s(pod, "/metadata/name")});
        if !container_id.is_empty() {
            instance["ContainerID"] = json!(container_id);
        }
        st["instanceID"] = instance;
        st["method"] = json!(METHOD_BARMAN);
        st["reconciliationStartedAt"] = json!(stamp);
        if let Some(major) = major_version(&super::shapes::image(cluster)) {
            st["majorVersion"] = json!(major);
        }
    }
    let started = tx.update_status(BACKUPS, next)?;
    // The instance manager takes over.
    let store = cluster
        .pointer("/spec/backup/barmanObjectStore")
        .cloned()
        .unwrap_or(json!({}));
    let mut next = (*started).clone();
    {
        let st = &mut next["status"];
        st["backupName"] = json!(format!("backup-{}", compact(now)));
        for field in [
            "s3Credentials",
            "azureCredentials",
            "googleCredentials",
            "endpointCA",
            "endpointURL",
            "destinationPath",
        ] {
            if let Some(v) = store.get(field).filter(|v| !v.is_null()) {
                st[field] = v.clone();
            }
        }
        if let Some(enc) = store.pointer("/data/encryption").and_then(Value::as_str)
            && !enc.is_empty()
        {
            st["encryption"] = json!(enc);
        }
        st["serverName"] = json!(match s(&store, "/serverName") {
            "" => cluster_name,
            n => n,
        });
        st["phase"] = json!(PHASE_RUNNING);
    }
    tx.update_status(BACKUPS, next)?;
    tx.event(
        backup,
        EventKind::Normal,
        "Starting",
        "Backup started",
        None,
    )?;
    patch_cluster(tx, cluster, |st| {
        set_condition(
            st,
            &Cond::new(CONDITION, false, "BackupStarted", "New Backup starting up"),
            &stamp,
        );
    })
}

/// The completed backups of the same barman catalog (destination and server name).
fn catalog<'a>(all: &'a [std::sync::Arc<Value>], backup: &Value) -> Vec<&'a Value> {
    all.iter()
        .map(|b| b.as_ref())
        .filter(|b| s(b, "/status/phase") == PHASE_COMPLETED)
        .filter(|b| s(b, "/status/destinationPath") == s(backup, "/status/destinationPath"))
        .filter(|b| s(b, "/status/serverName") == s(backup, "/status/serverName"))
        .collect()
}

/// barman has taken the backup: `completed` with what barman reports, the Cluster's
/// `LastBackupSucceeded` condition, then its backup times from the catalog.
fn complete(ctx: &Ctx, tx: &mut Tx<'_>, backup: &Value, cluster: &Value) -> Result<(), ApiError> {
    let now = ctx.clock.now();
    let ns = s(backup, "/metadata/namespace").to_string();
    let all = tx.list(BACKUPS, Some(&ns));
    // Each backup of the catalog starts on a fresh WAL segment (a checkpoint and a switch).
    let taken = catalog(&all, backup).len() as u64;
    let begin = (taken + 2) << 25 | 0x28;
    let end = begin + 0x110;
    let timeline = cluster
        .pointer("/status/timelineID")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let started_at = match s(backup, "/status/reconciliationStartedAt") {
        "" => rfc3339(now),
        t => t.to_string(),
    };
    let mut begin_time = started_at.parse::<jiff::Timestamp>().unwrap_or(now);
    // barman names a backup by its start second; two backups of one catalog never share it.
    let ids: Vec<&str> = catalog(&all, backup)
        .iter()
        .map(|b| s(b, "/status/backupId"))
        .collect();
    while ids.contains(&barman_id(begin_time).as_str()) {
        begin_time += jiff::SignedDuration::from_secs(1);
    }
    tx.event(
        backup,
        EventKind::Normal,
        "Completed",
        "Backup completed",
        None,
    )?;
    let mut next = backup.clone();
    {
        let st = &mut next["status"];
        st["phase"] = json!(PHASE_COMPLETED);
        if let Some(o) = st.as_object_mut() {
            o.remove("error");
        }
        st["reconciliationTerminatedAt"] = json!(rfc3339(now));
        st["backupId"] = json!(barman_id(begin_time));
        st["startedAt"] = json!(rfc3339(begin_time));
        st["stoppedAt"] = json!(rfc3339(now.max(begin_time)));
        st["beginWal"] = json!(wal_name(timeline, begin));
        st["endWal"] = json!(wal_name(timeline, end));
        st["beginLSN"] = json!(lsn_text(begin));
        st["endLSN"] = json!(lsn_text(end));
    }
    let done = tx.update_status(BACKUPS, next)?;
    let stamp = rfc3339(now);
    // The catalog as `barman-cloud-backup-list` lists it, this backup included.
    let all = tx.list(BACKUPS, Some(&ns));
    let stops: Vec<jiff::Timestamp> = catalog(&all, &done)
        .iter()
        .filter_map(|b| s(b, "/status/stoppedAt").parse().ok())
        .collect();
    let first = stops.iter().min().copied().map(rfc3339);
    let last = stops.iter().max().copied().map(rfc3339);
    patch_cluster(tx, cluster, |st| {
        set_condition(
            st,
            &Cond::new(
                CONDITION,
                true,
                "LastBackupSucceeded",
                "Backup was successful",
            ),
            &stamp,
        );
        for (field, by_method, value) in [
            (
                "firstRecoverabilityPoint",
                "firstRecoverabilityPointByMethod",
                first,
            ),
            ("lastSuccessfulBackup", "lastSuccessfulBackupByMethod", last),
        ] {
            if let Some(value) = value {
                if st.get(by_method).is_none_or(|v| !v.is_object()) {
                    st[by_method] = json!({});
                }
                st[by_method][METHOD_BARMAN] = json!(value);
                // The earliest (first point) or latest (last backup) over the methods.
                let times: Vec<&str> = st[by_method]
                    .as_object()
                    .map(|m| m.values().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let pick = if field == "firstRecoverabilityPoint" {
                    times.iter().min()
                } else {
                    times.iter().max()
                };
                if let Some(p) = pick.map(|p| p.to_string()) {
                    st[field] = json!(p);
                }
            }
        }
    })
}

pub struct BackupController;

impl Component for BackupController {
    fn name(&self) -> &'static str {
        MANAGER_NAME
    }

    fn primary(&self) -> Kind {
        BACKUPS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![CLUSTERS]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        by_cluster(ctx, event)
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(b) = tx.get_key(BACKUPS, key) else {
            return Ok(Next::Done);
        };
        let phase = s(&b, "/status/phase").to_string();
        if b.pointer("/metadata/deletionTimestamp").is_some()
            || matches!(phase.as_str(), PHASE_COMPLETED | PHASE_FAILED)
        {
            return Ok(Next::Done);
        }
        let cluster_name = s(&b, "/spec/cluster/name").to_string();
        let Some(c) = tx.get(CLUSTERS, &key.0, &cluster_name) else {
            tx.event(
                &b,
                EventKind::Warning,
                "FindingCluster",
                &format!("Unknown cluster {cluster_name}, will retry in 30 seconds"),
                None,
            )?;
            set_pending(&mut tx, &b)?;
            return Ok(Next::After(RETRY));
        };
        let method = match s(&b, "/spec/method") {
            "" => METHOD_BARMAN,
            m => m,
        };
        if let Some((reason, message)) = prerequisite_failure(&c, method) {
            tx.event(&b, EventKind::Warning, reason, message, None)?;
            fail(ctx, &mut tx, &b, Some(&c), message)?;
            return Ok(Next::Done);
        }
        if method != METHOD_BARMAN {
            // A plugin's backup is the plugin's to take: the simulation runs no plugin.
            return Ok(Next::Done);
        }
        match phase.as_str() {
            PHASE_STARTED | PHASE_RUNNING => {
                let waited = ctx.clock.since(s(&b, "/status/reconciliationStartedAt"));
                if waited < BACKUP_DURATION {
                    return Ok(Next::After(
                        BACKUP_DURATION
                            .saturating_sub(waited)
                            .max(Duration::from_millis(50)),
                    ));
                }
                complete(ctx, &mut tx, &b, &c)?;
                Ok(Next::Done)
            }
            _ => {
                let target = s(&c, "/status/targetPrimary").to_string();
                match target_pod(&tx, &b, &c) {
                    None => {
                        tx.event(
                            &b,
                            EventKind::Warning,
                            "FindingPod",
                            &format!("Couldn't find target pod {target}, will retry in 30 seconds"),
                            None,
                        )?;
                        set_pending(&mut tx, &b)?;
                        Ok(Next::After(RETRY))
                    }
                    Some(pod) if !pod_ready(&pod) => {
                        set_pending(&mut tx, &b)?;
                        tx.event(
                            &b,
                            EventKind::Warning,
                            "BackupPending",
                            &format!("Backup target pod not ready: {target}"),
                            None,
                        )?;
                        Ok(Next::After(RETRY))
                    }
                    Some(pod) => {
                        start(ctx, &mut tx, &b, &c, &pod)?;
                        Ok(Next::After(BACKUP_DURATION))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wal_names_and_lsns_as_postgresql_prints_them() {
        let lsn = (2u64 << 25) | 0x28;
        assert_eq!(lsn_text(lsn), "0/4000028");
        assert_eq!(wal_name(1, lsn), "000000010000000000000004");
        assert_eq!(
            wal_name(2, (1u64 << 32) | 0x0300_0000),
            "000000020000000100000003"
        );
    }

    #[test]
    fn names_and_ids_as_cnpg_and_barman_write_them() {
        let t: jiff::Timestamp = "2026-12-07T10:15:30.5Z".parse().unwrap();
        assert_eq!(compact(t), "20261207101530");
        assert_eq!(barman_id(t), "20261207T101530");
        assert_eq!(rfc3339(t), "2026-12-07T10:15:30Z");
        assert_eq!(
            major_version("ghcr.io/cloudnative-pg/postgresql:17.5"),
            Some(17)
        );
        assert_eq!(major_version("postgres:16-bookworm"), Some(16));
        assert_eq!(major_version("postgres"), None);
    }

    #[test]
    fn prerequisites_as_cnpg_checks_them() {
        let none = json!({"spec": {}});
        assert_eq!(
            prerequisite_failure(&none, METHOD_BARMAN).map(|f| f.1),
            Some("cannot proceed with the backup as the cluster has no backup section")
        );
        let barman =
            json!({"spec": {"backup": {"barmanObjectStore": {"destinationPath": "s3://b/"}}}});
        assert_eq!(prerequisite_failure(&barman, METHOD_BARMAN), None);
        assert_eq!(
            prerequisite_failure(&barman, METHOD_SNAPSHOT).map(|f| f.0),
            Some("ClusterHasNoVolumeSnapshotCRD")
        );
        assert_eq!(
            prerequisite_failure(&barman, METHOD_PLUGIN).map(|f| f.0),
            Some("ClusterHasNoBackupExecutorPlugin")
        );
        let retention_only = json!({"spec": {"backup": {"retentionPolicy": "30d"}}});
        assert_eq!(
            prerequisite_failure(&retention_only, METHOD_BARMAN).map(|f| f.0),
            Some("ClusterHasNoBarmanSection")
        );
        let hibernated =
            json!({"metadata": {"annotations": {"cnpg.io/hibernation": "on"}}, "spec": {}});
        assert_eq!(
            prerequisite_failure(&hibernated, METHOD_BARMAN).map(|f| f.1),
            Some("cannot backup a hibernated cluster")
        );
    }
}
