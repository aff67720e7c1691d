//! CRUD, selectors, paging, conflicts, status/spec, patches, finalizers, GC, CRDs, bad input.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

use crate::sim_support::{cluster, cnpg_clusters, code_of, get_code, namespace, raw, start};

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

#[tokio::test]
async fn builtin_crud_with_generate_name_already_exists_and_not_found() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    assert!(
        created.metadata.generation.is_none(),
        "ConfigMaps carry no generation"
    );
    let rv1: u64 = created
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();

    assert_eq!(
        code_of(
            api.create(&PostParams::default(), &cm("a", json!({})))
                .await
        ),
        (409, "AlreadyExists".into())
    );

    let mut generated = cm("", json!({}));
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let g = api
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    assert!(g.metadata.name.unwrap().starts_with("gen-"));

    let mut got = api.get("a").await.unwrap();
    got.data = Some([("k".to_string(), "w".to_string())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &got)
        .await
        .unwrap();
    let rv2: u64 = replaced
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    assert_eq!(replaced.data.unwrap()["k"], "w");

    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(code_of(api.get("a").await), (404, "NotFound".into()));
    assert_eq!(
        code_of(api.delete("a", &DeleteParams::default()).await),
        (404, "NotFound".into())
    );
    // Creating into a namespace that does not exist is refused like a real server.
    let missing: Api<ConfigMap> = Api::namespaced(client, "nope");
    assert_eq!(
        code_of(
            missing
                .create(&PostParams::default(), &cm("a", json!({})))
                .await
        )
        .0,
        404
    );
}

