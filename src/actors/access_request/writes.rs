//! The writes a PgAccessRequest pass makes to RoleBindings: pinned deletes (of what the decision
//! deletes, and of the RoleBindings of a request that does not exist) and adoptions. A delete
//! refused or overtaken by a change is left to the next pass, which sees the binding again.

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::{Resource, ResourceExt};

use crate::actors::{ObjectContext, ReconcileError};
use crate::api::PgAccessRequest;
use crate::children::ChildStore;
use crate::k8s::{EventSink, Pinned};
use crate::messages::ObjectKey;
use crate::reconcile::access_request::{Decision, deletion_event};

/// Deletes `name` through the applier if it is still the version of `uid` that was judged.
async fn delete_binding(
    bindings: &ChildStore<RoleBinding>,
    cx: &ObjectContext,
    name: &str,
    uid: Option<String>,
    resource_version: Option<String>,
) -> Result<Pinned, kube::Error> {
    let key = ObjectKey::new(cx.key.namespace.as_str(), name);
    (cx.applier())
        .delete_judged(bindings, &key, uid, resource_version)
        .await
}

/// Deletes what the decision deletes; a `RoleBindingDeleted` Event for each one this pass
/// deleted.
pub async fn delete_decided(
    bindings: &ChildStore<RoleBinding>,
    events: &EventSink,
    obj: &PgAccessRequest,
    decision: &Decision,
    cx: &ObjectContext,
) -> Result<(), ReconcileError> {
    for deletion in &decision.deletions {
        let outcome = delete_binding(
            bindings,
            cx,
            &deletion.name,
            deletion.uid.clone(),
            deletion.resource_version.clone(),
        )
        .await?;
        tracing::info!(rolebinding = %deletion.name, cause = ?deletion.cause, ?outcome, "deleting");
        if outcome == Pinned::Done {
            let event = deletion_event(deletion);
            events
                .publish(&cx.writes, &obj.object_ref(&()), &[event])
                .await;
        }
    }
    Ok(())
}

/// Makes the request an owner of its kept RoleBindings, so deleting the request deletes them
/// (the API server's garbage collector does it, even while the operator is down).
pub async fn adopt_decided(
    obj: &PgAccessRequest,
    decision: &Decision,
    cx: &ObjectContext,
) -> Result<(), ReconcileError> {
    // A non-controller owner: the RoleBinding stays the console's.
    let Some(owner) = obj.owner_ref(&()) else {
        return Ok(());
    };
    for adoption in &decision.adoptions {
        let key = ObjectKey::new(cx.key.namespace.as_str(), adoption.name.as_str());
        let outcome = (cx.applier())
            .add_owner_judged::<RoleBinding>(&key, adoption.resource_version.as_deref(), &owner)
            .await?;
        tracing::debug!(rolebinding = %adoption.name, ?outcome, "adopting");
    }
    Ok(())
}

/// Deletes `orphans`, the RoleBindings of the request `cx.key` that does not exist: they grant
/// what nobody approved. A failure is logged and left for the binding's next change or list.
pub async fn delete_orphans(
    bindings: &ChildStore<RoleBinding>,
    orphans: &[std::sync::Arc<RoleBinding>],
    cx: &ObjectContext,
) {
    let key = &cx.key;
    for binding in orphans {
        let name = binding.name_any();
        let deleted = delete_binding(
            bindings,
            cx,
            &name,
            binding.uid(),
            binding.resource_version(),
        )
        .await;
        match deleted {
            Ok(Pinned::Changed) => {}
            Ok(outcome) => {
                tracing::info!(rolebinding = %name, request = %key, ?outcome, "RoleBinding of a request that does not exist deleted");
            }
            Err(error) => {
                tracing::warn!(rolebinding = %name, request = %key, %error, "RoleBinding of a request that does not exist not deleted; retried on its next change or list");
            }
        }
    }
}
