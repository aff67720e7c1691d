//! RBAC in the embedded API server: identities from tokens, the stored rules deciding with
//! Kubernetes' semantics, the real 403 wording, escalation refusals, aggregation, reviews,
//! impersonation and kubectl's `auth can-i`.

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::Api;
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::{Value, json};

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_support::{namespace, raw, refusal};

async fn apply_json(admin: &kube::Client, path: &str, body: Value) -> (u16, Value) {
    raw(
        admin,
        "POST",
        path,
        "application/json",
        body.to_string().into_bytes(),
    )
    .await
}

async fn role(client: &kube::Client, ns: &str, name: &str, rules: Value) -> (u16, Value) {
    apply_json(
        client,
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name}, "rules": rules}),
    )
    .await
}

async fn cluster_role(client: &kube::Client, body: Value) -> (u16, Value) {
    let mut body = body;
    body["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
    body["kind"] = json!("ClusterRole");
    apply_json(
        client,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        body,
    )
    .await
}

async fn binding(
    client: &kube::Client,
    ns: Option<&str>,
    name: &str,
    role_kind: &str,
    role: &str,
    subject: Value,
) -> (u16, Value) {
    let (path, kind) = match ns {
        Some(ns) => (
            format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"),
            "RoleBinding",
        ),
        None => (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings".to_string(),
            "ClusterRoleBinding",
        ),
    };
    apply_json(
        client,
        &path,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [subject]}),
    )
    .await
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name})
}

