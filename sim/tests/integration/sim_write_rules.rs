//! Rules a real API server applies to every write and list whatever the kind: nulls read as
//! absent in non-nullable CRD fields, one controller among the owner references, the
//! `resourceVersionMatch` rules of ListOptions, `fieldManager` required by apply, and no-op
//! writes that change nothing; and the per-kind rule a NetworkPolicy trips (an address block's
//! exceptions inside it).

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams, ValidationDirective,
    WatchEvent, WatchParams,
};
use kube::core::GroupVersionKind;
use kube::runtime::watcher;
use pgtoolbox_sim::SimConfig;
use serde_json::{Value, json};

use crate::sim_support::{cnpg_clusters, raw, refusal, start, start_with};

/// A Cluster CRD with a structural status in the shape of CloudNativePG's own (the embedded
/// one keeps status as sent): `status.certificates.serverAltDNSNames` is a plain string list,
/// not nullable, as upstream declares it. Plus a kind with a nullable field.
const STRUCTURAL_CRDS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusters.postgresql.cnpg.io
spec:
  group: postgresql.cnpg.io
  scope: Namespaced
  names: {kind: Cluster, listKind: ClusterList, plural: clusters, singular: cluster}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                instances: {type: integer, minimum: 1}
                description: {type: string}
            status:
              type: object
              properties:
                phase: {type: string}
                certificates:
                  type: object
                  properties:
                    serverAltDNSNames: {type: array, items: {type: string}}
                    serverCASecret: {type: string}
                    expirations: {type: object, additionalProperties: {type: string}}
---
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
                note: {type: string, nullable: true}
                size: {type: integer}
                mode: {type: string, default: fast}
"#;

fn widgets(client: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    )
}

fn dynamic(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("object")
}

#[tokio::test]
async fn nulls_in_non_nullable_fields_read_as_absent_on_every_write() {
    let (_sim, client) = start_with(SimConfig {
        external_crds: false,
        extra_crds: vec![STRUCTURAL_CRDS.to_string()],
        ..SimConfig::default()
    })
    .await;
    let clusters = cnpg_clusters(&client, "default");
    let pp = PostParams::default();
    let created = clusters
        .create(
            &pp,
            &dynamic(json!({
                "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
                "metadata": {"name": "pg"}, "spec": {"instances": 1, "description": null},
            })),
        )
        .await
        .expect("a null in a non-nullable field is dropped on create");
    assert_eq!(created.data["spec"], json!({"instances": 1}));

    // Update (PUT), with a null in spec.
    let mut fresh = clusters.get("pg").await.expect("get");
    fresh.data["spec"]["description"] = Value::Null;
    fresh.data["spec"]["instances"] = json!(2);
    let updated = clusters
        .replace("pg", &pp, &fresh)
        .await
        .expect("update with a null");
    assert_eq!(updated.data["spec"], json!({"instances": 2}));

    // JSON patch adding a null, under Strict field validation (kubectl's default): a null is
    // not an unknown field.
    let strict = PatchParams {
        field_validation: Some(ValidationDirective::Strict),
        ..PatchParams::default()
    };
    let patched = clusters
        .patch(
            "pg",
            &strict,
            &Patch::<Value>::Json(
                serde_json::from_value(
                    json!([{"op": "add", "path": "/spec/description", "value": null}]),
                )
                .expect("json patch"),
            ),
        )
        .await
        .expect("json patch with a null");
    assert_eq!(patched.data["spec"], json!({"instances": 2}));

    // Status write (PUT /status), what CloudNativePG's status updates send.
    let mut with_status = clusters.get("pg").await.expect("get");
    with_status.data["status"] = json!({
        "phase": "Cluster in healthy state",
        "certificates": {"serverAltDNSNames": null, "serverCASecret": "pg-ca", "expirations": null},
    });
    let written = clusters
        .replace_status("pg", &pp, &with_status)
        .await
        .expect("a status write with serverAltDNSNames: null");
    assert_eq!(
        written.data["status"]["certificates"],
        json!({"serverCASecret": "pg-ca"})
    );
    let stored = clusters.get("pg").await.expect("get");
    assert!(
        stored.data["status"]["certificates"]
            .get("serverAltDNSNames")
            .is_none(),
        "{stored:?}"
    );

    // Status patch (JSON patch through /status) with a null.
    let patched = clusters
        .patch_status(
            "pg",
            &PatchParams::default(),
            &Patch::<Value>::Json(
                serde_json::from_value(json!([
                    {"op": "add", "path": "/status/certificates/serverAltDNSNames", "value": null},
                    {"op": "add", "path": "/status/phase", "value": null},
                ]))
                .expect("json patch"),
            ),
        )
        .await
        .expect("a status patch with nulls");
    assert_eq!(
        patched.data["status"],
        json!({"certificates": {"serverCASecret": "pg-ca"}})
    );

    // A nullable field keeps its null; a defaulted one is defaulted; a wrong type is still
    // refused.
    let w = widgets(&client)
        .create(
            &pp,
            &dynamic(json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"note": null, "size": null, "mode": null},
            })),
        )
        .await
        .expect("widget");
    assert_eq!(w.data["spec"], json!({"note": null, "mode": "fast"}));
    let (code, reason, message) = refusal(
        widgets(&client)
            .create(
                &pp,
                &dynamic(json!({
                    "apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "bad"}, "spec": {"size": "big"},
                })),
            )
            .await,
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
}

