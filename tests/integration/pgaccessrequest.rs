//! PgAccessRequest end to end: the operator in-process against the embedded API server, a
//! test playing the console. Each test asserts conditions, RoleBindings and Events.

use std::time::Duration;

use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::AccessPhase;
use serde_json::json;

use super::pgar_support::{self as support, NS, ROLE, state, user};

const HOUR: i64 = 3600;

#[tokio::test]
async fn pending_request_awaits_a_decision_and_is_ready() {
    let env = support::start().await;
    env.request("pending", HOUR).await;
    let obj = env
        .wait_reason("pending", "RoleBindingSynced", "AwaitingDecision")
        .await;
    assert_eq!(state(&obj, "Ready"), ("True".into(), "AsExpected".into()));
    let config = support::condition_of(&obj, "ConfigurationValid").expect("ConfigurationValid");
    assert!(
        config.message.contains("every Cluster"),
        "{}",
        config.message
    );
    assert_eq!(state(&obj, "Stalled").0, "False");
    assert_eq!(
        obj.status.as_ref().map(|s| s.common.observed_generation),
        Some(Some(1))
    );
}

#[tokio::test]
async fn approved_request_with_its_binding_is_granted() {
    let env = support::start().await;
    env.request("granted", HOUR).await;
    env.approve("granted", "bob").await;
    let obj = env
        .wait_reason("granted", "RoleBindingSynced", "AccessGranted")
        .await;
    assert_eq!(state(&obj, "Ready").0, "True");
    env.wait_event("granted", "AsExpected").await;
    assert!(
        env.bindings()
            .get_opt("pgar-granted")
            .await
            .unwrap()
            .is_some()
    );
}

/// The console writes the RoleBinding, then the approval; the approval's watch event may
/// arrive first. The request must not say (or warn) that its binding is missing meanwhile.
#[tokio::test]
async fn an_approval_seen_before_its_binding_is_granted_without_a_missing_warning() {
    let env = support::start().await;
    env.request("overtaken", HOUR).await;
    env.wait_reason("overtaken", "RoleBindingSynced", "AwaitingDecision")
        .await;
    // The operator's RoleBinding watch is cut and comes back late: its cache lags the API.
    let admin = env.sim.admin();
    admin
        .inject_latency(
            "watch:rbac.authorization.k8s.io/rolebindings:*",
            Duration::from_secs(3),
            None,
        )
        .expect("latency");
    admin.drop_watches();
    env.approve("overtaken", "bob").await;
    let obj = env
        .wait_reason("overtaken", "RoleBindingSynced", "AccessGranted")
        .await;
    assert_eq!(state(&obj, "Ready").0, "True");
    admin.clear_faults();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let events = env.events("overtaken").await;
    assert!(
        !events.iter().any(|e| e.1 == "RoleBindingMissing"),
        "{events:?}"
    );
}

