//! The access policy of deploy/ as shipped (`10-access-policy.yaml` and the cluster default of
//! `access-policy/`), enforced by the embedded API server on real identities: a namespace
//! editor through kubectl `--as`, approvers holding the shipped approver role, and a cluster
//! administrator who labels a namespace to give it a policy of its own.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams};
use pgtoolbox_operator::api::PgAccessRequest;
use pgtoolbox_operator::testing::k8s::apply_manifests;
use serde_json::json;

use super::pgar_support::{Env, NS, start_without_operator};
use crate::kubectl_support::{Kubectl, kubectl_present};

fn repo(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

async fn apply(client: &kube::Client, yaml: &str) {
    for result in apply_manifests(client, yaml, "install").await {
        result.unwrap_or_else(|e| panic!("applied: {e}"));
    }
}

/// deploy/ as shipped (RBAC, both admission policies, the default access policy), an `edit`
/// ClusterRole that aggregates as a cluster's does, erin editing the namespace, bob and carol
/// holding the shipped approver role, and the `view` ClusterRole the default allows.
async fn install(env: &Env) {
    for file in [
        "deploy/00-namespace.yaml",
        "deploy/01-serviceaccount.yaml",
        "deploy/02-clusterrole.yaml",
        "deploy/06-user-roles.yaml",
        "deploy/08-access-request-admission.yaml",
        "deploy/10-access-policy.yaml",
        "deploy/access-policy/default.yaml",
    ] {
        apply(&env.client, &repo(file)).await;
    }
    apply(
        &env.client,
        &format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: edit\n\
             aggregationRule:\n  clusterRoleSelectors:\n  - matchLabels:\n      rbac.authorization.k8s.io/aggregate-to-edit: \"true\"\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: view\n\
             rules:\n- apiGroups: [postgresql.cnpg.io]\n  resources: [clusters]\n  verbs: [get, list]\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: erin-edits\n  namespace: {NS}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}}\n\
             subjects:\n- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: erin}}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: approvers\n  namespace: {NS}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pgtoolbox-access-request-approver}}\n\
             subjects:\n- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}}\n\
             - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}}\n"
        ),
    )
    .await;
}

