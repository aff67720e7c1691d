//! The access policy as shipped in deploy/ (`pgtoolbox-access-request-policy`, its two
//! bindings and the cluster's default PgAccessPolicy), judged by this evaluator.

use serde::Deserialize;
use serde_json::{Value, json};

use super::cel::Activation;
use super::{CompiledPolicy, Decision};

const SHIPPED: &str = include_str!("../../../../deploy/10-access-policy.yaml");
const DEFAULT: &str = include_str!("../../../../deploy/access-policy/default.yaml");

fn documents(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).expect("YAML document"))
        .collect()
}

fn shipped(name: &str) -> Value {
    documents(SHIPPED)
        .into_iter()
        .find(|d| d["kind"] == "ValidatingAdmissionPolicy" && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("deploy/ ships {name}"))
}

fn policy() -> CompiledPolicy {
    CompiledPolicy::new(&shipped("pgtoolbox-access-request-policy")["spec"])
}

fn approvals_policy() -> CompiledPolicy {
    CompiledPolicy::new(&shipped("pgtoolbox-access-request-approvals")["spec"])
}

fn default_policy() -> Value {
    documents(DEFAULT).remove(0)
}

fn request(operation: &str, user: &str, groups: &[&str]) -> Value {
    let mut info = json!({"username": user});
    if !groups.is_empty() {
        info["groups"] = json!(groups);
    }
    let mut r = json!({
        "operation": operation, "namespace": "team-a", "name": "r",
        "kind": {"group": "pgtoolbox.fyannk.dev", "version": "v1alpha1", "kind": "PgAccessRequest"},
        "userInfo": info,
    });
    if operation == "UPDATE" {
        r["subResource"] = json!("status");
    }
    r
}

fn access_request(spec: Value, status: Value) -> Value {
    let mut full = json!({
        "subject": {"kind": "User", "name": "alice"}, "clusterRole": "view",
        "expiresAt": "2026-12-07T16:00:00Z", "reason": "INC-1", "approvalsRequired": 1,
    });
    for (k, v) in spec.as_object().expect("an object") {
        match v {
            Value::Null => {
                full.as_object_mut().expect("an object").remove(k);
            }
            v => full[k] = v.clone(),
        }
    }
    let mut obj = json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
        "metadata": {"name": "r", "namespace": "team-a", "creationTimestamp": "2026-12-07T10:00:00Z"},
        "spec": full,
    });
    if !status.is_null() {
        obj["status"] = status;
    }
    obj
}

fn denials(decisions: Vec<Decision>) -> Vec<String> {
    decisions
        .into_iter()
        .filter_map(|d| match d {
            Decision::Deny { message, reason } => Some(format!("{reason}: {message}")),
            Decision::Admit => None,
        })
        .collect()
}

/// The refusals of a creation of a request with `spec` (merged over a valid one) under `params`.
fn create(spec: Value, params: Value) -> Vec<String> {
    let activation = Activation::new(
        access_request(spec, Value::Null),
        Value::Null,
        request("CREATE", "alice", &[]),
        Some(params),
        json!({"metadata": {"name": "team-a"}}),
    );
    denials(policy().decide(activation, true))
}

/// The refusals of a status write from `old` to `new` by `user` on a request needing `asked`
/// approvals (the approvals policy takes no parameters).
fn write(old: Value, new: Value, user: &str, asked: i64) -> Vec<String> {
    let spec = json!({"approvalsRequired": asked});
    let activation = Activation::new(
        access_request(spec.clone(), new),
        access_request(spec, old),
        request("UPDATE", user, &["devs"]),
        None,
        json!({"metadata": {"name": "team-a"}}),
    );
    denials(approvals_policy().decide(activation, true))
}

fn approval(who: &str) -> Value {
    json!({"approver": who, "decidedAt": "2026-12-07T10:05:00Z"})
}

fn pending(approvals: &[&str]) -> Value {
    json!({"phase": "Pending", "approvals": approvals.iter().map(|a| approval(a)).collect::<Vec<_>>()})
}

fn approved(approvals: &[&str], by: &str) -> Value {
    json!({"phase": "Approved", "approver": by, "decidedAt": "2026-12-07T10:05:00Z",
        "approvals": approvals.iter().map(|a| approval(a)).collect::<Vec<_>>()})
}

