//! Applying a console's children through the shared applier, one kind at a time, each as the
//! console's complete set of that kind (what is no longer desired is deleted).

use k8s_openapi::api::networking::v1::NetworkPolicy;

use crate::actors::ReconcileError;
use crate::api::{ExposureKind, PgToolBoxConsole};
use crate::children::{
    Applier, ApplyReport, ChildOwner, Component, Desired, HttpRoute, OperatorCaches, Route,
};
use crate::reconcile::console::{
    CONSOLE_PORT, ChildNames, PolicyAction, RenderInput, deployment, instance_ca, network_policy,
    role_binding, role_grants, service, service_account,
};
use crate::reconcile::exposure::{
    ExposureView, desired_http_route, desired_ingress, desired_route,
};

fn desired<C>(object: C) -> Desired<C> {
    Desired {
        component: Component::Console,
        object,
    }
}

/// What the applier did, per part that decides a condition.
#[derive(Default)]
pub struct Applied {
    /// Everything but the policy and the CA bundle.
    pub workload: ApplyReport,
    pub policy: ApplyReport,
    pub bundle: ApplyReport,
    pub exposure: ApplyReport,
}

impl Applied {
    pub fn converged(&self) -> bool {
        [&self.workload, &self.policy, &self.bundle, &self.exposure]
            .iter()
            .all(|r| r.converged())
    }
}

/// Which exposure stores this namespace can read: a kind refused here has no store to apply
/// through (its objects are read past the cache instead).
#[derive(Clone, Copy, Debug)]
pub struct Readable {
    pub routes: bool,
    pub http_routes: bool,
}

pub struct ChildPlan<'a> {
    pub input: RenderInput<'a>,
    pub obj: &'a PgToolBoxConsole,
    /// The mirrored bundle's text; `None` when the user names a bundle ConfigMap.
    pub bundle: Option<&'a str>,
    pub policy: PolicyAction,
    pub peers: Option<&'a [k8s_openapi::api::networking::v1::NetworkPolicyPeer]>,
    pub exposure: Option<ExposureKind>,
    pub readable: Readable,
}

/// Pods first, policy second: the Deployment (with or without the trust grant) is applied
/// before the ingress NetworkPolicy changes.
pub async fn apply_all(
    caches: &OperatorCaches,
    applier: &Applier<'_>,
    owner: &ChildOwner,
    plan: &ChildPlan<'_>,
) -> Result<Applied, ReconcileError> {
    let e = ReconcileError::other;
    let input = &plan.input;
    let mut applied = Applied::default();
    applied.workload.merge(
        applier
            .apply(
                &caches.service_accounts,
                owner,
                vec![desired(service_account(input))],
            )
            .await
            .map_err(e)?,
    );
    let bindings = role_grants(input.console, input.spec)
        .iter()
        .map(|g| desired(role_binding(input, g)))
        .collect();
    applied.workload.merge(
        applier
            .apply(&caches.role_bindings, owner, bindings)
            .await
            .map_err(e)?,
    );
    applied.bundle = applier
        .apply(
            &caches.config_maps,
            owner,
            plan.bundle
                .map(|b| desired(instance_ca(input, b)))
                .into_iter()
                .collect(),
        )
        .await
        .map_err(e)?;
    applied.workload.merge(
        applier
            .apply(&caches.services, owner, vec![desired(service(input))])
            .await
            .map_err(e)?,
    );
    applied.workload.merge(
        applier
            .apply(
                &caches.deployments,
                owner,
                vec![desired(deployment(input, plan.obj.spec.resources.as_ref()))],
            )
            .await
            .map_err(e)?,
    );
    let policies: Option<Vec<Desired<NetworkPolicy>>> = match (plan.policy, plan.peers) {
        (PolicyAction::Apply, Some(peers)) => Some(vec![desired(network_policy(input, peers))]),
        (PolicyAction::Apply | PolicyAction::Remove, _) => Some(Vec::new()),
        (PolicyAction::Keep, _) => None,
    };
    if let Some(policies) = policies {
        applied.policy = applier
            .apply(&caches.network_policies, owner, policies)
            .await
            .map_err(e)?;
    }
    // A refused ingress policy publishes nothing until it is accepted: an exposure applied
    // meanwhile would serve the console unconfined.
    let exposure = if applied.policy.refusal().is_some() {
        None
    } else {
        plan.exposure
    };
    applied.exposure =
        apply_exposure(caches, applier, owner, input, exposure, plan.readable).await?;
    Ok(applied)
}

/// The exposure object of `kind` (none: every published one is withdrawn).
pub async fn apply_exposure(
    caches: &OperatorCaches,
    applier: &Applier<'_>,
    owner: &ChildOwner,
    input: &RenderInput<'_>,
    kind: Option<ExposureKind>,
    readable: Readable,
) -> Result<ApplyReport, ReconcileError> {
    let e = ReconcileError::other;
    let names = ChildNames::of(input.console);
    let view = ExposureView::from(&input.spec.exposure);
    let labels = Default::default();
    let ns = input.namespace;
    let name = names.workload.as_str();
    let mut report = ApplyReport::default();
    let ingresses = (kind == Some(ExposureKind::Ingress))
        .then(|| {
            desired(desired_ingress(
                name,
                ns,
                &labels,
                &view,
                name,
                CONSOLE_PORT,
            ))
        })
        .into_iter()
        .collect();
    report.merge(
        applier
            .apply(&caches.ingresses, owner, ingresses)
            .await
            .map_err(e)?,
    );
    let mut routes = Vec::new();
    if readable.routes && kind == Some(ExposureKind::Route) {
        let value = desired_route(name, ns, &labels, &view, name, CONSOLE_PORT);
        routes.push(desired(
            Route::from_value(value).map_err(ReconcileError::other)?,
        ));
    }
    if readable.routes {
        report.merge(
            applier
                .apply(&caches.routes, owner, routes)
                .await
                .map_err(e)?,
        );
    }
    let mut http_routes = Vec::new();
    if readable.http_routes && kind == Some(ExposureKind::HttpRoute) {
        let value = desired_http_route(name, ns, &labels, &view, name, CONSOLE_PORT);
        http_routes.push(desired(
            HttpRoute::from_value(value).map_err(ReconcileError::other)?,
        ));
    }
    if readable.http_routes {
        report.merge(
            applier
                .apply(&caches.http_routes, owner, http_routes)
                .await
                .map_err(e)?,
        );
    }
    Ok(report)
}
