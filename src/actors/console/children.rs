//! Applying a console's children through the shared applier, one kind at a time, each as the
//! console's complete set of that kind (what is no longer desired is deleted). One `ChildSet` per
//! part that decides a condition, so each part's answer is read on its own.

use k8s_openapi::api::networking::v1::NetworkPolicyPeer;

use crate::actors::ObjectContext;
use crate::api::{ExposureKind, PgToolBoxConsole};
use crate::children::{
    Applier, ApplyError, ApplyReport, ChildOwner, ChildSet, Component, HttpRoute, OperatorCaches,
    Route,
};
use crate::k8s::WriteBudget;
use crate::reconcile::console::{
    CONSOLE_PORT, ChildNames, PolicyAction, RenderInput, deployment, exposure_to_apply,
    instance_ca, network_policy, role_binding, role_grants, service, service_account,
};
use crate::reconcile::exposure::{
    ExposureView, desired_http_route, desired_ingress, desired_route,
};
use crate::reconcile::optional_api::{Availability, OptionalApi};

/// Why the children could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ChildrenError {
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error(transparent)]
    Render(#[from] serde_json::Error),
}

/// What the applier did, per part that decides a condition.
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

/// The prober's answers for Routes and HTTPRoutes in the console's namespace, asked once a pass.
pub struct ExposureApis {
    pub routes: Availability,
    pub http_routes: Availability,
}

impl ExposureApis {
    pub fn of(cx: &ObjectContext) -> Self {
        let optional = &cx.shared.optional_apis;
        let ns = cx.key.namespace.as_str();
        Self {
            routes: optional.availability(OptionalApi::Routes, ns),
            http_routes: optional.availability(OptionalApi::HttpRoutes, ns),
        }
    }

    pub fn readable(&self) -> Readable {
        Readable {
            routes: !matches!(self.routes, Availability::Refused { .. }),
            http_routes: !matches!(self.http_routes, Availability::Refused { .. }),
        }
    }
}

/// Where the writes go: each part's `ChildSet` gets its own `Applier` over these.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub caches: &'a OperatorCaches,
    pub client: &'a kube::Client,
    pub writes: &'a WriteBudget,
    pub owner: &'a ChildOwner,
    pub readable: Readable,
}

impl<'a> Target<'a> {
    fn set(&self) -> ChildSet<'a> {
        let applier = Applier {
            client: self.client,
            writes: self.writes,
        };
        ChildSet::new(applier, self.owner, Component::Console)
    }
}

pub struct ChildPlan<'a> {
    pub input: RenderInput<'a>,
    pub obj: &'a PgToolBoxConsole,
    /// The mirrored bundle's text; `None` when the user names a bundle ConfigMap.
    pub bundle: Option<&'a str>,
    pub policy: PolicyAction,
    pub peers: Option<&'a [NetworkPolicyPeer]>,
    pub exposure: Option<ExposureKind>,
}

/// Pods first, policy second: the Deployment (with or without the trust grant) is applied
/// before the ingress NetworkPolicy changes.
pub async fn apply_all(to: Target<'_>, plan: &ChildPlan<'_>) -> Result<Applied, ChildrenError> {
    let c = to.caches;
    let input = &plan.input;
    let bindings: Vec<_> = role_grants(input.console, input.spec)
        .iter()
        .map(|g| role_binding(input, g))
        .collect();
    let mut workload = to.set();
    workload
        .apply(&c.service_accounts, [service_account(input)])
        .await?
        .apply_as_account(&c.role_bindings, bindings)
        .await?;
    let mut bundle = to.set();
    bundle
        .apply(&c.config_maps, plan.bundle.map(|b| instance_ca(input, b)))
        .await?;
    workload
        .apply(&c.services, [service(input)])
        .await?
        .apply_as_account(
            &c.deployments,
            [deployment(input, plan.obj.spec.resources.as_ref())],
        )
        .await?;
    let policies = match (plan.policy, plan.peers) {
        (PolicyAction::Apply, Some(peers)) => Some(vec![network_policy(input, peers)]),
        (PolicyAction::Apply | PolicyAction::Remove, _) => Some(Vec::new()),
        (PolicyAction::Keep, _) => None,
    };
    let mut policy = to.set();
    if let Some(policies) = policies {
        policy.apply(&c.network_policies, policies).await?;
    }
    let policy = policy.report();
    let kind = exposure_to_apply(plan.exposure, policy.refusal().is_some());
    let exposure = apply_exposure(to, input, kind).await?;
    Ok(Applied {
        workload: workload.report(),
        policy,
        bundle: bundle.report(),
        exposure,
    })
}

/// The exposure object of `kind` (none: every published one is withdrawn).
pub async fn apply_exposure(
    to: Target<'_>,
    input: &RenderInput<'_>,
    kind: Option<ExposureKind>,
) -> Result<ApplyReport, ChildrenError> {
    let c = to.caches;
    let names = ChildNames::of(input.console);
    let view = ExposureView::from(&input.spec.exposure);
    let labels = Default::default();
    let ns = input.namespace;
    let name = names.workload.as_str();
    let mut set = to.set();
    let ingress = (kind == Some(ExposureKind::Ingress))
        .then(|| desired_ingress(name, ns, &labels, &view, name, CONSOLE_PORT));
    set.apply(&c.ingresses, ingress).await?;
    if to.readable.routes {
        let route = match kind {
            Some(ExposureKind::Route) => Some(Route::from_value(desired_route(
                name,
                ns,
                &labels,
                &view,
                name,
                CONSOLE_PORT,
            ))?),
            _ => None,
        };
        set.apply(&c.routes, route).await?;
    }
    if to.readable.http_routes {
        let route = match kind {
            Some(ExposureKind::HttpRoute) => Some(HttpRoute::from_value(desired_http_route(
                name,
                ns,
                &labels,
                &view,
                name,
                CONSOLE_PORT,
            ))?),
            _ => None,
        };
        set.apply(&c.http_routes, route).await?;
    }
    Ok(set.report())
}
