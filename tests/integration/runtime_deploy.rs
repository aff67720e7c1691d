//! deploy/ applies cleanly to the embedded API server.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::Api;
use pgtoolbox_operator::testing::k8s::apply_manifests;

use crate::sim_support::start;

/// `kubectl kustomize DIR`, or `None` (the test skips) without kubectl.
pub fn kustomize(dir: &str) -> Option<String> {
    if !crate::kubectl_support::kubectl_present() {
        eprintln!("kubectl not installed: skipping the kustomize render");
        return None;
    }
    let out = std::process::Command::new("kubectl")
        .args([
            "kustomize",
            &format!("{}/{dir}", env!("CARGO_MANIFEST_DIR")),
        ])
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("UTF-8"))
}

pub async fn apply_all(client: &kube::Client, text: &str) -> Vec<String> {
    let mut applied = Vec::new();
    for result in apply_manifests(client, text, "deploy-test").await {
        match result {
            Ok(what) => applied.push(what),
            Err(err) => panic!("{err}"),
        }
    }
    applied
}

#[tokio::test]
async fn deploy_manifests_apply_and_carry_probes_and_least_privilege() {
    let Some(rendered) = kustomize("deploy") else {
        return;
    };
    let (_sim, client) = start().await;
    let applied = apply_all(&client, &rendered).await;
    assert!(
        applied.contains(&"Deployment/pgtoolbox-operator".to_string()),
        "{applied:?}"
    );
    // The five CRDs, the operator's own objects, the three ClusterRoles it binds for consoles,
    // the four user roles, the metrics Service, the Grafana dashboard's ConfigMap and the
    // access-request admission policy with its binding.
    assert_eq!(applied.len(), 23, "{applied:?}");
    for policy in [
        "ValidatingAdmissionPolicy/pgtoolbox-access-request-decisions",
        "ValidatingAdmissionPolicyBinding/pgtoolbox-access-request-decisions",
    ] {
        assert!(applied.contains(&policy.to_string()), "{applied:?}");
    }
    assert!(
        applied.contains(&"ConfigMap/pgtoolbox-operator-dashboard".to_string()),
        "{applied:?}"
    );

    let deployment = Api::<Deployment>::namespaced(client.clone(), "pgtoolbox-system")
        .get("pgtoolbox-operator")
        .await
        .unwrap();
    let pod = deployment.spec.template.spec.unwrap();
    let container = &pod.containers[0];
    let probe_path = |p: &Option<k8s_openapi::api::core::v1::Probe>| {
        p.as_ref()
            .and_then(|p| p.http_get.as_ref())
            .and_then(|h| h.path.clone())
    };
    assert_eq!(
        probe_path(&container.liveness_probe).as_deref(),
        Some("/healthz")
    );
    assert_eq!(
        probe_path(&container.readiness_probe).as_deref(),
        Some("/readyz")
    );
    let env: Vec<&str> = container
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    for setting in [
        "WATCH_NAMESPACES",
        "EXPOSURE_ALLOWED_HOST_SUFFIXES",
        "ALLOWED_IMAGE_REPOSITORIES",
    ] {
        assert!(env.contains(&setting), "{setting} missing from {env:?}");
    }

    let role = Api::<ClusterRole>::all(client)
        .get("pgtoolbox-operator")
        .await
        .unwrap();
    let rules = role.rules.unwrap_or_default();
    assert!(
        rules.iter().all(|r| !r.verbs.iter().any(|v| v == "*")
            && !r.resources.iter().flatten().any(|res| res == "*")),
        "no wildcards"
    );
    // RoleBindings are created only for consoles, to the three console ClusterRoles: `bind` is
    // granted on those names alone and `escalate` never, so the operator cannot grant anything
    // else it does not hold itself (access requests' grants are only ever taken away).
    let binds: Vec<_> = rules
        .iter()
        .filter(|r| r.verbs.iter().any(|v| v == "bind" || v == "escalate"))
        .collect();
    assert_eq!(binds.len(), 1, "{binds:?}");
    assert!(!binds[0].verbs.iter().any(|v| v == "escalate"));
    let mut names = binds[0].resource_names.clone().unwrap_or_default();
    names.sort();
    assert_eq!(
        names,
        [
            "pgtoolbox-console",
            "pgtoolbox-console-pod-logs",
            "pgtoolbox-console-restore-drills"
        ]
    );
}

#[tokio::test]
async fn the_namespaced_overlay_applies_and_user_roles_aggregate() {
    let Some(rendered) = kustomize("overlays/namespaced") else {
        return;
    };
    let (sim, client) = start().await;
    crate::shared_support::create_namespaces(&client, &["team-a", "team-b"]).await;
    let applied = apply_all(&client, &rendered).await;
    assert!(
        applied.contains(&"ClusterRole/pgtoolbox-operator-cluster-scoped".to_string()),
        "{applied:?}"
    );
    let deployment = Api::<Deployment>::namespaced(client.clone(), "pgtoolbox-system")
        .get("pgtoolbox-operator")
        .await
        .unwrap();
    let pod = deployment.spec.template.spec.unwrap();
    let security = pod.security_context.unwrap_or_default();
    assert_eq!(
        (security.run_as_non_root, security.run_as_user),
        (Some(true), Some(65532))
    );
    let watch = pod.containers[0]
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "WATCH_NAMESPACES")
        .and_then(|e| e.value.clone());
    assert_eq!(watch.as_deref(), Some("team-a,team-b"));

    // The user roles join a `view` ClusterRole that aggregates, as a cluster's built-in one does.
    for result in apply_manifests(
        &client,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: view\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels:\n      rbac.authorization.k8s.io/aggregate-to-view: \"true\"\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: carol-view\n  namespace: team-a\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\nsubjects:\n- kind: User\n  name: carol\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: dave-approves\n  namespace: team-a\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: pgtoolbox-access-request-approver\nsubjects:\n- kind: User\n  name: dave\n",
        "test",
    )
    .await
    {
        result.expect("applied");
    }
    let carol = sim.admin().client_for("carol", &[]).expect("client");
    let consoles = Api::<pgtoolbox_operator::api::PgToolBoxConsole>::namespaced(carol, "team-a");
    consoles
        .list(&Default::default())
        .await
        .expect("carol views consoles");
    let dave = sim.admin().client_for("dave", &[]).expect("client");
    let review = serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "patch", "group": "pgtoolbox.fyannk.dev",
            "resource": "pgaccessrequests", "subresource": "status", "namespace": "team-a"}}});
    let (_, answer) = crate::sim_support::raw(
        &dave,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        "application/json",
        review.to_string().into_bytes(),
    )
    .await;
    assert_eq!(answer["status"]["allowed"], true, "{answer}");
}
