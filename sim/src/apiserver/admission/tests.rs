use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::cel::{Activation, Expression};
use super::matching::{self, Target};
use super::{CompiledPolicy, Decision};

/// The access-request policy as shipped in deploy/.
const SHIPPED: &str = include_str!("../../../../deploy/08-access-request-admission.yaml");
const OPERATOR: &str = "system:serviceaccount:pgtoolbox-system:pgtoolbox-operator";

fn shipped(kind: &str) -> Value {
    serde_yaml_ng::Deserializer::from_str(SHIPPED)
        .map(|doc| Value::deserialize(doc).expect("YAML document"))
        .find(|doc| doc["kind"] == kind)
        .unwrap_or_else(|| panic!("deploy/ ships a {kind}"))
}

fn request(user: &str, groups: &[&str]) -> Value {
    let mut info = json!({"username": user});
    if !groups.is_empty() {
        info["groups"] = json!(groups);
    }
    json!({
        "operation": "UPDATE", "subResource": "status", "namespace": "team-a", "name": "r",
        "kind": {"group": "pgtoolbox.fyannk.dev", "version": "v1alpha1", "kind": "PgAccessRequest"},
        "resource": {"group": "pgtoolbox.fyannk.dev", "version": "v1alpha1", "resource": "pgaccessrequests"},
        "userInfo": info,
    })
}

fn access_request(subject: Value, status: Value) -> Value {
    json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
        "metadata": {"name": "r", "namespace": "team-a"},
        "spec": {"subject": subject, "clusterRole": "cnpg-viewer", "expiresAt": "2030-01-01T00:00:00Z"},
        "status": status,
    })
}

fn alice() -> Value {
    json!({"kind": "User", "name": "alice"})
}

fn decision(phase: &str, approver: &str) -> Value {
    json!({"phase": phase, "approver": approver, "decidedAt": "2026-12-07T10:00:00Z"})
}

/// The shipped policy's decisions on a status update from `old` to `new` of a request for
/// `subject`, written by `user` (member of `groups`).
fn judge(subject: Value, old: Value, new: Value, user: &str, groups: &[&str]) -> Vec<Decision> {
    let spec = shipped("ValidatingAdmissionPolicy")["spec"].clone();
    let policy = CompiledPolicy::new(&spec);
    let activation = Activation::new(
        access_request(subject.clone(), new),
        access_request(subject, old),
        request(user, groups),
        None,
        json!({"metadata": {"name": "team-a"}}),
    );
    policy.decide(activation, true)
}

fn denials(decisions: &[Decision]) -> Vec<String> {
    decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Deny { message, reason } => Some(format!("{reason}: {message}")),
            Decision::Admit => None,
        })
        .collect()
}

#[test]
fn the_shipped_policy_compiles_and_binds_with_deny() {
    let spec = shipped("ValidatingAdmissionPolicy")["spec"].clone();
    let policy = CompiledPolicy::new(&spec);
    for e in policy
        .match_conditions
        .iter()
        .chain(policy.variables.iter().map(|(_, e)| e))
        .chain(policy.validations.iter().map(|v| &v.expression))
        .chain(
            policy
                .validations
                .iter()
                .filter_map(|v| v.message_expression.as_ref()),
        )
    {
        assert_eq!(e.compile_error(), None, "{}", e.source);
    }
    let binding = shipped("ValidatingAdmissionPolicyBinding");
    assert_eq!(
        binding["spec"]["policyName"],
        shipped("ValidatingAdmissionPolicy")["metadata"]["name"]
    );
    assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
    assert_eq!(
        spec["matchConstraints"]["resourceRules"][0]["resources"],
        json!(["pgaccessrequests/status"])
    );
}

#[test]
fn an_approver_other_than_the_writer_is_refused() {
    // alice approves her own request as "bob".
    let d = judge(
        alice(),
        json!({}),
        decision("Approved", "bob"),
        "alice",
        &["system:authenticated"],
    );
    let refused = denials(&d);
    assert!(
        refused.iter().any(|m| m
            == "Forbidden: status.approver must name the identity that writes the decision (alice), not bob"),
        "{refused:?}"
    );
    assert!(
        refused.iter().any(|m| m.contains("alice is the subject")),
        "{refused:?}"
    );
}

