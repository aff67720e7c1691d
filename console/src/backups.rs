//! The Backups page: for each selected Cluster, its CloudNativePG Backups (newest first) and
//! ScheduledBackups, read with the signed-in user's client. A list the user may not read is
//! shown as the API server's refusal, in place of its table.

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

use crate::html::esc;
use crate::views::{clusters_api, readable, selector_params, text};

/// One Backup as the page shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackupRow {
    pub name: String,
    pub created: String,
    pub phase: String,
    pub method: String,
    pub started: String,
    pub stopped: String,
    pub backup_id: String,
    pub begin_wal: String,
    pub end_wal: String,
    pub error: String,
    pub schedule: String,
}

/// One ScheduledBackup as the page shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScheduleRow {
    pub name: String,
    pub schedule: String,
    pub suspended: bool,
    pub immediate: bool,
    pub method: String,
    pub last_schedule: String,
    /// As CloudNativePG computed it (`status.nextScheduleTime`); empty when it has not.
    pub next_schedule: String,
}

/// A selected Cluster with its backups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterBackups {
    pub cluster: String,
    pub last_successful: String,
    pub first_recoverability: String,
    pub backups: Vec<BackupRow>,
    pub schedules: Vec<ScheduleRow>,
}

/// The page: the Clusters, or why they cannot be read; the Backups and ScheduledBackups
/// lists may each be refused on their own.
pub struct BackupsPage {
    pub clusters: Vec<ClusterBackups>,
    pub backups_refused: Option<String>,
    pub schedules_refused: Option<String>,
}

fn cnpg_api(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("postgresql.cnpg.io", "v1", kind);
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

pub fn backup_row(obj: &DynamicObject) -> BackupRow {
    let d = &obj.data;
    BackupRow {
        name: obj.metadata.name.clone().unwrap_or_default(),
        created: obj
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
        phase: text(d, "/status/phase"),
        method: Some(text(d, "/status/method"))
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| text(d, "/spec/method")),
        started: text(d, "/status/startedAt"),
        stopped: text(d, "/status/stoppedAt"),
        backup_id: text(d, "/status/backupId"),
        begin_wal: text(d, "/status/beginWal"),
        end_wal: text(d, "/status/endWal"),
        error: text(d, "/status/error"),
        schedule: obj
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("cnpg.io/scheduled-backup").cloned())
            .unwrap_or_default(),
    }
}

pub fn schedule_row(obj: &DynamicObject) -> ScheduleRow {
    let d = &obj.data;
    let flag = |p: &str| d.pointer(p).and_then(Value::as_bool) == Some(true);
    ScheduleRow {
        name: obj.metadata.name.clone().unwrap_or_default(),
        schedule: text(d, "/spec/schedule"),
        suspended: flag("/spec/suspend"),
        immediate: flag("/spec/immediate"),
        method: text(d, "/spec/method"),
        last_schedule: text(d, "/status/lastScheduleTime"),
        next_schedule: text(d, "/status/nextScheduleTime"),
    }
}

/// Sorts and groups the lists under the selected Clusters (in name order), Backups newest
/// first (by creation, then name).
pub fn group(
    clusters: &[DynamicObject],
    backups: &[DynamicObject],
    schedules: &[DynamicObject],
) -> Vec<ClusterBackups> {
    let of = |o: &DynamicObject| text(&o.data, "/spec/cluster/name");
    let mut out: Vec<ClusterBackups> = clusters
        .iter()
        .map(|c| {
            let name = c.metadata.name.clone().unwrap_or_default();
            let mut rows: Vec<BackupRow> = backups
                .iter()
                .filter(|b| of(b) == name)
                .map(backup_row)
                .collect();
            rows.sort_by(|a, b| (&b.created, &b.name).cmp(&(&a.created, &a.name)));
            let mut schedule_rows: Vec<ScheduleRow> = schedules
                .iter()
                .filter(|s| of(s) == name)
                .map(schedule_row)
                .collect();
            schedule_rows.sort_by(|a, b| a.name.cmp(&b.name));
            ClusterBackups {
                last_successful: text(&c.data, "/status/lastSuccessfulBackup"),
                first_recoverability: text(&c.data, "/status/firstRecoverabilityPoint"),
                cluster: name,
                backups: rows,
                schedules: schedule_rows,
            }
        })
        .collect();
    out.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    out
}

/// Reads the page as the user.
pub async fn read(
    client: &kube::Client,
    namespace: &str,
    selector: Option<&str>,
) -> Result<BackupsPage, String> {
    let params = selector_params(selector)?;
    let clusters = clusters_api(client, namespace)
        .list(&params)
        .await
        .map_err(readable)?
        .items;
    let all = ListParams::default();
    let (backup_api, schedule_api) = (
        cnpg_api(client, namespace, "Backup", "backups"),
        cnpg_api(client, namespace, "ScheduledBackup", "scheduledbackups"),
    );
    let (backups, schedules) = tokio::join!(backup_api.list(&all), schedule_api.list(&all));
    let (backups, backups_refused) = match backups {
        Ok(l) => (l.items, None),
        Err(e) => (Vec::new(), Some(readable(e))),
    };
    let (schedules, schedules_refused) = match schedules {
        Ok(l) => (l.items, None),
        Err(e) => (Vec::new(), Some(readable(e))),
    };
    Ok(BackupsPage {
        clusters: group(&clusters, &backups, &schedules),
        backups_refused,
        schedules_refused,
    })
}