#[tokio::test]
async fn custom_kind_crud_and_stale_update_conflict() {
    let (_sim, client) = start().await;
    let api = cnpg_clusters(&client, "default");
    let c = api
        .create(
            &PostParams::default(),
            &cluster("pg", json!({"instances": 1})),
        )
        .await
        .unwrap();
    assert_eq!(c.metadata.generation, Some(1));
    let mut fresh = api.get("pg").await.unwrap();
    fresh.data["spec"]["instances"] = json!(2);
    let updated = api
        .replace("pg", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    // `fresh` still carries the old resourceVersion.
    fresh.data["spec"]["instances"] = json!(3);
    assert_eq!(
        code_of(api.replace("pg", &PostParams::default(), &fresh).await),
        (409, "Conflict".into())
    );
    // A no-op write changes nothing.
    let same = api
        .replace("pg", &PostParams::default(), &updated)
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version,
        updated.metadata.resource_version
    );
    api.delete("pg", &DeleteParams::default()).await.unwrap();
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn list_with_label_and_field_selectors_and_paging() {
    let (_sim, client) = start().await;
    namespace(&client, "other").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..7 {
        let tier = if i % 2 == 0 { "web" } else { "db" };
        api.create(
            &PostParams::default(),
            &cm(&format!("c{i}"), json!({"tier": tier})),
        )
        .await
        .unwrap();
    }
    Api::<ConfigMap>::namespaced(client.clone(), "other")
        .create(&PostParams::default(), &cm("c0", json!({"tier": "web"})))
        .await
        .unwrap();

    let web = api
        .list(&ListParams::default().labels("tier=web"))
        .await
        .unwrap();
    assert_eq!(web.items.len(), 4);
    let set = api
        .list(&ListParams::default().labels("tier in (db),tier!=web"))
        .await
        .unwrap();
    assert_eq!(set.items.len(), 3);
    let named = api
        .list(&ListParams::default().fields("metadata.name=c3"))
        .await
        .unwrap();
    assert_eq!(named.items.len(), 1);
    let all: Api<ConfigMap> = Api::all(client.clone());
    let in_other = all
        .list(&ListParams::default().fields("metadata.namespace=other"))
        .await
        .unwrap();
    assert_eq!(in_other.items.len(), 1);
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        8
    );

    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(3);
    loop {
        let page = api.list(&lp).await.unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    assert_eq!(seen, (0..7).map(|i| format!("c{i}")).collect::<Vec<_>>());
    assert_eq!(
        code_of(api.list(&ListParams::default().labels("tier in (")).await).0,
        400
    );
}

#[tokio::test]
async fn status_and_spec_are_written_separately_and_generation_follows_spec() {
    let (_sim, client) = start().await;
    let api = cnpg_clusters(&client, "default");
    let mut with_status = cluster("pg", json!({"instances": 1}));
    with_status.data["status"] = json!({"phase": "ignored on create"});
    let c = api
        .create(&PostParams::default(), &with_status)
        .await
        .unwrap();
    assert!(c.data.get("status").is_none());

    let pp = PatchParams::default();
    let s = api
        .patch_status(
            "pg",
            &pp,
            &Patch::Merge(json!({"status": {"phase": "Ready"}, "spec": {"instances": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(s.data["status"]["phase"], "Ready");
    assert_eq!(s.data["spec"]["instances"], 1, "status writes ignore spec");
    assert_eq!(
        s.metadata.generation,
        Some(1),
        "status writes keep generation"
    );

    let m = api
        .patch(
            "pg",
            &pp,
            &Patch::Merge(json!({"spec": {"instances": 2}, "status": {"phase": "Nope"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        m.data["status"]["phase"], "Ready",
        "main writes ignore status"
    );
    assert_eq!(m.metadata.generation, Some(2));

    let labelled = api
        .patch(
            "pg",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        labelled.metadata.generation,
        Some(2),
        "metadata changes keep generation"
    );

    // A status merge patch carrying a stale resourceVersion is refused (the operator's precondition).
    let stale = json!({"metadata": {"resourceVersion": c.metadata.resource_version}, "status": {"phase": "X"}});
    assert_eq!(
        code_of(api.patch_status("pg", &pp, &Patch::Merge(stale)).await),
        (409, "Conflict".into())
    );
    let current = json!({"metadata": {"resourceVersion": labelled.metadata.resource_version}, "status": {"phase": "Y"}});
    assert_eq!(
        api.patch_status("pg", &pp, &Patch::Merge(current))
            .await
            .unwrap()
            .data["status"]["phase"],
        "Y"
    );
}

#[tokio::test]
async fn each_patch_type() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("p", json!({"a": "1"})))
        .await
        .unwrap();
    let pp = PatchParams::default();
    let merged = api
        .patch(
            "p",
            &pp,
            &Patch::Merge(json!({"data": {"m": "1", "k": null}})),
        )
        .await
        .unwrap();
    assert_eq!(
        merged.data.unwrap(),
        [("m".to_string(), "1".to_string())].into()
    );
    // kube's `Patch::Json` pins another json-patch release than ours; send the same request raw.
    let path = "/api/v1/namespaces/default/configmaps/p";
    let add = serde_json::to_vec(&json!([{"op": "add", "path": "/data/j", "value": "2"}])).unwrap();
    let (code, jp) = raw(&client, "PATCH", path, "application/json-patch+json", add).await;
    assert_eq!((code, &jp["data"]["j"]), (200, &json!("2")));
    let failing =
        serde_json::to_vec(&json!([{"op": "test", "path": "/data/j", "value": "0"}])).unwrap();
    assert_eq!(
        raw(
            &client,
            "PATCH",
            path,
            "application/json-patch+json",
            failing
        )
        .await
        .0,
        422
    );
    assert_eq!(
        raw(&client, "PATCH", path, "text/plain", b"{}".to_vec())
            .await
            .0,
        415
    );
    let smp = api
        .patch(
            "p",
            &pp,
            &Patch::Strategic(json!({"metadata": {"labels": {"s": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(smp.metadata.labels.unwrap()["s"], "1");
    // Strategic merge patch is refused for custom resources, as a real server does.
    let clusters = cnpg_clusters(&client, "default");
    clusters
        .create(&PostParams::default(), &cluster("pg", json!({})))
        .await
        .unwrap();
    assert_eq!(
        code_of(
            clusters
                .patch("pg", &pp, &Patch::Strategic(json!({"spec": {"a": 1}})))
                .await
        ),
        (415, "UnsupportedMediaType".into())
    );
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut c = cm("f", json!({}));
    c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &c).await.unwrap();
    api.delete("f", &DeleteParams::default()).await.unwrap();
    let held = api.get("f").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    let adding = json!({"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}});
    assert_eq!(
        code_of(
            api.patch("f", &PatchParams::default(), &Patch::Merge(adding))
                .await
        )
        .0,
        422
    );
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(code_of(api.get("f").await).0, 404);
}

#[tokio::test]
async fn delete_preconditions_and_owner_reference_gc() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    let other = api
        .create(&PostParams::default(), &cm("other", json!({})))
        .await
        .unwrap();
    let owned_by = |o: &[&ConfigMap]| -> serde_json::Value {
        o.iter()
            .map(|c| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": c.metadata.name, "uid": c.metadata.uid}))
            .collect()
    };
    let mut child = cm("child", json!({}));
    child.metadata.owner_references = Some(serde_json::from_value(owned_by(&[&owner])).unwrap());
    api.create(&PostParams::default(), &child).await.unwrap();
    let mut shared = cm("shared", json!({}));
    shared.metadata.owner_references =
        Some(serde_json::from_value(owned_by(&[&owner, &other])).unwrap());
    api.create(&PostParams::default(), &shared).await.unwrap();

    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-it".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    assert_eq!(
        code_of(api.delete("owner", &wrong).await),
        (409, "Conflict".into())
    );
    let stale_rv = DeleteParams {
        preconditions: Some(Preconditions {
            uid: owner.metadata.uid.clone(),
            resource_version: Some("1".into()),
        }),
        ..DeleteParams::default()
    };
    assert_eq!(code_of(api.delete("owner", &stale_rv).await).0, 409);
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: owner.metadata.uid.clone(),
            resource_version: owner.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    api.delete("owner", &right).await.unwrap();
    assert_eq!(
        code_of(api.get("child").await).0,
        404,
        "dependent with all owners gone is collected"
    );
    assert!(
        api.get("shared").await.is_ok(),
        "dependent with a live owner stays"
    );
    api.delete("other", &DeleteParams::default()).await.unwrap();
    assert_eq!(code_of(api.get("shared").await).0, 404);
}

/// Found by the simulation tests (dst seed 100560, 40 steps): an ownerReference added after its
/// owner was deleted (an adoption racing the owner's deletion) left the dependent for good; a
/// real garbage collector deletes an object whose owners are all absent.
#[tokio::test]
async fn a_reference_to_an_owner_already_gone_is_collected() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("late", json!({})))
        .await
        .unwrap();
    api.delete("owner", &DeleteParams::default()).await.unwrap();
    let reference = json!({"metadata": {"ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid,
    }]}});
    api.patch("late", &PatchParams::default(), &Patch::Merge(reference))
        .await
        .unwrap();
    assert_eq!(code_of(api.get("late").await).0, 404);
    // A live owner keeps it.
    let kept = api
        .create(&PostParams::default(), &cm("kept", json!({})))
        .await
        .unwrap();
    let mut child = cm("child", json!({}));
    child.metadata.owner_references = Some(
        serde_json::from_value(json!([{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "kept", "uid": kept.metadata.uid,
        }]))
        .unwrap(),
    );
    api.create(&PostParams::default(), &child).await.unwrap();
    assert!(api.get("child").await.is_ok());
}

#[tokio::test]
async fn namespace_deletion_removes_its_objects() {
    let (_sim, client) = start().await;
    namespace(&client, "gone").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "gone");
    api.create(&PostParams::default(), &cm("x", json!({})))
        .await
        .unwrap();
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.delete("gone", &DeleteParams::default()).await.unwrap();
    assert_eq!(code_of(api.get("x").await).0, 404);
    assert_eq!(code_of(nss.get("gone").await).0, 404);
}

#[tokio::test]
async fn posting_a_crd_serves_its_kind_with_schema_validation() {
    let (_sim, client) = start().await;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> = Api::all(client.clone());
    let crd = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
          "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
          "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": {"type": "object", "required": ["size"], "properties": {
                 "size": {"type": "integer", "minimum": 1},
                 "color": {"type": "string", "default": "blue"}}}}}}}]}
    }))
    .unwrap();
    let created = crds.create(&PostParams::default(), &crd).await.unwrap();
    let conds = created.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );

    let gvk = kube::core::GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar);
    let w: kube::api::DynamicObject =
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 2, "unknown": true}}))
        .unwrap();
    let stored = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(stored.data["spec"]["color"], "blue", "defaults applied");
    assert!(
        stored.data["spec"].get("unknown").is_none(),
        "unknown fields pruned"
    );
    let bad: kube::api::DynamicObject =
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "bad"}, "spec": {"size": 0}}))
        .unwrap();
    match widgets.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
            assert!(s.message.contains("spec.size"), "{}", s.message);
        }
        other => panic!("expected 422, got {other:?}"),
    }
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        code_of(widgets.list(&ListParams::default()).await).0,
        404,
        "kind no longer served"
    );
}

