//! The operator on a sim that serves the upstream CRD manifests of `tests/fixtures/upstream-crds/`
//! (CloudNativePG, barman-cloud, Gateway API standard channel, OpenShift Route) instead of its
//! built-in permissive copies: the simulated controllers' status writes and the operator's
//! children must pass the real schemas, and the Gateway API standard install applies with kubectl.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use pgtoolbox_operator::testing::k8s::apply_manifests;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::{Sim, SimConfig};

use crate::harness::TestOperator;
use serde_json::Value;

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::wait_support::until_json;

const NS: &str = "team-a";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-crds")
}

fn fixture(path: &str) -> String {
    let p = fixtures().join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every upstream manifest of the fixtures, whole, as `extra_crds` (the Gateway API install
/// also holds a ValidatingAdmissionPolicy and its binding, which the sim seeds beside the CRDs).
fn upstream_crds() -> Vec<String> {
    [
        "cloudnative-pg/postgresql.cnpg.io_clusters.yaml",
        "cloudnative-pg/postgresql.cnpg.io_poolers.yaml",
        "cloudnative-pg/postgresql.cnpg.io_databases.yaml",
        "cloudnative-pg/postgresql.cnpg.io_databaseroles.yaml",
        "cloudnative-pg/postgresql.cnpg.io_backups.yaml",
        "plugin-barman-cloud/barmancloud.cnpg.io_objectstores.yaml",
        "gateway-api/standard-install.yaml",
        "openshift-api/routes.crd.yaml",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect()
}

fn dynamic(client: &kube::Client, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    Api::namespaced_with(
        client.clone(),
        NS,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn ready(obj: &Value) -> bool {
    condition(obj, "Ready").is_some_and(|c| c["status"] == "True")
}

const SCENARIO: &str = r#"
# A ClusterRole every real cluster has: the request below names it (else ClusterRoleNotFound).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: view}
rules: []
---
apiVersion: v1
kind: Secret
metadata: {name: orders-s3, namespace: team-a}
type: Opaque
stringData: {ACCESS_KEY_ID: example-access-key, ACCESS_SECRET_KEY: example-secret-key}
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
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: orders, namespace: team-a, labels: {team: a}}
spec:
  instances: 2
  storage: {size: 1Gi}
  plugins:
    - name: barman-cloud.cloudnative-pg.io
      isWALArchiver: true
      parameters: {barmanObjectName: orders-store}
---
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: orders-pooler-rw, namespace: team-a}
spec:
  cluster: {name: orders}
  instances: 1
  type: rw
  pgbouncer: {poolMode: session}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: team-a}
spec:
  gatewayClassName: sim
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgAdmin
metadata: {name: team-pgadmin, namespace: team-a}
spec:
  image: docker.io/dpage/pgadmin4:9.10
  clusterSelector: {matchLabels: {team: a}}
  endpoints: ["rw", "ro"]
  exposure: {type: route, hostname: pgadmin.team-a.apps.example.com}
---
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgAdmin
metadata: {name: settings-pgadmin, namespace: team-a}
spec:
  image: docker.io/dpage/pgadmin4:9.10
  clusterSelector: {matchLabels: {team: a}}
  configDatabase: {cluster: orders}
---
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgToolBoxConsole
metadata: {name: ops, namespace: team-a}
spec:
  image: ghcr.io/pgtoolbox/console:0.1.0
  exposure:
    type: gateway
    hostname: console.team-a.apps.example.com
    gateway: {parentRef: {name: gw}}
---
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: EvidenceAgent
metadata: {name: orders-evidence, namespace: team-a}
spec:
  cluster: {name: orders}
  image: ghcr.io/pgtoolbox/evidence-agent:0.1.0
  servingCertificate: {provider: openshift}
---
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgAccessRequest
metadata: {name: alice-orders, namespace: team-a}
spec:
  subject: {kind: User, name: alice}
  cluster: orders
  clusterRole: view
  expiresAt: "2099-01-01T00:00:00Z"
  reason: "Investigate slow order queries (INC-1234)"
"#;

/// Every workload kind reaches Ready on a sim serving the upstream schemas, and the simulated
/// CloudNativePG, router and Gateway controller get their status writes accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workload_kind_is_ready_on_the_upstream_crds() {
    let started = TestOperator::new()
        .sim(SimConfig {
            external_crds: false,
            extra_crds: upstream_crds(),
            ..crate::harness::cluster_config(11)
        })
        .namespace(NS)
        .namespace(&OperatorSettings::default().operator_namespace)
        .manifest(include_str!("../../deploy/05-console-clusterroles.yaml"))
        .settings(OperatorSettings {
            startup_jitter: Duration::ZERO,
            ..OperatorSettings::default()
        })
        .start()
        .await;
    let (_sim, client) = (started.sim, started.client);
    let running = started.running.expect("operator started");
    let (operator, shared) = (running.operator, running.actors.expect("shared actors"));
    for result in apply_manifests(&client, SCENARIO, "test").await {
        result.expect("scenario object accepted by the upstream schemas");
    }

    // The upstream schema is the one in force: its `minimum: 1` on instances refuses a Cluster
    // the sim's built-in copy would take.
    let refused = apply_manifests(
        &client,
        "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: empty, namespace: team-a}\nspec: {instances: 0, storage: {size: 1Gi}}\n",
        "test",
    )
    .await;
    let error = format!("{:?}", refused[0].as_ref().err());
    assert!(
        error.contains("spec.instances") && error.contains("422"),
        "{error}"
    );

    // The simulated CloudNativePG's status writes pass the upstream Cluster and Pooler schemas.
    let clusters = dynamic(&client, "postgresql.cnpg.io", "Cluster", "clusters");
    let cluster = until_json(&clusters, "orders", "Cluster Ready", ready).await;
    assert_eq!(cluster["status"]["phase"], "Cluster in healthy state");
    assert_eq!(cluster["status"]["readyInstances"], 2);
    assert!(
        cluster
            .pointer("/status/certificates/serverCASecret")
            .is_some(),
        "{cluster:#}"
    );
    let poolers = dynamic(&client, "postgresql.cnpg.io", "Pooler", "poolers");
    until_json(&poolers, "orders-pooler-rw", "Pooler status", |p| {
        p.pointer("/status/instances").is_some()
    })
    .await;

    let workloads = [
        ("PgAdmin", "pgadmins", "team-pgadmin"),
        ("PgToolBoxConsole", "pgtoolboxconsoles", "ops"),
        ("EvidenceAgent", "evidenceagents", "orders-evidence"),
        ("PgAccessRequest", "pgaccessrequests", "alice-orders"),
    ];
    for (kind, plural, name) in workloads {
        let api = Api::namespaced_with(
            client.clone(),
            NS,
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("pgtoolbox.fyannk.dev", "v1alpha1", kind),
                plural,
            ),
        );
        until_json(&api, name, &format!("{kind} Ready=True"), ready).await;
    }

    // Upstream v1.30.0's DatabaseRole cannot generate a password (no `spec.password.mode`), so a
    // settings database stalls there rather than writing a role CloudNativePG would not fill.
    let pgadmins = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        NS,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("pgtoolbox.fyannk.dev", "v1alpha1", "PgAdmin"),
            "pgadmins",
        ),
    );
    let stalled = until_json(&pgadmins, "settings-pgadmin", "stalled", |p| {
        condition(p, "Stalled").is_some_and(|c| c["status"] == "True")
    })
    .await;
    for type_ in ["Stalled", "ConfigurationValid"] {
        assert_eq!(
            condition(&stalled, type_).map(|c| c["reason"].clone()),
            Some(Value::from("PasswordGenerationUnavailable")),
            "{type_}: {stalled:#}"
        );
    }
    let roles = dynamic(
        &client,
        "postgresql.cnpg.io",
        "DatabaseRole",
        "databaseroles",
    );
    assert!(
        roles
            .list(&Default::default())
            .await
            .expect("DatabaseRoles")
            .items
            .is_empty(),
        "no role is written that CloudNativePG cannot give a password"
    );

    // The operator's Route and HTTPRoute passed the upstream schemas, and their controllers'
    // status writes too.
    let routes = dynamic(&client, "route.openshift.io", "Route", "routes");
    let route = until_json(&routes, "team-pgadmin-pgadmin", "Route admitted", |r| {
        r.pointer("/status/ingress/0/conditions/0/status") == Some(&Value::from("True"))
    })
    .await;
    assert_eq!(route["spec"]["host"], "pgadmin.team-a.apps.example.com");
    let http_routes = dynamic(
        &client,
        "gateway.networking.k8s.io",
        "HTTPRoute",
        "httproutes",
    );
    let accepted = until_json(&http_routes, "ops-console", "HTTPRoute accepted", |r| {
        r.pointer("/status/parents/0/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Accepted" && c["status"] == "True")
            })
    })
    .await;
    assert_eq!(
        accepted["spec"]["hostnames"][0],
        "console.team-a.apps.example.com"
    );
    let gateways = dynamic(&client, "gateway.networking.k8s.io", "Gateway", "gateways");
    until_json(&gateways, "gw", "Gateway programmed", |g| {
        condition(g, "Programmed").is_some_and(|c| c["status"] == "True")
    })
    .await;

    operator.shutdown(Duration::from_secs(5)).await;
    shared.stop().await;
}

