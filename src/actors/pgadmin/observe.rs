//! What a PgAdmin pass reads before it writes anything but its exposure (whose reads past the
//! cache are `exposure.rs`'s): the caches' first lists, the referenced objects (`inputs.rs`),
//! the Secret index and the Job cache for the decisions, and the DatabaseRole CRD's password
//! probe for the settings database.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;

use super::inputs::{read_referenced, read_roles};
use super::reconciler::PgAdminReconciler;
use crate::actors::{ObjectContext, ReconcileError, user_of};
use crate::api::PgAdmin;
use crate::children::Synced;
use crate::messages::ObjectKey;
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::OptionalApi;
use crate::reconcile::pgadmin::{
    Observed, SKIP_UPGRADE_BACKUP_ANNOTATION, job_state, password_generation_served,
};

/// The CRD whose schema says whether CloudNativePG generates role passwords.
const DATABASE_ROLE_CRD: &str = "databaseroles.postgresql.cnpg.io";

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

    /// The caches a pass reads (Routes and HTTPRoutes where their API is usable; elsewhere the
    /// pass reads past the cache).
    pub(super) fn cache_reads(&self, cx: &ObjectContext) -> Vec<&Synced> {
        let c = &self.caches;
        let mut reads = vec![
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
            c.host_claims.synced(),
        ];
        reads.extend(c.exposure_synced(&cx.shared.optional_apis, &cx.key.namespace));
        reads
    }

    /// The referenced objects (each read registers the PgAdmin as its user first), and the Secret
    /// index, Job cache and prober's answers the decisions consult when they need them. The
    /// DatabaseRoles are read of the Clusters the offered set registers without them.
    pub(super) async fn observe<'a>(
        &'a self,
        obj: &'a PgAdmin,
        cx: &'a ObjectContext,
        hostname_refused: bool,
    ) -> Result<Observed<'a>, ReconcileError> {
        let caches = &self.caches;
        let (ns, name) = (cx.key.namespace.as_str(), cx.key.name.as_str());
        let key = user_of::<PgAdmin>(&cx.key);
        let settings = &cx.shared.settings;
        let apis = &*cx.shared.optional_apis;
        let spec = &obj.spec;
        let referenced = read_referenced(caches, &cx.client, &key, ns, spec, apis).await?;
        let answer = |api: OptionalApi, n: &str| apis.availability(api, n);
        let registered = referenced.offered(ns, name, spec, &[], &answer).clusters;
        let offer = spec.offer_database_roles;
        let roles = read_roles(caches, &cx.client, &key, &registered, offer, apis).await?;
        let defaults = &settings.default_images;
        Ok(Observed {
            namespace: ns,
            name,
            spec,
            running: obj.status.as_ref().and_then(|s| s.image.as_deref()),
            skip_upgrade_backup: obj
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SKIP_UPGRADE_BACKUP_ANNOTATION))
                .map(String::as_str),
            hostname_refused,
            default_images: (
                defaults.pgadmin.as_deref(),
                defaults.oauth2_proxy.as_deref(),
            ),
            allow: ImageAllowList::new(&settings.allowed_image_repositories),
            referenced,
            roles,
            apis: Box::new(move |api, n| apis.availability(api, n)),
            secret_exists: Box::new(move |n| caches.secrets.exists(&ObjectKey::new(ns, n))),
            job: Box::new(move |n| {
                let job = caches.jobs.get(&ObjectKey::new(ns, n));
                job.as_deref().map(job_state)
            }),
        })
    }
}