/// A request manifest for erin, `role` for `hours` from now, with `reason` if any.
fn request_yaml(
    name: &str,
    role: &str,
    hours: i64,
    reason: Option<&str>,
    approvals: i64,
) -> String {
    let expires = Timestamp::now() + SignedDuration::from_secs(hours * 3600 - 60);
    let reason = reason
        .map(|r| format!("  reason: \"{r}\"\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: pgtoolbox.fyannk.dev/v1alpha1\nkind: PgAccessRequest\nmetadata: {{name: {name}, namespace: {NS}}}\n\
         spec:\n  subject: {{kind: User, name: erin}}\n  clusterRole: {role}\n  expiresAt: \"{expires}\"\n  approvalsRequired: {approvals}\n{reason}"
    )
}

/// The policy `team-a/default` a cluster administrator gives the namespace.
fn namespace_policy(roles: &str, max: &str, approvals: i64) -> String {
    format!(
        "apiVersion: pgtoolbox.fyannk.dev/v1alpha1\nkind: PgAccessPolicy\nmetadata: {{name: default, namespace: {NS}}}\n\
         spec:\n  allowedClusterRoles: {roles}\n  maxDuration: {max}\n  reasonRequired: false\n  approvalsRequired: {approvals}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_outside_the_policy_is_refused_and_an_editor_loosens_nothing() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the access policy test");
        return;
    }
    let env = start_without_operator().await;
    install(&env).await;
    let k = Kubectl::for_sim(&env.sim);
    tokio::task::spawn_blocking(move || {
        let create = |name: &str, yaml: String| {
            let path = k.file(&format!("{name}.yaml"), &yaml);
            k.run(&["--as", "erin", "create", "-f", &path])
        };
        // Within the default (view, 8h, a reason, one approver): admitted.
        let (ok, text) = create("fine", request_yaml("fine", "view", 8, Some("INC-1"), 1));
        assert!(ok, "{text}");
        // Each rule, named.
        for (name, yaml, expected) in [
            ("admin", request_yaml("admin", "cluster-admin", 1, Some("INC-1"), 1),
                "ClusterRole cluster-admin is not allowed by access policy pgtoolbox-system/default (allowed: view)"),
            ("typo", request_yaml("typo", "veiw", 1, Some("INC-1"), 1), "ClusterRole veiw is not allowed"),
            ("long", request_yaml("long", "view", 30, Some("INC-1"), 1), "duration too long"),
            ("why", request_yaml("why", "view", 1, None, 1), "reason required"),
            // A null reason is dropped before admission (the field is not nullable), as
            // kube-apiserver does: the policy reads no reason, never a null.
            ("nul", request_yaml("nul", "view", 1, Some("x"), 1).replace("reason: \"x\"", "reason: null"),
                "reason required"),
        ] {
            let (ok, text) = create(name, yaml);
            assert!(!ok, "{name} admitted: {text}");
            assert!(text.contains(expected), "{name}: {text}");
            assert!(text.contains("pgtoolbox-access-request-policy"), "{name}: {text}");
        }

        // The editor may neither write a policy nor label her namespace.
        let loose = k.file("loose.yaml", &namespace_policy("[view, cluster-admin]", "8760h", 1));
        let (ok, text) = k.run(&["--as", "erin", "apply", "-f", &loose]);
        assert!(!ok && text.contains("forbidden"), "{text}");
        let (ok, text) = k.run(&["--as", "erin", "label", "namespace", NS, "pgtoolbox.fyannk.dev/access-policy=namespace"]);
        assert!(!ok && text.contains("forbidden"), "{text}");
        assert_eq!(k.run(&["auth", "can-i", "create", "pgaccesspolicies", "-n", NS, "--as", "erin"]).1.trim(), "no");
        assert_eq!(k.run(&["auth", "can-i", "get", "pgaccesspolicies", "-n", NS, "--as", "erin"]).1.trim(), "yes");
        // Even once such a policy exists in her namespace (written by whoever may), it is not
        // read while the namespace is not labelled: the default still refuses.
        k.ok(&["apply", "-f", &loose]);
        let (ok, text) = create("admin2", request_yaml("admin2", "cluster-admin", 1, Some("INC-1"), 1));
        assert!(!ok && text.contains("pgtoolbox-system/default"), "{text}");

        // A cluster administrator labels the namespace: its own policy is the one read ...
        k.ok(&["delete", "pgaccesspolicy", "default", "-n", NS]);
        k.ok(&["label", "namespace", NS, "pgtoolbox.fyannk.dev/access-policy=namespace"]);
        // ... and none there refuses everything (fail closed).
        let (ok, text) = create("none", request_yaml("none", "view", 1, Some("INC-1"), 1));
        assert!(!ok && text.contains("no params found"), "{text}");
        let own = k.file("own.yaml", &namespace_policy("[edit]", "24h", 2));
        k.ok(&["apply", "-f", &own]);
        let (ok, text) = create("edit", request_yaml("edit", "edit", 20, None, 2));
        assert!(ok, "{text}");
        // The namespace's own rules now: view is not on its list, two approvers are needed.
        let (ok, text) = create("view", request_yaml("view", "view", 1, None, 2));
        assert!(!ok && text.contains("ClusterRole view is not allowed by access policy team-a/default"), "{text}");
        let (ok, text) = create("one", request_yaml("one", "edit", 1, None, 1));
        assert!(!ok && text.contains("approvals too few"), "{text}");
    })
    .await
    .expect("kubectl steps");
}

fn as_user(env: &Env, user: &str) -> Api<PgAccessRequest> {
    let client = env.sim.admin().client_for(user, &[]).expect("client");
    Api::namespaced(client, NS)
}

async fn status(
    api: &Api<PgAccessRequest>,
    name: &str,
    status: serde_json::Value,
) -> Result<PgAccessRequest, kube::Error> {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": status})),
    )
    .await
}

fn approval(who: &str) -> serde_json::Value {
    json!({"approver": who, "decidedAt": Timestamp::now().to_string()})
}