fn owned_cm(name: &str, owners: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": owners}, "data": {"k": "v"},
    }))
    .expect("configmap")
}

fn owner(o: &ConfigMap, controller: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": o.metadata.uid,
        "controller": controller, "blockOwnerDeletion": true})
}

#[tokio::test]
async fn only_one_owner_reference_may_be_the_controller() {
    let (_sim, client) = start().await;
    let pp = PostParams::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    // Owners that exist, so their dependents are not collected as orphans.
    let mut owners = Vec::new();
    for name in ["a", "b", "c"] {
        owners.push(
            cms.create(&pp, &owned_cm(name, json!([])))
                .await
                .expect("owner"),
        );
    }
    let uid = |i: usize| owners[i].metadata.uid.clone().unwrap_or_default();
    let (a, b, c) = (&owners[0], &owners[1], &owners[2]);
    let (code, reason, message) = refusal(
        cms.create(
            &pp,
            &owned_cm("two", json!([owner(a, true), owner(b, true)])),
        )
        .await,
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        format!(
            r#"ConfigMap "two" is invalid: metadata.ownerReferences: Invalid value: [{{"apiVersion":"v1","kind":"ConfigMap","name":"a","uid":"{}","controller":true,"blockOwnerDeletion":true}},{{"apiVersion":"v1","kind":"ConfigMap","name":"b","uid":"{}","controller":true,"blockOwnerDeletion":true}}]: Only one reference can have Controller set to true. Found "true" in references for ConfigMap/a and ConfigMap/b"#,
            uid(0),
            uid(1)
        )
    );
    let (code, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        serde_json::to_vec(&owned_cm("two", json!([owner(a, true), owner(b, true)])))
            .expect("body"),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "metadata.ownerReferences"
    );
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueInvalid");

    // One controller among other owners is fine; a patch adding a second one is refused,
    // on a custom resource too.
    cms.create(
        &pp,
        &owned_cm("one", json!([owner(a, true), owner(b, false)])),
    )
    .await
    .expect("one controller");
    let second = Patch::Merge(json!({"metadata": {"ownerReferences": [
        owner(a, true), owner(b, false), owner(c, true),
    ]}}));
    let (code, _, message) = refusal(cms.patch("one", &PatchParams::default(), &second).await);
    assert_eq!(code, 422);
    assert!(
        message.ends_with(
            r#"Only one reference can have Controller set to true. Found "true" in references for ConfigMap/a and ConfigMap/c"#
        ),
        "{message}"
    );
    let clusters = cnpg_clusters(&client, "default");
    let (code, _, message) = refusal(
        clusters
            .create(
                &pp,
                &dynamic(json!({
                    "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
                    "metadata": {"name": "pg", "ownerReferences": [owner(a, true), owner(c, true)]},
                    "spec": {"instances": 1},
                })),
            )
            .await,
    );
    assert_eq!(code, 422);
    assert!(
        message.starts_with(
            r#"Cluster.postgresql.cnpg.io "pg" is invalid: metadata.ownerReferences: Invalid value: "#
        ),
        "{message}"
    );
}

#[tokio::test]
async fn list_options_follow_the_resource_version_match_rules() {
    let (_sim, client) = start().await;
    let base = "/api/v1/namespaces/default/configmaps";
    let (code, body) = raw(
        &client,
        "GET",
        &format!("{base}?resourceVersionMatch=NotOlderThan"),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(
        body["message"],
        r#"ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"#
    );
    assert_eq!(body["details"]["group"], "meta.k8s.io");
    assert_eq!(body["details"]["kind"], "ListOptions");
    assert_eq!(
        body["details"]["causes"][0],
        json!({"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
            "message": "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"})
    );

    let (code, body) = raw(
        &client,
        "GET",
        &format!("{base}?resourceVersion=0&resourceVersionMatch=Exact"),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        r#"ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0""#
    );

    let (code, body) = raw(
        &client,
        "GET",
        &format!("{base}?resourceVersion=1&resourceVersionMatch=Newest"),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        r#"ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", """#
    );

    // What clients do send still works: kube's watcher lists with resourceVersion=0 and
    // NotOlderThan, page after page.
    let (code, _) = raw(
        &client,
        "GET",
        &format!("{base}?resourceVersion=0&resourceVersionMatch=NotOlderThan"),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    for i in 0..5 {
        cms.create(
            &PostParams::default(),
            &owned_cm(&format!("c{i}"), json!([])),
        )
        .await
        .expect("create");
    }
    let config = watcher::Config::default().any_semantic().page_size(2);
    let mut events = watcher(cms.clone(), config).boxed();
    let mut seen = 0;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), events.try_next())
            .await
            .expect("event in time")
            .expect("no watcher error")
            .expect("stream open");
        match event {
            watcher::Event::InitApply(_) => seen += 1,
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(seen, 5);
}

#[tokio::test]
async fn server_side_apply_requires_a_field_manager() {
    let (_sim, client) = start().await;
    let config = serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"},
    }))
    .expect("body");
    for query in ["", "?fieldManager=", "?force=true"] {
        let (code, body) = raw(
            &client,
            "PATCH",
            &format!("/api/v1/namespaces/default/configmaps/a{query}"),
            "application/apply-patch+yaml",
            config.clone(),
        )
        .await;
        assert_eq!(code, 422, "{query}: {body}");
        assert_eq!(body["reason"], "Invalid");
        assert_eq!(
            body["message"],
            r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
        );
        assert_eq!(
            body["details"]["causes"][0],
            json!({"reason": "FieldValueRequired", "field": "fieldManager",
                "message": "Required value: is required for apply patch"})
        );
    }
    let (code, _) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/a?fieldManager=me",
        "application/apply-patch+yaml",
        config,
    )
    .await;
    assert_eq!(code, 201);
}

