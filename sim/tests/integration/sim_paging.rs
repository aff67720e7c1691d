//! Paged lists: every page comes from the first page's snapshot and reports its revision, so a
//! watch started from a paged list (what kube's watcher does after a relist) misses nothing
//! that changed between the pages; a continue token older than the history is 410 `Expired`.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use pgtoolbox_sim::SimConfig;
use serde_json::json;

use crate::sim_support::{refusal, start, start_with};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

async fn create_all(api: &Api<ConfigMap>, names: &[&str]) {
    for name in names {
        api.create(&PostParams::default(), &cm(name)).await.unwrap();
    }
}

fn names(list: &kube::core::ObjectList<ConfigMap>) -> Vec<String> {
    list.items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

#[tokio::test]
async fn later_pages_come_from_the_first_pages_snapshot() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    create_all(&api, &["a", "b", "c", "d"]).await;
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(names(&first), ["a", "b"]);
    let snapshot_rv = first.metadata.resource_version.clone().unwrap();
    let token = first.metadata.continue_.clone().unwrap();

    // Between the pages: a listed object changes, an unlisted one goes, a new one comes.
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    api.delete("c", &DeleteParams::default()).await.unwrap();
    create_all(&api, &["e"]).await;

    let second = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    // The snapshot: `c` still there with its data, `e` not yet.
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(second.items[0].data.as_ref().unwrap()["k"], "v");
    assert_eq!(
        second.metadata.resource_version.as_deref(),
        Some(snapshot_rv.as_str())
    );
    assert!(
        second
            .metadata
            .continue_
            .as_deref()
            .unwrap_or("")
            .is_empty()
    );

    // Watching from the list's revision delivers every change made between the pages.
    let mut stream = api
        .watch(&WatchParams::default(), &snapshot_rv)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("event in time")
            .expect("stream open")
            .unwrap();
        seen.push(match event {
            WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.unwrap()),
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.name.unwrap()),
            WatchEvent::Deleted(o) => format!("DELETED {}", o.metadata.name.unwrap()),
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(seen, ["MODIFIED a", "DELETED c", "ADDED e"]);
}

#[tokio::test]
async fn a_deleted_objects_snapshot_keeps_its_own_version() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    create_all(&api, &["a", "b"]).await;
    let b_rv = api.get("b").await.unwrap().metadata.resource_version;
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    let token = first.metadata.continue_.unwrap();
    let second = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["b"]);
    assert_eq!(second.items[0].metadata.resource_version, b_rv);
}

#[tokio::test]
async fn a_continue_token_older_than_the_history_is_expired() {
    let (_sim, client) = start_with(SimConfig {
        history: 4,
        ..SimConfig::default()
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    create_all(&api, &["a", "b", "c"]).await;
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    let token = first.metadata.continue_.unwrap();
    create_all(&api, &["d", "e", "f", "g", "h"]).await;
    let (code, reason, message) = refusal(
        api.list(&ListParams::default().limit(1).continue_token(&token))
            .await,
    );
    assert_eq!((code, reason.as_str()), (410, "Expired"));
    assert!(
        message.contains("continue parameter is too old"),
        "{message}"
    );
    // A malformed token is a bad request, as a real server answers it.
    let (code, reason, message) = refusal(
        api.list(&ListParams::default().limit(1).continue_token("not-a-token"))
            .await,
    );
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));
    assert!(message.contains("continue key is not valid"), "{message}");
}
