//! Pod Security Admission in the simulated cluster: the namespace's labels refuse a Pod with
//! kube-apiserver's 403, warn about Pods and workload templates, and a ReplicaSet whose Pods
//! are refused reports `FailedCreate`.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::sim_cluster_support::cluster;
use crate::sim_support::{namespace, raw_with_warnings};
use crate::wait_support::{until, wait_core_event};

const BARE_RESTRICTED: &str = "allowPrivilegeEscalation != false (container \"app\" must set securityContext.allowPrivilegeEscalation=false), \
    unrestricted capabilities (container \"app\" must set securityContext.capabilities.drop=[\"ALL\"]), \
    runAsNonRoot != true (pod or container \"app\" must set securityContext.runAsNonRoot=true), \
    seccompProfile (pod or container \"app\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

async fn label(client: &kube::Client, ns: &str, labels: Value) {
    namespace(client, ns).await;
    Api::<Namespace>::all(client.clone())
        .patch(
            ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": labels}})),
        )
        .await
        .expect("namespace labelled");
}

fn pod(name: &str, container_context: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "app", "image": "nginx", "securityContext": container_context}]}})
}

fn restricted_pod(name: &str) -> Value {
    let mut p = pod(
        name,
        json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}),
    );
    p["spec"]["securityContext"] =
        json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}});
    p
}

async fn post(client: &kube::Client, path: &str, body: &Value) -> (u16, Vec<String>, Value) {
    raw_with_warnings(
        client,
        "POST",
        path,
        "application/json",
        body.to_string().into_bytes(),
    )
    .await
}

/// A `Warning` header as the server writes it.
fn warning(text: &str) -> String {
    format!("299 - \"{}\"", text.replace('"', "\\\""))
}

#[tokio::test]
async fn enforce_refuses_pods_and_workload_templates_only_warn() {
    let (_sim, client) = cluster("psa").await;
    label(
        &client,
        "psa",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    )
    .await;
    let pods = "/api/v1/namespaces/psa/pods";

    let (code, warnings, body) = post(&client, pods, &pod("bare", json!({}))).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(body["details"], json!({"name": "bare", "kind": "pods"}));
    assert_eq!(
        body["message"],
        format!(
            "pods \"bare\" is forbidden: violates PodSecurity \"restricted:latest\": {BARE_RESTRICTED}"
        )
    );
    assert!(warnings.is_empty(), "{warnings:?}");

    let (code, warnings, body) = post(&client, pods, &restricted_pod("fine")).await;
    assert_eq!(code, 201, "{body}");
    assert!(warnings.is_empty(), "{warnings:?}");

    // A Deployment of such Pods is stored with a warning; its ReplicaSet's creates are refused.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}});
    let (code, warnings, body) = post(
        &client,
        "/apis/apps/v1/namespaces/psa/deployments",
        &deployment,
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        warnings,
        vec![warning(&format!(
            "would violate PodSecurity \"restricted:latest\": {BARE_RESTRICTED}"
        ))]
    );
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "psa");
    let d = until(&deps, "web", "ReplicaFailure", |d: &Deployment| {
        serde_json::to_value(d).ok().is_some_and(|v| {
            v.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "ReplicaFailure"))
        })
    })
    .await;
    let v = serde_json::to_value(&d).expect("json");
    let failure = v["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "ReplicaFailure")
        .expect("ReplicaFailure")
        .clone();
    assert_eq!(failure["reason"], "FailedCreate");
    let message = failure["message"].as_str().expect("message");
    assert!(message.starts_with("pods \"web-"), "{message}");
    assert!(
        message.ends_with(&format!(
            "is forbidden: violates PodSecurity \"restricted:latest\": {BARE_RESTRICTED}"
        )),
        "{message}"
    );
    let rs = Api::<ReplicaSet>::namespaced(client.clone(), "psa")
        .list(&ListParams::default())
        .await
        .expect("ReplicaSets")
        .items
        .remove(0);
    let event = wait_core_event(
        &client,
        "psa",
        rs.metadata.name.as_deref().expect("named"),
        "FailedCreate",
    )
    .await;
    assert!(event.contains("violates PodSecurity"), "{event}");
}

#[tokio::test]
async fn warn_and_a_pinned_version_answer_as_kube_apiserver() {
    let (_sim, client) = cluster("psa-warn").await;
    label(
        &client,
        "psa-warn",
        json!({"pod-security.kubernetes.io/enforce": "baseline",
               "pod-security.kubernetes.io/enforce-version": "v1.30",
               "pod-security.kubernetes.io/warn": "restricted"}),
    )
    .await;
    let pods = "/api/v1/namespaces/psa-warn/pods";
    let (code, warnings, body) = post(&client, pods, &pod("bare", json!({}))).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        warnings,
        vec![warning(&format!(
            "would violate PodSecurity \"restricted:latest\": {BARE_RESTRICTED}"
        ))]
    );
    let (code, _, body) = post(
        &client,
        pods,
        &pod(
            "root",
            json!({"privileged": true, "capabilities": {"add": ["SYS_ADMIN"]}}),
        ),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"root\" is forbidden: violates PodSecurity \"baseline:v1.30\": \
         non-default capabilities (container \"app\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add), \
         privileged (container \"app\" must not set securityContext.privileged=true)"
    );
    // An unlabelled namespace is privileged: anything goes, silently.
    namespace(&client, "open").await;
    let (code, warnings, body) = post(
        &client,
        "/api/v1/namespaces/open/pods",
        &pod("root", json!({"privileged": true})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert!(warnings.is_empty(), "{warnings:?}");
}