#[tokio::test]
async fn approved_request_without_binding_is_missing_and_never_recreated() {
    let env = support::start().await;
    env.request("missing", HOUR).await;
    env.decide("missing", "Approved", "bob").await;
    let obj = env
        .wait_reason("missing", "RoleBindingSynced", "RoleBindingMissing")
        .await;
    assert_eq!(
        state(&obj, "Ready"),
        ("False".into(), "RoleBindingMissing".into())
    );
    env.wait_event("missing", "RoleBindingMissing").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        env.bindings()
            .get_opt("pgar-missing")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_second_subject_is_removed_within_one_pass_fail_closed() {
    let env = support::start().await;
    env.grant_then_drift("drift", HOUR).await;
    env.wait_binding_gone("pgar-drift").await;
    let obj = env
        .wait_reason("drift", "RoleBindingSynced", "RoleBindingDrifted")
        .await;
    assert_eq!(
        state(&obj, "Ready"),
        ("False".into(), "RoleBindingDrifted".into())
    );
    let (type_, _, note) = env.wait_event("drift", "RoleBindingDeleted").await;
    assert_eq!(type_, "Normal");
    assert!(note.contains("pgar-drift"), "{note}");
    // Stays drifted (not "missing") once the binding is gone.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let obj = env.requests().get("drift").await.unwrap();
    assert_eq!(state(&obj, "RoleBindingSynced").1, "RoleBindingDrifted");
}

/// Issue 29: an operator restarted right after a drift was reported (within the status
/// writer's settle window, as the convergence bench restarts) finds the request converged: the
/// drift's message does not change once the binding is gone, so nothing is left to write.
#[tokio::test]
async fn a_restart_right_after_a_drift_writes_nothing() {
    use pgtoolbox_operator::testing::status::SETTLE;

    let mut env = support::start().await;
    env.grant_then_drift("drift", HOUR).await;
    env.wait_binding_gone("pgar-drift").await;
    env.wait_reason("drift", "RoleBindingSynced", "RoleBindingDrifted")
        .await;
    env.stop_operator().await;

    env.sim.admin().reset_stats();
    env.start_operator().await;
    env.until_passes(1, "the restarted operator's pass over the request")
        .await;
    // A message held back by the settle window would be written by now.
    tokio::time::sleep(SETTLE + Duration::from_millis(500)).await;
    let stats = env.sim.stats();
    assert_eq!(stats.writes(), 0, "{:?}", stats.by_verb_resource);
    let obj = env.requests().get("drift").await.unwrap();
    assert_eq!(state(&obj, "RoleBindingSynced").1, "RoleBindingDrifted");
}

#[tokio::test]
async fn a_binding_of_a_pending_request_is_deleted_after_its_grace() {
    let env = support::start().await;
    env.request("orphan", HOUR).await;
    env.wait_reason("orphan", "RoleBindingSynced", "AwaitingDecision")
        .await;
    env.bind("orphan", &["alice"], ROLE).await;
    // Within the grace (2 s in these tests) it is an approval in flight.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        env.bindings()
            .get_opt("pgar-orphan")
            .await
            .unwrap()
            .is_some()
    );
    env.wait_binding_gone("pgar-orphan").await;
    let obj = env
        .wait_reason("orphan", "RoleBindingSynced", "RoleBindingOrphaned")
        .await;
    assert_eq!(state(&obj, "Ready").0, "True");
    let (_, _, note) = env.wait_event("orphan", "RoleBindingDeleted").await;
    assert!(note.contains("grace"), "{note}");
}

#[tokio::test]
async fn self_approval_is_revoked_with_a_warning() {
    let env = support::start().await;
    env.request("selfie", HOUR).await;
    env.approve("selfie", "alice").await;
    env.wait_binding_gone("pgar-selfie").await;
    let obj = env
        .wait_reason("selfie", "RoleBindingSynced", "SelfApprovalRefused")
        .await;
    assert_eq!(
        obj.status.as_ref().map(|s| s.phase.clone()),
        Some(AccessPhase::Revoked)
    );
    let (type_, _, _) = env.wait_event("selfie", "SelfApprovalRefused").await;
    assert_eq!(type_, "Warning");
    env.wait_event("selfie", "RoleBindingDeleted").await;
}

#[tokio::test]
async fn terminal_phases_unbind_and_are_ready() {
    let env = support::start().await;
    for (name, phase, reason) in [
        ("denied", "Denied", "AccessDenied"),
        ("revoked", "Revoked", "AccessRevoked"),
        ("expired", "Expired", "AccessExpired"),
    ] {
        env.request(name, HOUR).await;
        env.bind(name, &["alice"], ROLE).await;
        env.decide(name, phase, "bob").await;
        env.wait_binding_gone(&format!("pgar-{name}")).await;
        let obj = env.wait_reason(name, "RoleBindingSynced", reason).await;
        assert_eq!(
            state(&obj, "Ready"),
            ("True".into(), "AsExpected".into()),
            "{name}"
        );
        env.wait_event(name, "RoleBindingDeleted").await;
    }
}

