//! The exposure of a PgAdmin: decided from the caches and the prober's answers (with the reads
//! past the cache where Routes or HTTPRoutes are refused), and applied through the applier.

use std::sync::Arc;

use super::past_cache::{delete_past_cache, read_past_cache};
use crate::actors::{ObjectContext, ReconcileError};
use crate::api::PgAdmin;
use crate::children::{Applier, ChildOwner, ChildSet, Component, HttpRoute, Route};
use crate::reconcile::exposure::{
    BackendPort, ExposureDecision, ExposureInputs, ExposureView, ObservedExposure, PastCacheCheck,
    decide_exposure, desired_http_route, desired_ingress, desired_route, past_cache_reads,
};
use crate::reconcile::optional_api::{Availability, OptionalApi};
use crate::reconcile::pgadmin::{ChildNames, HTTP_PORT_NAME, SERVICE_PORT};

use super::error::{PgAdminError, render_error};
use super::reconciler::PgAdminReconciler;
use crate::actors::user_of;

const PORT: BackendPort<'static> = BackendPort {
    name: HTTP_PORT_NAME,
    number: SERVICE_PORT,
};

impl PgAdminReconciler {
    /// The exposure decided from the caches and the prober's answers, with the reads past the
    /// cache of a Route or HTTPRoute whose API is refused in the namespace (and the delete of
    /// one the decision removes).
    pub(super) async fn exposure(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        names: &ChildNames,
        hostname: Result<(), &crate::reconcile::exposure::HostnameRefusal>,
    ) -> Result<ExposureDecision, ReconcileError> {
        let ns = cx.key.namespace.as_str();
        let key = user_of::<PgAdmin>(&cx.key);
        let apis = &cx.shared.optional_apis;
        let routes = apis.availability(OptionalApi::Routes, ns);
        let http_routes = apis.availability(OptionalApi::HttpRoutes, ns);
        let route = first(self.caches.routes.children_of(&key)).and_then(|r| r.to_dynamic());
        let http_route =
            first(self.caches.http_routes.children_of(&key)).and_then(|r| r.to_dynamic());
        let ingress = first(self.caches.ingresses.children_of(&key));
        let recorded = obj
            .status
            .as_ref()
            .map(|s| s.published_exposure_kinds.clone())
            .unwrap_or_default();
        let kinds = past_cache_reads(&routes, &http_routes);
        let mut checks = read_past_cache(&cx.client, owner, &names.workload, &kinds).await?;
        let decide = |checks: &[PastCacheCheck]| {
            decide_exposure(&ExposureInputs {
                exposure: ExposureView::from(&obj.spec.exposure),
                child_name: &names.workload,
                service_name: &names.workload,
                hostname,
                routes: &routes,
                http_routes: &http_routes,
                observed: ObservedExposure {
                    route: route.as_ref(),
                    ingress: ingress.as_deref(),
                    http_route: http_route.as_ref(),
                },
                namespace: ns,
                recorded: &recorded,
                past_cache: checks,
            })
        };
        let decision = decide(&checks);
        let mut refused_any = false;
        for (kind, uid) in &decision.delete_past_cache {
            let deleted =
                delete_past_cache(&cx.client, &cx.writes, owner, &names.workload, *kind, uid)
                    .await?;
            if !deleted {
                refused_any = true;
                for check in checks.iter_mut().filter(|c| c.kind == *kind) {
                    check.delete_refused = true;
                }
            }
        }
        Ok(if refused_any {
            decide(&checks)
        } else {
            decision
        })
    }

    /// Applies the exposure children the decision wants (none: withdrawn) into `set`.
    pub(super) async fn apply_exposure(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        set: &mut ChildSet<'_>,
        names: &ChildNames,
        decision: &ExposureDecision,
    ) -> Result<(), PgAdminError> {
        use crate::api::ExposureKind as K;
        let view = ExposureView::from(&obj.spec.exposure);
        let ns = cx.key.namespace.as_str();
        let labels = Default::default();
        let w = &names.workload;
        let ingress = (decision.apply == Some(K::Ingress))
            .then(|| desired_ingress(w, ns, &labels, &view, w, PORT));
        set.apply(&self.caches.ingresses, ingress).await?;
        // Routes and HTTPRoutes through their stores only where their API is readable here.
        let on = |api| cx.shared.optional_apis.availability(api, ns) == Availability::On;
        if on(OptionalApi::Routes) {
            let route = (decision.apply == Some(K::Route))
                .then(|| Route::from_value(desired_route(w, ns, &labels, &view, w, PORT)))
                .transpose()
                .map_err(render_error)?;
            set.apply(&self.caches.routes, route).await?;
        }
        if on(OptionalApi::HttpRoutes) {
            let value = (decision.apply == Some(K::HttpRoute))
                .then(|| desired_http_route(w, ns, &labels, &view, w, PORT));
            let http_route = value
                .map(HttpRoute::from_value)
                .transpose()
                .map_err(render_error)?;
            set.apply(&self.caches.http_routes, http_route).await?;
        }
        Ok(())
    }

    /// The exposure applied on its own (the hostname is refused, nothing else is applied);
    /// whether it wrote nothing.
    pub(super) async fn withdraw_exposure(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        names: &ChildNames,
        decision: &ExposureDecision,
    ) -> Result<bool, PgAdminError> {
        let applier = Applier {
            client: &cx.client,
            writes: &cx.writes,
        };
        let mut set = ChildSet::new(applier, owner, Component::PgAdmin);
        self.apply_exposure(obj, cx, &mut set, names, decision)
            .await?;
        Ok(set.report().converged())
    }
}

fn first<C>(children: Vec<Arc<C>>) -> Option<Arc<C>> {
    children.into_iter().next()
}