#[test]
fn the_shipped_policies_compile_and_their_bindings_fail_closed() {
    for name in [
        "pgtoolbox-access-request-policy",
        "pgtoolbox-access-request-approvals",
    ] {
        let vap = shipped(name);
        let compiled = CompiledPolicy::new(&vap["spec"]);
        for e in compiled
            .variables
            .iter()
            .map(|(_, e)| e)
            .chain(compiled.validations.iter().map(|v| &v.expression))
            .chain(
                compiled
                    .validations
                    .iter()
                    .filter_map(|v| v.message_expression.as_ref()),
            )
        {
            assert_eq!(e.compile_error(), None, "{name}: {}", e.source);
        }
        assert_eq!(vap["spec"]["failurePolicy"], "Fail");
    }
    // The creation rules read the policy; the approvals read none, so no status write (the
    // operator's expiry) depends on a PgAccessPolicy being there.
    let create = shipped("pgtoolbox-access-request-policy");
    assert_eq!(create["spec"]["paramKind"]["kind"], "PgAccessPolicy");
    assert_eq!(
        create["spec"]["matchConstraints"]["resourceRules"][0]["operations"],
        json!(["CREATE"])
    );
    let approvals = shipped("pgtoolbox-access-request-approvals");
    assert!(approvals["spec"].get("paramKind").is_none());
    assert_eq!(
        approvals["spec"]["matchConstraints"]["resourceRules"][0]["resources"],
        json!(["pgaccessrequests/status"])
    );
    let docs = documents(SHIPPED);
    let bindings: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"] == "ValidatingAdmissionPolicyBinding")
        .collect();
    assert_eq!(bindings.len(), 3);
    for b in &bindings {
        assert_eq!(b["spec"]["validationActions"], json!(["Deny"]));
    }
    let with_params: Vec<&&Value> = bindings
        .iter()
        .filter(|b| b["spec"]["policyName"] == "pgtoolbox-access-request-policy")
        .collect();
    assert_eq!(with_params.len(), 2);
    for b in &with_params {
        assert_eq!(b["spec"]["paramRef"]["parameterNotFoundAction"], "Deny");
        assert_eq!(b["spec"]["paramRef"]["name"], "default");
    }
    // The default binding names the default in the operator's namespace; the other takes the
    // request's own namespace (no paramRef.namespace).
    assert_eq!(
        with_params[0]["spec"]["paramRef"]["namespace"],
        "pgtoolbox-system"
    );
    assert!(
        with_params[1]["spec"]["paramRef"]
            .get("namespace")
            .is_none()
    );
    let default = default_policy();
    assert_eq!(
        (
            &default["metadata"]["namespace"],
            &default["metadata"]["name"]
        ),
        (&json!("pgtoolbox-system"), &json!("default"))
    );
}

#[test]
fn a_request_within_the_default_policy_is_admitted() {
    assert_eq!(create(json!({}), default_policy()), Vec::<String>::new());
    // Exactly the longest duration still passes.
    assert_eq!(
        create(
            json!({"expiresAt": "2026-12-07T18:00:00Z"}),
            default_policy()
        ),
        Vec::<String>::new()
    );
}

#[test]
fn each_rule_refuses_with_a_message_naming_it() {
    let cases = [
        (
            json!({"clusterRole": "cluster-admin"}),
            "ClusterRole cluster-admin is not allowed by access policy pgtoolbox-system/default (allowed: view)",
        ),
        (
            json!({"expiresAt": "2030-01-01T00:00:00Z"}),
            "duration too long: expiresAt 2030-01-01T00:00:00Z is more than 8h after",
        ),
        (
            json!({"expiresAt": "2026-12-07T18:00:01Z"}),
            "duration too long",
        ),
        (
            json!({"reason": "  "}),
            "reason required: access policy pgtoolbox-system/default",
        ),
        (json!({"reason": null}), "reason required"),
    ];
    for (spec, expected) in cases {
        let refused = create(spec.clone(), default_policy());
        assert_eq!(refused.len(), 1, "{spec}: {refused:?}");
        assert!(refused[0].starts_with("Forbidden: "), "{refused:?}");
        assert!(refused[0].contains(expected), "{spec}: {refused:?}");
    }
    // No reason needed where the policy says so.
    let mut lax = default_policy();
    lax["spec"]["reasonRequired"] = json!(false);
    assert_eq!(create(json!({"reason": null}), lax), Vec::<String>::new());
    // Fewer approvals asked for than the policy needs.
    let mut two = default_policy();
    two["spec"]["approvalsRequired"] = json!(2);
    let refused = create(json!({}), two.clone());
    assert!(
        refused.len() == 1
            && refused[0].contains("approvals too few")
            && refused[0].contains("at least 2"),
        "{refused:?}"
    );
    assert_eq!(
        create(json!({"approvalsRequired": 2}), two),
        Vec::<String>::new()
    );
    // An empty list allows nothing.
    let mut none = default_policy();
    none["spec"]["allowedClusterRoles"] = json!([]);
    let refused = create(json!({}), none);
    assert!(refused[0].contains("(allowed: none)"), "{refused:?}");
}