#[tokio::test]
async fn expiry_withdraws_the_grant_on_time() {
    let env = support::start().await;
    env.request("short", 3).await;
    env.approve("short", "bob").await;
    env.wait_reason("short", "RoleBindingSynced", "AccessGranted")
        .await;
    env.wait_binding_gone("pgar-short").await;
    let obj = env
        .wait_reason("short", "RoleBindingSynced", "AccessExpired")
        .await;
    assert_eq!(
        obj.status.as_ref().map(|s| s.phase.clone()),
        Some(AccessPhase::Expired)
    );
    assert_eq!(state(&obj, "Ready").0, "True");
    let (type_, _, _) = env.wait_event("short", "AccessExpired").await;
    assert_eq!(type_, "Normal");
}

#[tokio::test]
async fn a_request_already_past_its_expiry_expires_at_once() {
    let env = support::start().await;
    env.request("late", -5).await;
    let obj = env
        .wait_reason("late", "RoleBindingSynced", "AccessExpired")
        .await;
    assert_eq!(
        obj.status.as_ref().map(|s| s.phase.clone()),
        Some(AccessPhase::Expired)
    );
}

#[tokio::test]
async fn expiry_while_the_operator_is_down_is_applied_at_restart() {
    let mut env = support::start().await;
    env.request("offline", 2).await;
    env.approve("offline", "bob").await;
    env.wait_reason("offline", "RoleBindingSynced", "AccessGranted")
        .await;
    env.stop_operator().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        env.bindings()
            .get_opt("pgar-offline")
            .await
            .unwrap()
            .is_some(),
        "nobody to expire it"
    );
    env.start_operator().await;
    env.wait_binding_gone("pgar-offline").await;
    env.wait_reason("offline", "RoleBindingSynced", "AccessExpired")
        .await;
}

#[tokio::test]
async fn missing_cluster_is_reported_and_clears_when_it_appears() {
    let env = support::start().await;
    let obj = env.request("needs-cluster", HOUR).await;
    // spec is immutable after creation: recreate with a cluster named.
    env.requests()
        .delete("needs-cluster", &Default::default())
        .await
        .unwrap();
    env.request_on_cluster(obj, "with-cluster", "orders").await;
    let got = env
        .wait_reason("with-cluster", "ConfigurationValid", "ClusterNotFound")
        .await;
    assert_eq!(
        state(&got, "Ready"),
        ("False".into(), "ClusterNotFound".into())
    );
    assert_eq!(state(&got, "Stalled").0, "False", "never a stall");
    // Expiry and approval keep working meanwhile.
    env.approve("with-cluster", "bob").await;
    env.wait_reason("with-cluster", "RoleBindingSynced", "AccessGranted")
        .await;
    let clusters = super::sim_support::cnpg_clusters(&env.client, NS);
    clusters
        .create(
            &PostParams::default(),
            &super::sim_support::cluster("orders", json!({"instances": 1})),
        )
        .await
        .unwrap();
    let got = env
        .wait_reason("with-cluster", "ConfigurationValid", "AsExpected")
        .await;
    assert_eq!(state(&got, "Ready").0, "True");
}

