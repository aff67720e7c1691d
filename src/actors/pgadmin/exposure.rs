//! The exposure of a PgAdmin as observe, decide, withdraw: the caches, the prober's answers and
//! the reads past the cache where Routes or HTTPRoutes are refused (the shared
//! `actors::past_exposure`, a delete an earlier pass saw refused included), the decision (pure,
//! `reconcile::exposure::decide_exposure`), then the deletes past the cache it asks for; the
//! children it wants are applied through the pass's `ChildSet`.

use std::sync::Arc;

use k8s_openapi::api::networking::v1::Ingress;
use kube::api::DynamicObject;

use crate::actors::past_exposure::Exposed;
use crate::actors::{ObjectContext, ReconcileError};
use crate::api::PgAdmin;
use crate::children::{ChildOwner, ChildSet, Component, HttpRoute, Route};
use crate::reconcile::exposure::{
    BackendPort, ExposureDecision, ExposureInputs, ExposureView, HostnameConflict, HostnameRefusal,
    ObservedExposure, PastCacheCheck, decide_exposure, desired_http_route, desired_ingress,
    desired_route, past_cache_reads,
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

/// Everything the exposure decision reads, read once a pass.
pub(super) struct SeenExposure {
    routes: Availability,
    http_routes: Availability,
    route: Option<DynamicObject>,
    http_route: Option<DynamicObject>,
    ingress: Option<Arc<Ingress>>,
    past_cache: Vec<PastCacheCheck>,
}

impl SeenExposure {
    /// The decision, pure, from what was seen and the hostname check.
    pub(super) fn decide(
        &self,
        obj: &PgAdmin,
        namespace: &str,
        names: &ChildNames,
        hostname: Result<(), &HostnameRefusal>,
        conflict: Option<&HostnameConflict>,
    ) -> ExposureDecision {
        let recorded = obj
            .status
            .as_ref()
            .map(|s| s.published_exposure_kinds.as_slice())
            .unwrap_or_default();
        decide_exposure(&ExposureInputs {
            exposure: ExposureView::from(&obj.spec.exposure),
            child_name: &names.workload,
            service_name: &names.workload,
            hostname,
            conflict,
            routes: &self.routes,
            http_routes: &self.http_routes,
            observed: ObservedExposure {
                route: self.route.as_ref(),
                ingress: self.ingress.as_deref(),
                http_route: self.http_route.as_ref(),
            },
            namespace,
            recorded,
            past_cache: &self.past_cache,
        })
    }
}

impl PgAdminReconciler {
    /// The exposure's reads: the caches, the prober's answers, and past the cache the Route or
    /// HTTPRoute whose API is refused in the namespace.
    pub(super) async fn observe_exposure(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        names: &ChildNames,
    ) -> Result<SeenExposure, ReconcileError> {
        let ns = cx.key.namespace.as_str();
        let key = user_of::<PgAdmin>(&cx.key);
        let apis = &cx.shared.optional_apis;
        let routes = apis.availability(OptionalApi::Routes, ns);
        let http_routes = apis.availability(OptionalApi::HttpRoutes, ns);
        let of = exposed(obj, owner, names);
        let kinds = past_cache_reads(&routes, &http_routes);
        let recheck_long = cx.shared.settings.stall_rechecks.1;
        let past_cache = (self.past_exposure)
            .read(&cx.client, &of, &kinds, recheck_long)
            .await?;
        Ok(SeenExposure {
            route: first(self.caches.routes.children_of(&key)).and_then(|r| r.to_dynamic()),
            http_route: first(self.caches.http_routes.children_of(&key))
                .and_then(|r| r.to_dynamic()),
            ingress: first(self.caches.ingresses.children_of(&key)),
            routes,
            http_routes,
            past_cache,
        })
    }

    /// The deletes past the cache the decision asks for, pinned; `true` when the server refused
    /// one (remembered: the next pass decides with it).
    pub(super) async fn withdraw_past_cache(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        names: &ChildNames,
        decision: &ExposureDecision,
    ) -> Result<bool, ReconcileError> {
        if decision.delete_past_cache.is_empty() {
            return Ok(false);
        }
        let applier = cx.applier();
        let of = exposed(obj, owner, names);
        let deletes = &decision.delete_past_cache;
        Ok(self.past_exposure.withdraw(&applier, &of, deletes).await?)
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
        let applier = cx.applier();
        let mut set = ChildSet::new(applier, owner, Component::PgAdmin);
        self.apply_exposure(obj, cx, &mut set, names, decision)
            .await?;
        Ok(set.report().converged())
    }
}

fn exposed<'a>(obj: &PgAdmin, owner: &'a ChildOwner, names: &'a ChildNames) -> Exposed<'a> {
    Exposed {
        owner,
        name: &names.workload,
        generation: obj.metadata.generation.unwrap_or_default(),
    }
}

fn first<C>(children: Vec<Arc<C>>) -> Option<Arc<C>> {
    children.into_iter().next()
}
