//! The corpus of invalid custom resources (`tests/corpus/invalid/`, one case per entry of its
//! `index.yaml`) applied with `kubectl apply` to the embedded API server while the operator runs:
//! each input is refused with a message naming the field, or accepted and then given the
//! condition the index names (a registered reason, never `ReconcileError`). Afterwards no
//! object actor was ever restarted, every kind supervisor is alive, and valid objects created
//! next still converge.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use pgtoolbox_operator::testing::conditions::Reason;
use serde::Deserialize;
use serde_json::Value;

use crate::console_support::{settings, start_probed, with_controllers};
use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_support::namespace;

const GROUP: &str = "pgtoolbox.fyannk.dev";
/// How long an accepted input may take to get its condition.
const SETTLE: Duration = Duration::from_secs(60);

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Case {
    file: String,
    before: Option<String>,
    status_patch: Option<String>,
    refused: Option<Refusal>,
    condition: Option<Expected>,
}

#[derive(Debug, Deserialize)]
struct Refusal {
    field: String,
    message: String,
}

#[derive(Debug, Deserialize)]
struct Expected {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    reason: String,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/invalid")
}

/// `<<N*TEXT>>`: TEXT N times; `<<N,TEXT>>`: N copies joined by ", "; `{i}` is the copy's index.
fn expand(text: &str) -> String {
    let pattern = regex::Regex::new(r"<<(\d+)([*,])(.*?)>>").expect("macro pattern");
    pattern
        .replace_all(text, |c: &regex::Captures<'_>| {
            let n: usize = c[1].parse().expect("a count");
            let copies: Vec<String> = (0..n)
                .map(|i| c[3].replace("{i}", &i.to_string()))
                .collect();
            copies.join(if &c[2] == "," { ", " } else { "" })
        })
        .into_owned()
}

/// The custom resource of a corpus file (its last document of our group): kind and name.
fn subject_of(text: &str) -> (String, String) {
    let mut found = None;
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).expect("corpus files are YAML");
        let api = value["apiVersion"].as_str().unwrap_or_default();
        if api.starts_with(GROUP) {
            found = Some((
                value["kind"].as_str().unwrap_or_default().to_owned(),
                value["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ));
        }
    }
    found.expect("a corpus file holds one of our custom resources")
}

fn api(client: &kube::Client, kind: &str, ns: &str) -> Api<DynamicObject> {
    let plural = match kind {
        "PgAdminAccess" => "pgadminaccesses".to_owned(),
        other => format!("{}s", other.to_lowercase()),
    };
    let gvk = GroupVersionKind::gvk(GROUP, "v1alpha1", kind);
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, &plural),
    )
}

/// The object's conditions by type: (status, reason, message).
fn conditions(obj: &DynamicObject) -> BTreeMap<String, (String, String, String)> {
    let text = |c: &Value, k: &str| c[k].as_str().unwrap_or_default().to_owned();
    obj.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                text(c, "type"),
                (text(c, "status"), text(c, "reason"), text(c, "message")),
            )
        })
        .collect()
}

async fn kubectl(k: &Arc<Kubectl>, args: Vec<String>) -> (bool, String) {
    let k = k.clone();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        k.run(&args)
    })
    .await
    .expect("kubectl ran")
}

async fn apply(k: &Arc<Kubectl>, ns: &str, name: &str, text: &str) -> (bool, String) {
    let path = k.file(&format!("{ns}-{name}"), &expand(text));
    kubectl(
        k,
        vec!["apply".into(), "-n".into(), ns.into(), "-f".into(), path],
    )
    .await
}

/// An accepted case waiting for its condition.
struct Pending {
    file: String,
    kind: String,
    ns: String,
    name: String,
    expected: Expected,
}