/// The pause never stretches the time box (issue 45): a decision, a drift or the expiry of a
/// paused request still takes its grant away, and the paused conditions say so.
#[tokio::test]
async fn a_paused_request_still_loses_its_grant() {
    let env = support::start().await;
    env.request("paused", HOUR).await;
    env.wait_reason("paused", "RoleBindingSynced", "AwaitingDecision")
        .await;
    let patch = json!({"metadata": {"annotations": {"pgtoolbox.fyannk.dev/reconcile": "skip"}}});
    env.requests()
        .patch("paused", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let obj = env
        .wait_reason("paused", "Ready", "ReconciliationPaused")
        .await;
    assert_eq!(state(&obj, "Ready").0, "Unknown");
    assert_eq!(
        state(&obj, "Progressing"),
        ("False".into(), "ReconciliationPaused".into())
    );
    let ready = support::condition_of(&obj, "Ready").expect("Ready");
    assert!(
        ready
            .message
            .contains("expiry, revocation, the self-approval refusal"),
        "the pause says what it still holds: {}",
        ready.message
    );
    env.decide("paused", "Denied", "bob").await;
    env.bind("paused", &["alice"], ROLE).await;
    // The denial takes effect while the request stays paused.
    env.wait_binding_gone("pgar-paused").await;
    let obj = env
        .wait_reason("paused", "RoleBindingSynced", "AccessDenied")
        .await;
    assert_eq!(state(&obj, "Ready").1, "ReconciliationPaused");
}

/// Annotating a granted request `reconcile: skip` does not keep its RoleBinding past
/// `expiresAt`: the request expires on time, paused or not.
#[tokio::test]
async fn a_pause_never_stretches_the_time_box() {
    let env = support::start().await;
    env.request("boxed", 4).await;
    env.approve("boxed", "bob").await;
    env.wait_reason("boxed", "RoleBindingSynced", "AccessGranted")
        .await;
    let patch = json!({"metadata": {"annotations": {"pgtoolbox.fyannk.dev/reconcile": "skip"}}});
    env.requests()
        .patch("boxed", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    env.wait_reason("boxed", "Ready", "ReconciliationPaused")
        .await;
    env.wait_binding_gone("pgar-boxed").await;
    let obj = env
        .wait_reason("boxed", "RoleBindingSynced", "AccessExpired")
        .await;
    assert_eq!(
        obj.status.as_ref().map(|s| s.phase.clone()),
        Some(AccessPhase::Expired)
    );
    env.wait_event("boxed", "AccessExpired").await;
}

#[tokio::test]
async fn an_unknown_phase_is_invalid_and_nothing_stays_bound() {
    let env = support::start().await;
    env.request("odd", HOUR).await;
    env.bind("odd", &["alice"], ROLE).await;
    env.decide("odd", "Escalated", "bob").await;
    env.wait_binding_gone("pgar-odd").await;
    let obj = env
        .wait_reason("odd", "ConfigurationValid", "ConfigurationInvalid")
        .await;
    let config = support::condition_of(&obj, "ConfigurationValid").unwrap();
    assert!(config.message.contains("Escalated"), "{}", config.message);
    assert_eq!(
        state(&obj, "Ready"),
        ("False".into(), "ConfigurationInvalid".into())
    );
}

#[tokio::test]
async fn bindings_without_the_request_label_are_never_touched() {
    let env = support::start().await;
    env.request("foreign", HOUR).await;
    env.decide("foreign", "Denied", "bob").await;
    let unlabelled = RoleBinding {
        metadata: ObjectMeta {
            name: Some("pgar-foreign".into()),
            namespace: Some(NS.into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: "admin".into(),
        },
        subjects: Some(vec![user("mallory")]),
    };
    env.bindings()
        .create(&PostParams::default(), &unlabelled)
        .await
        .unwrap();
    env.wait_reason("foreign", "RoleBindingSynced", "AccessDenied")
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kept = env.bindings().get("pgar-foreign").await.unwrap();
    assert_eq!(kept.subjects, unlabelled.subjects, "never modified");
}

#[tokio::test]
async fn the_schema_refuses_bad_requests_with_clear_messages() {
    let env = support::start_without_operator().await;
    let base = json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAccessRequest",
        "metadata": {"name": "bad", "namespace": NS},
        "spec": {
            "subject": {"kind": "User", "name": "alice"},
            "clusterRole": ROLE,
            "expiresAt": "2099-01-01T00:00:00Z",
        },
    });
    let cases = [
        ("/spec/subject/kind", json!("Robot"), "Unsupported value"),
        ("/spec/reason", json!("x".repeat(1025)), "1024"),
    ];
    let api = kube::Api::<kube::api::DynamicObject>::namespaced_with(
        env.client.clone(),
        NS,
        &kube::api::ApiResource::erase::<pgtoolbox_operator::api::PgAccessRequest>(&()),
    );
    for (pointer, value, expected) in cases {
        let mut body = base.clone();
        *body
            .pointer_mut(pointer.rsplit_once('/').unwrap().0)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .entry(pointer.rsplit_once('/').unwrap().1)
            .or_insert(json!(null)) = value;
        let obj = serde_json::from_value(body).unwrap();
        let err = api
            .create(&PostParams::default(), &obj)
            .await
            .expect_err(pointer);
        let kube::Error::Api(status) = err else {
            panic!("{err:?}")
        };
        assert_eq!(status.code, 422, "{pointer}");
        assert!(
            status.message.contains(expected),
            "{pointer}: {}",
            status.message
        );
    }
    let mut no_role = base.clone();
    no_role["spec"]
        .as_object_mut()
        .unwrap()
        .remove("clusterRole");
    let err = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(no_role).unwrap(),
        )
        .await
        .expect_err("clusterRole is required");
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!(status.code, 422);
    assert!(status.message.contains("clusterRole"), "{}", status.message);
}

