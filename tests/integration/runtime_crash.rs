//! Crash isolation against the embedded API server: one object in 200 panics.

use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;

use crate::runtime_support::{Mirror, create, eventually, seen, start_operator};
use crate::sim_support::start;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_panicking_object_in_200_is_isolated_restarted_and_recovers() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mirror = Mirror::default();
    *mirror.panic_for.lock().unwrap() = Some("o7".into());
    mirror.panicking.store(true, Ordering::SeqCst);
    let (operator, registry) = start_operator(&client, &mirror).await;
    for i in 0..200 {
        create(&api, &format!("o{i}"), "1").await;
    }

    // The 199 others converge while o7 keeps failing.
    eventually(Duration::from_secs(30), "199 objects mirrored", || async {
        let list = api.list(&Default::default()).await.unwrap();
        list.items
            .iter()
            .filter(|cm| {
                cm.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(crate::runtime_support::SEEN))
            })
            .count()
            == 199
    })
    .await;
    assert_eq!(seen(&api, "o7").await, None);

    // o7 is restarted with growing delays (200 ms doubling, jittered within [d, 2d)).
    eventually(Duration::from_secs(10), "three restarts of o7", || async {
        mirror.passes_of("o7").len() >= 4
    })
    .await;
    let at = mirror.passes_of("o7");
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps[0] >= Duration::from_millis(200), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(400), "{gaps:?}");
    assert!(gaps[2] >= Duration::from_millis(800), "{gaps:?}");

    // It recovers once the cause is gone, under the same key.
    mirror.panicking.store(false, Ordering::SeqCst);
    eventually(Duration::from_secs(10), "o7 mirrored", || async {
        seen(&api, "o7").await.as_deref() == Some("1")
    })
    .await;
    assert_eq!(registry.len(), 200);
    for i in [0, 6, 8, 199] {
        assert_eq!(
            mirror.passes_of(&format!("o{i}")).len(),
            2,
            "o{i}: one pass writes, the pass on its own write finds nothing to do"
        );
    }
    operator.shutdown(Duration::from_secs(10)).await;
}
