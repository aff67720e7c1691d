//! The ScheduledBackup reconciler, after cloudnative-pg's
//! `internal/controller/scheduledbackup_controller.go`: `immediate: true` creates one Backup at
//! once; then a Backup `<name>-<YYYYMMDDhhmmss>` at each time of the cron schedule (seconds
//! first, as robfig/cron's `Parse` reads it), labelled `cnpg.io/cluster`,
//! `cnpg.io/immediateBackup` and `cnpg.io/scheduled-backup`, owned as
//! `spec.backupOwnerReference` says. The status records `lastCheckTime`, `lastScheduleTime` and
//! `nextScheduleTime`. A suspended one does nothing; while a Backup it made is not done it waits
//! a minute.

use std::time::Duration;

use serde_json::{Value, json};

use super::backup::{PHASE_COMPLETED, PHASE_FAILED, compact, rfc3339, status_mut};
use super::shapes::{self, CLUSTER_LABEL};
use super::{BACKUPS, CLUSTERS, MANAGER_NAME, SCHEDULED_BACKUPS};
use crate::apiserver::error::ApiError;
use crate::cluster::net::text as s;
use crate::cluster::pki::go_time_string;
use crate::cluster::{Component, Ctx, EventKind, Kind, Next, Tx};
use crate::store::objects::ObjKey;

pub const PARENT_LABEL: &str = "cnpg.io/scheduled-backup";
pub const IMMEDIATE_LABEL: &str = "cnpg.io/immediateBackup";
/// `PARENT_LABEL` as a JSON pointer into an object.
const PARENT_POINTER: &str = "/metadata/labels/cnpg.io~1scheduled-backup";
/// How long CNPG waits while a Backup of the schedule is still running.
pub const BUSY_RETRY: Duration = Duration::from_secs(60);

/// A parsed schedule: robfig/cron v1's `Parse` (six fields, seconds first; a fifth-field-less
/// spec leaves the day of week out; `@yearly` .. `@hourly` descriptors). `@every` is not read.
pub struct Schedule(croner::Cron);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid cron schedule {spec:?}: {why}")]
pub struct ScheduleError {
    spec: String,
    why: String,
}

impl Schedule {
    pub fn parse(spec: &str) -> Result<Self, ScheduleError> {
        let err = |why: &str| ScheduleError {
            spec: spec.to_string(),
            why: why.to_string(),
        };
        let trimmed = spec.trim();
        let six = match trimmed {
            "@yearly" | "@annually" => "0 0 0 1 1 *".to_string(),
            "@monthly" => "0 0 0 1 * *".to_string(),
            "@weekly" => "0 0 0 * * 0".to_string(),
            "@daily" | "@midnight" => "0 0 0 * * *".to_string(),
            "@hourly" => "0 0 * * * *".to_string(),
            d if d.starts_with('@') => {
                return Err(err("this descriptor is not read by the simulation"));
            }
            fields => match fields.split_whitespace().count() {
                6 => fields.to_string(),
                // The day of week is optional.
                5 => format!("{fields} *"),
                n => return Err(err(&format!("expected 5 to 6 fields, found {n}"))),
            },
        };
        let parser = croner::parser::CronParser::builder()
            .seconds(croner::parser::Seconds::Required)
            .year(croner::parser::Year::Disallowed)
            .build();
        parser
            .parse(&six)
            .map(Schedule)
            .map_err(|e| err(&e.to_string()))
    }

    /// The first time of the schedule strictly after `t` (robfig's `Next`, whole seconds).
    pub fn next(&self, t: jiff::Timestamp) -> Option<jiff::Timestamp> {
        let from = chrono::DateTime::<chrono::Utc>::from_timestamp(t.as_second(), 0)?;
        let next = self.0.find_next_occurrence(&from, false).ok()?;
        jiff::Timestamp::from_second(next.timestamp()).ok()
    }
}

fn until(now: jiff::Timestamp, then: jiff::Timestamp) -> Duration {
    Duration::try_from(then.duration_since(now))
        .unwrap_or_default()
        .max(Duration::from_millis(50))
}

