//! Helpers shared by the sim tests.

#![allow(
    dead_code,
    reason = "two test binaries include this file (the sim's and the operator's); each uses part of it"
)]

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::{Value, json};

pub async fn start() -> (Sim, kube::Client) {
    start_with(SimConfig::default()).await
}

pub async fn start_with(config: SimConfig) -> (Sim, kube::Client) {
    let sim = Sim::start(config).await.expect("sim starts");
    let client = sim.client();
    (sim, client)
}

pub fn cnpg_clusters(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("postgresql.cnpg.io", "v1", "Cluster");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "clusters"),
    )
}

pub fn cluster(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("valid cluster")
}

/// Creates the namespace; one a test made already (before the operator starts) is kept.
pub async fn namespace(client: &kube::Client, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("namespace {name} not created: {e}"),
    }
}

/// The HTTP code of a plain GET.
pub async fn get_code(client: &kube::Client, path: &str) -> u16 {
    raw(client, "GET", path, "application/json", vec![]).await.0
}

/// The resourceVersion of a list: where a watch starts.
pub async fn list_version<K>(api: &Api<K>) -> String
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&Default::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("list version")
}

/// Raw HTTP against the sim (for bad input and admin calls): returns status and body JSON.
pub async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let (status, _, body) = raw_with_warnings(client, method, path, content_type, body).await;
    (status, body)
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> axum::http::Response<kube::client::Body> {
    let mut req = axum::http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req.body(body).expect("request");
    client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("answer")
}

/// A bodiless request with these headers, and its answer as sent: its code, `Content-Type`
/// and body text.
pub async fn raw_text(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let resp = send(client, method, path, headers, Vec::new()).await;
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = resp.into_body().collect_bytes().await.expect("body");
    (
        status,
        content_type,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// As [`raw`], with the answer's `Warning` headers too.
pub async fn raw_with_warnings(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Vec<String>, Value) {
    let resp = send(
        client,
        method,
        path,
        &[("content-type", content_type)],
        body,
    )
    .await;
    let status = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().expect("ascii").to_string())
        .collect();
    let bytes = resp.into_body().collect_bytes().await.expect("body");
    (
        status,
        warnings,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The error code and reason of a failed kube call.
pub fn code_of<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> (u16, String) {
    let (code, reason, _) = refusal(r);
    (code, reason)
}

/// The error code, reason and message of a failed kube call.
pub fn refusal<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> (u16, String, String) {
    match r {
        Err(kube::Error::Api(s)) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A client script's run (tests/python, tests/js) passed: its last line is a JSON summary of
/// the checks (`passed`: names, `failed`: name -> why), none failed and some passed.
pub fn client_checks_passed(client: &str, output: &std::process::Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!("no summary from the {client} script\nstdout: {stdout}\nstderr: {stderr}")
        });
    let passed = summary["passed"].as_array().map_or(0, Vec::len);
    let failed = summary["failed"].as_object().cloned().unwrap_or_default();
    eprintln!(
        "{client} client: {passed} checks passed, {} failed",
        failed.len()
    );
    assert!(passed > 0, "{summary}\nstderr: {stderr}");
    assert!(
        failed.is_empty(),
        "failed checks: {failed:#?}\nstderr: {stderr}"
    );
}
