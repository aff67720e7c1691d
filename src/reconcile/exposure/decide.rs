//! `ExposureReady`, `status.url` and `status.publishedExposureKinds` from the spec, the
//! hostname check, the optional APIs' availability in the namespace and the observed children.

use k8s_openapi::api::networking::v1::Ingress;
use kube::api::DynamicObject;

use super::admission::{Admission, http_route_admission, ingress_admission, route_admission};
use super::claims::HostnameConflict;
use super::hostname::HostnameRefusal;
use super::refused_kind::{PastCacheRead, append_required, refused_kind_outcome};
use super::view::ExposureView;
use crate::api::ExposureKind;
use crate::conditions::Verdict;
use crate::conditions::reasons::common;
use crate::reconcile::optional_api::{Availability, OptionalApi};

/// The exposure children the owned-children store holds for this object.
#[derive(Clone, Copy, Debug, Default)]
pub struct ObservedExposure<'a> {
    pub route: Option<&'a DynamicObject>,
    pub ingress: Option<&'a Ingress>,
    pub http_route: Option<&'a DynamicObject>,
}

impl ObservedExposure<'_> {
    fn kinds(&self) -> Vec<ExposureKind> {
        let mut kinds = Vec::new();
        if self.route.is_some() {
            kinds.push(ExposureKind::Route);
        }
        if self.ingress.is_some() {
            kinds.push(ExposureKind::Ingress);
        }
        if self.http_route.is_some() {
            kinds.push(ExposureKind::HttpRoute);
        }
        kinds
    }
}

pub struct ExposureInputs<'a> {
    pub exposure: ExposureView<'a>,
    /// The exposure child's name (e.g. `<name>-console`) and the Service it points to.
    pub child_name: &'a str,
    pub service_name: &'a str,
    /// The hostname check, done first by the caller (`HostAllowList::check`).
    pub hostname: Result<(), &'a HostnameRefusal>,
    /// An earlier object holds the hostname (`claims::hostname_conflict`): nothing is published.
    pub conflict: Option<&'a HostnameConflict>,
    /// The prober's answers for this object's namespace.
    pub routes: &'a Availability,
    pub http_routes: &'a Availability,
    pub observed: ObservedExposure<'a>,
    /// The object's namespace, for the refused-kind sentence.
    pub namespace: &'a str,
    /// `status.publishedExposureKinds` as stored.
    pub recorded: &'a [ExposureKind],
    /// What the reads past the cache found, for each kind `past_cache_reads` named.
    pub past_cache: &'a [PastCacheCheck],
}

/// One read past the cache of a Route or HTTPRoute under the child's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PastCacheCheck {
    pub kind: ExposureKind,
    pub read: PastCacheRead,
    /// A delete of what was found was refused earlier in the pass.
    pub delete_refused: bool,
}

