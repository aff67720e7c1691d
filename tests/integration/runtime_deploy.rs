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
    // The six CRDs, the operator's own objects, the three ClusterRoles it binds for consoles,
    // the user roles, the metrics Service, the access-request admission policy and its
    // binding, the access policy's two admission policies and their three bindings, the
    // operator's NetworkPolicy and the Grafana dashboard's ConfigMap.
    assert_eq!(applied.len(), 30, "{applied:?}");
    for policy in [
        "ValidatingAdmissionPolicy/pgtoolbox-access-request-decisions",
        "ValidatingAdmissionPolicyBinding/pgtoolbox-access-request-decisions",
        "ValidatingAdmissionPolicy/pgtoolbox-access-request-policy",
        "ValidatingAdmissionPolicyBinding/pgtoolbox-access-request-policy-default",
        "ValidatingAdmissionPolicyBinding/pgtoolbox-access-request-policy-namespace",
        "ValidatingAdmissionPolicy/pgtoolbox-access-request-approvals",
        "ValidatingAdmissionPolicyBinding/pgtoolbox-access-request-approvals",
    ] {
        assert!(applied.contains(&policy.to_string()), "{applied:?}");
    }
    // The default access policy, in a second step once the CRDs are served (as the README
    // installs it).
    let Some(default_policy) = kustomize("deploy/access-policy") else {
        return;
    };
    assert_eq!(
        apply_all(&client, &default_policy).await,
        ["PgAccessPolicy/default"]
    );
    // Nothing but Prometheus's namespace reaches the unauthenticated /metrics, and only the
    // probe port is open besides.
    let policy = Api::<k8s_openapi::api::networking::v1::NetworkPolicy>::namespaced(
        client.clone(),
        "pgtoolbox-system",
    )
    .get("pgtoolbox-operator")
    .await
    .expect("the operator's NetworkPolicy");
    let spec = policy.spec.expect("spec");
    assert_eq!(
        spec.pod_selector
            .as_ref()
            .and_then(|s| s.match_labels.as_ref())
            .and_then(|l| l.get("app.kubernetes.io/name"))
            .map(String::as_str),
        Some("pgtoolbox-operator")
    );
    let ports: Vec<String> = spec
        .ingress
        .iter()
        .flatten()
        .flat_map(|rule| rule.ports.iter().flatten())
        .filter_map(|p| p.port.as_ref())
        .map(|p| match p {
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(name) => name.clone(),
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n) => n.to_string(),
        })
        .collect();
    assert_eq!(ports, ["metrics", "health"], "{spec:?}");
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

/// The image a release publishes and `deploy/` installs.
const RELEASE_IMAGE: &str = "ghcr.io/pgtoolbox/pgtoolbox-operator";

fn repo_file(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml_documents(text: &str) -> Vec<serde_json::Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("YAML"))
        .collect()
}

/// The operator container's image of the Deployment `pgtoolbox-operator` in rendered manifests.
fn operator_image(rendered: &str) -> String {
    yaml_documents(rendered)
        .into_iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "pgtoolbox-operator")
        .and_then(|d| {
            d["spec"]["template"]["spec"]["containers"][0]["image"]
                .as_str()
                .map(str::to_owned)
        })
        .expect("the operator's Deployment and its image")
}

/// `to` relative to `from` (kustomize refuses absolute resource paths).
fn relative(from: &std::path::Path, to: &std::path::Path) -> std::path::PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = std::path::PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    to[common..].iter().for_each(|c| path.push(c));
    path
}