#[tokio::test]
async fn no_op_writes_keep_the_resource_version_and_notify_nobody() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let apply = PatchParams::apply("owner");
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "same", "labels": {"a": "1"}}, "data": {"k": "v"}});
    let created = cms
        .patch("same", &apply, &Patch::Apply(&body))
        .await
        .expect("apply creates");
    let rv = created.metadata.resource_version.clone().expect("rv");
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();

    let same_rv = |o: ConfigMap, what: &str| {
        assert_eq!(
            o.metadata.resource_version.as_deref(),
            Some(rv.as_str()),
            "{what}"
        );
    };
    same_rv(
        cms.replace("same", &PostParams::default(), &created)
            .await
            .expect("put"),
        "an update with the stored object",
    );
    same_rv(
        cms.patch(
            "same",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .expect("merge"),
        "a merge patch setting the same value",
    );
    same_rv(
        cms.patch(
            "same",
            &PatchParams::default(),
            &Patch::<Value>::Json(
                serde_json::from_value(
                    json!([{"op": "replace", "path": "/metadata/labels/a", "value": "1"}]),
                )
                .expect("json patch"),
            ),
        )
        .await
        .expect("json"),
        "a JSON patch setting the same value",
    );
    same_rv(
        cms.patch(
            "same",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"k": "v"}})),
        )
        .await
        .expect("strategic"),
        "a strategic merge patch setting the same value",
    );
    same_rv(
        cms.patch("same", &apply, &Patch::Apply(&body))
            .await
            .expect("apply"),
        "the same apply again",
    );
    same_rv(
        cms.patch(
            "same",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": rv}})),
        )
        .await
        .expect("precondition only"),
        "a patch carrying only the current resourceVersion",
    );

    // The first event the watch sees is the first real change.
    let changed = cms
        .patch(
            "same",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "w"}})),
        )
        .await
        .expect("a real change");
    let changed_rv = changed.metadata.resource_version.expect("rv");
    assert_ne!(changed_rv, rv);
    let event = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .expect("event in time")
        .expect("no error")
        .expect("stream open");
    match event {
        WatchEvent::Modified(o) => {
            assert_eq!(o.metadata.resource_version, Some(changed_rv));
        }
        other => panic!("the no-op writes were reported: {other:?}"),
    }
}

#[tokio::test]
async fn a_network_policy_exception_outside_its_block_is_refused_on_create_and_apply() {
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    let (_sim, client) = start().await;
    let policies: Api<NetworkPolicy> = Api::default_namespaced(client);
    let policy = |except: &str| {
        serde_json::from_value::<NetworkPolicy>(json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "ingress"},
            "spec": {"podSelector": {}, "ingress": [{"from": [
                {"ipBlock": {"cidr": "192.0.2.0/24", "except": [except]}}]}]},
        }))
        .expect("policy")
    };
    let (code, reason, message) = refusal(
        policies
            .create(&PostParams::default(), &policy("198.51.100.0/24"))
            .await,
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        r#"NetworkPolicy.networking.k8s.io "ingress" is invalid: spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "198.51.100.0/24": must be a strict subset of `cidr`"#
    );
    // Server-side apply (how the operator writes its policies) is judged the same.
    let apply = PatchParams::apply("test");
    let (code, _, _) = refusal(
        policies
            .patch("ingress", &apply, &Patch::Apply(&policy("198.51.100.0/24")))
            .await,
    );
    assert_eq!(code, 422);
    policies
        .patch("ingress", &apply, &Patch::Apply(&policy("192.0.2.128/25")))
        .await
        .expect("an exception inside the block is fine");
}
