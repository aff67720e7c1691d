//! ValidatingAdmissionPolicies enforced by the sim as kube-apiserver enforces them: the 422 and
//! 403 answers and their wording, `Warn` as a `Warning` header, parameters found through
//! `paramRef`, namespace selectors, subresources, deletes, and the requester's identity.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::sim_support::{namespace, raw_with_warnings, refusal, start};

pub(crate) async fn apply(client: &kube::Client, path: &str, body: Value) {
    let (code, _, answer) = raw_with_warnings(
        client,
        "POST",
        path,
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{answer}");
}

async fn policy(client: &kube::Client, name: &str, spec: Value) {
    apply(
        client,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": spec}),
    )
    .await;
}

async fn binding(client: &kube::Client, name: &str, spec: Value) {
    apply(
        client,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": spec}),
    )
    .await;
}

fn configmaps_rule(operations: Value, resources: Value) -> Value {
    json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
        "operations": operations, "resources": resources}]})
}

fn configmap(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("configmap")
}

#[tokio::test]
async fn a_refusal_is_worded_and_coded_as_kube_apiserver_words_it() {
    let (_sim, client) = start().await;
    namespace(&client, "team-a").await;
    policy(
        &client,
        "small",
        json!({
            "matchConstraints": configmaps_rule(json!(["CREATE", "UPDATE"]), json!(["configmaps"])),
            "validations": [
                {"expression": "size(object.data) <= 1", "messageExpression": "'at most one key, not ' + string(size(object.data))"},
                {"expression": "!has(object.data.secret)", "message": "no secrets here", "reason": "Forbidden"}
            ]
        }),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    // Without a binding a policy does nothing.
    api.create(
        &PostParams::default(),
        &configmap("free", json!({"a": "1", "b": "2"})),
    )
    .await
    .expect("unbound policy");
    binding(
        &client,
        "small-binding",
        json!({"policyName": "small", "validationActions": ["Deny"]}),
    )
    .await;

    let (code, reason, message) = refusal(
        api.create(
            &PostParams::default(),
            &configmap("two", json!({"a": "1", "b": "2"})),
        )
        .await,
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-binding' denied request: at most one key, not 2"
    );
    let (code, reason, message) = refusal(
        api.create(
            &PostParams::default(),
            &configmap("s", json!({"secret": "x"})),
        )
        .await,
    );
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert!(
        message.ends_with("denied request: no secrets here"),
        "{message}"
    );
    // The Status names the object and carries the message as its one cause.
    let (code, _, body) = raw_with_warnings(
        &client,
        "POST",
        "/api/v1/namespaces/team-a/configmaps",
        "application/json",
        json!({"metadata": {"generateName": "gen-"}, "data": {"a": "1", "b": "2"}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(body["details"]["kind"], "configmaps");
    assert!(
        body["details"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("gen-")),
        "{body}"
    );
    assert_eq!(
        body["details"]["causes"],
        json!([{"message": "ValidatingAdmissionPolicy 'small' with binding 'small-binding' denied request: at most one key, not 2"}])
    );
    // An update is judged on the new object; nothing was stored of the refused writes.
    let one = api
        .create(&PostParams::default(), &configmap("one", json!({"a": "1"})))
        .await
        .expect("one key");
    let patch = json!({"data": {"b": "2"}});
    let (code, _, _) = refusal(
        api.patch("one", &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    );
    assert_eq!(code, 422);
    assert_eq!(api.get("one").await.expect("kept").data, one.data);
    assert!(api.get_opt("two").await.expect("readable").is_none());
}

#[tokio::test]
async fn warn_answers_a_warning_header_and_admits() {
    let (_sim, client) = start().await;
    namespace(&client, "team-a").await;
    policy(
        &client,
        "labelled",
        json!({
            "matchConstraints": configmaps_rule(json!(["CREATE"]), json!(["configmaps"])),
            "validations": [{"expression": "has(object.metadata.labels)", "message": "label it"}]
        }),
    )
    .await;
    binding(
        &client,
        "warn",
        json!({"policyName": "labelled", "validationActions": ["Warn", "Audit"]}),
    )
    .await;
    let (code, warnings, _) = raw_with_warnings(
        &client,
        "POST",
        "/api/v1/namespaces/team-a/configmaps",
        "application/json",
        json!({"metadata": {"name": "w"}}).to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        vec![
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'warn': label it\""
        ]
    );
}

#[tokio::test]
async fn params_namespace_selectors_and_failure_policies() {
    let (_sim, client) = start().await;
    for ns in ["gold", "plain", "limits"] {
        namespace(&client, ns).await;
    }
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .patch(
            "gold",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"tier": "gold"}}})),
        )
        .await
        .expect("labelled");
    let limits: Api<ConfigMap> = Api::namespaced(client.clone(), "limits");
    limits
        .create(
            &PostParams::default(),
            &configmap("max", json!({"keys": "1"})),
        )
        .await
        .expect("param");
    policy(
        &client,
        "limited",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": configmaps_rule(json!(["CREATE"]), json!(["configmaps"])),
            "validations": [{
                "expression": "size(object.data) <= int(params.data.keys)",
                "messageExpression": "'at most ' + params.data.keys + ' keys in ' + namespaceObject.metadata.name"
            }]
        }),
    )
    .await;
    binding(
        &client,
        "gold-only",
        json!({"policyName": "limited", "validationActions": ["Deny"],
            "paramRef": {"name": "max", "namespace": "limits", "parameterNotFoundAction": "Deny"},
            "matchResources": {"namespaceSelector": {"matchLabels": {"tier": "gold"}}}}),
    )
    .await;
    let gold: Api<ConfigMap> = Api::namespaced(client.clone(), "gold");
    let plain: Api<ConfigMap> = Api::namespaced(client.clone(), "plain");
    let two = || configmap("two", json!({"a": "1", "b": "2"}));
    let (code, _, message) = refusal(gold.create(&PostParams::default(), &two()).await);
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: at most 1 keys in gold"),
        "{message}"
    );
    plain
        .create(&PostParams::default(), &two())
        .await
        .expect("the namespace selector leaves plain out");
    // The parameter gone, `parameterNotFoundAction: Deny` refuses under `failurePolicy: Fail`.
    limits
        .delete("max", &DeleteParams::default())
        .await
        .expect("param deleted");
    let (code, _, message) = refusal(
        gold.create(&PostParams::default(), &configmap("one", json!({"a": "1"})))
            .await,
    );
    assert_eq!(code, 422);
    assert!(
        message.ends_with(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{message}"
    );
    // An evaluation error under `failurePolicy: Ignore` admits.
    policy(
        &client,
        "lenient",
        json!({"failurePolicy": "Ignore",
            "matchConstraints": configmaps_rule(json!(["CREATE"]), json!(["configmaps"])),
            "validations": [{"expression": "object.data.missing == 'x'"}]}),
    )
    .await;
    binding(
        &client,
        "lenient",
        json!({"policyName": "lenient", "validationActions": ["Deny"]}),
    )
    .await;
    plain
        .create(
            &PostParams::default(),
            &configmap("three", json!({"a": "1"})),
        )
        .await
        .expect("errors ignored");
}

