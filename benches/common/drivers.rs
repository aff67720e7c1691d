//! What the comparison benches' drivers share: kube-runtime's `Controller` running one of our
//! `Reconciler`s (so both drivers run the very same pass), and waiting for our runtime's actors
//! of a kind to hibernate.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use pgtoolbox_operator::testing::actors::{
    ObjectContext, PassEnv, ReconcileError, Reconciler, Shared,
};
use pgtoolbox_operator::testing::messages::ObjectKey;
use tokio_util::task::AbortOnDropHandle;

struct ControllerCx<R> {
    reconciler: R,
    env: Arc<PassEnv>,
}

/// Runs `controller` with `reconciler`'s pass, each pass given an [`ObjectContext`] over `env`
/// as our runtime gives it; the next pass comes at the outcome's earliest timer, a failed pass
/// retries after a second; kube's defaults otherwise (unbounded concurrency). Dropping the
/// handle stops it.
pub fn spawn_controller<R: Reconciler>(
    controller: Controller<R::Object>,
    reconciler: R,
    env: Arc<PassEnv>,
) -> AbortOnDropHandle<()> {
    let cx = Arc::new(ControllerCx { reconciler, env });
    let run = controller
        .run(
            controller_pass,
            |_, _, _| Action::requeue(Duration::from_secs(1)),
            cx,
        )
        .for_each(|_| async {});
    AbortOnDropHandle::new(tokio::spawn(run))
}

async fn controller_pass<R: Reconciler>(
    obj: Arc<R::Object>,
    cx: Arc<ControllerCx<R>>,
) -> Result<Action, ReconcileError> {
    let key = ObjectKey::of(obj.as_ref())
        .ok_or_else(|| ReconcileError::other("object without name or namespace"))?;
    let object_cx = ObjectContext::new(key, cx.env.clone(), 0);
    let outcome = cx.reconciler.reconcile(obj, &object_cx).await?;
    Ok(
        match outcome.earliest_per_purpose().into_iter().flatten().min() {
            Some(delay) => Action::requeue(delay),
            None => Action::await_change(),
        },
    )
}

/// Our runtime: waits (at most `bound`) until no actor of `kind` is live any more (converged
/// actors hibernate after their linger), then answers (live, hibernated).
pub async fn actors_settled(shared: &Shared, kind: &str, bound: Duration) -> (i64, i64) {
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        let objects = shared.runtime.objects(kind);
        if objects.0 == 0 || tokio::time::Instant::now() >= deadline {
            return objects;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Our runtime: waits (at most `bound`) until `count` passes over objects of `kind` have run,
/// then answers how many had.
pub async fn passes_reached(shared: &Shared, kind: &str, count: u64, bound: Duration) -> u64 {
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        let passes = shared.runtime.passes(kind);
        if passes >= count || tokio::time::Instant::now() >= deadline {
            return passes;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