#[test]
fn approvals_are_appended_by_their_writer_distinct_and_never_by_the_subject() {
    // bob approves first of two: recorded, still Pending.
    assert_eq!(
        write(pending(&[]), pending(&["bob"]), "bob", 2),
        Vec::<String>::new()
    );
    // bob writes carol's name.
    let refused = write(pending(&[]), pending(&["carol"]), "bob", 2);
    assert!(
        refused
            .iter()
            .any(|r| r.contains("must name the identity that writes it (bob)")),
        "{refused:?}"
    );
    // bob twice.
    let refused = write(pending(&["bob"]), pending(&["bob", "bob"]), "bob", 2);
    assert!(
        refused
            .iter()
            .any(|r| r.contains("bob approved this request already")),
        "{refused:?}"
    );
    // The subject approves itself.
    let refused = write(pending(&[]), pending(&["alice"]), "alice", 2);
    assert!(
        refused.iter().any(|r| r.contains("alice is the subject")),
        "{refused:?}"
    );
    // Two at once, or an approval taken away or rewritten.
    let refused = write(pending(&[]), pending(&["bob", "carol"]), "bob", 2);
    assert!(
        refused.iter().any(|r| r.contains("only ever appended to")),
        "{refused:?}"
    );
    let refused = write(pending(&["bob"]), pending(&[]), "carol", 2);
    assert!(
        refused.iter().any(|r| r.contains("only ever appended to")),
        "{refused:?}"
    );
    // After a decision, no more approvals.
    let refused = write(
        json!({"phase": "Denied", "approver": "dave"}),
        json!({"phase": "Denied", "approver": "dave", "approvals": [approval("bob")]}),
        "bob",
        1,
    );
    assert!(
        refused
            .iter()
            .any(|r| r.contains("only while the request is Pending, not Denied")),
        "{refused:?}"
    );
}

#[test]
fn the_phase_turns_approved_only_with_the_approval_reaching_the_count() {
    // carol's is the second of two: Approved.
    assert_eq!(
        write(
            pending(&["bob"]),
            approved(&["bob", "carol"], "carol"),
            "carol",
            2,
        ),
        Vec::<String>::new()
    );
    // Approved on the first of two.
    let refused = write(pending(&[]), approved(&["bob"], "bob"), "bob", 2);
    assert!(
        refused
            .iter()
            .any(|r| r.contains("reaching 2 distinct approvals") && r.contains("it has 1")),
        "{refused:?}"
    );
    // Approved without appending one's own approval (a decision by name only).
    let refused = write(
        pending(&[]),
        json!({"phase": "Approved", "approver": "bob"}),
        "bob",
        1,
    );
    assert!(
        refused.iter().any(|r| r.contains("it has 0")),
        "{refused:?}"
    );
    // One approval is enough where one is needed.
    assert_eq!(
        write(pending(&[]), approved(&["bob"], "bob"), "bob", 1),
        Vec::<String>::new()
    );
    // Writes that leave the approvals alone: a denial, the operator's conditions and expiry.
    assert_eq!(
        write(
            pending(&["bob"]),
            json!({"phase": "Denied", "approver": "carol", "approvals": [approval("bob")]}),
            "carol",
            2,
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        write(
            approved(&["bob"], "bob"),
            json!({"phase": "Expired", "approver": "bob", "approvals": [approval("bob")], "conditions": []}),
            "system:serviceaccount:pgtoolbox-system:pgtoolbox-operator",
            1,
        ),
        Vec::<String>::new()
    );
}