/// The Gateway API standard install (CRDs, ValidatingAdmissionPolicy and binding) applies
/// with kubectl, server-side as the Gateway API documentation installs it; a client-side apply
/// is refused for the largest CRD's last-applied annotation, as on a real server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_the_gateway_api_standard_install() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let sim = Sim::start(SimConfig {
        external_crds: false,
        ..SimConfig::default()
    })
    .await
    .expect("sim starts");
    let k = Kubectl::for_sim(&sim);
    let install = fixtures().join("gateway-api/standard-install.yaml");
    tokio::task::spawn_blocking(move || {
        let install = install.display().to_string();
        let out = k.ok(&["apply", "--server-side", "-f", &install]);
        for created in [
            "customresourcedefinition.apiextensions.k8s.io/httproutes.gateway.networking.k8s.io serverside-applied",
            "validatingadmissionpolicy.admissionregistration.k8s.io/safe-upgrades.gateway.networking.k8s.io serverside-applied",
            "validatingadmissionpolicybinding.admissionregistration.k8s.io/safe-upgrades.gateway.networking.k8s.io serverside-applied",
        ] {
            assert!(out.contains(created), "{created} missing: {out}");
        }
        // Applied again: nothing to change.
        k.ok(&["apply", "--server-side", "-f", &install]);
        let policies = k.ok(&["get", "validatingadmissionpolicies", "-o", "name"]);
        assert!(
            policies.contains("safe-upgrades.gateway.networking.k8s.io"),
            "{policies}"
        );
        let binding = k.ok(&[
            "get",
            "validatingadmissionpolicybinding",
            "safe-upgrades.gateway.networking.k8s.io",
            "-o",
            "jsonpath={.spec.policyName}",
        ]);
        assert_eq!(binding.trim(), "safe-upgrades.gateway.networking.k8s.io");
        let kinds = k.ok(&["api-resources", "--api-group=gateway.networking.k8s.io", "-o", "name"]);
        for kind in ["gatewayclasses", "gateways", "httproutes", "referencegrants", "grpcroutes"] {
            assert!(kinds.contains(kind), "{kind} not served: {kinds}");
        }
        // A Gateway API object is served by the CRDs just installed.
        let gc = k.file(
            "gc.yaml",
            "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: example\nspec:\n  controllerName: example.com/gateway-controller\n",
        );
        k.ok(&["apply", "--server-side", "-f", &gc]);
    })
    .await
    .expect("kubectl steps");
}