/// Whether the object shows the expected condition; a sentence on what it shows otherwise.
fn judge(obj: &DynamicObject, expected: &Expected) -> Result<(), String> {
    let all = conditions(obj);
    if let Some((_, reason, message)) = all.get("Ready")
        && reason == "ReconcileError"
    {
        return Err(format!("Ready is ReconcileError: {message}"));
    }
    for (type_, (_, reason, _)) in &all {
        if Reason::parse(reason).is_none() {
            return Err(format!("{type_} has the unregistered reason {reason}"));
        }
    }
    match all.get(&expected.type_) {
        Some((status, reason, _)) if *status == expected.status && *reason == expected.reason => {
            Ok(())
        }
        _ => Err(format!("conditions {all:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_invalid_input_is_refused_or_gets_a_clear_condition_and_nothing_crashes() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the invalid-input corpus");
        return;
    }
    let mut env = start_probed(with_controllers(), settings()).await;
    // The operator keeps its EvidenceAgent CA in its own namespace, as an installation has it.
    namespace(&env.client, &settings().operator_namespace).await;
    let k = Arc::new(Kubectl::for_sim(&env.sim));
    let index = std::fs::read_to_string(corpus_dir().join("index.yaml")).expect("index");
    let cases: Vec<Case> = serde_yaml_ng::from_str(&index).expect("index entries");
    let read = |file: &str| std::fs::read_to_string(corpus_dir().join(file)).expect(file);

    let mut failures = Vec::new();
    let mut pending = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let ns = format!("corpus-{i}");
        namespace(&env.client, &ns).await;
        let text = read(&case.file);
        if let Some(before) = &case.before {
            let (ok, out) = apply(&k, &ns, before, &read(before)).await;
            assert!(ok, "{}: `before` {before} was refused: {out}", case.file);
        }
        let (ok, out) = apply(&k, &ns, &case.file, &text).await;
        match (&case.refused, &case.condition) {
            (Some(r), None) => {
                let names = out.contains(&r.field) && out.contains(&r.message);
                if ok || !names {
                    failures.push(format!(
                        "{}: expected a refusal naming {} ({}); kubectl {}: {}",
                        case.file,
                        r.field,
                        r.message,
                        if ok { "succeeded" } else { "failed" },
                        out.chars().take(600).collect::<String>()
                    ));
                }
            }
            (None, Some(expected)) => {
                if !ok {
                    failures.push(format!("{}: refused: {out}", case.file));
                    continue;
                }
                let (kind, name) = subject_of(&expand(&text));
                if let Some(patch) = &case.status_patch {
                    let args = vec![
                        "patch".to_owned(),
                        kind.to_lowercase(),
                        name.clone(),
                        "-n".to_owned(),
                        ns.clone(),
                        "--subresource=status".to_owned(),
                        "--type=merge".to_owned(),
                        "-p".to_owned(),
                        patch.clone(),
                    ];
                    let (ok, out) = kubectl(&k, args).await;
                    assert!(ok, "{}: status patch refused: {out}", case.file);
                }
                pending.push(Pending {
                    file: case.file.clone(),
                    kind,
                    ns,
                    name,
                    expected: Expected {
                        type_: expected.type_.clone(),
                        status: expected.status.clone(),
                        reason: expected.reason.clone(),
                    },
                });
            }
            _ => panic!("{}: say either `refused` or `condition`", case.file),
        }
    }

    // Every accepted input reaches its condition (polled together, so the wait is the slowest).
    let deadline = tokio::time::Instant::now() + SETTLE;
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    while !pending.is_empty() && tokio::time::Instant::now() < deadline {
        let mut still = Vec::new();
        for p in pending {
            let verdict = match api(&env.client, &p.kind, &p.ns).get_opt(&p.name).await {
                Ok(Some(obj)) => judge(&obj, &p.expected),
                Ok(None) => Err("gone".to_owned()),
                Err(e) => Err(format!("read failed: {e}")),
            };
            if let Err(why) = verdict {
                last.insert(p.file.clone(), why);
                still.push(p);
            }
        }
        pending = still;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for p in &pending {
        failures.push(format!(
            "{}: expected {} {} {}; {}",
            p.file,
            p.expected.type_,
            p.expected.status,
            p.expected.reason,
            last.get(&p.file).map(String::as_str).unwrap_or_default()
        ));
    }

    // Nothing crashed: no object actor restarted, every kind supervisor and the router alive.
    let shared = env.shared.as_ref().expect("shared actors");
    let metrics = shared.shared.metrics.encode().expect("metrics");
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("pgtoolbox_object_actor_restarts_total"))
    {
        if !line.ends_with(" 0") {
            failures.push(format!("an object actor was restarted: {line}"));
        }
    }
    assert!(shared.router().is_some(), "the secret router is running");
    let operator = env.operator.as_mut().expect("operator");
    if let Some(kind) = operator.failed().now_or_never() {
        failures.push(format!("the {kind} supervisor ended"));
    }

    // Valid objects created afterwards still converge.
    let valid = "valid";
    namespace(&env.client, valid).await;
    let console = "apiVersion: pgtoolbox.fyannk.dev/v1alpha1\nkind: PgToolBoxConsole\nmetadata:\n  name: console\nspec:\n  image: ghcr.io/pgtoolbox/console:0.1.0\n";
    // The request names `view`, a ClusterRole every real cluster has (its bootstrap policy):
    // without it the request says ClusterRoleNotFound.
    let view = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: view\nrules: []\n";
    for (file, text) in [
        ("view.yaml", view.to_owned()),
        ("pgar-valid.yaml", read("pgar-valid.yaml")),
        ("console.yaml", console.to_owned()),
    ] {
        let (ok, out) = apply(&k, valid, file, &text).await;
        assert!(ok, "{file}: {out}");
    }
    for (kind, name) in [("PgAccessRequest", "req"), ("PgToolBoxConsole", "console")] {
        let objects = api(&env.client, kind, valid);
        crate::shared_support::eventually(SETTLE, &format!("{kind} {name} Ready"), || {
            let objects = objects.clone();
            async move {
                objects.get_opt(name).await.ok().flatten().is_some_and(|o| {
                    conditions(&o)
                        .get("Ready")
                        .is_some_and(|(status, _, _)| status == "True")
                })
            }
        })
        .await;
    }
    env.stop_operator().await;
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
