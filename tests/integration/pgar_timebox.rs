//! Issue 45: nothing stretches a request's time box. One request the operator cannot decode (a
//! time past its time type's range) never stops the others, and loses its own RoleBindings
//! (fail closed); the CRD refuses such a time from now on.
//!
//! A real API server stores `expiresAt: 9999-12-31T23:59:59Z` (a valid RFC 3339 date-time);
//! the embedded one refused it in its date-time format check when this was written. To store
//! one as a cluster holding it from before the bound would, these tests install the
//! PgAccessRequest CRD without the bound and without the format on `expiresAt` (the API server
//! then keeps the string as given).

use kube::api::{Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::{PgAccessRequest, render_crds_yaml};
use serde_json::json;

use super::pgar_support::{self as support, Env, NS};
use super::wait_support::wait_for;

/// The time past the operator's range, as a real API server stores it.
const FOREVER: &str = "9999-12-31T23:59:59Z";

/// Our CRDs with the PgAccessRequest's `expiresAt` unchecked: no format, no bound.
fn crds_without_the_bound() -> String {
    let rendered = render_crds_yaml().expect("CRDs render");
    let mut out = Vec::new();
    let mut lines = rendered.lines();
    let (mut in_expires_at, mut format_dropped, mut bound_dropped) = (None, false, false);
    while let Some(line) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        if line.trim_start() == "expiresAt:" {
            in_expires_at = Some(indent);
        } else if in_expires_at.is_some_and(|at| indent <= at) {
            in_expires_at = None;
        }
        if in_expires_at.is_some() && line.trim_start() == "format: date-time" {
            format_dropped = true;
            continue;
        }
        if line.contains("message: 'expiresAt must be before") {
            // The rule's second line.
            lines.next();
            bound_dropped = true;
            continue;
        }
        out.push(line);
    }
    assert!(
        format_dropped,
        "expiresAt has no date-time format in the CRD"
    );
    assert!(bound_dropped, "the expiresAt bound is not in the CRD");
    out.join("\n")
}

