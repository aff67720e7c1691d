//! Restore drills (`CONSOLE_RESTORE_DRILLS=true`): prove that a backup restores by
//! bootstrapping a new CloudNativePG Cluster from a chosen completed Backup, follow it until it
//! is healthy (or fails), then delete it.
//!
//! Everything is done with the signed-in user's client, so the API server's RBAC decides who
//! may start (create a Cluster) and end (delete a Cluster) a drill. The console itself deletes
//! only Clusters that carry this console's drill label: any other name is refused before a
//! delete is sent, and the delete is bound to the object that was checked (its uid).

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::html::esc;
use crate::respond::{CsrfToken, SignedPost, redirect_with_cookies, user_page};
use crate::state::Shared;
use crate::views::{readable, selector_params};

/// The label that marks a drill's Cluster; its value is the console's name.
pub const DRILL_LABEL: &str = "pgtoolbox.fyannk.dev/restore-drill";
/// The label naming the Cluster a drill restores a backup of.
pub const SOURCE_LABEL: &str = "pgtoolbox.fyannk.dev/restore-drill-source";
/// The annotation naming the Backup a drill restores.
pub const BACKUP_ANNOTATION: &str = "pgtoolbox.fyannk.dev/restore-drill-backup";
/// The annotation naming who started the drill (as the API server knows them).
pub const STARTED_BY_ANNOTATION: &str = "pgtoolbox.fyannk.dev/restore-drill-started-by";

/// CloudNativePG's healthy phase and `BackupPhaseCompleted`.
const PHASE_HEALTHY: &str = "Cluster in healthy state";
const BACKUP_COMPLETED: &str = "completed";
/// The phases in which CloudNativePG stops and waits for a person: a drill there has failed.
const FAILED_PHASES: &[&str] = &[
    "Cluster cannot proceed to reconciliation due to an unknown plugin being required",
    "Cluster cannot proceed to reconciliation due to an error while interacting with plugins",
    "Cluster has incomplete or invalid image catalog",
    "Cluster is unrecoverable and needs manual intervention",
    "Cluster cannot execute instance online upgrade due to missing architecture binary",
    "Unable to create required cluster objects",
    "Invalid cluster definition",
    "Waiting for user action",
];
/// CloudNativePG refuses Cluster names longer than this (its webhook).
const MAX_CLUSTER_NAME: usize = 50;
/// Kubernetes' `generateName` alphabet: no vowels (no words), no look-alike characters.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DrillError {
    #[error("Backup {0} does not exist (or you may not read it)")]
    BackupNotFound(String),
    #[error("Backup {0} is not completed (phase: {1}): only a completed backup can be restored")]
    BackupNotCompleted(String, String),
    #[error("Backup {0} belongs to no Cluster this console shows")]
    NotSelected(String),
    #[error(
        "{0} is not a restore drill of this console (it lacks the label {DRILL_LABEL}={1}): it was not deleted"
    )]
    NotADrill(String, String),
    #[error("{0}")]
    Api(String),
}

fn api_error(e: kube::Error) -> DrillError {
    DrillError::Api(readable(e))
}

fn gvk_api(client: &kube::Client, namespace: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("postgresql.cnpg.io", "v1", kind);
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

fn clusters_api(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    gvk_api(client, namespace, "Cluster", "clusters")
}

fn backups_api(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    gvk_api(client, namespace, "Backup", "backups")
}

fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn label<'a>(obj: &'a DynamicObject, key: &str) -> Option<&'a str> {
    obj.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

fn annotation(obj: &DynamicObject, key: &str) -> String {
    obj.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .cloned()
        .unwrap_or_default()
}

/// A completed Backup a drill may restore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupChoice {
    pub cluster: String,
    pub name: String,
    /// When it finished (`status.stoppedAt`), as CloudNativePG wrote it.
    pub stopped_at: String,
    pub method: String,
}

/// Where a drill stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still restoring; with the latest warning the API server recorded on it, if any.
    InProgress(Option<String>),
    /// Healthy: the backup restored, in this many seconds from the drill's creation.
    Verified(Option<i64>),
    /// CloudNativePG gave up: the reason it gave.
    Failed(String),
}