/// A thousand requests with expiries spread over a few seconds: each expires by its own timer.
/// The embedded API server's counters show the expiry phase costs one status write and one
/// Event per request, and not a single read (no list, no get: no polling).
#[tokio::test]
async fn a_thousand_staggered_expiries_cost_no_reads() {
    const N: usize = 1000;
    let env = support::start().await;
    let base = k8s_openapi::jiff::Timestamp::now();
    let names: Vec<String> = (0..N).map(|i| format!("bulk-{i:04}")).collect();
    // Expiries spread from 15 s to 19 s out: creation and first passes finish before, even
    // beside the rest of the suite on 2 cores (6 s was too short under load).
    for (i, name) in names.iter().enumerate() {
        let expires =
            base + k8s_openapi::jiff::SignedDuration::from_millis(15_000 + (i as i64 * 4));
        let obj: pgtoolbox_operator::api::PgAccessRequest = serde_json::from_value(json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
            "kind": "PgAccessRequest",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "subject": {"kind": "User", "name": "alice"},
                "clusterRole": ROLE,
                "expiresAt": expires.to_string(),
            },
        }))
        .unwrap();
        env.requests()
            .create(&PostParams::default(), &obj)
            .await
            .unwrap();
    }
    // Converged: every request awaits its decision.
    wait_all(&env, N, "AwaitingDecision").await;
    assert!(
        k8s_openapi::jiff::Timestamp::now()
            < base + k8s_openapi::jiff::SignedDuration::from_secs(15),
        "the set-up was too slow for the expiry window; raise the offsets"
    );
    env.sim.admin().reset_stats();
    wait_all(&env, N, "AccessExpired").await;
    // The waiting above lists through the same server: count only the operator's verbs.
    let stats = env.sim.stats();
    let count = |key: &str| stats.by_verb_resource.get(key).copied().unwrap_or(0);
    assert_eq!(
        count("patch pgtoolbox.fyannk.dev/pgaccessrequests/status"),
        N as u64,
        "one status write per expiry: {:#?}",
        stats.by_verb_resource
    );
    assert_eq!(
        count("get pgtoolbox.fyannk.dev/pgaccessrequests"),
        0,
        "no get per tick"
    );
    assert_eq!(count("get rbac.authorization.k8s.io/rolebindings"), 0);
    assert_eq!(count("list rbac.authorization.k8s.io/rolebindings"), 0);
    let lists = count("list pgtoolbox.fyannk.dev/pgaccessrequests");
    assert!(
        lists <= WAIT_LISTS.load(std::sync::atomic::Ordering::SeqCst),
        "the operator listed"
    );
    // Nothing expired before its time: each AccessExpired Event is at or after its expiresAt.
    let expiries: std::collections::HashMap<String, k8s_openapi::jiff::Timestamp> = env
        .requests()
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| {
            (
                o.metadata.name.clone().unwrap_or_default(),
                o.spec.expires_at.0,
            )
        })
        .collect();
    let events: kube::Api<k8s_openapi::api::events::v1::Event> =
        kube::Api::namespaced(env.client.clone(), NS);
    // A pass publishes its Events after its status write: the last few may still be on their way.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let expired = loop {
        let expired: Vec<_> = events
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("AccessExpired"))
            .collect();
        if expired.len() >= N || tokio::time::Instant::now() > deadline {
            break expired;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut expired_events = 0;
    for event in expired {
        expired_events += 1;
        let name = event.regarding.and_then(|r| r.name).unwrap_or_default();
        let at = event.event_time.map(|t| t.0).unwrap();
        assert!(
            at >= expiries[&name],
            "{name} expired at {at}, before {}",
            expiries[&name]
        );
    }
    assert_eq!(expired_events, N, "one AccessExpired Event per request");
}