#[tokio::test]
async fn bad_input_gets_real_codes() {
    let (_sim, client) = start().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, body) = raw(
        &client,
        "POST",
        path,
        "application/json",
        b"{not json".to_vec(),
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")));
    let (code, _) = raw(
        &client,
        "POST",
        path,
        "application/yaml",
        b"a: [unclosed".to_vec(),
    )
    .await;
    assert_eq!(code, 400);
    let wrong_version = serde_json::to_vec(
        &json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    )
    .unwrap();
    assert_eq!(
        raw(&client, "POST", path, "application/json", wrong_version)
            .await
            .0,
        400
    );
    let wrong_kind = serde_json::to_vec(
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
    )
    .unwrap();
    assert_eq!(
        raw(&client, "POST", path, "application/json", wrong_kind)
            .await
            .0,
        400
    );
    let nameless =
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}))
            .unwrap();
    let (code, body) = raw(&client, "POST", path, "application/json", nameless).await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n".to_vec();
    assert_eq!(
        raw(&client, "POST", path, "application/yaml", yaml).await.0,
        201
    );
    let huge = serde_json::to_vec(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
        "data": {"x": "a".repeat(4 * 1024 * 1024)}}),
    )
    .unwrap();
    assert_eq!(
        raw(&client, "POST", path, "application/json", huge).await.0,
        413
    );
    assert_eq!(
        get_code(&client, "/apis/nope.example.com/v1/things").await,
        404
    );
    assert_eq!(get_code(&client, "/apis/nope.example.com").await, 404);
    assert_eq!(
        get_code(&client, "/api/v1/namespaces/default/frobs").await,
        404
    );
    assert_eq!(
        raw(
            &client,
            "GET",
            &format!("{path}?labelSelector=a%20in%20(b"),
            "application/json",
            vec![]
        )
        .await
        .0,
        400
    );
    assert_eq!(
        raw(
            &client,
            "GET",
            &format!("{path}?fieldSelector=spec.x%3D1"),
            "application/json",
            vec![]
        )
        .await
        .0,
        400
    );
    let item = format!("{path}/from-yaml");
    let to_number =
        serde_json::to_vec(&json!([{"op": "replace", "path": "", "value": 5}])).unwrap();
    assert_eq!(
        raw(
            &client,
            "PATCH",
            &item,
            "application/json-patch+json",
            to_number
        )
        .await
        .0,
        400
    );
    let bad_meta = serde_json::to_vec(&json!({"metadata": "x"})).unwrap();
    assert!(
        raw(
            &client,
            "PATCH",
            &item,
            "application/merge-patch+json",
            bad_meta
        )
        .await
        .0 < 500
    );
    let apply_bad = b"apiVersion: v1\nkind: ConfigMap\nmetadata: 3\n".to_vec();
    let apply_path = format!("{item}?fieldManager=t");
    assert_eq!(
        raw(
            &client,
            "PATCH",
            &apply_path,
            "application/apply-patch+yaml",
            apply_bad
        )
        .await
        .0,
        400
    );
    assert_eq!(
        raw(
            &client,
            "PATCH",
            &item,
            "application/merge-patch+json",
            b"[1]".to_vec()
        )
        .await
        .0,
        400
    );
    // The server still answers after all of the above.
    assert_eq!(get_code(&client, path).await, 200);
}

