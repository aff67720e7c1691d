//! A PgAccessRequest for a ClusterRole that does not exist (issue 45): `ConfigurationValid`
//! says `ClusterRoleNotFound`, never a stall, so the grant's lifecycle (approval, expiry at
//! `expiresAt`) goes on; a request for an existing ClusterRole says `AsExpected`; a ClusterRole
//! created later turns the condition True at the next recheck (ClusterRoles are not watched).

use std::time::Duration;

use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use pgtoolbox_operator::api::PgAccessRequest;
use serde_json::json;

use super::pgar_support::{self as support, NS, ROLE, state};

/// A request by `alice` for `role`, expiring `expires_in_secs` from now.
async fn request_for(env: &support::Env, name: &str, role: &str, expires_in_secs: i64) {
    let expires = Timestamp::now() + SignedDuration::from_secs(expires_in_secs);
    let obj: PgAccessRequest = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAccessRequest",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "subject": {"kind": "User", "name": "alice"},
            "clusterRole": role,
            "expiresAt": expires.to_string(),
            "reason": "incident 42",
        },
    }))
    .expect("valid request");
    env.requests()
        .create(&PostParams::default(), &obj)
        .await
        .expect("request created");
}

#[tokio::test]
async fn a_misspelt_cluster_role_is_reported_and_the_request_still_expires() {
    let mut env = support::start_without_operator().await;
    env.settings.stall_rechecks = (Duration::from_millis(500), Duration::from_millis(1500));
    env.start_operator().await;

    request_for(&env, "typo", "veiw", 6).await;
    request_for(&env, "present", ROLE, 3600).await;

    let got = env
        .wait_reason("typo", "ConfigurationValid", "ClusterRoleNotFound")
        .await;
    let (status, reason) = state(&got, "ConfigurationValid");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ClusterRoleNotFound")
    );
    assert_eq!(
        state(&got, "Ready"),
        ("False".into(), "ClusterRoleNotFound".into())
    );
    assert_eq!(state(&got, "Stalled").0, "False", "never a stall");

    let present = env
        .wait_reason("present", "ConfigurationValid", "AsExpected")
        .await;
    assert_eq!(state(&present, "ConfigurationValid").0, "True");

    // Approval and expiry go on while the ClusterRole is missing.
    env.bind("typo", &["alice"], "veiw").await;
    env.decide("typo", "Approved", "bob").await;
    env.wait_reason("typo", "RoleBindingSynced", "AccessGranted")
        .await;
    let expired = env
        .wait_reason("typo", "RoleBindingSynced", "AccessExpired")
        .await;
    assert_eq!(
        expired.status.as_ref().map(|s| s.phase.as_str()),
        Some("Expired")
    );
    assert_eq!(
        state(&expired, "ConfigurationValid").1,
        "ClusterRoleNotFound"
    );
    env.wait_binding_gone("pgar-typo").await;
}

#[tokio::test]
async fn a_cluster_role_created_later_turns_the_condition_true() {
    let mut env = support::start_without_operator().await;
    env.settings.stall_rechecks = (Duration::from_millis(500), Duration::from_millis(1500));
    env.start_operator().await;

    request_for(&env, "late", "cnpg-auditor", 3600).await;
    env.wait_reason("late", "ConfigurationValid", "ClusterRoleNotFound")
        .await;

    let role: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "cnpg-auditor"},
        "rules": [{"apiGroups": ["postgresql.cnpg.io"], "resources": ["clusters"], "verbs": ["get"]}],
    }))
    .expect("valid ClusterRole");
    Api::<ClusterRole>::all(env.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .expect("ClusterRole created");

    // No watch on ClusterRoles: the short recheck wakes the request.
    let got = env
        .wait_reason("late", "ConfigurationValid", "AsExpected")
        .await;
    assert_eq!(state(&got, "Ready").0, "True");
}