static WAIT_LISTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

async fn wait_all(env: &support::Env, n: usize, reason: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        WAIT_LISTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let list = env.requests().list(&Default::default()).await.unwrap();
        let done = list
            .items
            .iter()
            .filter(|o| state(*o, "RoleBindingSynced").1 == reason)
            .count();
        if done == n {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{done}/{n} reached {reason}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A pass that fails (the RoleBinding delete is refused) shows Ready=False ReconcileError with
/// one ReconciliationFailed Event across its retries, and recovers once the refusal is lifted.
#[tokio::test]
async fn a_failing_pass_reports_reconcile_error_once_and_recovers() {
    let env = support::start().await;
    env.request("refused", HOUR).await;
    env.wait_reason("refused", "RoleBindingSynced", "AwaitingDecision")
        .await;
    env.sim
        .admin()
        .deny(&format!(
            "delete:rbac.authorization.k8s.io/rolebindings:{NS}"
        ))
        .unwrap();
    env.bind("refused", &["alice"], ROLE).await;
    env.decide("refused", "Denied", "bob").await;
    let obj = env.wait_reason("refused", "Ready", "ReconcileError").await;
    let ready = support::condition_of(&obj, "Ready").unwrap();
    assert_eq!(ready.status, "False");
    assert!(
        ready.message.contains("ReconciliationFailed"),
        "{}",
        ready.message
    );
    env.wait_event("refused", "ReconciliationFailed").await;
    // Let a few retries happen: the class is reported once, not per retry.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let failures = env
        .events("refused")
        .await
        .into_iter()
        .filter(|e| e.1 == "ReconciliationFailed")
        .count();
    assert_eq!(failures, 1, "one Event per error class");
    assert!(
        env.bindings()
            .get_opt("pgar-refused")
            .await
            .unwrap()
            .is_some()
    );
    env.sim.admin().clear_deny();
    env.wait_binding_gone("pgar-refused").await;
    let obj = env
        .wait_reason("refused", "RoleBindingSynced", "AccessDenied")
        .await;
    let obj = if state(&obj, "Ready").0 == "True" {
        obj
    } else {
        env.wait_reason("refused", "Ready", "AsExpected").await
    };
    assert_eq!(state(&obj, "Ready").0, "True");
}

/// Deleting a request withdraws its grant: the operator makes the request an owner of its
/// RoleBinding, and the API server's garbage collector deletes the binding with the request.
#[tokio::test]
async fn deleting_a_request_deletes_its_grant() {
    let env = support::start().await;
    env.request("gone", HOUR).await;
    env.approve("gone", "bob").await;
    env.wait_reason("gone", "RoleBindingSynced", "AccessGranted")
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let rb = env.bindings().get("pgar-gone").await.unwrap();
        let owners = rb.metadata.owner_references.unwrap_or_default();
        if owners
            .iter()
            .any(|o| o.kind == "PgAccessRequest" && o.name == "gone")
        {
            assert!(
                owners.iter().all(|o| o.controller != Some(true)),
                "not a controller"
            );
            assert_eq!(
                rb.subjects,
                Some(vec![user("alice")]),
                "nothing else changed"
            );
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never adopted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    env.requests()
        .delete("gone", &Default::default())
        .await
        .unwrap();
    env.wait_binding_gone("pgar-gone").await;
}
