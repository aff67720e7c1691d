//! The applier's single-object writes against the embedded API server: a create-once that finds
//! the name taken leaves the other Secret as it was, a server-side apply under the operator's
//! field manager for a typed and a dynamic object, a delete pinned to the uid judged (another
//! uid, a 404 and a 403 answered as the callers expect), a status merge pinned to a
//! resourceVersion, each under the write budget.

use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::PgAdmin;
use pgtoolbox_operator::testing::children::{Applier, FIELD_MANAGER};
use pgtoolbox_operator::testing::k8s::WriteBudget;
use pgtoolbox_sim::Sim;
use serde_json::json;

use super::harness::TestOperator;

const NS: &str = "apps";

async fn started() -> (Sim, kube::Client) {
    TestOperator::new().namespace(NS).start_cluster().await
}

fn secret(name: &str, value: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_owned(), ByteString(value.as_bytes().to_vec()))].into()),
        ..Secret::default()
    }
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("key".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

fn writes_of(sim: &Sim, verb_resource: &str) -> u64 {
    let stats = sim.admin().stats();
    stats
        .by_verb_resource
        .get(verb_resource)
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn create_once_leaves_a_secret_someone_else_made_as_it_was() {
    let (sim, client) = started().await;
    let api: Api<Secret> = Api::namespaced(client.clone(), NS);
    let writes = WriteBudget::new(2);
    let applier = Applier {
        client: &client,
        writes: &writes,
    };
    let theirs = api
        .create(&PostParams::default(), &secret("login", "theirs"))
        .await
        .unwrap();

    let made = applier
        .create_once(&api, &secret("login", "ours"))
        .await
        .unwrap();
    assert!(!made, "the name was taken: nothing created");
    let stored = api.get("login").await.unwrap();
    assert_eq!(
        serde_json::to_string(&stored).unwrap(),
        serde_json::to_string(&theirs).unwrap(),
        "the other Secret is byte-identical"
    );

    let made = applier
        .create_once(&api, &secret("fresh", "ours"))
        .await
        .unwrap();
    assert!(made);
    let stored = api.get("fresh").await.unwrap();
    assert_eq!(
        stored.data.unwrap()["k"],
        ByteString(b"ours".to_vec()),
        "created as given"
    );
    // One POST each, nothing merged or patched afterwards.
    assert_eq!(writes_of(&sim, "create secrets"), 3);
    assert_eq!(writes_of(&sim, "patch secrets"), 0);

    // Another answer than 409 is the caller's to judge.
    let missing: Api<Secret> = Api::namespaced(client.clone(), "nowhere");
    assert!(
        applier
            .create_once(&missing, &secret("login", "ours"))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn apply_object_takes_the_fields_under_the_operator_manager_typed_or_dynamic() {
    let (_sim, client) = started().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let writes = WriteBudget::new(2);
    let applier = Applier {
        client: &client,
        writes: &writes,
    };
    let mut desired = config_map("settings", "ours");
    desired.metadata.namespace = Some(NS.into());
    let written = applier
        .apply_object(&api, "settings", &desired)
        .await
        .unwrap();
    assert_eq!(written.data.as_ref().unwrap()["key"], "ours");

    // Someone else's manager takes the field; the forced apply takes it back.
    let other = serde_json::to_value(config_map("settings", "theirs")).unwrap();
    api.patch(
        "settings",
        &PatchParams::apply("someone-else").force(),
        &Patch::Apply(&other),
    )
    .await
    .unwrap();
    let dynamic_api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NS, &ApiResource::erase::<ConfigMap>(&()));
    let mut object = serde_json::to_value(&desired).unwrap();
    object["apiVersion"] = json!("v1");
    object["kind"] = json!("ConfigMap");
    let dynamic: DynamicObject = serde_json::from_value(object).unwrap();
    let written = applier
        .apply_object(&dynamic_api, "settings", &dynamic)
        .await
        .unwrap();
    assert_eq!(written.data["data"]["key"], "ours");
    let stored = api.get("settings").await.unwrap();
    assert_eq!(stored.data.as_ref().unwrap()["key"], "ours");
    let owner_of_key: Vec<_> = stored
        .managed_fields()
        .iter()
        .filter(|e| {
            e.fields_v1
                .as_ref()
                .is_some_and(|f| f.0.to_string().contains("f:key"))
        })
        .map(|e| (e.manager.clone(), e.operation.clone()))
        .collect();
    assert_eq!(
        owner_of_key,
        vec![(Some(FIELD_MANAGER.into()), Some("Apply".into()))],
        "the field is the operator's alone"
    );
}

#[tokio::test]
async fn delete_uncached_deletes_only_the_object_of_the_uid_judged() {
    let (sim, client) = started().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let writes = WriteBudget::new(2);
    let applier = Applier {
        client: &client,
        writes: &writes,
    };
    let route = api
        .create(&PostParams::default(), &config_map("route", "v"))
        .await
        .unwrap();
    let uid = route.uid().unwrap();

    // Another uid under the name: the object judged is gone, this one stays.
    assert!(
        applier
            .delete_uncached(&api, "route", "another-uid")
            .await
            .unwrap()
    );
    assert_eq!(api.get("route").await.unwrap().uid(), Some(uid.clone()));

    // Refused (403): may remain, and does.
    sim.admin()
        .inject_errors(&format!("delete:configmaps:{NS}"), 403, 1)
        .unwrap();
    assert!(!applier.delete_uncached(&api, "route", &uid).await.unwrap());
    assert!(api.get_opt("route").await.unwrap().is_some());

    // Another answer is an error.
    sim.admin()
        .inject_errors(&format!("delete:configmaps:{NS}"), 500, 1)
        .unwrap();
    assert!(applier.delete_uncached(&api, "route", &uid).await.is_err());

    assert!(applier.delete_uncached(&api, "route", &uid).await.unwrap());
    let gone = api.get_opt("route").await.unwrap();
    assert!(
        gone.is_none() || gone.is_some_and(|cm| cm.metadata.deletion_timestamp.is_some()),
        "deleted"
    );
    // Already gone (404).
    assert!(applier.delete_uncached(&api, "route", &uid).await.unwrap());
}

#[tokio::test]
async fn merge_status_writes_the_status_only_at_the_version_given() {
    let (_sim, client) = started().await;
    let api: Api<PgAdmin> = Api::namespaced(client.clone(), NS);
    let writes = WriteBudget::new(2);
    let applier = Applier {
        client: &client,
        writes: &writes,
    };
    let object: PgAdmin = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdmin",
        "metadata": {"name": "p", "namespace": NS},
        "spec": {"image": "dpage/pgadmin4:9", "clusterSelector": {"matchLabels": {"team": "a"}}},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &object).await.unwrap();
    let status = |version: &str| {
        json!({"metadata": {"resourceVersion": version},
               "status": {"observedGeneration": 1}})
    };

    let version = created.resource_version().unwrap();
    let stale = if version == "1" { "2" } else { "1" };
    let stale = applier.merge_status(&api, "p", &status(stale)).await;
    assert!(
        matches!(&stale, Err(kube::Error::Api(s)) if s.code == 409),
        "{stale:?}"
    );
    let written = applier
        .merge_status(&api, "p", &status(&version))
        .await
        .unwrap();
    let observed = serde_json::to_value(&written).unwrap()["status"]["observedGeneration"].clone();
    assert_eq!(observed, json!(1));
    assert_eq!(
        serde_json::to_value(&written.spec).unwrap(),
        serde_json::to_value(&created.spec).unwrap()
    );
}

/// Every write waits for a slot of the budget: none is sent while the only one is held.
#[tokio::test]
async fn the_writes_wait_for_the_budget() {
    let (sim, client) = started().await;
    let writes = WriteBudget::new(1);
    let held = writes.acquire().await.unwrap();
    let write = {
        let (client, writes) = (client.clone(), writes.clone());
        tokio::spawn(async move {
            let api: Api<Secret> = Api::namespaced(client.clone(), NS);
            let applier = Applier {
                client: &client,
                writes: &writes,
            };
            applier.create_once(&api, &secret("late", "v")).await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!write.is_finished());
    assert_eq!(writes_of(&sim, "create secrets"), 0);
    drop(held);
    assert!(write.await.unwrap().unwrap());
    assert_eq!(writes_of(&sim, "create secrets"), 1);
}