async fn raw_request(env: &Env, name: &str, expires_at: &str) {
    let obj = json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAccessRequest",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "subject": {"kind": "User", "name": "alice"},
            "clusterRole": support::ROLE,
            "expiresAt": expires_at,
            "reason": "incident 42",
        },
    });
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        env.client.clone(),
        NS,
        &kube::api::ApiResource::erase::<PgAccessRequest>(&()),
    );
    let obj: kube::api::DynamicObject = serde_json::from_value(obj).expect("an object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("the API server stores the request");
    // Approved by someone else, as a console records it (the status needs no decoding).
    let status = json!({"status": {"phase": "Approved", "approver": "bob"}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("decision recorded");
}

async fn wait_undecodable_counted(env: &Env, count: u32) {
    let series = "pgtoolbox_undecodable_objects{kind=\"PgAccessRequest\"}";
    wait_for(&format!("{series} = {count}"), || async {
        let text = env.metrics_text();
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse::<f64>().ok());
        if value == Some(f64::from(count)) {
            Ok(())
        } else {
            Err(format!("{series} is {value:?}"))
        }
    })
    .await
}

/// At start: the kind's list holds one request past the range. The others are reconciled (one
/// expires on time), the bad one's RoleBinding is deleted, a Warning Event says why, and the
/// metric counts it.
#[tokio::test]
async fn an_undecodable_request_never_stops_the_others_and_loses_its_grant() {
    let mut env = support::start_with_crds(crds_without_the_bound()).await;
    raw_request(&env, "forever", FOREVER).await;
    env.bind("forever", &["alice"], support::ROLE).await;
    env.request("soon", 3).await;
    env.approve("soon", "bob").await;
    env.request("pending", 3600).await;

    env.start_operator().await;
    env.wait_reason("pending", "RoleBindingSynced", "AwaitingDecision")
        .await;
    env.wait_reason("soon", "RoleBindingSynced", "AccessExpired")
        .await;
    env.wait_binding_gone("pgar-soon").await;
    env.wait_binding_gone("pgar-forever").await;
    let (kind, _, note) = env.wait_event("forever", "ConfigurationInvalid").await;
    assert_eq!(kind, "Warning");
    assert!(note.contains("cannot decode"), "{note}");
    assert!(note.contains("fail closed"), "{note}");
    wait_undecodable_counted(&env, 1).await;
    // Reported on itself too: its status says so (read untyped: it cannot be decoded).
    let api = untyped(&env);
    wait_for(
        "forever: ConfigurationValid=False ConfigurationInvalid",
        || async {
            let obj = api.get("forever").await.expect("readable");
            let conditions = obj.data["status"]["conditions"].as_array().cloned();
            let config = conditions
                .iter()
                .flatten()
                .find(|c| c["type"] == "ConfigurationValid")
                .cloned();
            match config {
                Some(c) if c["status"] == "False" && c["reason"] == "ConfigurationInvalid" => {
                    let message = c["message"].as_str().unwrap_or_default();
                    if message.contains("cannot decode") {
                        Ok(())
                    } else {
                        Err(format!("message: {message}"))
                    }
                }
                other => Err(format!("ConfigurationValid: {other:?}")),
            }
        },
    )
    .await;
    env.stop_operator().await;
}

fn untyped(env: &Env) -> kube::Api<kube::api::DynamicObject> {
    kube::Api::namespaced_with(
        env.client.clone(),
        NS,
        &kube::api::ApiResource::erase::<PgAccessRequest>(&()),
    )
}

/// While the operator runs: a request past the range appears with its RoleBinding. The binding
/// is deleted (fail closed), and the kind goes on (a later request is reconciled).
#[tokio::test]
async fn an_undecodable_request_seen_while_running_loses_its_grant() {
    let mut env = support::start_with_crds(crds_without_the_bound()).await;
    env.start_operator().await;
    env.request("before", 3600).await;
    env.wait_reason("before", "RoleBindingSynced", "AwaitingDecision")
        .await;
    raw_request(&env, "forever", FOREVER).await;
    env.bind("forever", &["alice"], support::ROLE).await;
    env.wait_binding_gone("pgar-forever").await;
    wait_undecodable_counted(&env, 1).await;
    env.request("after", 3600).await;
    env.wait_reason("after", "RoleBindingSynced", "AwaitingDecision")
        .await;
    env.stop_operator().await;
}

/// The CRD as shipped refuses a time the operator cannot represent: the CEL bound on
/// `expiresAt` (9999-06-01 passes the date-time format check, and the bound refuses it), and
/// whichever of the two answers for the end of RFC 3339's range.
#[tokio::test]
async fn the_crd_refuses_an_expiry_past_the_operators_range() {
    let env = support::start_without_operator().await;
    for (name, at) in [("late", "9999-06-01T00:00:00Z"), ("forever", FOREVER)] {
        let obj: PgAccessRequest = serde_json::from_value(json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
            "kind": "PgAccessRequest",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "subject": {"kind": "User", "name": "alice"},
                "clusterRole": support::ROLE,
                "expiresAt": "2030-01-01T00:00:00Z",
            },
        }))
        .expect("valid request");
        let mut value = serde_json::to_value(&obj).expect("serialised");
        value["spec"]["expiresAt"] = json!(at);
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
            env.client.clone(),
            NS,
            &kube::api::ApiResource::erase::<PgAccessRequest>(&()),
        );
        let dynamic: kube::api::DynamicObject = serde_json::from_value(value).expect("object");
        match api.create(&PostParams::default(), &dynamic).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{name}: {status:?}");
                if name == "late" {
                    assert!(
                        status
                            .message
                            .contains("expiresAt must be before 9999-01-01"),
                        "{}",
                        status.message
                    );
                }
            }
            other => panic!("{name}: expiresAt {at} admitted: {other:?}"),
        }
    }
}