#[test]
fn the_subject_may_not_approve_even_under_its_own_name() {
    let d = judge(
        alice(),
        json!({"phase": "Pending"}),
        decision("Approved", "alice"),
        "alice",
        &[],
    );
    assert_eq!(
        denials(&d),
        vec![
            "Forbidden: alice is the subject of this request (or a member of its subject Group) and may not approve or deny it (four eyes)"
        ]
    );
}

#[test]
fn a_member_of_the_subject_group_may_not_approve() {
    let group = json!({"kind": "Group", "name": "dbas"});
    let d = judge(
        group.clone(),
        json!({}),
        decision("Approved", "carol"),
        "carol",
        &["dbas", "system:authenticated"],
    );
    assert_eq!(denials(&d).len(), 1, "{d:?}");
    // Outside the group, the same approval is admitted.
    let d = judge(
        group,
        json!({}),
        decision("Approved", "carol"),
        "carol",
        &["ops"],
    );
    assert_eq!(denials(&d), Vec::<String>::new());
}

#[test]
fn a_service_account_subject_may_not_approve_itself() {
    let sa = json!({"kind": "ServiceAccount", "name": "bot", "namespace": "team-a"});
    let me = "system:serviceaccount:team-a:bot";
    let d = judge(
        sa.clone(),
        json!({}),
        decision("Approved", me),
        me,
        &["system:serviceaccounts"],
    );
    assert_eq!(denials(&d).len(), 1, "{d:?}");
    let d = judge(sa, json!({}), decision("Approved", "bob"), "bob", &[]);
    assert_eq!(denials(&d), Vec::<String>::new());
}

#[test]
fn another_user_approves_denies_and_revokes() {
    for (old, new) in [
        ("Pending", "Approved"),
        ("Pending", "Denied"),
        ("Approved", "Revoked"),
    ] {
        let d = judge(
            alice(),
            json!({"phase": old}),
            decision(new, "bob"),
            "bob",
            &[],
        );
        assert_eq!(denials(&d), Vec::<String>::new(), "{old} -> {new}");
    }
    // No status yet reads as Pending.
    let d = judge(
        alice(),
        Value::Null,
        decision("Approved", "bob"),
        "bob",
        &[],
    );
    assert_eq!(denials(&d), Vec::<String>::new());
}

#[test]
fn the_subject_may_revoke_its_own_access() {
    let d = judge(
        alice(),
        decision("Approved", "bob"),
        decision("Revoked", "alice"),
        "alice",
        &[],
    );
    assert_eq!(denials(&d), Vec::<String>::new());
}

#[test]
fn moves_that_are_not_decisions_are_refused() {
    for (old, new) in [
        ("Denied", "Approved"),
        ("Revoked", "Approved"),
        ("Expired", "Approved"),
        ("Pending", "Expired"),
        ("Pending", "Revoked"),
        ("Approved", "Pending"),
        ("Pending", "Granted"),
    ] {
        let d = judge(
            alice(),
            decision(old, "bob"),
            decision(new, "bob"),
            "bob",
            &[],
        );
        assert_eq!(
            denials(&d),
            vec![format!(
                "Forbidden: phase {old} -> {new} is not a decision: a decision moves Pending to Approved or Denied, or Approved to Revoked"
            )],
            "{old} -> {new}"
        );
    }
}

#[test]
fn the_operator_ends_requests_and_decides_nothing() {
    for (old, new) in [
        ("Pending", "Expired"),
        ("Approved", "Expired"),
        ("Approved", "Revoked"),
    ] {
        let d = judge(
            alice(),
            decision(old, "bob"),
            decision(new, "bob"),
            OPERATOR,
            &[],
        );
        assert_eq!(denials(&d), Vec::<String>::new(), "{old} -> {new}");
    }
    for (old, new) in [
        ("Pending", "Approved"),
        ("Denied", "Expired"),
        ("Expired", "Pending"),
    ] {
        let d = judge(
            alice(),
            decision(old, "bob"),
            decision(new, "bob"),
            OPERATOR,
            &[],
        );
        assert_eq!(denials(&d).len(), 1, "{old} -> {new}: {d:?}");
    }
    // Nor does it write the approver.
    let d = judge(
        alice(),
        decision("Approved", "bob"),
        decision("Approved", OPERATOR),
        OPERATOR,
        &[],
    );
    assert_eq!(denials(&d).len(), 1, "{d:?}");
}