#[tokio::test]
async fn metadata_only_list_and_get() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("m", json!({"x": "y"})))
        .await
        .unwrap();
    let list = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.labels.as_ref().unwrap()["x"], "y");
    let one = api.get_metadata("m").await.unwrap();
    assert_eq!(one.types.unwrap().kind, "PartialObjectMetadata");
}

#[tokio::test]
async fn server_side_apply_owns_fields_removes_dropped_ones_and_reports_conflicts() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let first = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "labels": {"l": "1"}},
        "data": {"a": "1", "b": "2"}});
    let alice = PatchParams::apply("alice");
    let created = api
        .patch("ssa", &alice, &Patch::Apply(&first))
        .await
        .unwrap();
    assert_eq!(created.data.as_ref().unwrap().len(), 2);
    let mf = created.metadata.managed_fields.unwrap();
    assert_eq!(mf[0].manager.as_deref(), Some("alice"));

    // Dropping `b` from alice's configuration removes it.
    let second = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1"}});
    let applied = api
        .patch("ssa", &alice, &Patch::Apply(&second))
        .await
        .unwrap();
    assert_eq!(
        applied.data.unwrap(),
        [("a".to_string(), "1".to_string())].into()
    );
    assert!(
        applied.metadata.labels.unwrap_or_default().is_empty(),
        "dropped label removed"
    );

    // Bob changing alice's field conflicts, unless forced.
    let bob_cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "bob"}});
    let (code, _) = code_of(
        api.patch("ssa", &PatchParams::apply("bob"), &Patch::Apply(&bob_cfg))
            .await,
    );
    assert_eq!(code, 409);
    let forced = api
        .patch(
            "ssa",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(&bob_cfg),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["a"], "bob");
    // Alice no longer owns `a`: her empty apply leaves bob's value alone.
    let empty = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}});
    let after = api
        .patch("ssa", &alice, &Patch::Apply(&empty))
        .await
        .unwrap();
    assert_eq!(after.data.unwrap()["a"], "bob");
}