/// One drill as the page shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrillView {
    pub name: String,
    pub source: String,
    pub backup: String,
    pub started_by: String,
    pub created: String,
    pub phase: String,
    pub instances: i64,
    pub ready: i64,
    pub outcome: Outcome,
}

/// `<cluster>-drill-<suffix>`, the source's name shortened so the whole stays within
/// CloudNativePG's limit.
pub fn drill_name(cluster: &str, suffix: &str) -> String {
    let room = MAX_CLUSTER_NAME - "-drill-".len() - suffix.len();
    let prefix: String = cluster.chars().take(room).collect();
    format!("{}-drill-{suffix}", prefix.trim_end_matches('-'))
}

/// Five random characters of Kubernetes' `generateName` alphabet.
pub fn random_suffix() -> String {
    let bytes: [u8; 5] = rand::random();
    bytes
        .iter()
        .map(|b| char::from(SUFFIX_ALPHABET[usize::from(*b) % SUFFIX_ALPHABET.len()]))
        .collect()
}

/// The drill's Cluster: one instance bootstrapped from `backup`
/// (`spec.bootstrap.recovery.backup.name`), with the source's image and storage where the
/// source names them, labelled as this console's drill of `source`.
pub fn drill_cluster(
    source: &DynamicObject,
    backup: &str,
    console: &str,
    started_by: &str,
    name: &str,
) -> Value {
    let cluster = source.metadata.name.clone().unwrap_or_default();
    let mut spec = json!({
        "instances": 1,
        "bootstrap": {"recovery": {"backup": {"name": backup}}},
    });
    let data = &source.data;
    if let Some(image) = data.pointer("/spec/imageName").filter(|v| v.is_string()) {
        spec["imageName"] = image.clone();
    }
    let mut storage = serde_json::Map::new();
    for key in ["size", "storageClass"] {
        if let Some(v) = data
            .pointer(&format!("/spec/storage/{key}"))
            .filter(|v| v.is_string())
        {
            storage.insert(key.into(), v.clone());
        }
    }
    if !storage.is_empty() {
        spec["storage"] = Value::Object(storage);
    }
    json!({
        "apiVersion": "postgresql.cnpg.io/v1",
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "labels": {DRILL_LABEL: console, SOURCE_LABEL: cluster},
            "annotations": {BACKUP_ANNOTATION: backup, STARTED_BY_ANNOTATION: started_by},
        },
        "spec": spec,
    })
}

/// A time as people read it (`2026-12-07 03:00 UTC`); text that is no time is kept as it is.
pub fn when(t: &str) -> String {
    t.parse::<jiff::Timestamp>()
        .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|_| t.to_string())
}

fn seconds(t: &str) -> Option<i64> {
    t.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// A drill's outcome from its Cluster: healthy with every instance ready is a verified
/// restore (timed from creation to its Ready condition), a phase where CloudNativePG waits for
/// a person is a failure, anything else is still in progress.
pub fn outcome(obj: &DynamicObject, warning: Option<String>) -> Outcome {
    let data = &obj.data;
    let phase = text(data, "/status/phase");
    let wanted = data
        .pointer("/spec/instances")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let ready = data
        .pointer("/status/readyInstances")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if phase == PHASE_HEALTHY && ready >= wanted {
        let became_ready = data
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| {
                c.iter()
                    .find(|c| c["type"] == "Ready" && c["status"] == "True")
            })
            .and_then(|c| c["lastTransitionTime"].as_str())
            .and_then(seconds);
        let created = obj
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second());
        let took = became_ready.zip(created).map(|(r, c)| (r - c).max(0));
        return Outcome::Verified(took);
    }
    if FAILED_PHASES.contains(&phase.as_str()) {
        let reason = text(data, "/status/phaseReason");
        return Outcome::Failed(if reason.is_empty() { phase } else { reason });
    }
    Outcome::InProgress(warning)
}

/// Refuses any Cluster that is not a drill of `console`.
pub fn ensure_drill(obj: &DynamicObject, console: &str) -> Result<(), DrillError> {
    if label(obj, DRILL_LABEL) == Some(console) {
        Ok(())
    } else {
        Err(DrillError::NotADrill(
            obj.metadata.name.clone().unwrap_or_default(),
            console.to_string(),
        ))
    }
}

