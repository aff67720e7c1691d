//! overlays/namespaced, run: its rendering is applied to the embedded API server (which
//! enforces RBAC), then the binary runs as the overlay's ServiceAccount with the arguments and
//! environment of the overlay's Deployment. Objects in the watched namespaces converge, one in
//! another namespace is left alone, and the API server refuses the operator nothing.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use pgtoolbox_operator::testing::k8s::apply_manifests;
use pgtoolbox_sim::Sim;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::runtime_deploy::{apply_all, kustomize};

const SERVICE_ACCOUNT: &str = "system:serviceaccount:pgtoolbox-system:pgtoolbox-operator";
const UNWATCHED: &str = "team-c";

const TEAM_A: &str = r#"apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgAccessRequest
metadata: {name: oncall, namespace: team-a}
spec: {subject: {kind: User, name: alice}, clusterRole: cnpg-viewer, expiresAt: "2099-01-01T00:00:00Z", reason: on call}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pgar-oncall, namespace: team-a, labels: {pgtoolbox.fyannk.dev/access-request: oncall}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cnpg-viewer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: v1
kind: Secret
metadata: {name: orders-s3, namespace: team-a}
stringData: {ACCESS_KEY_ID: AKIA0000, ACCESS_SECRET_KEY: secret}
---
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: orders, namespace: team-a}
spec:
  instances: 1
  storage: {size: 1Gi}
  plugins: [{name: barman-cloud.cloudnative-pg.io, isWALArchiver: true, parameters: {barmanObjectName: orders-store}}]
---
apiVersion: barmancloud.cnpg.io/v1
kind: ObjectStore
metadata: {name: orders-store, namespace: team-a}
spec:
  configuration:
    destinationPath: s3://orders-backups/team-a
    s3Credentials:
      accessKeyId: {name: orders-s3, key: ACCESS_KEY_ID}
      secretAccessKey: {name: orders-s3, key: ACCESS_SECRET_KEY}
---
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: EvidenceAgent
metadata: {name: ev, namespace: team-a}
spec:
  cluster: {name: orders}
  image: ghcr.io/pgtoolbox/evidence-agent:0.1.0
  servingCertificate: {provider: operator}
"#;

