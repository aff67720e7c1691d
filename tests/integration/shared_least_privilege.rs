//! Least privilege, proven: deploy/ is installed into the embedded API server (which enforces
//! RBAC), the operator runs as its ServiceAccount, and PgAccessRequest, EvidenceAgent and
//! PgToolBoxConsole go through representative scenarios. Everything converges, and every
//! (verb, resource) the operator's ClusterRole grants is either exercised by these scenarios
//! or justified in deploy/README.md.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde_json::{Value, json};

const NS: &str = "team-a";
const OPERATOR: &str = "system:serviceaccount:pgtoolbox-system:pgtoolbox-operator";
const KINDS: [&str; 4] = [
    "PgAccessRequest",
    "EvidenceAgent",
    "PgToolBoxConsole",
    "PgAdmin",
];

/// Granted (verb, `group/resource`) pairs no scenario here exercises; each is explained under
/// "Rules not exercised by the least-privilege test" in deploy/README.md; the test fails on an
/// entry no longer granted or not explained there. A scenario that exercises one takes it off
/// the list.
const JUSTIFIED: &[&str] = &[
    "create authorization.k8s.io/selfsubjectaccessreviews",
    "delete /configmaps",
    "delete /serviceaccounts",
    "delete /services",
    "delete apps/deployments",
    "delete /persistentvolumeclaims",
    "delete /secrets",
    "delete batch/jobs",
    // The applier reads a child's name holder only when its create answers AlreadyExists.
    "get /configmaps",
    "get /persistentvolumeclaims",
    "get /serviceaccounts",
    "get /services",
    "get apps/deployments",
    "get batch/jobs",
    "get gateway.networking.k8s.io/httproutes",
    "get networking.k8s.io/ingresses",
    "get networking.k8s.io/networkpolicies",
    "get rbac.authorization.k8s.io/rolebindings",
    "get route.openshift.io/routes",
    // A child is created in one POST and patched only when what is desired of it changes.
    "patch /configmaps",
    "patch /persistentvolumeclaims",
    "patch /serviceaccounts",
    "patch /services",
    "patch batch/jobs",
    "patch gateway.networking.k8s.io/httproutes",
    "patch networking.k8s.io/ingresses",
    "patch networking.k8s.io/networkpolicies",
    "patch route.openshift.io/routes",
    // A PgAdmin's settings database and Poolers: no scenario here has them yet.
    "create postgresql.cnpg.io/databaseroles",
    "create postgresql.cnpg.io/databases",
    "delete postgresql.cnpg.io/databaseroles",
    "delete postgresql.cnpg.io/databases",
    "get postgresql.cnpg.io/databaseroles",
    "get postgresql.cnpg.io/databases",
    "patch postgresql.cnpg.io/databaseroles",
    "patch postgresql.cnpg.io/databases",
    "get apiextensions.k8s.io/customresourcedefinitions",
    "get postgresql.cnpg.io/poolers",
    "get pgtoolbox.fyannk.dev/pgadminaccesses",
];

use crate::harness::{TestOperator, cluster_config, deploy, operator_cluster_role};
use crate::wait_support::{until_condition_json, until_gone};

/// Every (verb, `group/resource`) a ClusterRole grants.
fn granted_atoms(role: &ClusterRole) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for rule in role.rules.iter().flatten() {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    out.insert(format!("{verb} {group}/{resource}"));
                }
            }
        }
    }
    out
}

fn dynamic(
    client: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::namespaced_with(client.clone(), NS, &ar)
}

async fn create(
    client: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    obj: Value,
) {
    let obj: DynamicObject = serde_json::from_value(obj).expect("object");
    dynamic(client, group, version, kind, plural)
        .create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("{kind} created: {e}"));
}

fn ours(kind: &str, plural: &str) -> (&'static str, &'static str, String, String) {
    (
        "pgtoolbox.fyannk.dev",
        "v1alpha1",
        kind.to_string(),
        plural.to_string(),
    )
}