/// The completed Backups of the Clusters the console selects (drills excluded), newest first
/// within each Cluster.
pub async fn choices(
    client: &kube::Client,
    namespace: &str,
    selector: Option<&str>,
) -> Result<Vec<BackupChoice>, String> {
    let sources = source_names(client, namespace, selector).await?;
    let backups = backups_api(client, namespace)
        .list(&ListParams::default())
        .await
        .map_err(readable)?;
    let mut out: Vec<BackupChoice> = backups
        .items
        .iter()
        .filter(|b| text(&b.data, "/status/phase") == BACKUP_COMPLETED)
        .map(|b| BackupChoice {
            cluster: text(&b.data, "/spec/cluster/name"),
            name: b.metadata.name.clone().unwrap_or_default(),
            stopped_at: text(&b.data, "/status/stoppedAt"),
            method: text(&b.data, "/spec/method"),
        })
        .filter(|b| sources.contains(&b.cluster))
        .collect();
    out.sort_by(|a, b| {
        a.cluster
            .cmp(&b.cluster)
            .then(b.stopped_at.cmp(&a.stopped_at))
    });
    Ok(out)
}

/// The Clusters a drill may restore: those the console selects, except drills.
async fn source_names(
    client: &kube::Client,
    namespace: &str,
    selector: Option<&str>,
) -> Result<Vec<String>, String> {
    let params = selector_params(selector)?;
    Ok(clusters_api(client, namespace)
        .list(&params)
        .await
        .map_err(readable)?
        .items
        .into_iter()
        .filter(|c| label(c, DRILL_LABEL).is_none())
        .filter_map(|c| c.metadata.name)
        .collect())
}

/// This console's drills, newest first, each with its progress and result.
pub async fn list(
    client: &kube::Client,
    namespace: &str,
    console: &str,
) -> Result<Vec<DrillView>, String> {
    let params = ListParams::default().labels(&format!("{DRILL_LABEL}={console}"));
    let mut items = clusters_api(client, namespace)
        .list(&params)
        .await
        .map_err(readable)?
        .items;
    items.sort_by_key(|c| std::cmp::Reverse(c.metadata.creation_timestamp.clone()));
    let events: Vec<Event> = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().fields("involvedObject.kind=Cluster,type=Warning"))
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    Ok(items
        .iter()
        .map(|c| {
            let name = c.metadata.name.clone().unwrap_or_default();
            let warning = events
                .iter()
                .filter(|e| e.involved_object.name.as_deref() == Some(name.as_str()))
                .max_by_key(|e| {
                    e.last_timestamp
                        .as_ref()
                        .map(|t| t.0)
                        .or_else(|| e.event_time.as_ref().map(|t| t.0))
                })
                .and_then(|e| e.message.clone());
            DrillView {
                source: label(c, SOURCE_LABEL).unwrap_or_default().to_string(),
                backup: annotation(c, BACKUP_ANNOTATION),
                started_by: annotation(c, STARTED_BY_ANNOTATION),
                created: c
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| when(&t.0.to_string()))
                    .unwrap_or_default(),
                phase: Some(text(&c.data, "/status/phase"))
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "Not started yet".into()),
                instances: c
                    .data
                    .pointer("/spec/instances")
                    .and_then(Value::as_i64)
                    .unwrap_or(1),
                ready: c
                    .data
                    .pointer("/status/readyInstances")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
                outcome: outcome(c, warning),
                name,
            }
        })
        .collect())
}

/// Who the API server says the user is (a SelfSubjectReview, which every authenticated
/// identity may make); the console's name for them when it cannot tell.
async fn username(client: &kube::Client, fallback: &str) -> String {
    Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .ok()
        .and_then(|r| r.status)
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_else(|| fallback.to_string())
}