fn refused(result: Result<PgAccessRequest, kube::Error>, expected: &str) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "{status:?}");
            assert!(status.message.contains(expected), "{}", status.message);
        }
        other => panic!("expected a refusal naming {expected:?}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_distinct_approvers_other_than_the_subject_are_needed_where_the_policy_says_two() {
    let env = start_without_operator().await;
    install(&env).await;
    apply(&env.client, &format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n  labels: {{pgtoolbox.fyannk.dev/access-policy: namespace}}\n"
    )).await;
    apply(&env.client, &namespace_policy("[view]", "8h", 2)).await;
    let erin = as_user(&env, "erin");
    let request: PgAccessRequest =
        serde_yaml_ng::from_str(&request_yaml("two", "view", 1, Some("INC-1"), 2))
            .expect("request");
    erin.create(&Default::default(), &request)
        .await
        .expect("erin asks");
    // The approvals do not read the policy: with it gone (every new request in the namespace
    // is refused now), the request already made is still decided, and the operator's status
    // writes (its expiry) never depend on it.
    Api::<pgtoolbox_operator::api::PgAccessPolicy>::namespaced(env.client.clone(), NS)
        .delete("default", &Default::default())
        .await
        .expect("policy deleted");

    let bob = as_user(&env, "bob");
    let carol = as_user(&env, "carol");
    // The subject approves herself (she holds no status right: RBAC refuses before the policy;
    // the policy's own refusal of a subject is unit-tested in the sim).
    // bob approves first, under carol's name: refused; as himself: recorded, still Pending.
    refused(
        status(&bob, "two", json!({"approvals": [approval("carol")]})).await,
        "must name the identity that writes it (bob)",
    );
    // Turning it Approved on the first of two approvals: refused.
    refused(
        status(&bob, "two", json!({"phase": "Approved", "approver": "bob", "decidedAt": Timestamp::now().to_string(), "approvals": [approval("bob")]})).await,
        "reaching 2 distinct approvals",
    );
    let bobs = approval("bob");
    let first = status(&bob, "two", json!({"approvals": [bobs]}))
        .await
        .expect("bob approves");
    let recorded = first.status.clone().unwrap_or_default();
    assert_eq!(recorded.phase.as_str(), "Pending");
    assert_eq!(recorded.approvals.len(), 1);
    // bob again, as the second: refused.
    refused(
        status(&bob, "two", json!({"approvals": [bobs, approval("bob")]})).await,
        "bob approved this request already",
    );
    // carol removes bob's approval: refused.
    refused(
        status(&carol, "two", json!({"approvals": [approval("carol")]})).await,
        "only ever appended to",
    );
    // carol, the second distinct approver: Approved, and she is the deciding approver.
    let approved = status(
        &carol,
        "two",
        json!({"phase": "Approved", "approver": "carol", "decidedAt": Timestamp::now().to_string(),
            "approvals": [bobs, approval("carol")]}),
    )
    .await
    .expect("carol approves");
    let s = approved.status.unwrap_or_default();
    assert_eq!(
        (s.phase.as_str(), s.approver.as_deref()),
        ("Approved", Some("carol"))
    );
    let approvers: Vec<&str> = s.approvals.iter().map(|a| a.approver.as_str()).collect();
    assert_eq!(approvers, ["bob", "carol"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_time_past_the_time_library_is_refused_by_the_schema() {
    let env = start_without_operator().await;
    install(&env).await;
    let erin = as_user(&env, "erin");
    let request: PgAccessRequest =
        serde_yaml_ng::from_str(&request_yaml("far", "view", 1, Some("INC-1"), 1))
            .expect("request");
    erin.create(&Default::default(), &request)
        .await
        .expect("erin asks");
    let bob = as_user(&env, "bob");
    let far = "9999-12-31T23:59:59Z";
    for (what, body) in [
        (
            "decidedAt",
            json!({"phase": "Denied", "approver": "bob", "decidedAt": far}),
        ),
        (
            "approvals",
            json!({"approvals": [{"approver": "bob", "decidedAt": far}]}),
        ),
    ] {
        match status(&bob, "far", body).await {
            Err(kube::Error::Api(s)) => {
                assert_eq!(s.code, 422, "{what}: {s:?}");
                assert!(
                    s.message.contains("must be before 9999-01-01T00:00:00Z"),
                    "{what}: {}",
                    s.message
                );
            }
            other => panic!("{what}: expected 422, got {other:?}"),
        }
    }
    // A decision time the library holds is fine.
    status(
        &bob,
        "far",
        json!({"phase": "Denied", "approver": "bob", "decidedAt": "9998-12-31T23:59:59Z"}),
    )
    .await
    .expect("a representable decision time");
}

/// The approver role may hand out exactly the ClusterRoles the cluster default allows, and the
/// user roles give nobody write access to access policies.
#[test]
fn the_shipped_roles_match_the_default_policy() {
    let docs = |path: &str| -> Vec<serde_json::Value> {
        serde_yaml_ng::Deserializer::from_str(&repo(path))
            .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
            .collect()
    };
    let roles = docs("deploy/06-user-roles.yaml");
    let default = docs("deploy/access-policy/default.yaml").remove(0);
    let approver = roles
        .iter()
        .find(|r| r["metadata"]["name"] == "pgtoolbox-access-request-approver")
        .expect("the approver role");
    let binds: Vec<&serde_json::Value> = approver["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| {
            r["verbs"]
                .as_array()
                .expect("verbs")
                .contains(&json!("bind"))
        })
        .collect();
    assert_eq!(binds.len(), 1, "{binds:?}");
    let mut bound: Vec<String> =
        serde_json::from_value(binds[0]["resourceNames"].clone()).expect("names");
    let mut allowed: Vec<String> =
        serde_json::from_value(default["spec"]["allowedClusterRoles"].clone()).expect("roles");
    bound.sort();
    allowed.sort();
    assert_eq!(bound, allowed);
    for role in &roles {
        for rule in role["rules"].as_array().into_iter().flatten() {
            let names_policies = rule["resources"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("pgaccesspolicies")));
            let writes = rule["verbs"].as_array().is_some_and(|v| {
                v.iter()
                    .any(|v| !matches!(v.as_str(), Some("get" | "list" | "watch")))
            });
            assert!(
                !(names_policies && writes),
                "{}: {rule}",
                role["metadata"]["name"]
            );
        }
    }
}
