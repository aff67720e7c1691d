//! The engine's status, written through `/status` with its merge patch, is accepted by the
//! API server under our CRD schema and reads back as the engine produced it.

use kube::api::{Api, Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::{PgAccessRequest, ReportsConditions};
use pgtoolbox_operator::testing::conditions::{
    ConditionType, Timestamp, Verdict, derive_status, reasons::access_request, reasons::common,
    status_patch,
};
use serde_json::{Map, Value, json};

use crate::sim_support::code_of;

fn request() -> PgAccessRequest {
    serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
        "metadata": {"name": "alice-orders"},
        "spec": {"subject": {"kind": "User", "name": "alice"}, "clusterRole": "viewer",
                 "expiresAt": "2030-01-01T00:00:00Z"},
    }))
    .expect("valid request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_status_round_trips_through_the_status_subresource() {
    let (_sim, client) = crate::harness::TestOperator::new()
        .namespace("team-a")
        .start_cluster()
        .await;
    let api: Api<PgAccessRequest> = Api::namespaced(client, "team-a");
    let created = api
        .create(&PostParams::default(), &request())
        .await
        .expect("created");
    assert!(created.stored_status().conditions.is_empty());

    let facts = created
        .pass_facts()
        .with_aspect(
            ConditionType::ConfigurationValid,
            Verdict::holds(
                common::AS_EXPECTED,
                "the grant covers every Cluster of team-a",
            ),
        )
        .and_then(|f| {
            f.with_aspect(
                ConditionType::RoleBindingSynced,
                Verdict::holds(access_request::AWAITING_DECISION, "nothing is bound"),
            )
        })
        .expect("aspects of the kind")
        .with_children_converged(true);
    let update = derive_status(&facts, created.stored_status(), Timestamp::now());
    assert!(update.changed);
    let mut fields = Map::new();
    fields.insert("phase".into(), Value::from("Pending"));
    let rv = created.metadata.resource_version.clone();
    let body = status_patch(&update, fields, rv.as_deref()).expect("patch body");
    let written = api
        .patch_status(
            "alice-orders",
            &PatchParams::default(),
            &Patch::Merge(&body),
        )
        .await
        .expect("status accepted by the schema");
    assert_eq!(
        written.stored_status().conditions,
        update.conditions.as_slice()
    );
    assert_eq!(written.stored_status().observed_generation, Some(1));

    // Read back, the same facts are no write.
    let read = api.get("alice-orders").await.expect("get");
    let again = derive_status(&facts, read.stored_status(), Timestamp::now());
    assert!(!again.changed, "{:?}", again.conditions);

    // The stale resourceVersion precondition makes a racing write fail with 409.
    let stale = status_patch(&update, Map::new(), rv.as_deref()).expect("patch body");
    let conflict = api
        .patch_status(
            "alice-orders",
            &PatchParams::default(),
            &Patch::Merge(&stale),
        )
        .await;
    assert_eq!(code_of(conflict).0, 409);

    // A phase this operator does not know is kept by the API server (the operator reports it as
    // ConfigurationInvalid); an absurdly long one is refused.
    let unknown = json!({"status": {"phase": "Escalated"}});
    let kept = api
        .patch_status(
            "alice-orders",
            &PatchParams::default(),
            &Patch::Merge(&unknown),
        )
        .await
        .expect("an unknown phase is stored");
    assert_eq!(
        kept.status.map(|s| s.phase),
        Some(pgtoolbox_operator::api::AccessPhase::Unrecognized(
            "Escalated".into()
        ))
    );
    let long = json!({"status": {"phase": "x".repeat(65)}});
    let refused = api
        .patch_status(
            "alice-orders",
            &PatchParams::default(),
            &Patch::Merge(&long),
        )
        .await;
    assert_eq!(code_of(refused).0, 422);
}