/// Starts a drill of `backup`: it must be completed and belong to a Cluster the console
/// selects. Answers the new Cluster's name.
pub async fn start(
    client: &kube::Client,
    namespace: &str,
    console: &str,
    selector: Option<&str>,
    display: &str,
    backup: &str,
) -> Result<String, DrillError> {
    let found = backups_api(client, namespace)
        .get_opt(backup)
        .await
        .map_err(api_error)?
        .ok_or_else(|| DrillError::BackupNotFound(backup.to_string()))?;
    let phase = text(&found.data, "/status/phase");
    if phase != BACKUP_COMPLETED {
        return Err(DrillError::BackupNotCompleted(backup.to_string(), phase));
    }
    let cluster = text(&found.data, "/spec/cluster/name");
    let sources = source_names(client, namespace, selector)
        .await
        .map_err(DrillError::Api)?;
    if !sources.contains(&cluster) {
        return Err(DrillError::NotSelected(backup.to_string()));
    }
    let source = clusters_api(client, namespace)
        .get(&cluster)
        .await
        .map_err(api_error)?;
    let who = username(client, display).await;
    let name = drill_name(&cluster, &random_suffix());
    let object: DynamicObject =
        serde_json::from_value(drill_cluster(&source, backup, console, &who, &name))
            .map_err(|e| DrillError::Api(e.to_string()))?;
    clusters_api(client, namespace)
        .create(&PostParams::default(), &object)
        .await
        .map_err(api_error)?;
    Ok(name)
}