/// The kinds to read past the cache this pass: Routes and HTTPRoutes whose API is refused in
/// the namespace (then the cache cannot show one published before the refusal).
pub fn past_cache_reads(routes: &Availability, http_routes: &Availability) -> Vec<ExposureKind> {
    let refused = |a: &Availability| matches!(a, Availability::Refused { .. });
    let mut kinds = Vec::new();
    if refused(routes) {
        kinds.push(ExposureKind::Route);
    }
    if refused(http_routes) {
        kinds.push(ExposureKind::HttpRoute);
    }
    kinds
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExposureDecision {
    pub verdict: Verdict,
    /// `status.url`: set only while the exposure is admitted.
    pub url: Option<String>,
    /// The exposure object to apply this pass (built by `desired_*`).
    pub apply: Option<ExposureKind>,
    /// Owned exposure children to delete: the kinds no longer wanted, or all of them when the
    /// hostname is refused.
    pub delete: Vec<ExposureKind>,
    /// `status.publishedExposureKinds` once this pass's writes succeeded.
    pub published: Vec<ExposureKind>,
    /// Objects found past the cache to delete, pinned to their UID.
    pub delete_past_cache: Vec<(ExposureKind, String)>,
    /// Objects past the cache that remain published: `true` found, `false` may exist unseen
    /// (a console's ExposureConfined says ExposureOpen: False, resp. Unknown).
    pub unseen: Vec<(ExposureKind, bool)>,
}

/// The whole exposure decision: what the cache shows, then the refused-kind rule on top.
pub fn decide_exposure(inputs: &ExposureInputs<'_>) -> ExposureDecision {
    let mut decision = decide_from_cache(inputs);
    let wanted = (inputs.hostname.is_ok() && inputs.conflict.is_none())
        .then(|| inputs.exposure.kind())
        .flatten();
    let mut sentences = Vec::new();
    for check in inputs.past_cache {
        let outcome = refused_kind_outcome(
            check.kind,
            inputs.namespace,
            inputs.child_name,
            wanted == Some(check.kind),
            inputs.recorded.contains(&check.kind),
            &check.read,
            check.delete_refused,
        );
        if let Some(uid) = outcome.delete_uid {
            decision.delete_past_cache.push((check.kind, uid));
            continue;
        }
        if let Some(sentence) = outcome.sentence {
            sentences.push(sentence);
        }
        if let Some(found) = outcome.published {
            decision.unseen.push((check.kind, found));
            if !decision.published.contains(&check.kind) {
                decision.published.push(check.kind);
            }
        }
    }
    if !sentences.is_empty() {
        let message = append_required(&decision.verdict.message, &sentences.join("; "));
        decision.verdict = Verdict {
            message,
            ..decision.verdict
        };
    }
    decision
}

fn decide_from_cache(inputs: &ExposureInputs<'_>) -> ExposureDecision {
    let observed = inputs.observed.kinds();
    if let Err(refusal) = inputs.hostname {
        // Withdraw everything published under the name, whatever else the pass finds.
        return withdrawn(
            Verdict::fails(common::HOSTNAME_NOT_ALLOWED, refusal.message()),
            observed,
        );
    }
    if let Some(conflict) = inputs.conflict {
        // The earlier claimant keeps the name: withdraw what this object published under it.
        return withdrawn(
            Verdict::fails(common::HOSTNAME_CONFLICT, conflict.message()),
            observed,
        );
    }
    let wanted = inputs.exposure.kind();
    let delete: Vec<ExposureKind> = observed
        .iter()
        .copied()
        .filter(|k| Some(*k) != wanted)
        .collect();
    let Some(kind) = wanted else {
        return ExposureDecision {
            verdict: Verdict::holds(
                common::NOT_REQUESTED,
                format!(
                    "spec.exposure.type is clusterIP: Service {} is reachable inside the cluster only",
                    inputs.service_name
                ),
            ),
            url: None,
            apply: None,
            delete,
            published: Vec::new(),
            delete_past_cache: Vec::new(),
            unseen: Vec::new(),
        };
    };
    let unavailable = match kind {
        ExposureKind::Route => inputs
            .routes
            .message(OptionalApi::Routes)
            .map(|m| (common::ROUTE_API_UNAVAILABLE, m)),
        ExposureKind::HttpRoute => inputs
            .http_routes
            .message(OptionalApi::HttpRoutes)
            .map(|m| (common::GATEWAY_API_UNAVAILABLE, m)),
        ExposureKind::Ingress => None,
    };
    if let Some((reason, message)) = unavailable {
        return ExposureDecision {
            verdict: Verdict::fails(
                reason,
                format!(
                    "spec.exposure.type asks for {} {}: {message}",
                    article(kind),
                    kind_name(kind)
                ),
            ),
            url: None,
            apply: None,
            delete,
            published: Vec::new(),
            delete_past_cache: Vec::new(),
            unseen: Vec::new(),
        };
    }
    let admission = match kind {
        ExposureKind::Route => inputs.observed.route.map(route_admission),
        ExposureKind::Ingress => inputs.observed.ingress.map(ingress_admission),
        ExposureKind::HttpRoute => match (inputs.observed.http_route, inputs.exposure.gateway) {
            (Some(route), Some(parent)) => Some(http_route_admission(route, parent)),
            _ => None,
        },
    };
    let what = format!("{} {}", kind_name(kind), inputs.child_name);
    let (verdict, url) = match admission {
        None => (
            Verdict::unknown(common::RECONCILING, format!("{what} is not observed yet")),
            None,
        ),
        Some(Admission::Pending { detail }) => (
            Verdict::unknown(common::RECONCILING, format!("{what}: {detail}")),
            None,
        ),
        Some(Admission::Refused {
            by,
            reason,
            message,
        }) => {
            let refusal = if kind == ExposureKind::HttpRoute {
                common::NOT_ACCEPTED
            } else {
                common::NOT_ADMITTED
            };
            (
                Verdict::fails(refusal, format!("{what}: {by}: {reason}: {message}")),
                None,
            )
        }
        Some(Admission::Admitted { host, by }) => {
            let host = host.or_else(|| inputs.exposure.hostname.map(str::to_owned));
            let url = host.map(|h| format!("{}://{h}", inputs.exposure.scheme()));
            let verb = if kind == ExposureKind::HttpRoute {
                "accepted"
            } else {
                "admitted"
            };
            let served = url
                .as_deref()
                .map(|u| format!(", served at {u}"))
                .unwrap_or_default();
            (
                Verdict::holds(
                    common::AS_EXPECTED,
                    format!("{what} is {verb} by {}{served}", by.join(", ")),
                ),
                url,
            )
        }
    };
    ExposureDecision {
        verdict,
        url,
        apply: Some(kind),
        delete,
        published: vec![kind],
        delete_past_cache: Vec::new(),
        unseen: Vec::new(),
    }
}

/// Nothing published under the name: every observed exposure child deleted, no URL.
fn withdrawn(verdict: Verdict, observed: Vec<ExposureKind>) -> ExposureDecision {
    ExposureDecision {
        verdict,
        url: None,
        apply: None,
        delete: observed,
        published: Vec::new(),
        delete_past_cache: Vec::new(),
        unseen: Vec::new(),
    }
}

fn kind_name(kind: ExposureKind) -> &'static str {
    match kind {
        ExposureKind::Route => "Route",
        ExposureKind::Ingress => "Ingress",
        ExposureKind::HttpRoute => "HTTPRoute",
    }
}

fn article(kind: ExposureKind) -> &'static str {
    match kind {
        ExposureKind::Route => "a",
        ExposureKind::Ingress | ExposureKind::HttpRoute => "an",
    }
}