#[tokio::test]
async fn dry_run_checks_without_storing() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let would = api.create(&dry, &cm("dry", json!({}))).await.unwrap();
    assert_eq!(would.metadata.name.as_deref(), Some("dry"));
    assert_eq!(code_of(api.get("dry").await).0, 404);
    api.create(&PostParams::default(), &cm("dry", json!({})))
        .await
        .unwrap();
    assert_eq!(
        code_of(api.create(&dry, &cm("dry", json!({}))).await).0,
        409
    );
    let dp = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    api.delete("dry", &dp).await.unwrap();
    assert!(api.get("dry").await.is_ok());
}

#[tokio::test]
async fn events_are_selectable_by_involved_object() {
    let (_sim, client) = start().await;
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client, "default");
    for (name, target) in [("e1", "a"), ("e2", "b")] {
        let ev = serde_json::from_value(json!({"metadata": {"name": name},
            "involvedObject": {"kind": "ConfigMap", "name": target, "namespace": "default"},
            "reason": "Tested", "message": "m", "type": "Normal"}))
        .unwrap();
        api.create(&PostParams::default(), &ev).await.unwrap();
    }
    let lp = ListParams::default().fields("involvedObject.name=b,involvedObject.kind=ConfigMap");
    let got = api.list(&lp).await.unwrap();
    assert_eq!(got.items.len(), 1);
    assert_eq!(got.items[0].metadata.name.as_deref(), Some("e2"));
}

#[tokio::test]
async fn delete_collection_by_label() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for (name, tier) in [("a", "x"), ("b", "x"), ("c", "y")] {
        api.create(&PostParams::default(), &cm(name, json!({"tier": tier})))
            .await
            .unwrap();
    }
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("tier=x"),
    )
    .await
    .unwrap();
    let left: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(left, ["c"]);
}

#[tokio::test]
async fn events_api_and_core_events_share_storage() {
    let (_sim, client) = start().await;
    let new_api: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(client.clone(), "default");
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "default");
    let ev = serde_json::from_value(
        json!({"metadata": {"name": "ev"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "ConfigMap", "name": "target", "namespace": "default"},
        "note": "hello", "reason": "Tested", "type": "Normal", "action": "Test",
        "reportingController": "sim-test", "reportingInstance": "i"}),
    )
    .unwrap();
    let created = new_api.create(&PostParams::default(), &ev).await.unwrap();
    assert_eq!(created.note.as_deref(), Some("hello"));
    let seen = core.get("ev").await.unwrap();
    assert_eq!(seen.message.as_deref(), Some("hello"));
    assert_eq!(seen.involved_object.name.as_deref(), Some("target"));
    // The recorder's series update: a merge patch through events.k8s.io.
    let series = json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}});
    let patched = new_api
        .patch("ev", &PatchParams::default(), &Patch::Merge(series))
        .await
        .unwrap();
    assert_eq!(patched.series.unwrap().count, 2);
    assert_eq!(patched.regarding.unwrap().name.as_deref(), Some("target"));
    let by_target = core
        .list(&ListParams::default().fields("involvedObject.name=target"))
        .await
        .unwrap();
    assert_eq!(by_target.items.len(), 1);
}