/// Cases of the upstream CRDs' own test suites: openshift/api's Route suite
/// (`route/v1/tests/routes.route.openshift.io/AAA_ungated.yaml`) expects the CEL rule's message
/// when `set` is missing under `type: Set`, and for an empty header value the schema's
/// `Required value` followed by the note that the CEL rules were skipped, as
/// apiextensions-apiserver orders them; the Gateway API CRDs report their `categories` among
/// the accepted names.
#[tokio::test]
async fn upstream_suites_get_the_api_servers_messages() {
    let sim = Sim::start(SimConfig {
        external_crds: false,
        extra_crds: vec![
            fixture("openshift-api/routes.crd.yaml"),
            fixture("gateway-api/standard-install.yaml"),
        ],
        ..SimConfig::default()
    })
    .await
    .expect("sim starts");
    let client = sim.client();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).expect("ns"),
        )
        .await
        .expect("namespace");
    let routes = dynamic(&client, "route.openshift.io", "Route", "routes");
    let refusal = |action: Value| {
        let routes = routes.clone();
        async move {
            let route: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": "route.openshift.io/v1", "kind": "Route",
                "metadata": {"name": "hello-openshift-edge-not-allowed-values"},
                "spec": {
                    "subdomain": "hello-openshift", "tls": {"termination": "edge"},
                    "to": {"kind": "Service", "name": "hello-openshift"},
                    "httpHeaders": {"actions": {"request": [
                        {"name": "X-SSL-Client-Cert", "action": action}]}},
                },
            }))
            .expect("route");
            match routes
                .create(&kube::api::PostParams::default(), &route)
                .await
            {
                Err(kube::Error::Api(status)) => (status.code, status.message),
                other => panic!("the Route was not refused: {other:?}"),
            }
        }
    };
    let (code, message) = refusal(serde_json::json!({"type": "Set", "set": {"value": null}})).await;
    assert_eq!(code, 422);
    assert_eq!(
        message,
        r#"Route.route.openshift.io "hello-openshift-edge-not-allowed-values" is invalid: [spec.httpHeaders.actions.request[0].action.set.value: Required value, <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"#
    );
    let (code, message) = refusal(serde_json::json!({"type": "Set"})).await;
    assert_eq!(code, 422);
    assert!(
        message.contains("set is required when type is Set, and forbidden otherwise"),
        "{message}"
    );

    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client);
    for name in [
        "gateways.gateway.networking.k8s.io",
        "httproutes.gateway.networking.k8s.io",
    ] {
        let crd = crds.get(name).await.expect("crd");
        let accepted = crd
            .status
            .and_then(|s| s.accepted_names)
            .expect("acceptedNames");
        assert_eq!(
            accepted.categories.as_deref(),
            Some(&["gateway-api".to_string()][..]),
            "{name}"
        );
    }
}