/// Deletes the drill `name`: only a Cluster labelled as this console's drill, and only that
/// very object (its uid as the delete's precondition).
pub async fn delete(
    client: &kube::Client,
    namespace: &str,
    console: &str,
    name: &str,
) -> Result<(), DrillError> {
    let api = clusters_api(client, namespace);
    let found = api.get(name).await.map_err(api_error)?;
    ensure_drill(&found, console)?;
    let params = DeleteParams {
        preconditions: found
            .metadata
            .uid
            .clone()
            .map(|uid| kube::api::Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
        ..DeleteParams::default()
    };
    api.delete(name, &params).await.map_err(api_error)?;
    Ok(())
}

/// The drills page's own styles (the shared stylesheet has no select box or form grid).
const STYLE: &str = "<style>
.drill-form { display:grid; grid-template-columns:1fr auto; gap:12px; align-items:end; margin-top:12px; }
select { font:inherit; width:100%; padding:6px 8px; border:1px solid var(--line); border-radius:6px; background:#fff; }
.drill-name { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:13.5px; }
.result { display:flex; flex-direction:column; gap:2px; }
.when { white-space:nowrap; }
.card h2 + table { margin-top:10px; }
</style>";

fn duration_text(seconds: i64) -> String {
    match seconds {
        0 => "in less than a second".into(),
        s if s < 60 => format!("in {s} s"),
        s => format!("in {} min {} s", s / 60, s % 60),
    }
}

fn result_cell(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Verified(took) => format!(
            "<div class=\"result\"><span><span class=\"pill ok\">restore verified</span></span><span class=\"muted\">{}</span></div>",
            took.map(duration_text).unwrap_or_else(|| "healthy".into())
        ),
        Outcome::Failed(reason) => format!(
            "<div class=\"result\"><span><span class=\"pill bad\">failed</span></span><span>{}</span></div>",
            esc(reason)
        ),
        Outcome::InProgress(warning) => format!(
            "<div class=\"result\"><span><span class=\"pill warn\">restoring</span></span>{}</div>",
            warning
                .as_deref()
                .map(|w| format!("<span class=\"muted\">{}</span>", esc(w)))
                .unwrap_or_default()
        ),
    }
}

/// The page: a form to start a drill, then the drills with their progress and result.
pub fn render(
    choices: &Result<Vec<BackupChoice>, String>,
    drills: &Result<Vec<DrillView>, String>,
    namespace: &str,
    csrf: &str,
) -> String {
    let mut out = format!(
        "{STYLE}<h1>Restore drills</h1><p class=\"lead\">A drill restores a backup into a new one-instance Cluster of <b>{}</b> to prove it can be restored, then you delete it. The Cluster is created and deleted as <em>you</em>: Kubernetes decides whether you may.</p>",
        esc(namespace)
    );
    let form = match choices {
        Err(e) => format!(
            "<div class=\"flash bad\" role=\"alert\">The backups cannot be read as you: {}</div>",
            esc(e)
        ),
        Ok(list) if list.is_empty() => {
            "<p class=\"muted\" style=\"margin:8px 0 0\">No completed backup of a cluster this console shows.</p>".into()
        }
        Ok(list) => {
            let mut groups = String::new();
            let mut current: Option<&str> = None;
            for b in list {
                if current != Some(b.cluster.as_str()) {
                    if current.is_some() {
                        groups.push_str("</optgroup>");
                    }
                    groups.push_str(&format!("<optgroup label=\"Cluster {}\">", esc(&b.cluster)));
                    current = Some(b.cluster.as_str());
                }
                let when = if b.stopped_at.is_empty() {
                    String::new()
                } else {
                    format!(" — completed {}", when(&b.stopped_at))
                };
                let method = if b.method.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", b.method)
                };
                groups.push_str(&format!(
                    "<option value=\"{}\">{}{}{}</option>",
                    esc(&b.name),
                    esc(&b.name),
                    esc(&when),
                    esc(&method)
                ));
            }
            groups.push_str("</optgroup>");
            format!(
                "<form method=\"post\" action=\"/drills/start\" class=\"drill-form\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><div><label for=\"backup\">Completed backup to restore</label><select id=\"backup\" name=\"backup\" required>{groups}</select></div><div><button type=\"submit\" class=\"primary\">Start drill</button></div></form>",
                esc(csrf)
            )
        }
    };
    out.push_str(&format!(
        "<section class=\"card\"><h2>Start a drill</h2>{form}</section>"
    ));
    let drills = match drills {
        Ok(d) => d,
        Err(e) => {
            out.push_str(&format!(
                "<div class=\"flash bad\" role=\"alert\">The drills cannot be read as you: {}</div>",
                esc(e)
            ));
            return out;
        }
    };
    if drills.is_empty() {
        out.push_str("<div class=\"card muted\">No drill yet.</div>");
        return out;
    }
    let rows: String = drills
        .iter()
        .map(|d| {
            let phase_class = match d.outcome {
                Outcome::Verified(_) => "ok",
                Outcome::Failed(_) => "bad",
                Outcome::InProgress(_) => "neutral",
            };
            format!(
                "<tr data-drill=\"{}\"><td><div class=\"drill-name\">{}</div><div class=\"muted\">Cluster {} · backup {}</div></td><td>{}<div class=\"muted when\">{}</div></td><td><span class=\"pill {phase_class}\">{}</span><div class=\"muted\">{} of {} ready</div></td><td>{}</td><td><form class=\"inline\" method=\"post\" action=\"/drills/{}/delete\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\" class=\"danger\">Delete</button></form></td></tr>",
                esc(&d.name),
                esc(&d.name),
                esc(&d.source),
                esc(&d.backup),
                esc(&d.started_by),
                esc(&d.created),
                esc(&d.phase),
                d.ready,
                d.instances,
                result_cell(&d.outcome),
                esc(&d.name),
                esc(csrf),
            )
        })
        .collect();
    out.push_str(&format!(
        "<section class=\"card\"><h2>Drills of this console</h2><table><tr><th>Drill</th><th>Started</th><th>Progress</th><th>Result</th><th></th></tr>{rows}</table></section>"
    ));
    out
}

#[derive(Deserialize)]
pub(crate) struct StartForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    backup: String,
}

impl CsrfToken for StartForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

#[derive(Deserialize)]
pub(crate) struct DeleteForm {
    #[serde(default)]
    csrf: String,
}

impl CsrfToken for DeleteForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(crate) async fn page(State(c): State<Shared>, headers: HeaderMap) -> Response {
    // A reference the body's future may take along.
    let c = &*c;
    user_page(
        c,
        &headers,
        "Restore drills",
        "drills",
        |client, session| async move {
            let env = &c.env;
            let (choices, drills) = match client {
                Ok(client) => (
                    choices(&client, &env.namespace, env.cluster_selector.as_deref()).await,
                    list(&client, &env.namespace, &env.name).await,
                ),
                Err(e) => (Err(e.clone()), Err(e)),
            };
            render(&choices, &drills, &env.namespace, &session.csrf)
        },
    )
    .await
}