#[tokio::test]
async fn kube_event_recorder_publishes_and_counts_a_series() {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let target = api
        .create(&PostParams::default(), &cm("target", json!({})))
        .await
        .unwrap();
    let reporter = Reporter {
        controller: "sim-test".into(),
        instance: None,
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let reference = kube::Resource::object_ref(&target, &());
    let ev = Event {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("once".into()),
        action: "Test".into(),
        secondary: None,
    };
    recorder.publish(&ev, &reference).await.unwrap();
    recorder.publish(&ev, &reference).await.unwrap();
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client, "default");
    let listed = core
        .list(&ListParams::default().fields("involvedObject.name=target"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(
        listed.items[0].series.as_ref().and_then(|s| s.count),
        Some(2)
    );
}

#[tokio::test]
async fn strict_field_validation_refuses_unknown_fields_of_custom_resources() {
    let (_sim, client) = start().await;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let crd = serde_json::from_value(json!({
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
          "names": {"kind": "Gadget", "plural": "gadgets"},
          "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
              "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let path = "/apis/example.com/v1/namespaces/default/gadgets";
    let body = serde_json::to_vec(&json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {"size": 1, "extra": true}}))
    .unwrap();
    let (code, status) = raw(
        &client,
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        "application/json",
        body.clone(),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        status["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown field \"spec.extra\""),
        "{status}"
    );
    let (code, stored) = raw(&client, "POST", path, "application/json", body).await;
    assert_eq!(code, 201);
    assert!(
        stored["spec"].get("extra").is_none(),
        "pruned without Strict"
    );
}

#[tokio::test]
async fn extra_crds_are_served_from_start_and_external_ones_can_be_left_out() {
    let extra = "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.com\nspec:\n  group: example.com\n  scope: Cluster\n  names: {kind: Thing, plural: things}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n---\n";
    let config = pgtoolbox_sim::SimConfig {
        extra_crds: vec![extra.to_string()],
        external_crds: false,
        ..Default::default()
    };
    let (_sim, client) = crate::sim_support::start_with(config).await;
    assert_eq!(get_code(&client, "/apis/example.com/v1/things").await, 200);
    assert_eq!(
        code_of(
            cnpg_clusters(&client, "default")
                .list(&ListParams::default())
                .await
        )
        .0,
        404
    );
    let bad = pgtoolbox_sim::SimConfig {
        extra_crds: vec!["kind: [".into()],
        ..Default::default()
    };
    assert!(pgtoolbox_sim::Sim::start(bad).await.is_err());
}

#[tokio::test]
async fn the_operators_own_crds_are_served() {
    let (_sim, client) = crate::harness::TestOperator::new().start_cluster().await;
    let (code, groups) = raw(&client, "GET", "/apis", "application/json", vec![]).await;
    assert_eq!(code, 200);
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client);
    let names: Vec<String> = crds
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert!(
        names.len() > 8,
        "our CRDs next to the 8 external ones: {names:?} / {groups}"
    );
}

#[tokio::test]
async fn apply_conflicts_with_fields_an_update_manager_wrote() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..PostParams::default()
    };
    let created = api.create(&pp, &cm("owned", json!({}))).await.unwrap();
    let entries = created.metadata.managed_fields.unwrap();
    assert_eq!(
        (
            entries[0].manager.as_deref(),
            entries[0].operation.as_deref()
        ),
        (Some("creator"), Some("Update"))
    );
    let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {"k": "mine"}});
    assert_eq!(
        code_of(
            api.patch("owned", &PatchParams::apply("applier"), &Patch::Apply(&cfg))
                .await
        )
        .0,
        409
    );
    let same = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {"k": "v"}});
    assert!(
        api.patch(
            "owned",
            &PatchParams::apply("applier"),
            &Patch::Apply(&same)
        )
        .await
        .is_ok(),
        "same value: shared, no conflict"
    );
}

