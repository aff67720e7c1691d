//! The namespace-refusal tracker against the embedded API server: a namespace of
//! WATCH_NAMESPACES where the operator lacks a permission is dropped, and its objects say so once.

use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use pgtoolbox_operator::api::rendered_crd_files;
use pgtoolbox_operator::testing::actors::refusals::{TrackerArgs, start_refusal_tracker};
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::WatchScope;
use pgtoolbox_sim::{DenyRule, Sim, SimConfig};
use serde_json::json;

use crate::shared_support::create_namespaces;

fn pgadmins(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("pgtoolbox.fyannk.dev", "v1alpha1", "PgAdmin");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "pgadmins"),
    )
}

async fn create_pgadmin(client: &kube::Client, ns: &str, name: &str) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAdmin",
        "metadata": {"name": name, "namespace": ns},
        "spec": {},
    }))
    .expect("pgadmin");
    pgadmins(client, ns)
        .create(&PostParams::default(), &object)
        .await
        .expect("pgadmin created");
}

async fn start_tracker(
    sim: &Sim,
    metrics: &OperatorMetrics,
) -> std::sync::Arc<pgtoolbox_operator::testing::reconcile::namespace_permissions::WatchPlan> {
    let tracking = start_refusal_tracker(TrackerArgs {
        client: sim.client(),
        scope: WatchScope::Namespaces(vec!["team-a".into(), "team-b".into()]),
        metrics: metrics.clone(),
        kinds: vec!["PgAdmin".to_owned()],
    })
    .await
    .expect("tracker starts");
    tracking.actor.stop(None);
    tracking.plan
}

fn ready_condition(object: &DynamicObject) -> serde_json::Value {
    object.data["status"]["conditions"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or_default()
}

async fn warnings_in(client: &kube::Client, ns: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("NamespaceNotWatched"))
        .collect()
}

#[tokio::test]
async fn a_namespace_lacking_a_permission_is_dropped_and_told_once() {
    let crds = rendered_crd_files()
        .expect("crds render")
        .into_iter()
        .map(|(_, yaml)| yaml)
        .collect();
    let config = SimConfig {
        deny: vec![DenyRule::parse("create:secrets:team-b").expect("rule")],
        extra_crds: crds,
        ..SimConfig::default()
    };
    let sim = Sim::start(config).await.expect("sim starts");
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
