//! The operator's Event recorder against the embedded API server: a repeat of the same Event
//! joins its series (one Event, `series.count` 2), a repeat of a reason with another note is an
//! Event of its own (kube-runtime's recorder folded it and kept the first note), and an Event
//! deleted on the server is written again rather than patched.

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kube::Resource;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use pgtoolbox_operator::testing::conditions::EventDecision;
use pgtoolbox_operator::testing::conditions::reasons::pgadmin;
use pgtoolbox_operator::testing::k8s::{EventSink, WriteBudget};

const NS: &str = "events";

async fn events_of(client: &kube::Client, reason: &str) -> Vec<(String, i32)> {
    let api: Api<Event> = Api::namespaced(client.clone(), NS);
    let mut found: Vec<(String, i32)> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| (e.note.unwrap_or_default(), e.series.map_or(1, |s| s.count)))
        .collect();
    found.sort();
    found
}

/// A ConfigMap of [`NS`] for Events to be about.
async fn config_map(client: &kube::Client, name: &str) -> ObjectReference {
    super::sim_support::namespace(client, NS).await;
    let object = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &object)
        .await
        .expect("ConfigMap created")
        .object_ref(&())
}

#[tokio::test]
async fn a_repeat_joins_its_series_and_a_new_note_is_an_event_of_its_own() {
    let (_sim, client) = super::sim_support::start().await;
    let regarding = config_map(&client, "web").await;
    let sink = EventSink::new(client.clone());
    let budget = WriteBudget::new(4);
    let rollout = |note: &str| EventDecision::normal(pgadmin::ROLLOUT_STARTED, note);

    sink.publish(&budget, &regarding, &[rollout("was aaa")])
        .await;
    sink.publish(&budget, &regarding, &[rollout("was aaa")])
        .await;
    assert_eq!(
        events_of(&client, "RolloutStarted").await,
        vec![("was aaa".to_string(), 2)],
        "the same Event twice is one Event with a series"
    );

    sink.publish(&budget, &regarding, &[rollout("was bbb")])
        .await;
    assert_eq!(
        events_of(&client, "RolloutStarted").await,
        vec![("was aaa".to_string(), 2), ("was bbb".to_string(), 1)],
        "another note is another Event, its text kept"
    );
    assert_eq!(sink.series_held(), 2);

    // The Event of the first series goes (the server's TTL, or by hand): its next repeat is
    // created again instead of patching nothing.
    let api: Api<Event> = Api::namespaced(client.clone(), NS);
    for event in api.list(&ListParams::default()).await.unwrap() {
        if event.note.as_deref() == Some("was aaa") {
            let name = event.metadata.name.unwrap();
            api.delete(&name, &DeleteParams::default()).await.unwrap();
        }
    }
    sink.publish(&budget, &regarding, &[rollout("was aaa")])
        .await;
    assert_eq!(
        events_of(&client, "RolloutStarted").await,
        vec![("was aaa".to_string(), 1), ("was bbb".to_string(), 1)],
    );
}

/// A repeat later than the series' six minutes is an Event of its own (the cache's expiry).
#[tokio::test]
async fn a_repeat_after_six_minutes_starts_a_new_event() {
    let (_sim, client) = super::sim_support::start().await;
    let regarding = config_map(&client, "late").await;
    let sink = EventSink::new(client.clone());
    let budget = WriteBudget::new(4);
    let rollout = [EventDecision::normal(pgadmin::ROLLOUT_STARTED, "was aaa")];

    sink.publish(&budget, &regarding, &rollout).await;
    // The sim keeps its own clock; only the recorder's (tokio's) jumps.
    tokio::time::pause();
    tokio::time::advance(std::time::Duration::from_secs(7 * 60)).await;
    tokio::time::resume();
    sink.publish(&budget, &regarding, &rollout).await;
    assert_eq!(
        events_of(&client, "RolloutStarted").await,
        vec![("was aaa".to_string(), 1), ("was aaa".to_string(), 1)],
        "an expired series is not joined"
    );
    assert_eq!(sink.series_held(), 1, "the expired series was swept");
}