/// One version names a release: the crates' (the workspace version), the image tag `deploy/`
/// and its overlays install, the Dockerfile's label, the README's commands and the CHANGELOG's
/// section; the licence is Apache-2.0 everywhere. And the README's way of installing an image
/// of your own registry (an overlay with an `images:` entry) does replace the image.
#[test]
fn deploy_installs_the_release_image_of_the_cargo_version() {
    let version = env!("CARGO_PKG_VERSION");
    let release = format!("{RELEASE_IMAGE}:{version}");
    assert_eq!(env!("CARGO_PKG_LICENSE"), "Apache-2.0");
    let license = repo_file("LICENSE");
    assert!(
        license.contains("Apache License") && license.contains("Version 2.0, January 2004"),
        "LICENSE is not the Apache License 2.0"
    );
    // The sim crate inherits both from the workspace rather than carrying its own.
    let sim = repo_file("sim/Cargo.toml");
    for inherited in ["version.workspace = true", "license.workspace = true"] {
        assert!(sim.contains(inherited), "sim/Cargo.toml lacks {inherited}");
    }

    let dockerfile = repo_file("Dockerfile");
    assert!(
        dockerfile.contains(&format!("ARG VERSION={version}\n")),
        "the Dockerfile's ARG VERSION is not {version}"
    );
    assert!(
        dockerfile.contains("org.opencontainers.image.licenses=\"Apache-2.0\""),
        "the Dockerfile's licence label"
    );

    // deploy/'s kustomization sets the tag by the image's name, which the Deployment uses.
    let kustomization = yaml_documents(&repo_file("deploy/kustomization.yaml")).remove(0);
    let images = kustomization["images"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(images.len(), 1, "{images:?}");
    assert_eq!(images[0]["name"], RELEASE_IMAGE);
    assert_eq!(images[0]["newTag"], version, "deploy/kustomization.yaml");
    assert!(
        images[0]["newName"].is_null() || images[0]["newName"] == RELEASE_IMAGE,
        "{images:?}"
    );
    assert_eq!(
        operator_image(&repo_file("deploy/04-deployment.yaml")),
        release,
        "deploy/04-deployment.yaml"
    );

    let readme = repo_file("README.md");
    let tags = regex::Regex::new(r"pgtoolbox-operator:(\d+\.\d+\.\d+)").expect("regex");
    let named: Vec<&str> = tags
        .captures_iter(&readme)
        .map(|c| c.get(1).map_or("", |m| m.as_str()))
        .collect();
    assert!(named.contains(&version), "the README names no {release}");
    assert!(named.iter().all(|v| *v == version), "README tags {named:?}");
    assert!(
        repo_file("CHANGELOG.md").contains(&format!("\n## [{version}]")),
        "CHANGELOG.md has no section for {version}"
    );

    // What kustomize renders: deploy/ and each overlay run the release image.
    for dir in ["deploy", "overlays/namespaced", "overlays/sharded"] {
        let Some(rendered) = kustomize(dir) else {
            return;
        };
        assert_eq!(operator_image(&rendered), release, "{dir}");
    }
    // The README's overlay for an image of your own registry, as written there.
    let overlay: String = readme
        .lines()
        .skip_while(|l| !l.contains("cat > my-install/kustomization.yaml <<'YAML'"))
        .skip(1)
        .take_while(|l| *l != "YAML")
        .map(|l| format!("{l}\n"))
        .collect();
    let theirs = yaml_documents(&overlay).remove(0);
    let wanted = format!(
        "{}:{}",
        theirs["images"][0]["newName"].as_str().expect("newName"),
        theirs["images"][0]["newTag"].as_str().expect("newTag")
    );
    assert_ne!(wanted, release);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temporary directory");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // The README's overlay sits beside deploy/: its `../deploy` from wherever this one is.
    let base = relative(dir.path(), &repo.join("deploy"));
    let overlay = overlay.replace("../deploy", &base.to_string_lossy());
    std::fs::write(dir.path().join("kustomization.yaml"), overlay).expect("written");
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(dir.path())
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        operator_image(&String::from_utf8(out.stdout).expect("UTF-8")),
        wanted
    );
}

/// The evidence agent's image: the Dockerfile builds it (stage `evidence-agent`, the agent
/// binary of this workspace at the release's version) and deploy/ names it, at that version,
/// as the operator's --default-evidence-agent-image; the examples run it.
#[test]
fn deploy_names_the_evidence_agent_image_the_dockerfile_builds() {
    const AGENT_IMAGE: &str = "ghcr.io/pgtoolbox/evidence-agent";
    let version = env!("CARGO_PKG_VERSION");
    let dockerfile = repo_file("Dockerfile");
    assert!(
        dockerfile.contains("--bin pgtoolbox-evidence-agent")
            && dockerfile.contains("AS evidence-agent\n")
            && dockerfile.contains(&format!("{AGENT_IMAGE}:<VERSION>")),
        "the Dockerfile builds the agent's image"
    );
    let last_stage = dockerfile.rsplit("\nFROM ").next().unwrap_or_default();
    assert!(
        last_stage.contains("pgtoolbox-operator\"]"),
        "a build without --target is still the operator's image"
    );
    let agent = repo_file("evidence-agent/Cargo.toml");
    for line in [
        "name = \"pgtoolbox-evidence-agent\"",
        "version.workspace = true",
        "license.workspace = true",
    ] {
        assert!(
            agent.contains(line),
            "evidence-agent/Cargo.toml lacks {line}"
        );
    }
    let deployment = yaml_documents(&repo_file("deploy/04-deployment.yaml")).remove(0);
    let image = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == "DEFAULT_EVIDENCE_AGENT_IMAGE")
        .and_then(|e| e["value"].as_str())
        .map(str::to_owned);
    assert_eq!(image, Some(format!("{AGENT_IMAGE}:{version}")));
    for example in ["examples/evidenceagent.yaml"] {
        for doc in yaml_documents(&repo_file(example)) {
            if let Some(image) = doc["spec"]["image"].as_str()
                && doc["kind"] == "EvidenceAgent"
            {
                assert_eq!(image, format!("{AGENT_IMAGE}:{version}"), "{example}");
            }
        }
    }
}