#[test]
fn a_write_that_leaves_the_decision_alone_is_not_judged() {
    let old = json!({"phase": "Approved", "approver": "bob", "decidedAt": "2026-12-07T10:00:00Z"});
    let mut new = old.clone();
    new["conditions"] = json!([{"type": "Ready", "status": "True"}]);
    // Even the subject may write it (the match condition is false: no decision at all).
    assert_eq!(judge(alice(), old, new, "alice", &[]), Vec::new());
}

// The machinery, on policies of its own.

fn policy(spec: Value) -> CompiledPolicy {
    CompiledPolicy::new(&spec)
}

fn on(object: Value) -> Activation {
    Activation::new(
        object,
        Value::Null,
        request("alice", &["devs"]),
        None,
        Value::Null,
    )
}

#[test]
fn messages_fall_back_from_expression_to_message_to_the_expression() {
    let p = policy(json!({"validations": [
        {"expression": "object.n < 3", "messageExpression": "'n is ' + string(object.n)"},
        {"expression": "object.n < 3", "messageExpression": "object.missing", "message": " static "},
        {"expression": "object.n < 3", "messageExpression": "'two\\nlines'"},
        {"expression": " object.n < 3 ", "reason": "Forbidden"},
    ]}));
    let d = p.decide(on(json!({"n": 5})), true);
    let expected = [
        ("Invalid", "n is 5"),
        ("Invalid", "static"),
        ("Invalid", "failed expression: object.n < 3"),
        ("Forbidden", "failed expression: object.n < 3"),
    ];
    for (got, (reason, message)) in d.iter().zip(expected) {
        assert_eq!(
            got,
            &Decision::Deny {
                message: message.into(),
                reason: reason.into()
            }
        );
    }
}

#[test]
fn errors_refuse_under_fail_and_admit_under_ignore() {
    let p = policy(json!({"validations": [{"expression": "object.nothere == 1"}]}));
    let d = p.decide(on(json!({})), true);
    assert_eq!(
        d,
        vec![Decision::Deny {
            message: "expression 'object.nothere == 1' resulted in error: no such key: nothere"
                .into(),
            reason: "Invalid".into()
        }]
    );
    assert_eq!(p.decide(on(json!({})), false), vec![Decision::Admit]);
}

#[test]
fn variables_see_earlier_ones_and_a_failed_one_reports_its_error() {
    let p = policy(json!({
        "variables": [
            {"name": "twice", "expression": "object.n * 2"},
            {"name": "more", "expression": "variables.twice + 1"},
            {"name": "broken", "expression": "object.nothere"},
        ],
        "validations": [
            {"expression": "variables.more == 7"},
            {"expression": "variables.broken == 1"},
        ]
    }));
    let d = p.decide(on(json!({"n": 3})), true);
    assert_eq!(d[0], Decision::Admit);
    assert_eq!(
        d[1],
        Decision::Deny {
            message: "expression 'variables.broken == 1' resulted in error: no such key: nothere"
                .into(),
            reason: "Invalid".into()
        }
    );
}

#[test]
fn match_conditions_gate_and_their_errors_follow_the_failure_policy() {
    let p = policy(json!({
        "matchConditions": [{"name": "devs", "expression": "'devs' in request.userInfo.groups"}],
        "validations": [{"expression": "false"}]
    }));
    assert_eq!(p.decide(on(json!({})), true).len(), 1);
    let other = Activation::new(
        json!({}),
        Value::Null,
        request("bob", &["ops"]),
        None,
        Value::Null,
    );
    assert_eq!(p.decide(other, true), Vec::new());
    let broken = policy(json!({
        "matchConditions": [{"name": "x", "expression": "object.nothere"}],
        "validations": [{"expression": "false"}]
    }));
    assert_eq!(
        broken.decide(on(json!({})), true),
        vec![Decision::Deny {
            message: "expression 'object.nothere' resulted in error: no such key: nothere".into(),
            reason: "Invalid".into()
        }]
    );
    assert_eq!(broken.decide(on(json!({})), false), vec![Decision::Admit]);
}