/// A ValidatingAdmissionPolicy and its binding are cluster-scoped objects a typed client
/// creates, reads back whole and deletes.
#[tokio::test]
async fn validating_admission_policies_are_stored_and_served() {
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };
    use kube::api::{DeleteParams, PostParams};

    let (_sim, client) = crate::sim_support::start().await;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "replicas-limit"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]
        }
    }))
    .expect("policy");
    let created = policies
        .create(&PostParams::default(), &policy)
        .await
        .expect("policy created");
    assert_eq!(created.metadata.generation, Some(1));
    let spec = created.spec.expect("spec kept");
    assert_eq!(
        spec.validations.expect("validations")[0].expression,
        "object.spec.replicas <= 5"
    );

    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "replicas-limit"},
        "spec": {"policyName": "replicas-limit", "validationActions": ["Deny"]}
    }))
    .expect("binding");
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding created");
    let read = bindings.get("replicas-limit").await.expect("binding read");
    assert_eq!(read.spec.policy_name, "replicas-limit");
    policies
        .delete("replicas-limit", &DeleteParams::default())
        .await
        .expect("policy deleted");
    assert!(
        policies
            .get_opt("replicas-limit")
            .await
            .expect("get")
            .is_none()
    );
}

/// `sim --third-party-crds DIR` serves the upstream manifests of a directory tree in place of
/// the built-in copies (the Gateway API install's policy included); a directory without any
/// manifest is refused at start rather than serving no CloudNativePG.
#[tokio::test]
async fn the_sim_command_serves_third_party_crds_from_a_directory() {
    use crate::cli_support::{Running, binary, client_for};
    use std::process::Stdio;

    let dir = tempfile::tempdir().expect("tempdir");
    let crds = fixtures().display().to_string();
    let mut sim = Running::start(
        &["sim", "--api-only", "--third-party-crds", &crds],
        dir.path(),
        Stdio::null(),
    );
    let client = client_for(Path::new(&sim.kubeconfig())).await;

    let clusters = dynamic(&client, "postgresql.cnpg.io", "Cluster", "clusters");
    let empty: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "empty", "namespace": NS},
        "spec": {"instances": 0}
    }))
    .expect("cluster");
    crate::sim_support::namespace(&client, NS).await;
    match clusters.create(&Default::default(), &empty).await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 422, "{e:?}"),
        other => panic!("the upstream schema's minimum refuses 0 instances: {other:?}"),
    }
    let policies: Api<k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy> =
        Api::all(client.clone());
    assert!(
        policies
            .get_opt("safe-upgrades.gateway.networking.k8s.io")
            .await
            .expect("get")
            .is_some()
    );
    assert!(sim.interrupt().success());

    let empty_dir = tempfile::tempdir().expect("tempdir");
    let out = binary()
        .args(["sim", "--api-only", "--third-party-crds"])
        .arg(empty_dir.path())
        .output()
        .expect("binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no CRD manifests"), "{stderr}");
}
