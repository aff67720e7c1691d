//! The runtime against the embedded API server: actors follow the watch, through drops and 410s.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_operator::testing::supervisor::Registry;
use serde_json::json;

use crate::runtime_support::{Mirror, create, eventually, seen, start_operator};
use crate::sim_support::start;

const WAIT: Duration = Duration::from_secs(20);

fn keys(registry: &Registry<ConfigMap>) -> BTreeSet<String> {
    registry.iter().map(|e| e.key().name.clone()).collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn actors_follow_creations_updates_and_deletions() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mirror = Mirror::default();
    let (operator, registry) = start_operator(&client, &mirror).await;
    for name in ["a", "b", "c"] {
        create(&api, name, "1").await;
    }
    for name in ["a", "b", "c"] {
        eventually(WAIT, "mirrored", || async {
            seen(&api, name).await.as_deref() == Some("1")
        })
        .await;
    }
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    eventually(WAIT, "update mirrored", || async {
        seen(&api, "a").await.as_deref() == Some("2")
    })
    .await;
    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually(WAIT, "actor of b gone", || async {
        keys(&registry) == names(&["a", "c"])
    })
    .await;
    operator.shutdown(Duration::from_secs(10)).await;
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_dropped_watch_and_a_410_relist_neither_lose_nor_duplicate_actors() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mirror = Mirror::default();
    let (operator, registry) = start_operator(&client, &mirror).await;
    for name in ["a", "b", "c"] {
        create(&api, name, "1").await;
    }
    for name in ["a", "b", "c"] {
        eventually(WAIT, "mirrored", || async {
            seen(&api, name).await.as_deref() == Some("1")
        })
        .await;
    }
    let id = |name: &str| {
        registry
            .get(&ObjectKey::new("default", name))
            .map(|a| a.get_id())
    };
    let (a, b) = (id("a"), id("b"));

    // The watch drops and its resume is refused with 410: kube's watcher relists. Changes
    // made meanwhile must all arrive.
    sim.admin().force_gone_next_watch();
    sim.admin().drop_watches();
    api.delete("c", &DeleteParams::default()).await.unwrap();
    create(&api, "d", "1").await;
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();

    eventually(WAIT, "registry = {a, b, d}", || async {
        keys(&registry) == names(&["a", "b", "d"])
    })
    .await;
    eventually(WAIT, "d mirrored", || async {
        seen(&api, "d").await.as_deref() == Some("1")
    })
    .await;
    eventually(WAIT, "b updated", || async {
        seen(&api, "b").await.as_deref() == Some("2")
    })
    .await;
    assert_eq!(
        (id("a"), id("b")),
        (a, b),
        "surviving objects keep their actor"
    );
    operator.shutdown(Duration::from_secs(10)).await;
}

#[tokio::test]
async fn a_labelled_child_change_wakes_its_owner_through_a_shared_child_store() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::PostParams;

    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let mirror = Mirror::default();
    let (operator, _) = crate::runtime_support::start_mirror(&client, &mirror, None, true).await;
    create(&api, "owner", "1").await;
    create(&api, "bystander", "1").await;
    for name in ["owner", "bystander"] {
        eventually(WAIT, "mirrored", || async {
            seen(&api, name).await.as_deref() == Some("1")
        })
        .await;
        // The mirror's own write comes back as a delta and a second pass: count from after it
        // (a loaded machine delivers it after the write is readable).
        eventually(WAIT, "the echo of the mirror's write passed", || async {
            mirror.passes_of(name).len() >= 2
        })
        .await;
    }
    let before = (
        mirror.passes_of("owner").len(),
        mirror.passes_of("bystander").len(),
    );

    let child: Secret = serde_json::from_value(json!({
        "metadata": {"name": "owned", "labels": {"runtime.test/owner": "owner"}},
        "stringData": {"k": "v"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &child)
        .await
        .unwrap();
    let unlabelled: Secret =
        serde_json::from_value(json!({"metadata": {"name": "stranger"}})).unwrap();
    secrets
        .create(&PostParams::default(), &unlabelled)
        .await
        .unwrap();

    eventually(WAIT, "owner woken by its child", || async {
        mirror.passes_of("owner").len() > before.0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(mirror.passes_of("bystander").len(), before.1);
    operator.shutdown(Duration::from_secs(10)).await;
}