fn ours(client: &kube::Client, ns: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("pgtoolbox.fyannk.dev", "v1alpha1", kind);
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

/// The overlay's Deployment, from its rendering.
fn deployment(rendered: &str) -> Deployment {
    serde_yaml_ng::Deserializer::from_str(rendered)
        .filter_map(|doc| Value::deserialize(doc).ok())
        .find(|doc| doc["kind"] == "Deployment")
        .map(|doc| serde_json::from_value(doc).expect("a Deployment"))
        .expect("the overlay renders a Deployment")
}

/// The binary as the Deployment's container runs it: its arguments and environment.
fn operator_command(
    deployment: &Deployment,
    kubeconfig: &std::path::Path,
) -> tokio::process::Command {
    let pod = deployment.spec.template.spec.as_ref();
    let container = &pod.expect("a pod spec").containers[0];
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_pgtoolbox-operator"));
    command
        .args(container.args.iter().flatten())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST");
    for var in container.env.iter().flatten() {
        match (&var.value, var.name.as_str()) {
            // The ports of the Pod, here any free loopback port.
            (_, "METRICS_BIND_ADDRESS" | "HEALTH_PROBE_BIND_ADDRESS") => {
                command.env(&var.name, "127.0.0.1:0")
            }
            (Some(value), _) => command.env(&var.name, value),
            // The downward API: the Pod's name and namespace.
            (None, "POD_NAMESPACE") => command.env(&var.name, "pgtoolbox-system"),
            (None, _) => command.env(&var.name, "pgtoolbox-operator-0"),
        };
    }
    command
}

async fn apply(admin: &kube::Client, manifests: &str) {
    for result in apply_manifests(admin, manifests, "test").await {
        result.expect("applied");
    }
}

fn console(namespace: &str) -> String {
    format!(
        "apiVersion: pgtoolbox.fyannk.dev/v1alpha1\nkind: PgToolBoxConsole\nmetadata: {{name: ops, namespace: {namespace}}}\nspec: {{image: ghcr.io/pgtoolbox/console:0.1.0}}\n"
    )
}

async fn wait_ready(api: &Api<DynamicObject>, name: &str) {
    crate::wait_support::until_condition_json(api, name, "Ready", "status", "True").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_runs_under_the_namespaced_overlay() {
    let Some(rendered) = kustomize("overlays/namespaced") else {
        return;
    };
    let sim = Sim::start(crate::harness::cluster_config(11))
        .await
        .expect("sim starts");
    let admin = sim.client();
    crate::shared_support::create_namespaces(&admin, &["team-a", "team-b", UNWATCHED]).await;
    apply_all(&admin, &rendered).await;
    // The cluster default access policy the install's admission policy reads (deploy/ ships
    // one allowing `view` for 8 hours, applied in a second step): here, the role and the
    // duration of team-a's request.
    apply(&admin, "apiVersion: pgtoolbox.fyannk.dev/v1alpha1\nkind: PgAccessPolicy\nmetadata: {name: default, namespace: pgtoolbox-system}\nspec: {allowedClusterRoles: [cnpg-viewer], maxDuration: 876000h, reasonRequired: true, approvalsRequired: 1}\n").await;
    // The role a request asks for.
    apply(&admin, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cnpg-viewer\nrules:\n- apiGroups: [postgresql.cnpg.io]\n  resources: [clusters]\n  verbs: [get]\n").await;

    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let identity = sim.admin().kubeconfig_for(SERVICE_ACCOUNT, &[]);
    std::fs::write(&kubeconfig, identity.to_string()).expect("kubeconfig");
    let log = dir.path().join("operator.log");
    let _operator = operator_command(&deployment(&rendered), &kubeconfig)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");

    // team-a: an approved access request (its RoleBinding made by the approver) and an
    // EvidenceAgent on the operator's own CA; team-b and the unwatched namespace: a console.
    apply(
        &admin,
        &format!(
            "{TEAM_A}---\n{}---\n{}",
            console("team-b"),
            console(UNWATCHED)
        ),
    )
    .await;
    // The decision is bob's, written as bob: the install's admission policies refuse an
    // approver name other than the writer's, and an approval without its entry.
    let bob = sim.admin().client_for("bob", &[]).expect("bob's client");
    apply(
        &admin,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: bob-approves, namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pgtoolbox-access-request-approver}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]\n",
    )
    .await;
    let requests = ours(&admin, "team-a", "PgAccessRequest", "pgaccessrequests");
    ours(&bob, "team-a", "PgAccessRequest", "pgaccessrequests")
        .patch_status(
            "oncall",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"phase": "Approved", "approver": "bob",
                "decidedAt": Timestamp::now().to_string(), "roleBindingName": "pgar-oncall",
                "approvals": [{"approver": "bob", "decidedAt": Timestamp::now().to_string()}]}})),
        )
        .await
        .expect("decision recorded");

    wait_ready(&requests, "oncall").await;
    wait_ready(
        &ours(&admin, "team-b", "PgToolBoxConsole", "pgtoolboxconsoles"),
        "ops",
    )
    .await;
    wait_ready(
        &ours(&admin, "team-a", "EvidenceAgent", "evidenceagents"),
        "ev",
    )
    .await;

    let left_alone = ours(&admin, UNWATCHED, "PgToolBoxConsole", "pgtoolboxconsoles")
        .get("ops")
        .await
        .expect("the unwatched console");
    assert_eq!(left_alone.data.get("status"), None, "{left_alone:?}");
    let deployments = Api::<Deployment>::namespaced(admin.clone(), UNWATCHED)
        .list(&Default::default())
        .await
        .expect("list");
    assert!(
        deployments.items.is_empty(),
        "nothing written in {UNWATCHED}"
    );
    // The operator holds nothing in the unwatched namespace: a request there would be a 403.
    let refused = sim.stats().by_code.get(&403).copied().unwrap_or(0);
    let log = std::fs::read_to_string(&log).expect("the operator's log");
    let refusals: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("403") || l.contains("orbidden"))
        .collect();
    assert_eq!(
        refused, 0,
        "requests refused; the operator says:\n{refusals:#?}"
    );
}