pub(crate) async fn start_drill(State(c): State<Shared>, post: SignedPost<StartForm>) -> Response {
    let env = &c.env;
    let backup = post.form.backup.trim().to_string();
    let outcome = match c.user_client(&post.session) {
        Ok(client) => {
            start(
                &client,
                &env.namespace,
                &env.name,
                env.cluster_selector.as_deref(),
                &post.session.display,
                &backup,
            )
            .await
        }
        Err(e) => Err(DrillError::Api(e)),
    };
    let flash = match outcome {
        Ok(name) => {
            tracing::info!(user = %post.session.display, client = %post.client, forwarded = post.forwarded, %backup, drill = %name, "restore drill started");
            (
                true,
                format!("Drill {name} started: restoring backup {backup}"),
            )
        }
        Err(e) => {
            tracing::info!(user = %post.session.display, client = %post.client, forwarded = post.forwarded, %backup, reason = %e, "restore drill refused");
            (false, format!("Refused: {e}"))
        }
    };
    c.sessions().set_flash(&post.id, Some(flash));
    redirect_with_cookies("/drills", &[])
}

pub(crate) async fn delete_drill(
    State(c): State<Shared>,
    Path(name): Path<String>,
    post: SignedPost<DeleteForm>,
) -> Response {
    let env = &c.env;
    let outcome = match c.user_client(&post.session) {
        Ok(client) => delete(&client, &env.namespace, &env.name, &name).await,
        Err(e) => Err(DrillError::Api(e)),
    };
    let flash = match outcome {
        Ok(()) => {
            tracing::info!(user = %post.session.display, client = %post.client, forwarded = post.forwarded, drill = %name, "restore drill deleted");
            (true, format!("Drill {name} deleted"))
        }
        Err(e) => {
            tracing::info!(user = %post.session.display, client = %post.client, forwarded = post.forwarded, drill = %name, reason = %e, "restore drill deletion refused");
            (false, format!("Refused: {e}"))
        }
    };
    c.sessions().set_flash(&post.id, Some(flash));
    redirect_with_cookies("/drills", &[])
}

