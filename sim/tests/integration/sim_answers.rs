//! Answers a real server words its own way (issue 27, item 9): an exact list reads the
//! collection at its version (410 once compacted), pruned unknown fields come back as `Warning`
//! headers, an unsupported field label and a create in a terminating namespace are refused in
//! the real words, and a terminating namespace carries the namespace controller's conditions.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, VersionMatch};
use pgtoolbox_sim::SimConfig;
use serde_json::{Value, json};

use crate::kubectl_support::kubectl_present;
use crate::sim_support::{namespace, raw, refusal, start, start_with};

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("configmap")
}

fn names_and_data(list: &kube::core::ObjectList<ConfigMap>) -> Vec<(String, Value)> {
    list.items
        .iter()
        .map(|c| {
            (
                c.metadata.name.clone().unwrap_or_default(),
                serde_json::to_value(&c.data).expect("data"),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_exact_list_reads_the_collection_at_its_version_until_it_is_compacted() {
    let (_sim, client) = start_with(SimConfig {
        history: 8,
        ..SimConfig::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    cms.create(&pp, &cm("a", json!({"v": "1"})))
        .await
        .expect("a");
    let b = cms
        .create(&pp, &cm("b", json!({"v": "1"})))
        .await
        .expect("b");
    let at = b.metadata.resource_version.expect("rv");
    // Then: a changes, b goes, c comes.
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .expect("a changed");
    cms.delete("b", &DeleteParams::default())
        .await
        .expect("b deleted");
    cms.create(&pp, &cm("c", json!({"v": "1"})))
        .await
        .expect("c");

    let exact = ListParams::default().at(&at).matching(VersionMatch::Exact);
    let then = cms.list(&exact).await.expect("exact list");
    assert_eq!(then.metadata.resource_version.as_deref(), Some(at.as_str()));
    assert_eq!(
        names_and_data(&then),
        vec![
            ("a".to_string(), json!({"v": "1"})),
            ("b".to_string(), json!({"v": "1"}))
        ],
        "the state at {at}"
    );
    // Selectors and pages read the same snapshot.
    let named = cms
        .list(&exact.clone().fields("metadata.name=b"))
        .await
        .expect("selected");
    assert_eq!(
        names_and_data(&named),
        vec![("b".to_string(), json!({"v": "1"}))]
    );
    let first = cms.list(&exact.clone().limit(1)).await.expect("page 1");
    assert_eq!(names_and_data(&first)[0].0, "a");
    let token = first.metadata.continue_.clone().expect("a continue token");
    let second = cms
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .expect("page 2");
    assert_eq!(
        names_and_data(&second),
        vec![("b".to_string(), json!({"v": "1"}))]
    );

    // NotOlderThan answers the current state.
    let now = cms
        .list(
            &ListParams::default()
                .at(&at)
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .expect("not older than");
    assert_eq!(
        names_and_data(&now),
        vec![
            ("a".to_string(), json!({"v": "2"})),
            ("c".to_string(), json!({"v": "1"}))
        ]
    );

    // A version the store has not reached is etcd's future revision.
    let future = (at.parse::<u64>().expect("numeric") + 1000).to_string();
    let (code, reason, message) = refusal(
        cms.list(
            &ListParams::default()
                .at(&future)
                .matching(VersionMatch::Exact),
        )
        .await,
    );
    assert_eq!((code, reason.as_str()), (500, "InternalError"));
    assert_eq!(
        message,
        "Internal error occurred: etcdserver: mvcc: required revision is a future revision"
    );

    // Once the history no longer reaches back to it: 410 Expired in the real words.
    for i in 0..10 {
        cms.patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": i.to_string()}})),
        )
        .await
        .expect("churn");
    }
    let (code, body) = raw(
        &client,
        "GET",
        &format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={at}&resourceVersionMatch=Exact"
        ),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 410, "{body}");
    assert_eq!(body["reason"], "Expired");
    assert_eq!(
        body["message"],
        "The resourceVersion for the provided list is too old."
    );
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["status"], "Failure");
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
"#;

/// A request with its answer's status, `Warning` headers and body.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Value,
) -> (u16, Vec<String>, Value) {
    let bytes = serde_json::to_vec(&body).expect("body");
    crate::sim_support::raw_with_warnings(client, method, path, content_type, bytes).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_unknown_fields_answer_warning_headers_unless_ignored() {
    let (sim, client) = start_with(SimConfig {
        extra_crds: vec![WIDGET_CRD.to_string()],
        ..SimConfig::default()
    })
    .await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let widget = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": 1, "foo": "x"}})
    };
    // No fieldValidation: the server's default, Warn.
    let (code, warnings, body) =
        send(&client, "POST", widgets, "application/json", widget("w1")).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(warnings, vec![r#"299 - "unknown field \"spec.foo\"""#]);
    assert_eq!(body["spec"], json!({"size": 1}), "pruned");

    let (code, warnings, _) = send(
        &client,
        "POST",
        &format!("{widgets}?fieldValidation=Warn"),
        "application/json",
        widget("w2"),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(warnings.len(), 1, "{warnings:?}");

    let (code, warnings, body) = send(
        &client,
        "POST",
        &format!("{widgets}?fieldValidation=Ignore"),
        "application/json",
        widget("w3"),
    )
    .await;
    assert_eq!(code, 201);
    assert!(warnings.is_empty(), "Ignore prunes silently: {warnings:?}");
    assert_eq!(body["spec"], json!({"size": 1}));

    let (code, warnings, body) = send(
        &client,
        "POST",
        &format!("{widgets}?fieldValidation=Strict"),
        "application/json",
        widget("w4"),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert!(warnings.is_empty());
    assert_eq!(
        body["message"],
        r#"Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.foo""#
    );

    // A merge patch adding two unknown fields: one warning each.
    let (code, warnings, _) = send(
        &client,
        "PATCH",
        &format!("{widgets}/w1"),
        "application/merge-patch+json",
        json!({"spec": {"bar": 1, "baz": {"deep": true}}}),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        warnings,
        vec![
            r#"299 - "unknown field \"spec.bar\"""#,
            r#"299 - "unknown field \"spec.baz\"""#
        ]
    );

    // Built-in kinds warn the same way.
    let (code, warnings, _) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "extra": 1}),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(warnings, vec![r#"299 - "unknown field \"extra\"""#]);

    // kubectl shows the server's warning.
    if kubectl_present() {
        let k = crate::kubectl_support::Kubectl::for_sim(&sim);
        let file = k.file(
            "w.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: from-kubectl\nspec:\n  size: 2\n  foo: x\n",
        );
        let out = k.ok(&["create", "--validate=warn", "-f", &file]);
        assert!(
            out.contains(r#"Warning: unknown field "spec.foo""#),
            "{out}"
        );
    } else {
        eprintln!("kubectl not found: skipping the kubectl part");
    }
}

#[tokio::test]
async fn an_unsupported_field_label_is_refused_in_the_real_words() {
    let (_sim, client) = start().await;
    let configmaps =
        r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#;
    for (path, want) in [
        // ConfigMaps have no conversion function of their own: the default one names the two
        // labels every kind supports.
        (
            "/api/v1/namespaces/default/configmaps?fieldSelector=spec.foo%3Dbar",
            configmaps,
        ),
        (
            "/apis/postgresql.cnpg.io/v1/namespaces/default/clusters?fieldSelector=spec.foo%3Dbar",
            "field label not supported: spec.foo",
        ),
        (
            "/api/v1/pods?fieldSelector=spec.foo%3Dbar",
            "field label not supported: spec.foo",
        ),
        (
            "/api/v1/nodes?fieldSelector=metadata.namespace%3Dx",
            "field label not supported: metadata.namespace",
        ),
        (
            "/apis/batch/v1/jobs?fieldSelector=spec.foo%3Dbar",
            r#"field label "spec.foo" not supported for "Job""#,
        ),
    ] {
        let (code, body) = raw(&client, "GET", path, "application/json", vec![]).await;
        assert_eq!(code, 400, "{path}: {body}");
        assert_eq!(body["reason"], "BadRequest");
        assert_eq!(body["message"], want, "{path}");
    }
}

fn condition<'a>(ns: &'a Value, type_: &str) -> &'a Value {
    ns["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no {type_} in {ns}"))
}

#[tokio::test]
async fn a_terminating_namespace_refuses_content_and_reports_what_remains() {
    let (_sim, client) = start().await;
    namespace(&client, "ending").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "ending");
    let pp = PostParams::default();
    let held = |name: &str, finalizers: Value| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "finalizers": finalizers}}))
            .expect("configmap")
    };
    cms.create(&pp, &held("one", json!(["example.com/hold"])))
        .await
        .expect("one");
    cms.create(
        &pp,
        &held("two", json!(["example.com/hold", "example.com/other"])),
    )
    .await
    .expect("two");
    cms.create(&pp, &cm("free", json!({}))).await.expect("free");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete("ending", &DeleteParams::default())
        .await
        .expect("deletion starts");

    // A create is refused as NamespaceLifecycle refuses it, naming the object.
    let (code, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/ending/configmaps",
        "application/json",
        serde_json::to_vec(&json!({"metadata": {"name": "late"}})).expect("body"),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        r#"configmaps "late" is forbidden: unable to create new content in namespace ending because it is being terminated"#
    );
    assert_eq!(
        body["details"],
        json!({"name": "late", "kind": "configmaps", "causes": [{
            "reason": "NamespaceTerminating", "field": "metadata.namespace",
            "message": "namespace ending is being terminated"}]})
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "ending");
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}))
    .expect("deployment");
    let (code, _, message) = refusal(deployments.create(&pp, &d).await);
    assert_eq!(code, 403);
    assert_eq!(
        message,
        r#"deployments.apps "web" is forbidden: unable to create new content in namespace ending because it is being terminated"#
    );

    // The namespace controller's conditions: what remains, per resource and per finalizer.
    let ns =
        serde_json::to_value(namespaces.get("ending").await.expect("still there")).expect("json");
    assert_eq!(ns["status"]["phase"], "Terminating");
    let types: Vec<&str> = ns["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| c["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        types,
        [
            "NamespaceDeletionDiscoveryFailure",
            "NamespaceDeletionGroupVersionParsingFailure",
            "NamespaceDeletionContentFailure",
            "NamespaceContentRemaining",
            "NamespaceFinalizersRemaining"
        ]
    );
    let expect = |c: &Value, status: &str, reason: &str, message: &str| {
        assert_eq!(
            (
                c["status"].as_str(),
                c["reason"].as_str(),
                c["message"].as_str()
            ),
            (Some(status), Some(reason), Some(message)),
            "{c}"
        );
        assert!(c["lastTransitionTime"].is_string(), "{c}");
    };
    expect(
        condition(&ns, "NamespaceDeletionDiscoveryFailure"),
        "False",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    );
    expect(
        condition(&ns, "NamespaceDeletionGroupVersionParsingFailure"),
        "False",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    );
    expect(
        condition(&ns, "NamespaceDeletionContentFailure"),
        "False",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    );
    expect(
        condition(&ns, "NamespaceContentRemaining"),
        "True",
        "SomeResourcesRemain",
        "Some resources are remaining: configmaps. has 2 resource instances",
    );
    expect(
        condition(&ns, "NamespaceFinalizersRemaining"),
        "True",
        "SomeFinalizerRemain",
        "Some finalizers are remaining: example.com/hold in 2 resource instances, example.com/other in 1 resource instances",
    );
    let since = condition(&ns, "NamespaceContentRemaining")["lastTransitionTime"].clone();

    // One released: the counts follow, the transition time of an unchanged status stays.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    cms.patch(
        "two",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("released");
    let ns =
        serde_json::to_value(namespaces.get("ending").await.expect("still there")).expect("json");
    let remaining = condition(&ns, "NamespaceContentRemaining");
    assert_eq!(
        remaining["message"],
        "Some resources are remaining: configmaps. has 1 resource instances"
    );
    assert_eq!(remaining["lastTransitionTime"], since);
    assert_eq!(
        condition(&ns, "NamespaceFinalizersRemaining")["message"],
        "Some finalizers are remaining: example.com/hold in 1 resource instances"
    );

    // The last one released: the namespace goes.
    cms.patch(
        "one",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("released");
    let (code, _, _) = refusal(namespaces.get("ending").await);
    assert_eq!(code, 404);
}
