//! Hibernation against the embedded API server: converged objects give their actor up, and
//! updates, child changes, relists and crashes after a wake-up all still lead to a pass.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use pgtoolbox_operator::testing::actors::Shared;
use serde_json::json;

use crate::runtime_support::{Mirror, create, eventually, seen, start_hibernating};
use crate::sim_support::start;

const WAIT: Duration = Duration::from_secs(30);
const LINGER: Duration = Duration::from_millis(300);

fn objects(shared: &Arc<Shared>) -> (i64, i64) {
    shared.runtime.objects("ConfigMap")
}

async fn set_value(api: &Api<ConfigMap>, name: &str, value: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": value}})),
    )
    .await
    .expect("patched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converged_objects_hibernate_and_updates_children_and_deletions_still_reach_them() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let mirror = Mirror::default();
    let (operator, shared) = start_hibernating(&client, &mirror, LINGER, true).await;
    for i in 0..100 {
        create(&api, &format!("o{i}"), "1").await;
    }
    eventually(WAIT, "100 objects mirrored and hibernated", || async {
        objects(&shared) == (0, 100)
    })
    .await;
    for i in [0, 50, 99] {
        assert_eq!(seen(&api, &format!("o{i}")).await.as_deref(), Some("1"));
    }

    // Updates wake exactly their objects, from the latest version.
    for i in 0..10 {
        set_value(&api, &format!("o{i}"), "2").await;
        set_value(&api, &format!("o{i}"), "3").await;
    }
    for i in 0..10 {
        eventually(WAIT, "update mirrored", || async {
            seen(&api, &format!("o{i}")).await.as_deref() == Some("3")
        })
        .await;
    }
    eventually(WAIT, "asleep again", || async {
        objects(&shared) == (0, 100)
    })
    .await;
    assert_eq!(
        mirror.passes_of("o42").len(),
        2,
        "an untouched object slept on"
    );

    // A labelled child of a hibernated owner wakes it.
    let before = mirror.passes_of("o77").len();
    let child: Secret = serde_json::from_value(json!({
        "metadata": {"name": "owned", "labels": {"runtime.test/owner": "o77"}},
        "stringData": {"k": "v"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &child)
        .await
        .unwrap();
    eventually(WAIT, "owner woken by its child", || async {
        mirror.passes_of("o77").len() > before
    })
    .await;

    // Deleting hibernated objects forgets them.
    for i in 90..100 {
        api.delete(&format!("o{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually(WAIT, "90 left, asleep", || async {
        objects(&shared) == (0, 90)
    })
    .await;
    operator.shutdown(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_wakes_only_what_changed_while_the_watch_was_down() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mirror = Mirror::default();
    let (operator, shared) = start_hibernating(&client, &mirror, LINGER, false).await;
    for name in ["a", "b", "c"] {
        create(&api, name, "1").await;
    }
    eventually(WAIT, "3 asleep", || async { objects(&shared) == (0, 3) }).await;
    let a_passes = mirror.passes_of("a").len();

    sim.admin().force_gone_next_watch();
    sim.admin().drop_watches();
    api.delete("c", &DeleteParams::default()).await.unwrap();
    create(&api, "d", "1").await;
    set_value(&api, "b", "2").await;

    eventually(WAIT, "d mirrored", || async {
        seen(&api, "d").await.as_deref() == Some("1")
    })
    .await;
    eventually(WAIT, "b updated", || async {
        seen(&api, "b").await.as_deref() == Some("2")
    })
    .await;
    eventually(WAIT, "a, b, d asleep", || async {
        objects(&shared) == (0, 3)
    })
    .await;
    assert_eq!(mirror.passes_of("a").len(), a_passes, "a was not woken");
    operator.shutdown(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_right_after_a_wake_up_is_isolated_restarted_and_recovers() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mirror = Mirror::default();
    *mirror.panic_for.lock().unwrap() = Some("o7".into());
    let (operator, shared) = start_hibernating(&client, &mirror, LINGER, false).await;
    for i in 0..20 {
        create(&api, &format!("o{i}"), "1").await;
    }
    eventually(WAIT, "20 asleep", || async { objects(&shared) == (0, 20) }).await;

    // o7 panics from its next pass on; its wake-up and o8's come together.
    mirror.panicking.store(true, Ordering::SeqCst);
    let woken = mirror.passes_of("o7").len();
    set_value(&api, "o7", "2").await;
    set_value(&api, "o8", "2").await;
    eventually(WAIT, "o8 mirrored meanwhile", || async {
        seen(&api, "o8").await.as_deref() == Some("2")
    })
    .await;
    eventually(WAIT, "three passes of o7 after its wake-up", || async {
        mirror.passes_of("o7").len() >= woken + 3
    })
    .await;
    assert_eq!(seen(&api, "o7").await.as_deref(), Some("1"));
    let at = mirror.passes_of("o7");
    let gaps: Vec<Duration> = at[woken..].windows(2).map(|w| w[1] - w[0]).collect();
    // Restart backoff: 200 ms doubling, jittered within [d, 2d).
    assert!(gaps[0] >= Duration::from_millis(200), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(400), "{gaps:?}");

    mirror.panicking.store(false, Ordering::SeqCst);
    eventually(WAIT, "o7 mirrored", || async {
        seen(&api, "o7").await.as_deref() == Some("2")
    })
    .await;
    eventually(WAIT, "all asleep again", || async {
        objects(&shared) == (0, 20)
    })
    .await;
    operator.shutdown(Duration::from_secs(10)).await;
}
