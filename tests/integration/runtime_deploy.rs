//! deploy/ applies cleanly to the embedded API server.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::Api;
use pgtoolbox_operator::k8s::apply_manifests;

use crate::sim_support::start;

#[tokio::test]
async fn deploy_manifests_apply_and_carry_probes_and_least_privilege() {
    let (_sim, client) = start().await;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut applied = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for result in apply_manifests(&client, &text, "deploy-test").await {
            match result {
                Ok(what) => applied.push(what),
                Err(err) => panic!("{}: {err}", file.display()),
            }
        }
    }
    assert!(
        applied.contains(&"Deployment/pgtoolbox-operator".to_string()),
        "{applied:?}"
    );
    // The operator's own objects, and the three ClusterRoles it binds for consoles.
    assert_eq!(applied.len(), 10, "{applied:?}");

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
