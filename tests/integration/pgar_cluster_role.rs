//! A PgAccessRequest for a ClusterRole that does not exist (issue 45): `ConfigurationValid`
//! says `ClusterRoleNotFound`, never a stall, so the grant's lifecycle (approval, expiry at
//! `expiresAt`) goes on; a request for an existing ClusterRole says `AsExpected`; a ClusterRole
//! created later turns the condition True at the next recheck (ClusterRoles are not watched) and
//! the grant proceeds; a read that fails without the server naming the role missing keeps the
//! condition and is retried.

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
async fn a_cluster_role_created_later_is_picked_up_and_the_grant_proceeds() {
    let env = start().await;

    env.request_for("late", "cnpg-auditor", 3600).await;
    env.wait_reason("late", "ConfigurationValid", "ClusterRoleNotFound")
        .await;
    // Approved while the role is missing: granted as recorded, Ready says what is missing.
    env.bind("late", &["alice"], "cnpg-auditor").await;
    env.decide("late", "Approved", "bob").await;
    let granted = env
        .wait_reason("late", "RoleBindingSynced", "AccessGranted")
        .await;
    assert_eq!(
        state(&granted, "Ready"),
        ("False".into(), "ClusterRoleNotFound".into())
    );

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

    // No watch on ClusterRoles and nothing else changes: the short recheck wakes the request,
    // and the grant stands, now whole.
    let got = env
        .wait_reason("late", "ConfigurationValid", "AsExpected")
        .await;
    assert_eq!(state(&got, "Ready"), ("True".into(), "AsExpected".into()));
    assert_eq!(state(&got, "RoleBindingSynced").1, "AccessGranted");
    assert!(env.binding_exists("pgar-late").await, "the grant is kept");
}

/// A 404 that does not name the ClusterRole (here: the kind is not served for a while, which a
/// real server answers with a bare `404 page not found`) says nothing about the role: the
/// stored condition stays, the pass fails and is retried, and no request is said to name a
/// missing role.
#[tokio::test]
async fn a_cluster_role_read_that_fails_keeps_the_condition_and_is_retried() {
    let env = start().await;

    env.request("before", 3600).await;
    env.wait_reason("before", "ConfigurationValid", "AsExpected")
        .await;

    env.sim
        .admin()
        .unserve("rbac.authorization.k8s.io/clusterroles");
    // Past the kept read (the short recheck): the next passes read the role again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    env.request("during", 3600).await;
    env.decide("before", "Denied", "bob").await;

    let failed = env.wait_reason("before", "Ready", "ReconcileError").await;
    assert_eq!(
        state(&failed, "ConfigurationValid"),
        ("True".into(), "AsExpected".into()),
        "kept as stored"
    );
    assert_eq!(
        state(&failed, "RoleBindingSynced").1,
        "AccessDenied",
        "the rest of the pass was done"
    );
    let new = env.wait_reason("during", "Ready", "ReconcileError").await;
    assert_ne!(state(&new, "ConfigurationValid").1, "ClusterRoleNotFound");

    env.sim
        .admin()
        .serve("rbac.authorization.k8s.io/clusterroles");
    for name in ["before", "during"] {
        // Retried with backoff: the role is read again and found.
        let got = env.wait_reason(name, "Ready", "AsExpected").await;
        assert_eq!(
            state(&got, "ConfigurationValid"),
            ("True".into(), "AsExpected".into()),
            "{name}"
        );
    }
}

/// A removed CustomResourceDefinition says nothing about its objects: kube-apiserver answers
/// every path of its resource with a plain-text `404 page not found`, which
/// `k8s::get_confirmed` never takes for a missing object (it does take the store's `NotFound`
/// while the kind is served), so no RoleBinding is deleted as belonging to a missing request.
#[tokio::test]
async fn a_removed_crd_never_confirms_its_objects_missing() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use pgtoolbox_operator::testing::k8s::get_confirmed;

    let env = support::start_without_operator().await;
    let requests = env.requests();
    let served = get_confirmed(&requests, "ghost").await;
    assert!(matches!(served, Ok(None)), "{served:?}");
    env.request("held", 3600).await;

    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let name = "pgaccessrequests.pgtoolbox.fyannk.dev";
    crds.delete(name, &kube::api::DeleteParams::default())
        .await
        .expect("CRD deleted");
    super::wait_support::wait_for("the CRD removed", || async {
        match crds.get_opt(name).await.expect("readable") {
            None => Ok(()),
            Some(_) => Err("still there".to_string()),
        }
    })
    .await;
    for name in ["ghost", "held"] {
        match get_confirmed(&requests, name).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 404, "{name}: {status:?}");
                assert!(
                    status.message.contains("404 page not found"),
                    "{name}: {status:?}"
                );
            }
            other => panic!("{name}: a removed CRD read as {other:?}"),
        }
    }
}
