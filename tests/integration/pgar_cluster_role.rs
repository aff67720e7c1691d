//! A PgAccessRequest for a ClusterRole that does not exist (issue 45): `ConfigurationValid`
//! says `ClusterRoleNotFound`, never a stall, so the grant's lifecycle (approval, expiry at
//! `expiresAt`) goes on; a request for an existing ClusterRole says `AsExpected`; a ClusterRole
//! created later turns the condition True at the next recheck (ClusterRoles are not watched).

use std::time::Duration;

use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::pgar_support::{self as support, ROLE, state};

/// The operator with a short stall recheck, the one that looks at a missing ClusterRole again.
async fn start() -> support::Env {
    let mut env = support::start_without_operator().await;
    env.settings.stall_rechecks = (Duration::from_millis(500), Duration::from_millis(1500));
    env.start_operator().await;
    env
}

#[tokio::test]
async fn a_misspelt_cluster_role_is_reported_and_the_request_still_expires() {
    let env = start().await;

    env.request_for("typo", "veiw", 6).await;
    env.request_for("present", ROLE, 3600).await;

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
    let env = start().await;

    env.request_for("late", "cnpg-auditor", 3600).await;
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