/// A uid in an apply configuration is a precondition on the live object (kube-apiserver's
/// `TestCreateOnApplyFailsWithUID`): with no object under the name it fails with 409 and creates
/// nothing, so it cannot serve as a create-only guard; on the object of that uid it applies.
#[tokio::test]
async fn an_apply_naming_a_uid_never_creates() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let with_uid = |uid: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "guarded", "uid": uid}, "data": {"k": "v"}})
    };
    let params = PatchParams::apply("applier");
    let refused = code_of(
        api.patch(
            "guarded",
            &params,
            &Patch::Apply(&with_uid("88e00824-0000-4000-8000-000000000001")),
        )
        .await,
    );
    assert_eq!(refused.0, 409, "{refused:?}");
    assert!(
        api.get_opt("guarded").await.unwrap().is_none(),
        "nothing created"
    );

    let plain = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "guarded"}, "data": {"k": "v"}});
    let created = api
        .patch("guarded", &params, &Patch::Apply(&plain))
        .await
        .unwrap();
    let uid = created.metadata.uid.unwrap();
    assert!(
        api.patch("guarded", &params, &Patch::Apply(&with_uid(&uid)))
            .await
            .is_ok()
    );
    let other = code_of(
        api.patch(
            "guarded",
            &params,
            &Patch::Apply(&with_uid("88e00824-0000-4000-8000-000000000002")),
        )
        .await,
    );
    assert_eq!(other.0, 409, "{other:?}");
}

/// Ownership is keyed by manager and operation: the same manager's creation (an `Update`) still
/// owns a field its later apply drops, until that entry is rewritten as an `Apply` one (what the
/// operator's applier does after a POST). A forced apply takes only the contested fields.
#[tokio::test]
async fn the_same_managers_update_entry_is_another_owner_to_its_apply() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams {
        field_manager: Some("op".into()),
        ..PostParams::default()
    };
    let mut two = cm("created", json!({}));
    two.data = Some([("a".into(), "1".into()), ("b".into(), "2".into())].into());
    api.create(&pp, &two).await.unwrap();
    let both = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "created"}, "data": {"a": "1", "b": "2"}});
    let only_a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "created"}, "data": {"a": "1"}});
    let op = PatchParams::apply("op").force();
    // Same values: forcing shares them with the creation entry, it does not take them.
    api.patch("created", &op, &Patch::Apply(&both))
        .await
        .unwrap();
    let kept = api
        .patch("created", &op, &Patch::Apply(&only_a))
        .await
        .unwrap();
    assert_eq!(
        kept.data.unwrap().get("b").map(String::as_str),
        Some("2"),
        "the creation's Update entry still owns b"
    );

    // Rewrite the creation entry as an Apply entry: the next apply drops b.
    let mut fresh = cm("handed", json!({}));
    fresh.data = two.data.clone();
    let created = api.create(&pp, &fresh).await.unwrap();
    let mut entries = created.metadata.managed_fields.clone().unwrap();
    entries[0].operation = Some("Apply".into());
    let handover = json!({"metadata": {
        "resourceVersion": created.metadata.resource_version, "managedFields": entries}});
    let handed = api
        .patch("handed", &PatchParams::default(), &Patch::Merge(&handover))
        .await
        .unwrap();
    let operations: Vec<_> = handed
        .metadata
        .managed_fields
        .unwrap()
        .iter()
        .map(|e| e.operation.clone())
        .collect();
    assert_eq!(operations, vec![Some("Apply".to_string())]);
    let only_a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "handed"}, "data": {"a": "1"}});
    let dropped = api
        .patch("handed", &op, &Patch::Apply(&only_a))
        .await
        .unwrap();
    assert_eq!(dropped.data.unwrap().keys().collect::<Vec<_>>(), vec!["a"]);
}

#[tokio::test]
async fn foreground_deletion_holds_the_owner_until_dependents_are_gone() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let owner = api
        .create(&PostParams::default(), &cm("fg-owner", json!({})))
        .await
        .unwrap();
    let mut child = cm("fg-child", json!({}));
    child.metadata.owner_references = Some(
        serde_json::from_value(
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "fg-owner",
            "uid": owner.metadata.uid, "blockOwnerDeletion": true}]),
        )
        .unwrap(),
    );
    child.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &child).await.unwrap();

    api.delete("fg-owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let held = api.get("fg-owner").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    assert!(
        held.metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    assert!(
        api.get("fg-child")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );

    let release = json!({"metadata": {"finalizers": null}});
    api.patch("fg-child", &PatchParams::default(), &Patch::Merge(release))
        .await
        .unwrap();
    assert_eq!(code_of(api.get("fg-child").await).0, 404);
    assert_eq!(
        code_of(api.get("fg-owner").await).0,
        404,
        "owner goes with its last dependent"
    );
}