/// The Backup CNPG's `CreateBackup` makes for the iteration at `at`.
fn backup_for(
    tx: &Tx<'_>,
    sb: &Value,
    at: jiff::Timestamp,
    immediate: bool,
) -> Result<Value, ApiError> {
    let name = format!("{}-{}", shapes::name(sb), compact(at));
    let cluster = s(sb, "/spec/cluster/name");
    let mut spec = json!({"cluster": {"name": cluster}});
    for field in [
        "target",
        "method",
        "online",
        "onlineConfiguration",
        "pluginConfiguration",
    ] {
        if let Some(v) = sb
            .pointer(&format!("/spec/{field}"))
            .filter(|v| !v.is_null())
        {
            spec[field] = v.clone();
        }
    }
    let mut labels = serde_json::Map::new();
    let mut annotations = serde_json::Map::new();
    let mut owners = Vec::new();
    match s(sb, "/spec/backupOwnerReference") {
        "self" => owners.push(shapes::owner_ref(sb)),
        "cluster" => {
            let c = tx
                .get(CLUSTERS, shapes::namespace(sb), cluster)
                .ok_or_else(|| ApiError::not_found(super::GROUP, "clusters", cluster))?;
            // `SetInheritedDataAndOwnership`: the Cluster's inherited metadata, owned by it.
            for (from, to) in [
                ("/spec/inheritedMetadata/labels", &mut labels),
                ("/spec/inheritedMetadata/annotations", &mut annotations),
            ] {
                if let Some(m) = c.pointer(from).and_then(Value::as_object) {
                    to.extend(m.clone());
                }
            }
            owners.push(shapes::owner_ref(&c));
        }
        _ => {}
    }
    labels.insert(CLUSTER_LABEL.into(), json!(cluster));
    labels.insert(IMMEDIATE_LABEL.into(), json!(immediate.to_string()));
    labels.insert(PARENT_LABEL.into(), json!(shapes::name(sb)));
    let mut metadata = json!({"name": name, "namespace": shapes::namespace(sb), "labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    if !owners.is_empty() {
        metadata["ownerReferences"] = json!(owners);
    }
    Ok(json!({
        "apiVersion": BACKUPS.api_version(),
        "kind": BACKUPS.kind,
        "metadata": metadata,
        "spec": spec,
    }))
}

/// `advanceScheduledBackupStatus`: the iteration at `at` has its Backup.
fn advance(
    tx: &mut Tx<'_>,
    sb: &Value,
    at: jiff::Timestamp,
    now: jiff::Timestamp,
    next: jiff::Timestamp,
) -> Result<Next, ApiError> {
    let mut obj = sb.clone();
    let status = status_mut(&mut obj);
    status["lastCheckTime"] = json!(rfc3339(now));
    status["lastScheduleTime"] = json!(rfc3339(at));
    status["nextScheduleTime"] = json!(rfc3339(next));
    let obj = tx.update_status(SCHEDULED_BACKUPS, obj)?;
    tx.event(
        &obj,
        EventKind::Normal,
        "BackupSchedule",
        &format!("Next backup scheduled by {}", go_time_string(next)),
        None,
    )?;
    Ok(Next::After(until(now, next)))
}

fn create_backup(
    tx: &mut Tx<'_>,
    sb: &Value,
    at: jiff::Timestamp,
    now: jiff::Timestamp,
    next: jiff::Timestamp,
    immediate: bool,
) -> Result<Next, ApiError> {
    let backup = backup_for(tx, sb, at, immediate)?;
    if let Err(e) = tx.create(BACKUPS, shapes::namespace(sb), backup) {
        tx.event(
            sb,
            EventKind::Warning,
            "BackupCreation",
            "Error while creating backup object",
            None,
        )?;
        return Err(e);
    }
    advance(tx, sb, at, now, next)
}

pub struct ScheduledBackupController;

impl Component for ScheduledBackupController {
    fn name(&self) -> &'static str {
        MANAGER_NAME
    }

    fn primary(&self) -> Kind {
        SCHEDULED_BACKUPS
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(sb) = tx.get_key(SCHEDULED_BACKUPS, key) else {
            return Ok(Next::Done);
        };
        if sb.pointer("/metadata/deletionTimestamp").is_some()
            || sb.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
        {
            return Ok(Next::Done);
        }
        let name = shapes::name(&sb).to_string();
        let children: Vec<_> = tx
            .list(BACKUPS, Some(&key.0))
            .into_iter()
            .filter(|b| s(b, PARENT_POINTER) == name)
            .collect();
        if children
            .iter()
            .any(|b| !matches!(s(b, "/status/phase"), PHASE_COMPLETED | PHASE_FAILED))
        {
            return Ok(Next::After(BUSY_RETRY));
        }
        let Ok(schedule) = Schedule::parse(s(&sb, "/spec/schedule")) else {
            // CNPG logs the invalid schedule and does nothing else.
            return Ok(Next::Done);
        };
        let now = ctx.clock.now();
        let Some(next_now) = schedule.next(now) else {
            tx.event(
                &sb,
                EventKind::Warning,
                "NoSchedule",
                &format!(
                    "No time satisfying the schedule {:?} have been found",
                    s(&sb, "/spec/schedule")
                ),
                None,
            )?;
            return Ok(Next::Done);
        };
        let last_check = s(&sb, "/status/lastCheckTime")
            .parse::<jiff::Timestamp>()
            .ok();
        let immediate = sb.pointer("/spec/immediate").and_then(Value::as_bool) == Some(true);
        let Some(last_check) = last_check else {
            if immediate {
                let immediate_label = IMMEDIATE_LABEL.replace('/', "~1");
                let adopted = children
                    .iter()
                    .filter(|b| s(b, &format!("/metadata/labels/{immediate_label}")) == "true")
                    .filter_map(|b| s(b, "/metadata/creationTimestamp").parse().ok())
                    .min();
                if let Some(at) = adopted {
                    return advance(&mut tx, &sb, at, now, next_now);
                }
                tx.event(
                    &sb,
                    EventKind::Normal,
                    "BackupSchedule",
                    &format!("Scheduled immediate backup now: {}", go_time_string(now)),
                    None,
                )?;
                return create_backup(&mut tx, &sb, now, now, next_now, true);
            }
            let mut obj = (*sb).clone();
            status_mut(&mut obj)["lastCheckTime"] = json!(rfc3339(now));
            let obj = tx.update_status(SCHEDULED_BACKUPS, obj)?;
            tx.event(
                &obj,
                EventKind::Normal,
                "BackupSchedule",
                &format!("Scheduled first backup by {}", go_time_string(next_now)),
                None,
            )?;
            return Ok(Next::After(until(now, next_now)));
        };
        let Some(next_time) = schedule.next(last_check) else {
            return Ok(Next::Done);
        };
        if now < next_time {
            return Ok(Next::After(until(now, next_time)));
        }
        let backup_name = format!("{name}-{}", compact(next_time));
        match tx.get(BACKUPS, &key.0, &backup_name) {
            None => create_backup(&mut tx, &sb, next_time, now, next_now, false),
            Some(existing) if s(&existing, PARENT_POINTER) == name => {
                advance(&mut tx, &sb, next_time, now, next_now)
            }
            Some(_) => {
                tx.event(
                    &sb,
                    EventKind::Warning,
                    "BackupAdoptionRefused",
                    &format!(
                        "Backup {backup_name:?} exists but is not owned by this ScheduledBackup; skipping iteration {}",
                        rfc3339(next_time)
                    ),
                    None,
                )?;
                let mut obj = (*sb).clone();
                let status = status_mut(&mut obj);
                status["lastCheckTime"] = json!(rfc3339(now));
                status["nextScheduleTime"] = json!(rfc3339(next_now));
                tx.update_status(SCHEDULED_BACKUPS, obj)?;
                Ok(Next::After(until(now, next_now)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn schedules_read_seconds_first_as_robfig_cron_does() {
        let daily = Schedule::parse("0 0 3 * * *").unwrap();
        assert_eq!(
            daily.next(at("2026-12-07T10:00:00Z")),
            Some(at("2026-12-08T03:00:00Z"))
        );
        // Five fields: the day of week is left out, not the seconds.
        let five = Schedule::parse("30 15 * * *").unwrap();
        assert_eq!(
            five.next(at("2026-12-07T10:00:00Z")),
            Some(at("2026-12-07T10:15:30Z"))
        );
        let every_two = Schedule::parse("*/2 * * * * *").unwrap();
        assert_eq!(
            every_two.next(at("2026-12-07T10:00:00.5Z")),
            Some(at("2026-12-07T10:00:02Z"))
        );
        assert_eq!(
            Schedule::parse("@daily")
                .unwrap()
                .next(at("2026-12-07T10:00:00Z")),
            Some(at("2026-12-08T00:00:00Z"))
        );
        assert!(Schedule::parse("* * *").is_err());
        assert!(Schedule::parse("@every 1h").is_err());
        assert!(Schedule::parse("0 0 25 * * *").is_err());
    }
}