#[tokio::test]
async fn stored_rules_decide_with_kubernetes_semantics() {
    let sim = Sim::start(SimConfig::default()).await.expect("sim starts");
    let admin = sim.client();
    namespace(&admin, "team").await;
    assert_eq!(
        role(
            &admin,
            "team",
            "pod-reader",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
        )
        .await
        .0,
        201
    );
    binding(
        &admin,
        Some("team"),
        "alice-pods",
        "Role",
        "pod-reader",
        user("alice"),
    )
    .await;
    cluster_role(
        &admin,
        json!({"metadata": {"name": "ca-reader"}, "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["ca"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}]}),
    )
    .await;
    binding(
        &admin,
        Some("team"),
        "alice-ca",
        "ClusterRole",
        "ca-reader",
        user("alice"),
    )
    .await;

    let alice = sim.admin().client_for("alice", &[]).expect("client");
    let pods: Api<Pod> = Api::namespaced(alice.clone(), "team");
    pods.list(&Default::default())
        .await
        .expect("alice lists pods in team");
    let (code, _, msg) = refusal(
        Api::<Pod>::namespaced(alice.clone(), "default")
            .list(&Default::default())
            .await,
    );
    assert_eq!(code, 403);
    assert_eq!(
        msg,
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let (code, _, msg) = refusal(pods.delete("x", &Default::default()).await);
    assert_eq!(
        (code, msg.as_str()),
        (
            403,
            "pods \"x\" is forbidden: User \"alice\" cannot delete resource \"pods\" in API group \"\" in the namespace \"team\""
        )
    );
    // resourceNames: the named Secret is readable (404: authorized, absent), no other one is.
    let secrets: Api<Secret> = Api::namespaced(alice.clone(), "team");
    assert_eq!(refusal(secrets.get("ca").await).0, 404);
    assert_eq!(refusal(secrets.get("other").await).0, 403);
    assert_eq!(refusal(secrets.list(&Default::default()).await).0, 403);
    // A ClusterRole bound by a RoleBinding grants in that namespace only.
    assert_eq!(
        refusal(
            Api::<Secret>::namespaced(alice.clone(), "default")
                .get("ca")
                .await
        )
        .0,
        403
    );
    // Subresources are their own resource: pods/log yes, pods/status no.
    let (code, _) = raw(
        &alice,
        "GET",
        "/api/v1/namespaces/team/pods/p/log",
        "",
        vec![],
    )
    .await;
    assert_eq!(code, 404);
    let (code, body) = raw(
        &alice,
        "GET",
        "/api/v1/namespaces/team/pods/p/status",
        "",
        vec![],
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"p\" is forbidden: User \"alice\" cannot get resource \"pods/status\" in API group \"\" in the namespace \"team\""
    );
    // Cluster scope wording; discovery is open to every authenticated user.
    let (code, body) = raw(&alice, "GET", "/api/v1/namespaces", "", vec![]).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "namespaces is forbidden: User \"alice\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
    assert_eq!(raw(&alice, "GET", "/apis", "", vec![]).await.0, 200);
    // Unknown tokens are 401.
    let (code, _) = {
        let req = axum::http::Request::builder()
            .uri("/api/v1/namespaces/team/pods")
            .header("authorization", "Bearer forged")
            .body(Vec::new())
            .expect("request");
        let resp = admin
            .send(req.map(kube::client::Body::from))
            .await
            .expect("answer");
        (resp.status().as_u16(), ())
    };
    assert_eq!(code, 401);

    // The allowing rules were recorded; the refused requests exercised nothing else.
    let exercised = sim.admin().exercised_rules();
    let alice_rules: std::collections::BTreeSet<String> = exercised["alice"]
        .iter()
        .map(|r| format!("{}#{}", r.role, r.index))
        .collect();
    assert_eq!(
        alice_rules.into_iter().collect::<Vec<_>>(),
        vec![
            "ClusterRole/ca-reader#0",
            "ClusterRole/ca-reader#1",
            "Role/team/pod-reader#0"
        ]
    );
}

#[tokio::test]
async fn aggregated_cluster_roles_and_service_account_tokens() {
    let sim = Sim::start(SimConfig::default()).await.expect("sim starts");
    let admin = sim.client();
    namespace(&admin, "ops").await;
    cluster_role(&admin, json!({"metadata": {"name": "view-ish"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-view": "true"}}]}})).await;
    cluster_role(
        &admin,
        json!({"metadata": {"name": "configmaps-view",
        "labels": {"example.com/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}),
    )
    .await;
    binding(
        &admin,
        None,
        "sa-view",
        "ClusterRole",
        "view-ish",
        json!({"kind": "ServiceAccount", "name": "robot", "namespace": "ops"}),
    )
    .await;
    apply_json(
        &admin,
        "/api/v1/namespaces/ops/serviceaccounts",
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
    )
    .await;
    let (code, tr) = apply_json(
        &admin,
        "/api/v1/namespaces/ops/serviceaccounts/robot/token",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    )
    .await;
    assert_eq!(code, 201, "{tr}");
    let token = tr["status"]["token"].as_str().expect("token").to_string();
    let mut config = kube::Config::new(sim.url().parse().expect("uri"));
    config.auth_info.token = Some(token.clone().into());
    let robot = kube::Client::try_from(config).expect("client");
    Api::<ConfigMap>::namespaced(robot.clone(), "default")
        .list(&Default::default())
        .await
        .expect("the aggregated rule grants configmaps");
    let (code, _, msg) = refusal(
        Api::<Pod>::namespaced(robot.clone(), "ops")
            .list(&Default::default())
            .await,
    );
    assert_eq!(code, 403);
    assert!(
        msg.contains("User \"system:serviceaccount:ops:robot\" cannot list"),
        "{msg}"
    );
    // whoami shows the ServiceAccount's groups.
    let (_, who) = apply_json(
        &robot,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .await;
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:ops",
            "system:authenticated"
        ])
    );
    // A deleted ServiceAccount's token no longer authenticates.
    raw(
        &admin,
        "DELETE",
        "/api/v1/namespaces/ops/serviceaccounts/robot",
        "",
        vec![],
    )
    .await;
    let err = Api::<ConfigMap>::namespaced(robot, "default")
        .list(&Default::default())
        .await;
    assert_eq!(refusal(err).0, 401);
    assert_eq!(
        sim.admin().exercised_rules()["system:serviceaccount:ops:robot"]
            .iter()
            .next()
            .expect("one")
            .role,
        "ClusterRole/configmaps-view"
    );
}

#[tokio::test]
async fn escalation_is_refused_unless_held_or_bind_escalate_granted() {
    let sim = Sim::start(SimConfig::default()).await.expect("sim starts");
    let admin = sim.client();
    namespace(&admin, "team").await;
    role(&admin, "team", "rbac-writer", json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])).await;
    binding(
        &admin,
        Some("team"),
        "bob-rbac",
        "Role",
        "rbac-writer",
        user("bob"),
    )
    .await;
    cluster_role(
        &admin,
        json!({"metadata": {"name": "deleter"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}]}),
    )
    .await;
    let bob = sim
        .admin()
        .client_for("bob", &["devs".into()])
        .expect("client");

    assert_eq!(
        role(
            &bob,
            "team",
            "held",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
        )
        .await
        .0,
        201
    );
    let (code, body) = role(
        &bob,
        "team",
        "more",
        json!([{"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get", "list"]}]),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "roles.rbac.authorization.k8s.io \"more\" is forbidden: user \"bob\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
    );
    // Binding a role whose permissions bob lacks: refused until he may `bind` it.
    let (code, body) = binding(
        &bob,
        Some("team"),
        "carol-deleter",
        "ClusterRole",
        "deleter",
        user("carol"),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap_or("").contains("is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}"), "{body}");
    cluster_role(&admin, json!({"metadata": {"name": "bind-deleter"}, "rules": [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["deleter"], "verbs": ["bind"]}]})).await;
    binding(
        &admin,
        Some("team"),
        "bob-bind",
        "ClusterRole",
        "bind-deleter",
        user("bob"),
    )
    .await;
    assert_eq!(
        binding(
            &bob,
            Some("team"),
            "carol-deleter",
            "ClusterRole",
            "deleter",
            user("carol")
        )
        .await
        .0,
        201
    );
    // `escalate` lifts the role check.
    role(&admin, "team", "escalator", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}])).await;
    binding(
        &admin,
        Some("team"),
        "bob-escalate",
        "Role",
        "escalator",
        user("bob"),
    )
    .await;
    assert_eq!(
        role(
            &bob,
            "team",
            "more",
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}])
        )
        .await
        .0,
        201
    );
}

