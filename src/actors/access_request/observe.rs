//! Every read of a PgAccessRequest pass: the request's RoleBindings and whether its Cluster
//! exists, from the shared caches; whether its ClusterRole exists, from the API server; and the
//! RoleBindings as the API server has them now, for the one case the cache's word is checked.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, ListParams};

use crate::actors::{ObjectContext, ReconcileError, user_of};
use crate::api::{PgAccessRequest, PgAccessRequestStatus};
use crate::children::{OperatorCaches, REQUEST_LABEL, RoleReads, Track};
use crate::messages::ObjectKey;
use crate::reconcile::access_request::RequestFacts;

/// What a pass read of one request.
pub struct Observed<'a> {
    pub request: RequestFacts<'a>,
    /// The RoleBindings labelled for the request, as the cache holds them.
    pub bindings: Vec<Arc<RoleBinding>>,
}

/// Reads the request's facts and RoleBindings. The request is registered as a user of its
/// Cluster before the Cluster is looked up, so one that appears meanwhile still wakes it.
pub fn observe<'a>(
    caches: &OperatorCaches,
    obj: &'a PgAccessRequest,
    cx: &'a ObjectContext,
) -> Observed<'a> {
    static NO_STATUS: std::sync::OnceLock<PgAccessRequestStatus> = std::sync::OnceLock::new();
    let clusters = caches.clusters.index();
    let owner = user_of::<PgAccessRequest>(&cx.key);
    let cluster = obj
        .spec
        .cluster
        .as_deref()
        .map(|name| ObjectKey::new(cx.key.namespace.as_str(), name));
    clusters.register(&owner, cluster.iter().cloned().collect(), Track::Existence);
    // Borrowed: a pass runs for every object, a clone of its status is not needed.
    let status = obj
        .status
        .as_ref()
        .unwrap_or_else(|| NO_STATUS.get_or_init(PgAccessRequestStatus::default));
    let request = RequestFacts::of(
        obj,
        &cx.key.name,
        &cx.key.namespace,
        status,
        obj.spec
            .cluster
            .as_deref()
            .zip(cluster.as_ref())
            .map(|(name, key)| (name, clusters.exists(key))),
        cx.shared.settings.access_request_orphan_grace,
    );
    Observed {
        request,
        bindings: caches.access_bindings.children_of(&owner),
    }
}

/// The request's RoleBindings as the API server has them now (not being deleted).
pub async fn live_bindings(cx: &ObjectContext) -> Result<Vec<RoleBinding>, ReconcileError> {
    let api: Api<RoleBinding> = Api::namespaced(cx.client.clone(), &cx.key.namespace);
    let selector = format!("{REQUEST_LABEL}={}", cx.key.name);
    let list = api.list(&ListParams::default().labels(&selector)).await?;
    Ok(list
        .items
        .into_iter()
        .filter(|rb| rb.metadata.deletion_timestamp.is_none())
        .collect())
}

/// Whether the ClusterRole of `spec.clusterRole` exists, as the API server had it at most the
/// short stall recheck ago (ClusterRoles are not watched; a converged pass reads nothing). Only
/// the server's confirmation says it is missing; a failed read (a 404 that does not name it
/// among them) is an error, which the pass reports after it did everything else (expiry and
/// revocation must go on).
pub async fn cluster_role_exists(
    cx: &ObjectContext,
    roles: &RoleReads,
    name: &str,
) -> Result<bool, kube::Error> {
    let fresh_for = cx.shared.settings.stall_rechecks.0;
    roles.exists(&cx.client, name, fresh_for).await.inspect_err(|error| {
        tracing::debug!(request = %cx.key, cluster_role = name, error = %crate::conditions::readable(error), "whether the ClusterRole exists is unknown");
    })
}