/// The PgAccessRequest CRD as a cluster that replaced it by an earlier version has it: no
/// bound on the decision times in status.
fn request_crd_without_the_decision_bound() -> serde_json::Value {
    let rendered = render_crds_yaml().expect("CRDs render");
    let document = rendered
        .split("---\n")
        .find(|d| d.contains("\n  names:\n") && d.contains("kind: PgAccessRequest\n"))
        .expect("the PgAccessRequest CRD");
    let lines: Vec<&str> = document.lines().collect();
    let (mut out, mut dropped, mut i) = (Vec::new(), 0, 0);
    while i < lines.len() {
        let bound = lines[i].trim_start() == "x-kubernetes-validations:"
            && lines
                .get(i + 1)
                .is_some_and(|l| l.contains("message: 'must be before 9999-01-01"));
        if bound {
            // The list's one rule: its message and rule lines.
            i += 3;
            dropped += 1;
            continue;
        }
        out.push(lines[i]);
        i += 1;
    }
    assert!(dropped >= 1, "the decision bound is not in the CRD");
    serde_yaml_ng::from_str(&out.join("\n")).expect("the CRD parses")
}

/// Replaces the PgAccessRequest CRD (a PUT: whatever the new one leaves out goes).
async fn replace_request_crd(env: &Env, crd: serde_json::Value) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(env.client.clone());
    let name = "pgaccessrequests.pgtoolbox.fyannk.dev";
    let current = api.get(name).await.expect("the CRD is installed");
    let mut crd: CustomResourceDefinition = serde_json::from_value(crd).expect("a CRD");
    crd.metadata.resource_version = current.metadata.resource_version;
    api.replace(name, &PostParams::default(), &crd)
        .await
        .expect("the CRD is replaced");
}

/// While the operator runs, a granted request turns undecodable: the CRD is replaced by one
/// without the bound on the decision times, and a decision time past the operator's range is
/// written. Its RoleBinding is deleted at once, without a restart (fail closed), and it says so
/// (a Warning Event, the metric); another granted request of the namespace keeps its grant, and
/// a new one is reconciled. Once it decodes again it is reconciled as before.
#[tokio::test]
async fn a_granted_request_that_turns_undecodable_loses_its_grant_at_once() {
    let mut env = support::start().await;
    for name in ["held", "kept"] {
        env.request(name, 3600).await;
        env.approve(name, "bob").await;
        env.wait_reason(name, "RoleBindingSynced", "AccessGranted")
            .await;
    }
    replace_request_crd(&env, request_crd_without_the_decision_bound()).await;
    let api = untyped(&env);
    let forever = json!({"status": {"decidedAt": FOREVER}});
    api.patch_status("held", &PatchParams::default(), &Patch::Merge(&forever))
        .await
        .expect("stored without the bound");

    env.wait_binding_gone("pgar-held").await;
    let (kind, _, note) = env.wait_event("held", "ConfigurationInvalid").await;
    assert_eq!(kind, "Warning");
    assert!(note.contains("cannot decode"), "{note}");
    assert!(note.contains("fail closed"), "{note}");
    wait_undecodable_counted(&env, 1).await;
    env.request("after", 3600).await;
    env.wait_reason("after", "RoleBindingSynced", "AwaitingDecision")
        .await;
    assert!(
        env.binding_exists("pgar-kept").await,
        "the other request's grant was deleted"
    );
    let kept = env.requests().get("kept").await.expect("decodable");
    let synced = support::condition_of(&kept, "RoleBindingSynced").map(|c| c.reason.clone());
    assert_eq!(synced.as_deref(), Some("AccessGranted"));

    // Decodable again: reconciled as any request (approved, its grant gone), and a new grant
    // is kept.
    let again = json!({"status": {"decidedAt": "2026-01-01T00:00:00Z"}});
    api.patch_status("held", &PatchParams::default(), &Patch::Merge(&again))
        .await
        .expect("decision time written");
    env.wait_reason("held", "ConfigurationValid", "AsExpected")
        .await;
    env.wait_reason("held", "RoleBindingSynced", "RoleBindingMissing")
        .await;
    wait_undecodable_counted(&env, 0).await;
    env.bind("held", &["alice"], support::ROLE).await;
    env.wait_reason("held", "RoleBindingSynced", "AccessGranted")
        .await;
    env.stop_operator().await;
}