async fn wait_reason(
    client: &kube::Client,
    kind: &str,
    plural: &str,
    name: &str,
    condition: &str,
    reason: &str,
) {
    let (g, v, k, p) = ours(kind, plural);
    let api = dynamic(client, g, v, &k, &p);
    until_condition_json(&api, name, condition, "reason", reason).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_converges_as_its_service_account_and_uses_what_it_is_granted() {
    let settings = OperatorSettings {
        startup_jitter: Duration::ZERO,
        stall_rechecks: (Duration::from_millis(500), Duration::from_millis(1500)),
        // A RoleBinding of a missing request is deleted once this grace is over (below).
        access_request_orphan_grace: Duration::from_secs(2),
        ..OperatorSettings::default()
    };
    let mut harness = TestOperator::new().sim(cluster_config(7));
    for file in [
        "00-namespace.yaml",
        "01-serviceaccount.yaml",
        "02-clusterrole.yaml",
        "03-leader-election.yaml",
        "05-console-clusterroles.yaml",
    ] {
        harness = harness.install(file);
    }
    let started = harness
        .namespace(NS)
        // The role a PgAccessRequest asks for.
        .manifest("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cnpg-viewer\nrules:\n- apiGroups: [postgresql.cnpg.io]\n  resources: [clusters]\n  verbs: [get]\n")
        // The operator runs as its ServiceAccount.
        .operator_as(OPERATOR)
        .settings(settings)
        .kinds(&KINDS)
        .start()
        .await;
    let (sim, admin) = (started.sim, started.client);
    let running = started.running.expect("operator started");
    let (operator, shared) = (running.operator, running.actors.expect("shared actors"));

    // PgToolBoxConsole: one exposed over a Route with restore drills, one plain; the plain one
    // is deleted afterwards.
    let (g, v, _, _) = ours("", "");
    for (name, spec) in [
        (
            "ops",
            json!({"image": "ghcr.io/pgtoolbox/console:0.1.0", "restoreDrills": {"enabled": true},
            "exposure": {"type": "route", "hostname": "ops.apps.sim.local"}}),
        ),
        ("plain", json!({"image": "ghcr.io/pgtoolbox/console:0.1.0"})),
    ] {
        create(
            &admin,
            g,
            v,
            "PgToolBoxConsole",
            "pgtoolboxconsoles",
            json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgToolBoxConsole",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}),
        )
        .await;
    }
    // EvidenceAgent with a Cluster archiving to an ObjectStore whose credentials exist.
    create(
        &admin,
        "",
        "v1",
        "Secret",
        "secrets",
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "orders-s3", "namespace": NS},
        "stringData": {"ACCESS_KEY_ID": "AKIA0000", "ACCESS_SECRET_KEY": "secret"}}),
    )
    .await;
    create(&admin, "postgresql.cnpg.io", "v1", "Cluster", "clusters", json!({
        "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "orders", "namespace": NS, "labels": {"team": "a"}},
        "spec": {"instances": 1, "storage": {"size": "1Gi"}, "plugins": [{"name": "barman-cloud.cloudnative-pg.io",
            "isWALArchiver": true, "parameters": {"barmanObjectName": "orders-store"}}]}})).await;
    create(&admin, "barmancloud.cnpg.io", "v1", "ObjectStore", "objectstores", json!({
        "apiVersion": "barmancloud.cnpg.io/v1", "kind": "ObjectStore", "metadata": {"name": "orders-store", "namespace": NS},
        "spec": {"configuration": {"destinationPath": "s3://orders-backups/team-a", "s3Credentials": {
            "accessKeyId": {"name": "orders-s3", "key": "ACCESS_KEY_ID"},
            "secretAccessKey": {"name": "orders-s3", "key": "ACCESS_SECRET_KEY"}}}}})).await;
    create(
        &admin,
        g,
        v,
        "EvidenceAgent",
        "evidenceagents",
        json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "EvidenceAgent",
        "metadata": {"name": "ev", "namespace": NS},
        "spec": {"cluster": {"name": "orders"}, "image": "ghcr.io/pgtoolbox/evidence-agent:0.1.0",
            "servingCertificate": {"provider": "openshift"}}}),
    )
    .await;
    // A second agent on the operator's own certificates (its CA and serving Secrets).
    create(
        &admin,
        g,
        v,
        "EvidenceAgent",
        "evidenceagents",
        json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "EvidenceAgent",
        "metadata": {"name": "ev-tls", "namespace": NS},
        "spec": {"cluster": {"name": "orders"}, "image": "ghcr.io/pgtoolbox/evidence-agent:0.1.0",
            "servingCertificate": {"provider": "operator"}}}),
    )
    .await;
    // PgAdmin over the team's Clusters, exposed by an Ingress.
    create(&admin, g, v, "PgAdmin", "pgadmins", json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdmin",
        "metadata": {"name": "team-pgadmin", "namespace": NS},
        "spec": {"image": "docker.io/dpage/pgadmin4:9.10", "clusterSelector": {"matchLabels": {"team": "a"}},
            "endpoints": ["rw", "ro"], "exposure": {"type": "ingress",
                "hostname": "pgadmin.team-a.apps.example.com", "ingressClassName": "nginx"}}})).await;
    // PgAccessRequest: approved (binding + decision), adopted, then it expires and the grant
    // goes. The expiry leaves time for the adoption (patch rolebindings) on a loaded machine.
    let expires = Timestamp::now() + SignedDuration::from_secs(15);
    create(
        &admin,
        g,
        v,
        "PgAccessRequest",
        "pgaccessrequests",
        json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
        "metadata": {"name": "short", "namespace": NS},
        "spec": {"subject": {"kind": "User", "name": "alice"}, "clusterRole": "cnpg-viewer",
            "expiresAt": expires.to_string(), "reason": "incident 42"}}),
    )
    .await;
    create(&admin, "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "pgar-short", "namespace": NS,
            "labels": {pgtoolbox_operator::testing::actors::access_request::REQUEST_LABEL: "short"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cnpg-viewer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]})).await;
    let (g2, v2, k2, p2) = ours("PgAccessRequest", "pgaccessrequests");
    dynamic(&admin, g2, v2, &k2, &p2)
        .patch_status(
            "short",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {
            "phase": "Approved", "approver": "bob", "decidedAt": Timestamp::now().to_string(),
            "roleBindingName": "pgar-short"}})),
        )
        .await
        .expect("decision recorded");
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> = Api::namespaced(admin.clone(), NS);
    let adopted_by = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let binding = bindings
            .get("pgar-short")
            .await
            .expect("the request's binding");
        let owners = binding.metadata.owner_references.unwrap_or_default();
        if owners
            .iter()
            .any(|o| o.kind == "PgAccessRequest" && o.name == "short")
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < adopted_by,
            "the request never adopted its binding before expiring"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    wait_reason(
        &admin,
        "PgToolBoxConsole",
        "pgtoolboxconsoles",
        "ops",
        "Ready",
        "AsExpected",
    )
    .await;
    wait_reason(
        &admin,
        "PgToolBoxConsole",
        "pgtoolboxconsoles",
        "plain",
        "Ready",
        "AsExpected",
    )
    .await;
    wait_reason(
        &admin,
        "EvidenceAgent",
        "evidenceagents",
        "ev",
        "Ready",
        "AsExpected",
    )
    .await;
    wait_reason(
        &admin,
        "PgAccessRequest",
        "pgaccessrequests",
        "short",
        "RoleBindingSynced",
        "AccessExpired",
    )
    .await;
    // A RoleBinding labelled for a request that does not exist: once its orphan grace is over,
    // the operator asks the API whether the request exists, then deletes it.
    create(&admin, "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "pgar-ghost", "namespace": NS,
            "labels": {pgtoolbox_operator::testing::actors::access_request::REQUEST_LABEL: "ghost"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cnpg-viewer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "mallory"}]})).await;
    until_gone(
        &bindings,
        "pgar-ghost",
        "the binding of a request that does not exist",
    )
    .await;
    // The console's exposure moves Route -> Ingress (with an ipBlock peer: the podCIDR check
    // reads Nodes) -> HTTPRoute -> none: each step applies one child and deletes the last.
    let (g3, v3, k3, p3) = ours("PgToolBoxConsole", "pgtoolboxconsoles");
    let consoles = dynamic(&admin, g3, v3, &k3, &p3);
    create(&admin, "gateway.networking.k8s.io", "v1", "Gateway", "gateways", json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": NS},
        "spec": {"gatewayClassName": "sim", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]}})).await;
    let steps = [
        (
            json!({"type": "ingress", "ingressClassName": "nginx",
            "networkPolicy": {"from": [{"ipBlock": {"cidr": "192.168.0.0/16"}}]}}),
            "route.openshift.io",
            "Route",
            "routes",
        ),
        (
            json!({"type": "gateway", "ingressClassName": null, "networkPolicy": {"from": null},
            "gateway": {"parentRef": {"name": "gw"}}}),
            "networking.k8s.io",
            "Ingress",
            "ingresses",
        ),
        (
            json!({"type": "clusterIP", "hostname": null, "gateway": null}),
            "gateway.networking.k8s.io",
            "HTTPRoute",
            "httproutes",
        ),
    ];
    for (exposure, group, kind, plural) in steps {
        consoles
            .patch(
                "ops",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"exposure": exposure}})),
            )
            .await
            .expect("exposure changed");
        let previous = dynamic(&admin, group, "v1", kind, plural);
        until_gone(&previous, "ops-console", &format!("the {kind}")).await;
        wait_reason(
            &admin,
            "PgToolBoxConsole",
            "pgtoolboxconsoles",
            "ops",
            "Ready",
            "AsExpected",
        )
        .await;
    }
    // Unexposed, the console's ingress NetworkPolicy goes too, once no Pod trusts its peers
    // (after the rollout the exposure change started): wait for it before stopping.
    let policies: Api<k8s_openapi::api::networking::v1::NetworkPolicy> =
        Api::namespaced(admin.clone(), NS);
    until_gone(
        &policies,
        "ops-ingress",
        "the ingress NetworkPolicy of an unexposed console",
    )
    .await;
    operator.shutdown(Duration::from_secs(5)).await;
    shared.stop().await;

    let role = operator_cluster_role();
    let granted = granted_atoms(&role);
    for atom in &granted {
        assert!(
            !atom.starts_with("* ") && !atom.ends_with("/*"),
            "wildcard grant: {atom}"
        );
    }
    let exercised: BTreeSet<String> = sim
        .admin()
        .exercised_rules()
        .get(OPERATOR)
        .into_iter()
        .flatten()
        .filter(|r| r.role == "ClusterRole/pgtoolbox-operator")
        .map(|r| format!("{} {}", r.verb, r.resource))
        .collect();
    let unexercised: BTreeSet<&String> = granted.difference(&exercised).collect();
    let unjustified: Vec<&&String> = unexercised
        .iter()
        .filter(|a| !JUSTIFIED.contains(&a.as_str()))
        .collect();
    assert!(
        unjustified.is_empty(),
        "granted to the operator, used by no scenario and not justified in deploy/README.md:\n{unjustified:#?}"
    );
    let readme = deploy("README.md");
    for atom in JUSTIFIED {
        assert!(
            granted.contains(*atom),
            "{atom} is justified but no longer granted"
        );
        assert!(
            readme.contains(&format!("`{atom}`")),
            "{atom} is not explained in deploy/README.md"
        );
    }
}