#[tokio::test]
async fn reviews_impersonation_and_kubectl_can_i() {
    let sim = Sim::start(SimConfig::default()).await.expect("sim starts");
    let admin = sim.client();
    namespace(&admin, "team").await;
    role(
        &admin,
        "team",
        "pod-reader",
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]),
    )
    .await;
    binding(
        &admin,
        Some("team"),
        "alice-pods",
        "Role",
        "pod-reader",
        user("alice"),
    )
    .await;
    let (_, sar) = apply_json(&admin, "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "alice",
            "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "team"}}})).await;
    assert_eq!(sar["status"]["allowed"], true);
    let alice = sim.admin().client_for("alice", &[]).expect("client");
    let (_, ssar) = apply_json(
        &alice,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {
            "resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "team"}}}),
    )
    .await;
    assert_eq!(ssar["status"]["allowed"], false);
    // alice may not impersonate.
    let req = axum::http::Request::builder()
        .uri("/api/v1/namespaces/team/pods")
        .header("impersonate-user", "bob")
        .body(Vec::new())
        .expect("request");
    let resp = alice
        .send(req.map(kube::client::Body::from))
        .await
        .expect("answer");
    assert_eq!(resp.status().as_u16(), 403);
    let bytes = resp.into_body().collect_bytes().await.expect("body");
    let body: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(
        body["message"],
        "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );

    if !kubectl_present() {
        eprintln!("kubectl not installed: skipping the kubectl half");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("config");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let k = Kubectl { kubeconfig, dir };
    assert_eq!(
        k.ok(&[
            "auth", "can-i", "list", "pods", "-n", "team", "--as", "alice"
        ])
        .trim(),
        "yes"
    );
    let (ok, out) = k.run(&[
        "auth", "can-i", "list", "pods", "-n", "default", "--as", "alice",
    ]);
    assert!(!ok && out.trim() == "no", "{out}");
    let list = k.ok(&["auth", "can-i", "--list", "-n", "team", "--as", "alice"]);
    assert!(
        list.lines()
            .any(|l| l.starts_with("pods ") && l.contains("[get list]")),
        "{list}"
    );
    let (ok, out) = k.run(&["get", "pods", "-n", "default", "--as", "alice"]);
    assert!(
        !ok && out.contains("User \"alice\" cannot list resource \"pods\""),
        "{out}"
    );
    // A kubeconfig for any identity from the admin endpoint.
    let (code, cfg) = raw(
        &admin,
        "GET",
        "/_sim/kubeconfig?user=alice&groups=devs",
        "",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let alice_cfg = k.file("alice.json", &cfg.to_string());
    let who = k.ok(&["--kubeconfig", &alice_cfg, "auth", "whoami", "-o", "json"]);
    assert!(who.contains("\"alice\"") && who.contains("devs"), "{who}");
}