#[tokio::test]
async fn subresources_deletes_and_the_requester_are_seen() {
    let (sim, client) = start().await;
    namespace(&client, "team-a").await;
    // Only the status subresource of Namespaces, and deletes of ConfigMaps by anyone but admins.
    policy(
        &client,
        "guard",
        json!({
            "matchConstraints": {"resourceRules": [
                {"apiGroups": [""], "apiVersions": ["*"], "operations": ["DELETE"], "resources": ["configmaps"]},
                {"apiGroups": [""], "apiVersions": ["*"], "operations": ["UPDATE"], "resources": ["namespaces/status"]}
            ]},
            "matchConditions": [{"name": "not-masters", "expression": "!('system:masters' in request.userInfo.groups)"}],
            "variables": [{"name": "who", "expression": "request.userInfo.username"}],
            "validations": [{
                "expression": "false",
                "messageExpression": "variables.who + ' may not ' + request.operation + (has(request.subResource) ? ' ' + request.subResource : '') + ' ' + (request.operation == 'DELETE' ? oldObject.metadata.name : object.metadata.name)"
            }]
        }),
    )
    .await;
    binding(
        &client,
        "guard",
        json!({"policyName": "guard", "validationActions": ["Deny"]}),
    )
    .await;
    // RBAC lets dave do both; the policy refuses.
    apply(
        &client,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        json!({"metadata": {"name": "all"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
    )
    .await;
    apply(
        &client,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        json!({"metadata": {"name": "dave"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "all"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dave"}]}),
    )
    .await;
    let dave = sim.admin().client_for("dave", &[]).expect("client");
    let admin_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    admin_maps
        .create(&PostParams::default(), &configmap("keep", json!({})))
        .await
        .expect("created");
    let maps: Api<ConfigMap> = Api::namespaced(dave.clone(), "team-a");
    let (code, _, message) = refusal(maps.delete("keep", &DeleteParams::default()).await);
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: dave may not DELETE keep"),
        "{message}"
    );
    assert!(
        admin_maps
            .get_opt("keep")
            .await
            .expect("readable")
            .is_some()
    );
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(dave);
    let status = json!({"status": {"phase": "Active"}});
    let (_, _, message) = refusal(
        namespaces
            .patch_status("team-a", &PatchParams::default(), &Patch::Merge(&status))
            .await,
    );
    assert!(
        message.ends_with("denied request: dave may not UPDATE status team-a"),
        "{message}"
    );
    // The main resource is not matched; the admin (system:masters) is not matched by the condition.
    namespaces
        .patch(
            "team-a",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("not the status subresource");
    admin_maps
        .delete("keep", &DeleteParams::default())
        .await
        .expect("the admin is not matched");
}

/// A Gateway API CRD as its installs label them.
fn gateway_crd(version: &str, channel: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.gateway.networking.k8s.io", "annotations": {
            "gateway.networking.k8s.io/bundle-version": version,
            "gateway.networking.k8s.io/channel": channel}},
        "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

#[tokio::test]
async fn the_gateway_api_install_policies_are_enforced() {
    let (_sim, client) = start().await;
    let install = std::fs::read_to_string(format!(
        "{}/../tests/fixtures/upstream-crds/gateway-api/standard-install.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("the Gateway API install");
    for doc in serde_yaml_ng::Deserializer::from_str(&install) {
        let doc = <Value as serde::Deserialize>::deserialize(doc).expect("YAML");
        match doc["kind"].as_str() {
            Some("ValidatingAdmissionPolicy") => {
                apply(
                    &client,
                    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
                    doc,
                )
                .await;
            }
            Some("ValidatingAdmissionPolicyBinding") => {
                apply(
                    &client,
                    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
                    doc,
                )
                .await;
            }
            _ => {}
        }
    }
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let post = |body: Value| {
        let client = client.clone();
        async move {
            raw_with_warnings(
                &client,
                "POST",
                crds,
                "application/json",
                body.to_string().into_bytes(),
            )
            .await
        }
    };
    let (code, _, body) = post(gateway_crd("v1.4.0", "standard")).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "customresourcedefinitions.apiextensions.k8s.io \"widgets.gateway.networking.k8s.io\" is forbidden: \
         ValidatingAdmissionPolicy 'safe-upgrades.gateway.networking.k8s.io' with binding \
         'safe-upgrades.gateway.networking.k8s.io' denied request: Installing CRDs with version before \
         v1.5.0 is prohibited by default. Uninstall ValidatingAdmissionPolicy \
         safe-upgrades.gateway.networking.k8s.io to install older versions."
    );
    let (code, _, body) = post(gateway_crd("v1.6.1", "standard")).await;
    assert_eq!(code, 201, "{body}");
    // Experimental over standard is refused.
    let path = format!("{crds}/widgets.gateway.networking.k8s.io");
    let patch =
        json!({"metadata": {"annotations": {"gateway.networking.k8s.io/channel": "experimental"}}});
    let (code, _, body) = raw_with_warnings(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        patch.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("denied request: Installing experimental CRDs on top of standard channel CRDs is prohibited by default. Uninstall ValidatingAdmissionPolicy safe-upgrades.gateway.networking.k8s.io to install experimental CRDs on top of standard channel CRDs.")),
        "{body}"
    );
}

#[tokio::test]
async fn a_dry_run_is_admitted_as_a_write_and_says_so() {
    let (_sim, client) = start().await;
    namespace(&client, "team-a").await;
    policy(
        &client,
        "no-dry-runs",
        json!({
            "matchConstraints": configmaps_rule(json!(["CREATE"]), json!(["configmaps"])),
            "validations": [{"expression": "!request.dryRun", "message": "dry run seen"}]
        }),
    )
    .await;
    binding(
        &client,
        "no-dry-runs",
        json!({"policyName": "no-dry-runs", "validationActions": ["Deny"]}),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let (code, _, message) = refusal(
        api.create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &configmap("d", json!({})),
        )
        .await,
    );
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: dry run seen"),
        "{message}"
    );
    api.create(&PostParams::default(), &configmap("d", json!({})))
        .await
        .expect("a real write is no dry run");
}

#[tokio::test]
async fn the_authorizer_answers_from_the_requesters_rbac() {
    let (sim, client) = start().await;
    namespace(&client, "team-a").await;
    policy(
        &client,
        "readers-only",
        json!({
            "matchConstraints": configmaps_rule(json!(["CREATE"]), json!(["configmaps"])),
            "validations": [
                {"expression": "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()",
                 "message": "only who may read Secrets here writes ConfigMaps"},
                {"expression": "authorizer.requestResource.check('delete').allowed()",
                 "message": "only who may delete it creates it"},
                {"expression": "authorizer.path('/metrics').check('get').allowed() == false"}
            ]
        }),
    )
    .await;
    binding(
        &client,
        "readers-only",
        json!({"policyName": "readers-only", "validationActions": ["Deny"]}),
    )
    .await;
    let role = |name: &str, resources: Value, verbs: Value| {
        json!({"metadata": {"name": name, "namespace": "team-a"},
            "rules": [{"apiGroups": [""], "resources": resources, "verbs": verbs}]})
    };
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles";
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings";
    apply(
        &client,
        roles,
        role("writer", json!(["configmaps"]), json!(["create", "get"])),
    )
    .await;
    apply(
        &client,
        roles,
        role("reader", json!(["secrets"]), json!(["get"])),
    )
    .await;
    apply(
        &client,
        roles,
        role("deleter", json!(["configmaps"]), json!(["delete"])),
    )
    .await;
    let bind = |role: &str| {
        json!({"metadata": {"name": format!("erin-{role}"), "namespace": "team-a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "erin"}]})
    };
    apply(&client, bindings, bind("writer")).await;
    let erin: Api<ConfigMap> = Api::namespaced(
        sim.admin().client_for("erin", &[]).expect("client"),
        "team-a",
    );
    let (code, _, message) = refusal(
        erin.create(&PostParams::default(), &configmap("c", json!({})))
            .await,
    );
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: only who may read Secrets here writes ConfigMaps"),
        "{message}"
    );
    apply(&client, bindings, bind("reader")).await;
    let (_, _, message) = refusal(
        erin.create(&PostParams::default(), &configmap("c", json!({})))
            .await,
    );
    assert!(
        message.ends_with("denied request: only who may delete it creates it"),
        "{message}"
    );
    apply(&client, bindings, bind("deleter")).await;
    erin.create(&PostParams::default(), &configmap("c", json!({})))
        .await
        .expect("erin may read Secrets and delete ConfigMaps");
}