/// The routes, added only when drills are enabled.
pub(crate) fn routes(app: axum::Router<Shared>) -> axum::Router<Shared> {
    app.route("/drills", axum::routing::get(page))
        .route("/drills/start", axum::routing::post(start_drill))
        .route("/drills/{name}/delete", axum::routing::post(delete_drill))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn names_are_unique_and_within_cnpgs_limit() {
        assert_eq!(drill_name("orders", "b2c4d"), "orders-drill-b2c4d");
        let long = "a".repeat(60);
        let n = drill_name(&long, "b2c4d");
        assert_eq!(n.len(), MAX_CLUSTER_NAME);
        assert!(n.ends_with("-drill-b2c4d"));
        assert_eq!(
            drill_name(&format!("{}-x", "a".repeat(37)), "bbbbb").len(),
            49
        );
        let (a, b) = (random_suffix(), random_suffix());
        assert_eq!(a.len(), 5);
        assert!(a.bytes().all(|c| SUFFIX_ALPHABET.contains(&c)));
        assert!(a != b || random_suffix() != a);
    }

    #[test]
    fn the_drill_restores_the_backup_with_the_sources_image_and_storage() {
        let source = obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "orders"},
            "spec": {"instances": 3, "imageName": "ghcr.io/cloudnative-pg/postgresql:16.4",
                "storage": {"size": "5Gi", "storageClass": "fast", "resizeInUseVolumes": true},
                "backup": {"barmanObjectStore": {"destinationPath": "s3://b"}}}}),
        );
        let c = drill_cluster(
            &source,
            "orders-nightly",
            "console",
            "oidc:alice",
            "orders-drill-bbbbb",
        );
        assert_eq!(
            c["spec"],
            json!({"instances": 1, "imageName": "ghcr.io/cloudnative-pg/postgresql:16.4",
                "storage": {"size": "5Gi", "storageClass": "fast"},
                "bootstrap": {"recovery": {"backup": {"name": "orders-nightly"}}}})
        );
        assert_eq!(c["metadata"]["labels"][DRILL_LABEL], "console");
        assert_eq!(c["metadata"]["labels"][SOURCE_LABEL], "orders");
        assert_eq!(
            c["metadata"]["annotations"][BACKUP_ANNOTATION],
            "orders-nightly"
        );
        assert_eq!(
            c["metadata"]["annotations"][STARTED_BY_ANNOTATION],
            "oidc:alice"
        );
        let bare = obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "x"}, "spec": {}}),
        );
        let c = drill_cluster(&bare, "b", "console", "u", "x-drill-bbbbb");
        assert!(c["spec"].get("imageName").is_none() && c["spec"].get("storage").is_none());
    }

    #[test]
    fn only_this_consoles_drills_may_be_deleted() {
        let mine = obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "d", "labels": {DRILL_LABEL: "console"}}}),
        );
        assert_eq!(ensure_drill(&mine, "console"), Ok(()));
        assert!(matches!(
            ensure_drill(&mine, "other"),
            Err(DrillError::NotADrill(..))
        ));
        let plain = obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "orders", "labels": {SOURCE_LABEL: "console"}}}),
        );
        let refused = ensure_drill(&plain, "console").unwrap_err().to_string();
        assert!(
            refused.contains("orders is not a restore drill"),
            "{refused}"
        );
    }

    #[test]
    fn outcomes_follow_the_clusters_phase() {
        let verified = obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "d", "creationTimestamp": "2026-12-07T10:00:00Z"},
            "spec": {"instances": 1},
            "status": {"phase": PHASE_HEALTHY, "readyInstances": 1, "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-07T10:01:30Z"}]}}),
        );
        assert_eq!(outcome(&verified, None), Outcome::Verified(Some(90)));
        let failed = obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "d"}, "spec": {"instances": 1},
            "status": {"phase": "Cluster is unrecoverable and needs manual intervention",
                "phaseReason": "restore job failed"}}),
        );
        assert_eq!(
            outcome(&failed, None),
            Outcome::Failed("restore job failed".into())
        );
        let waiting = obj(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "d"}, "spec": {"instances": 1},
            "status": {"phase": "Setting up primary", "readyInstances": 0}}),
        );
        assert_eq!(
            outcome(&waiting, Some("Backup object \"t/x\" is missing".into())),
            Outcome::InProgress(Some("Backup object \"t/x\" is missing".into()))
        );
        assert_eq!(duration_text(90), "in 1 min 30 s");
        assert_eq!(duration_text(0), "in less than a second");
        assert_eq!(when("2026-12-07T03:00:00Z"), "2026-12-07 03:00 UTC");
        assert_eq!(when("soon"), "soon");
    }

    #[test]
    fn the_link_is_shown_only_when_drills_are_enabled() {
        use crate::html;
        let chrome = |drills| html::Chrome {
            user: Some("alice"),
            csrf: Some("t"),
            namespace: "team",
            active: "",
            drills,
            pod_logs: false,
        };
        assert!(html::page("x", &chrome(true), "").contains("href=\"/drills\""));
        assert!(!html::page("x", &chrome(false), "").contains("/drills"));
    }

    #[test]
    fn the_page_escapes_and_carries_the_csrf_token() {
        let choices = Ok(vec![BackupChoice {
            cluster: "orders".into(),
            name: "<b>".into(),
            stopped_at: String::new(),
            method: String::new(),
        }]);
        let drills = Ok(vec![DrillView {
            name: "orders-drill-bbbbb".into(),
            source: "orders".into(),
            backup: "<b>".into(),
            started_by: "oidc:alice".into(),
            created: String::new(),
            phase: PHASE_HEALTHY.into(),
            instances: 1,
            ready: 1,
            outcome: Outcome::Verified(Some(3)),
        }]);
        let html = render(&choices, &drills, "team", "tok\"");
        assert!(!html.contains("<b>\"") && html.contains("&lt;b&gt;"));
        assert_eq!(html.matches("value=\"tok&quot;\"").count(), 2);
        assert!(html.contains("restore verified") && html.contains("in 3 s"));
    }
}