#[test]
fn params_and_the_namespace_object_are_bound() {
    let p = policy(json!({"validations": [
        {"expression": "object.replicas <= params.data.max"},
        {"expression": "namespaceObject.metadata.labels.tier == 'gold'"},
        {"expression": "object.metadata.labels['app.kubernetes.io/name'] == 'web'"},
    ]}));
    let a = Activation::new(
        json!({"replicas": 3, "metadata": {"labels": {"app.kubernetes.io/name": "web"}}}),
        Value::Null,
        request("alice", &[]),
        Some(json!({"data": {"max": 2}})),
        json!({"metadata": {"name": "team-a", "labels": {"tier": "gold"}}}),
    );
    let d = p.decide(a, true);
    assert!(matches!(d[0], Decision::Deny { .. }));
    assert_eq!(d[1..], [Decision::Admit, Decision::Admit]);
}

#[test]
fn a_compile_error_is_an_evaluation_error() {
    let e = Expression::compile("object.(");
    assert!(e.compile_error().is_some());
    let p = policy(json!({"validations": [{"expression": "object.("}]}));
    let d = p.decide(on(json!({})), true);
    assert!(
        matches!(&d[0], Decision::Deny { message, .. } if message.starts_with("compilation failed: ")),
        "{d:?}"
    );
}

fn target<'a>(
    op: &'a str,
    resource: &'a str,
    sub: &'a str,
    namespaced: bool,
    obj: &'a Value,
) -> Target<'a> {
    Target {
        operation: op,
        group: "apps",
        version: "v1",
        resource,
        subresource: sub,
        namespaced,
        namespace: if namespaced { "team-a" } else { "" },
        name: "web",
        object: Some(obj),
        old_object: None,
        is_namespace: false,
    }
}

fn rule(resources: Value) -> Value {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["*"], "operations": ["UPDATE", "CREATE"], "resources": resources}]})
}

#[test]
fn resource_rules_name_subresources_as_upstream() {
    let obj = json!({"metadata": {"labels": {"app": "web"}}});
    let none = || None;
    let m = |criteria: &Value, t: &Target<'_>| matching::matches(criteria, t, none).unwrap();
    let status = target("UPDATE", "deployments", "status", true, &obj);
    let main = target("UPDATE", "deployments", "", true, &obj);
    assert!(!m(&rule(json!(["deployments"])), &status));
    assert!(m(&rule(json!(["deployments"])), &main));
    assert!(m(&rule(json!(["deployments/status"])), &status));
    assert!(!m(&rule(json!(["deployments/status"])), &main));
    assert!(m(&rule(json!(["deployments/*"])), &status));
    assert!(m(&rule(json!(["*/status"])), &status));
    assert!(m(&rule(json!(["*"])), &main));
    assert!(!m(&rule(json!(["*"])), &status));
    assert!(m(&rule(json!(["*/*"])), &status));
    assert!(!m(
        &rule(json!(["*/*"])),
        &target("DELETE", "deployments", "", true, &obj)
    ));
    let mut scoped = rule(json!(["*"]));
    scoped["resourceRules"][0]["scope"] = json!("Cluster");
    assert!(!m(&scoped, &main));
    let mut excluded = rule(json!(["*"]));
    excluded["excludeResourceRules"] = json!([{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["deployments"], "resourceNames": ["web"]}]);
    assert!(!m(&excluded, &main));
    let mut selected = rule(json!(["*"]));
    selected["objectSelector"] =
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]});
    assert!(!m(&selected, &main));
    selected["objectSelector"] = json!({"matchLabels": {"app": "web"}});
    assert!(m(&selected, &main));
    // No resource rules (a binding's matchResources): everything the policy matched.
    assert!(m(&json!({}), &status));
}

#[test]
fn namespace_selectors_read_the_namespace_labels() {
    let obj = json!({});
    let t = target("CREATE", "deployments", "", true, &obj);
    let mut criteria = rule(json!(["*"]));
    criteria["namespaceSelector"] = json!({"matchLabels": {"tier": "gold"}});
    let gold = || Some(BTreeMap::from([("tier".to_string(), "gold".to_string())]));
    let plain = || Some(BTreeMap::new());
    assert_eq!(matching::matches(&criteria, &t, gold), Ok(true));
    assert_eq!(matching::matches(&criteria, &t, plain), Ok(false));
    // A cluster-scoped object is not filtered by namespace.
    let cluster = target("CREATE", "deployments", "", false, &obj);
    assert_eq!(matching::matches(&criteria, &cluster, plain), Ok(true));
    criteria["namespaceSelector"] =
        json!({"matchExpressions": [{"key": "tier", "operator": "Sometimes"}]});
    assert!(matching::matches(&criteria, &t, gold).is_err());
}
