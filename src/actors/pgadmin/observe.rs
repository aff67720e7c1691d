//! The reads of a PgAdmin pass that are not the referenced objects (`inputs.rs`) or past the
//! cache (`past_cache.rs`): the caches' first lists, and the DatabaseRole CRD's password probe.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;

use super::reconciler::PgAdminReconciler;
use crate::actors::{ObjectContext, ReconcileError};
use crate::children::wait_synced;
use crate::reconcile::optional_api::{Availability, OptionalApi};
use crate::reconcile::pgadmin::password_generation_served;

/// The CRD whose schema says whether CloudNativePG generates role passwords.
const DATABASE_ROLE_CRD: &str = "databaseroles.postgresql.cnpg.io";

/// How long a pass waits for the first lists of its caches.
const CACHE_WAIT: Duration = Duration::from_secs(30);

impl PgAdminReconciler {
    /// Whether the served DatabaseRole CRD can generate passwords: read once per operator
    /// start, like the optional-API probe (a CRD upgrade is seen by the next start).
    pub(super) async fn password_generation(
        &self,
        client: &kube::Client,
    ) -> Result<bool, kube::Error> {
        self.password_generation
            .get_or_try_init(|| async {
                let api: Api<CustomResourceDefinition> = Api::all(client.clone());
                match api.get_opt(DATABASE_ROLE_CRD).await {
                    Ok(Some(crd)) => Ok(password_generation_served(&crd)),
                    Ok(None) => Ok(false),
                    // The CRD may not be read: assume it, CloudNativePG's answer will tell.
                    Err(kube::Error::Api(status)) if status.code == 403 => Ok(true),
                    Err(err) => Err(err),
                }
            })
            .await
            .copied()
    }

    /// Waits for the first lists of the caches a pass reads. The Route and HTTPRoute stores only
    /// where their API is readable in the namespace: elsewhere they hold nothing of it (and a
    /// refused watch never lists), and the pass reads past the cache instead.
    pub(super) async fn wait_synced(&self, cx: &ObjectContext) -> Result<(), ReconcileError> {
        let c = &self.caches;
        let on =
            |api| cx.shared.optional_apis.availability(api, &cx.key.namespace) == Availability::On;
        if on(OptionalApi::Routes) {
            wait_synced(CACHE_WAIT, &[c.routes.synced()])
                .await
                .map_err(ReconcileError::other)?;
        }
        if on(OptionalApi::HttpRoutes) {
            wait_synced(CACHE_WAIT, &[c.http_routes.synced()])
                .await
                .map_err(ReconcileError::other)?;
        }
        wait_synced(
            CACHE_WAIT,
            &[
                c.service_accounts.synced(),
                c.services.synced(),
                c.deployments.synced(),
                c.replica_sets.synced(),
                c.pods.synced(),
                c.jobs.synced(),
                c.persistent_volume_claims.synced(),
                c.network_policies.synced(),
                c.ingresses.synced(),
                c.clusters.index().synced(),
                c.poolers.index().synced(),
                c.pgadmin_accesses.index().synced(),
                c.database_roles.index().synced(),
                c.secrets.synced(),
            ],
        )
        .await
        .map_err(ReconcileError::other)
    }
}