/// An RFC 3339 time as a person reads it (`2026-12-07 10:15:30 UTC`); unreadable text as is.
pub fn when(stamp: &str) -> String {
    match stamp.parse::<jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        Err(_) => stamp.to_string(),
    }
}

/// How long from `start` to `stop` (`42 s`, `3 min 5 s`, `2 h 10 min`), empty if unknown.
pub fn took(start: &str, stop: &str) -> String {
    let (Ok(a), Ok(b)) = (
        start.parse::<jiff::Timestamp>(),
        stop.parse::<jiff::Timestamp>(),
    ) else {
        return String::new();
    };
    let secs = b.duration_since(a).as_secs().max(0);
    match secs {
        0 => "under 1 s".to_string(),
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

fn phase_class(phase: &str) -> &'static str {
    match phase {
        "completed" => "ok",
        "failed" | "walArchivingFailing" | "invalid backup definition" => "bad",
        "" => "neutral",
        _ => "warn",
    }
}

fn muted(text: &str) -> String {
    format!("<span class=\"muted\">{}</span>", esc(text))
}

fn or_dash(value: String) -> String {
    if value.is_empty() {
        muted("—")
    } else {
        value
    }
}

fn backups_table(rows: &[BackupRow]) -> String {
    if rows.is_empty() {
        return "<p class=\"muted\">No backup of this cluster yet.</p>".into();
    }
    let body: String = rows
        .iter()
        .map(|b| {
            let phase = if b.phase.is_empty() { "new" } else { b.phase.as_str() };
            let origin = if b.schedule.is_empty() {
                String::new()
            } else {
                format!("<div class=\"muted\">from schedule {}</div>", esc(&b.schedule))
            };
            let error = if b.error.is_empty() {
                String::new()
            } else {
                format!("<div class=\"error\">{}</div>", esc(&b.error))
            };
            let wal = if b.begin_wal.is_empty() {
                muted("—")
            } else {
                format!(
                    "<code>{}</code><br><code>{}</code>",
                    esc(&b.begin_wal),
                    esc(&b.end_wal)
                )
            };
            format!(
                "<tr data-backup=\"{}\"><td><b>{}</b>{origin}{error}</td><td><span class=\"pill {}\">{}</span></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"wal\">{wal}</td></tr>",
                esc(&b.name),
                esc(&b.name),
                phase_class(&b.phase),
                esc(phase),
                esc(&b.method),
                or_dash(esc(&when(&b.started))),
                or_dash(esc(&took(&b.started, &b.stopped))),
                or_dash(esc(&b.backup_id)),
            )
        })
        .collect();
    format!(
        "<table><tr><th>Backup</th><th>State</th><th>Method</th><th>Started</th><th>Took</th><th>Backup ID</th><th>WAL begin / end</th></tr>{body}</table>"
    )
}

fn schedules_table(rows: &[ScheduleRow]) -> String {
    if rows.is_empty() {
        return "<p class=\"muted\">No scheduled backup.</p>".into();
    }
    let body: String = rows
        .iter()
        .map(|s| {
            let state = if s.suspended {
                "<span class=\"pill warn\">suspended</span>"
            } else {
                "<span class=\"pill ok\">active</span>"
            };
            let next = if s.suspended {
                muted("none while suspended")
            } else {
                or_dash(esc(&when(&s.next_schedule)))
            };
            format!(
                "<tr data-schedule=\"{}\"><td><b>{}</b></td><td><code>{}</code></td><td>{state}</td><td>{}</td><td>{}</td><td>{next}</td></tr>",
                esc(&s.name),
                esc(&s.name),
                esc(&s.schedule),
                if s.immediate { "yes" } else { "no" },
                or_dash(esc(&when(&s.last_schedule))),
            )
        })
        .collect();
    format!(
        "<table><tr><th>Scheduled backup</th><th>Schedule</th><th>State</th><th>Immediate</th><th>Last scheduled</th><th>Next</th></tr>{body}</table>"
    )
}

fn fact(key: &str, value: &str) -> String {
    format!(
        "<div class=\"fact\"><div class=\"k\">{}</div><div class=\"v\">{value}</div></div>",
        esc(key)
    )
}

pub fn render(page: &Result<BackupsPage, String>, namespace: &str) -> String {
    let mut out = format!(
        "<h1>Backups</h1><p class=\"lead\">The backups and backup schedules of the PostgreSQL clusters of <b>{}</b> this console shows, newest first. Schedules use CloudNativePG's six-field cron format (seconds first).</p>",
        esc(namespace)
    );
    let page = match page {
        Ok(p) => p,
        Err(e) => {
            out.push_str(&format!(
                "<div class=\"flash bad\" role=\"alert\">The clusters cannot be read as you: {}</div>",
                esc(e)
            ));
            return out;
        }
    };
    if page.clusters.is_empty() {
        out.push_str("<div class=\"card muted\">No cluster is selected in this namespace.</div>");
    }
    for c in &page.clusters {
        let backups = match &page.backups_refused {
            Some(why) => format!(
                "<div class=\"flash bad\" role=\"alert\">Backups cannot be read as you: {}</div>",
                esc(why)
            ),
            None => backups_table(&c.backups),
        };
        let schedules = match &page.schedules_refused {
            Some(why) => format!(
                "<div class=\"flash bad\" role=\"alert\">Scheduled backups cannot be read as you: {}</div>",
                esc(why)
            ),
            None => schedules_table(&c.schedules),
        };
        let completed = c.backups.iter().filter(|b| b.phase == "completed").count();
        let failed = c.backups.iter().filter(|b| b.phase == "failed").count();
        out.push_str(&format!(
            "<section class=\"card\" id=\"cluster-{}\" data-cluster=\"{}\"><h2>{}</h2><div class=\"grid\">{}{}{}{}</div><h3>Backups</h3>{backups}<h3>Schedules</h3>{schedules}</section>",
            esc(&c.cluster),
            esc(&c.cluster),
            esc(&c.cluster),
            fact("Last successful backup", &or_dash(esc(&when(&c.last_successful)))),
            fact(
                "Recoverable from",
                &or_dash(esc(&when(&c.first_recoverability)))
            ),
            fact("Completed", &completed.to_string()),
            fact(
                "Failed",
                &if failed > 0 {
                    format!("<span class=\"pill bad\">{failed}</span>")
                } else {
                    "0".into()
                }
            ),
        ));
    }
    out
}

/// The page's own styles (added to the shared stylesheet's).
pub const STYLE: &str = "h3 { font-size:13px; text-transform:uppercase; letter-spacing:.4px; color:var(--muted); margin:18px 0 4px; font-weight:600; } td.wal code, td code { font-size:12.5px; } .error { color:var(--bad); font-size:13px; margin-top:2px; } a.more { display:block; font-size:12.5px; font-weight:400; color:var(--accent); margin-top:2px; }";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn backups_are_grouped_by_selected_cluster_newest_first() {
        let clusters = vec![obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
                "metadata": {"name": "pg"}, "status": {"lastSuccessfulBackup": "2026-12-07T10:00:00Z"}}),
        )];
        let b = |name: &str, cluster: &str, created: &str, status: Value| {
            obj(
                json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Backup",
                "metadata": {"name": name, "creationTimestamp": created},
                "spec": {"cluster": {"name": cluster}}, "status": status}),
            )
        };
        let backups = vec![
            b(
                "old",
                "pg",
                "2026-12-06T10:00:00Z",
                json!({"phase": "completed", "method": "barmanObjectStore"}),
            ),
            b(
                "new",
                "pg",
                "2026-12-07T10:00:00Z",
                json!({"phase": "failed", "error": "no <backup> section"}),
            ),
            b("elsewhere", "other", "2026-12-07T11:00:00Z", json!({})),
        ];
        let schedules = vec![obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "ScheduledBackup",
            "metadata": {"name": "nightly"},
            "spec": {"cluster": {"name": "pg"}, "schedule": "0 0 3 * * *", "suspend": true},
            "status": {"nextScheduleTime": "2026-12-08T03:00:00Z"}}),
        )];
        let grouped = group(&clusters, &backups, &schedules);
        assert_eq!(grouped.len(), 1);
        let names: Vec<&str> = grouped[0].backups.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            ["new", "old"],
            "newest first, other clusters' left out"
        );
        assert!(grouped[0].schedules[0].suspended);
        let html = render(
            &Ok(BackupsPage {
                clusters: grouped,
                backups_refused: None,
                schedules_refused: Some("forbidden (403)".into()),
            }),
            "team",
        );
        assert!(html.contains("no &lt;backup&gt; section"), "escaped error");
        assert!(html.contains("2026-12-07 10:00:00 UTC"));
        assert!(html.contains("Scheduled backups cannot be read as you: forbidden (403)"));
    }

    #[test]
    fn times_and_durations_read_as_people_say_them() {
        assert_eq!(when("2026-12-07T10:15:30Z"), "2026-12-07 10:15:30 UTC");
        assert_eq!(when(""), "");
        assert_eq!(took("2026-12-07T10:00:00Z", "2026-12-07T10:00:42Z"), "42 s");
        assert_eq!(
            took("2026-12-07T10:00:00Z", "2026-12-07T10:03:05Z"),
            "3 min 5 s"
        );
        assert_eq!(
            took("2026-12-07T10:00:00Z", "2026-12-07T12:10:00Z"),
            "2 h 10 min"
        );
        assert_eq!(took("", "2026-12-07T12:10:00Z"), "");
        assert_eq!(
            took("2026-12-07T10:00:00Z", "2026-12-07T10:00:00Z"),
            "under 1 s"
        );
    }
}
