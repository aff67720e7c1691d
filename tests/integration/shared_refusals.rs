//! The namespace-refusal tracker against the embedded API server: a namespace of
//! WATCH_NAMESPACES where the operator lacks a permission is dropped, and its objects say so once.

use pgtoolbox_operator::testing::actors::refusals::{TrackerArgs, start_refusal_tracker};
use pgtoolbox_operator::testing::k8s::EventSink;
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::WatchScope;
use pgtoolbox_operator::testing::supervisor::shard::Ownership;
use pgtoolbox_sim::Sim;

use crate::shared_support::{
    create_namespaces, create_pgadmin, pgadmins, ready_condition, sim_with_crds, warnings_in,
};

async fn start_tracker(
    sim: &Sim,
    metrics: &OperatorMetrics,
) -> std::sync::Arc<pgtoolbox_operator::testing::reconcile::namespace_permissions::WatchPlan> {
    let tracking = start_refusal_tracker(TrackerArgs {
        client: sim.client(),
        scope: WatchScope::Namespaces(vec!["team-a".into(), "team-b".into()]),
        metrics: metrics.clone(),
        kinds: vec!["PgAdmin".to_owned()],
        ownership: Ownership::default(),
        events: EventSink::new(sim.client()),
    })
    .await
    .expect("tracker starts");
    tracking.actor.stop(None);
    tracking.plan
}

#[tokio::test]
async fn a_namespace_lacking_a_permission_is_dropped_and_told_once() {
    let sim = sim_with_crds(&["create:secrets:team-b"]).await;
    let client = sim.client();
    create_namespaces(&client, &["team-a", "team-b"]).await;
    create_pgadmin(&client, "team-a", "kept").await;
    create_pgadmin(&client, "team-b", "left-out").await;

    let metrics = OperatorMetrics::new();
    let plan = start_tracker(&sim, &metrics).await;
    assert_eq!(plan.watched, vec!["team-a".to_owned()]);
    assert_eq!(plan.dropped.len(), 1);
    assert_eq!(plan.dropped[0].namespace, "team-b");
    assert!(
        metrics
            .encode()
            .expect("encode")
            .contains("pgtoolbox_dropped_namespaces 1")
    );

    let left_out = pgadmins(&client, "team-b")
        .get("left-out")
        .await
        .expect("get");
    let ready = ready_condition(&left_out);
    assert_eq!(ready["status"], "Unknown");
    assert_eq!(ready["reason"], "NamespaceNotWatched");
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("team-b") && message.contains("create secrets"),
        "{message}"
    );
    let events = warnings_in(&client, "team-b").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].type_.as_deref(), Some("Warning"));
    assert_eq!(
        events[0].regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("left-out")
    );
    assert!(
        events[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("create secrets"))
    );

    // A restart finds the status already saying so: no second write, no second Event.
    let version = left_out.metadata.resource_version.clone();
    start_tracker(&sim, &metrics).await;
    let again = pgadmins(&client, "team-b")
        .get("left-out")
        .await
        .expect("get");
    assert_eq!(again.metadata.resource_version, version);
    assert_eq!(warnings_in(&client, "team-b").await.len(), 1);

    let kept = pgadmins(&client, "team-a").get("kept").await.expect("get");
    assert!(
        ready_condition(&kept).is_null(),
        "the watched namespace is left to its actor"
    );
    assert!(warnings_in(&client, "team-a").await.is_empty());
}

/// Issue 45: the PgAccessRequests of a dropped namespace cannot expire. The tracker counts them
/// in a metric (with an alert) and warns about each, by name, at start.
#[tokio::test]
async fn requests_of_a_dropped_namespace_are_counted_and_named() {
    use kube::api::{Api, DynamicObject, PostParams};

    let sim = sim_with_crds(&["delete:rbac.authorization.k8s.io/rolebindings:team-b"]).await;
    let client = sim.client();
    create_namespaces(&client, &["team-a", "team-b"]).await;
    let resource = kube::api::ApiResource::erase::<pgtoolbox_operator::api::PgAccessRequest>(&());
    for (ns, name) in [("team-a", "kept"), ("team-b", "stuck")] {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
            "kind": "PgAccessRequest",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "subject": {"kind": "User", "name": "alice"},
                "clusterRole": "view",
                "expiresAt": "2030-01-01T00:00:00Z",
            },
        }))
        .expect("request");
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource)
            .create(&PostParams::default(), &obj)
            .await
            .expect("request created");
    }

    let metrics = OperatorMetrics::new();
    let tracking = start_refusal_tracker(TrackerArgs {
        client: sim.client(),
        scope: WatchScope::Namespaces(vec!["team-a".into(), "team-b".into()]),
        metrics: metrics.clone(),
        kinds: vec!["PgAccessRequest".to_owned()],
        ownership: Ownership::default(),
        events: EventSink::new(sim.client()),
    })
    .await
    .expect("tracker starts");
    tracking.actor.stop(None);
    assert_eq!(tracking.plan.dropped.len(), 1);
    let text = metrics.encode().expect("encode");
    assert!(
        text.contains("pgtoolbox_unreachable_access_requests 1"),
        "{text}"
    );
    let events = warnings_in(&client, "team-b").await;
    let on_request: Vec<_> = events
        .iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("stuck"))
        .collect();
    assert_eq!(on_request.len(), 1, "{events:#?}");
    let note = on_request[0].note.as_deref().unwrap_or_default();
    assert!(
        note.contains("cannot expire") && note.contains("rolebindings"),
        "{note}"
    );
    assert!(warnings_in(&client, "team-a").await.is_empty());
}
