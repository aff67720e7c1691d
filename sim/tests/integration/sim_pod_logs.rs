//! `pods/log` as the console reads it (`tailLines`, `container=postgres`): authorized as `get`
//! on the subresource, so reading Pods is not enough, and refused with kube-apiserver's words.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams, PostParams};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::{Value, json};

use crate::sim_support::{namespace, raw, refusal};

async fn post(admin: &kube::Client, path: &str, body: Value) {
    let (code, answer) = raw(
        admin,
        "POST",
        path,
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201, "POST {path}: {answer}");
}

#[tokio::test]
async fn pod_logs_need_get_on_pods_log_not_on_pods() {
    let sim = Sim::start(SimConfig::default()).await.expect("sim starts");
    let admin = sim.client();
    namespace(&admin, "team").await;
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "pg-1"},
        "spec": {"containers": [{"name": "postgres", "image": "postgres:17"},
                                {"name": "exporter", "image": "exporter:1"}]}}))
    .expect("pod");
    Api::<Pod>::namespaced(admin.clone(), "team")
        .create(&PostParams::default(), &pod)
        .await
        .expect("pod created");
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    for (name, resource) in [("pod-reader", "pods"), ("log-reader", "pods/log")] {
        post(&admin, &format!("{rbac}/namespaces/team/roles"), json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get", "list"]}]})).await;
    }
    for (user, role) in [("bob", "pod-reader"), ("alice", "log-reader")] {
        post(&admin, &format!("{rbac}/namespaces/team/rolebindings"), json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})).await;
    }
    let params = LogParams {
        container: Some("postgres".into()),
        tail_lines: Some(200),
        ..LogParams::default()
    };
    let bob = sim.admin().client_for("bob", &[]).expect("client");
    let bob_pods: Api<Pod> = Api::namespaced(bob, "team");
    bob_pods.get("pg-1").await.expect("bob reads the Pod");
    let (code, reason, message) = refusal(bob_pods.logs("pg-1", &params).await);
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "pods \"pg-1\" is forbidden: User \"bob\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"team\""
    );
    let alice = sim.admin().client_for("alice", &[]).expect("client");
    let log = Api::<Pod>::namespaced(alice, "team")
        .logs("pg-1", &params)
        .await
        .expect("alice reads the log");
    assert!(
        log.contains("team/pg-1") && log.contains("container postgres"),
        "{log}"
    );
}
