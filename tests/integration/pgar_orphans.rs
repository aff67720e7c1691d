//! RoleBindings labelled for a request that does not exist grant what nobody approved: the
//! operator deletes them, whether the request was deleted before it adopted them (no owner
//! reference, so no garbage collection) or never existed. Found by the deterministic
//! simulation (docs/testing.md).

use kube::api::DeleteParams;

use super::pgar_support::{ROLE, start, start_without_operator};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_of_a_request_deleted_before_adoption_is_deleted_at_start() {
    let mut env = start_without_operator().await;
    env.request("gone", 3600).await;
    env.request("kept", 3600).await;
    env.approve("gone", "bob").await;
    env.approve("kept", "bob").await;
    env.requests()
        .delete("gone", &DeleteParams::default())
        .await
        .expect("request deleted");

    // The operator starts with a binding whose request is gone and was never its owner.
    env.start_operator().await;
    env.wait_binding_gone("pgar-gone").await;
    env.wait_reason("kept", "RoleBindingSynced", "AccessGranted")
        .await;
    assert!(
        env.binding_exists("pgar-kept").await,
        "the binding of an existing, approved request stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_labelled_for_a_request_that_never_existed_is_deleted() {
    let env = start().await;
    env.request("real", 3600).await;
    env.approve("real", "bob").await;
    env.wait_reason("real", "RoleBindingSynced", "AccessGranted")
        .await;
    env.bind("ghost", &["mallory"], ROLE).await;
    env.wait_binding_gone("pgar-ghost").await;
    assert!(
        env.binding_exists("pgar-real").await,
        "the binding of an existing, approved request stays"
    );
}
