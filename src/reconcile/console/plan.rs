//! One console pass's plan, pure. The actor observes (`Observed`: the caches and every read past
//! them, a delete past the cache an earlier pass saw refused included), asks [`plan`] once what
//! to apply and delete, applies it, asks [`settle`] what the apply means and [`conclude_pass`]
//! for the facts it writes. A delete refused in this pass is the next pass's to decide with.
//! Which reads a pass needs, what it applies and which verdict wins after the apply live here.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use kube::api::DynamicObject;

use super::ca_bundle::BundleOutcome;
use super::config::{ConfigOutcome, ConsoleConfigFacts, ForeignChild, PolicyRefusal, decide};
use super::confined::{
    Confinement, ConfinementInput, ConsolePod, ObservedPolicy, RenderedPolicy, decide_confinement,
};
use super::names::{ChildNames, NamedRef};
use super::pass::{ConsoleConclusion, conclude, withdrawn_keeping};
use super::peers::NodeCidrs;
use super::render::{peers_digest, policy_peers};
use crate::api::{ExposureKind, ExposureType, PgToolBoxConsole, PgToolBoxConsoleStatus};
use crate::conditions::{FactsError, Hostname, PassFacts, Verdict};
use crate::reconcile::children::{Component, pod_template_labels};
use crate::reconcile::exposure::{
    ExposureDecision, ExposureInputs, ExposureView, HostAllowList, HostnameConflict,
    HostnameRefusal, ObservedExposure, PastCacheCheck, decide_exposure,
};
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::Availability;
use crate::reconcile::workload::SecretDigest;

/// A refused ingress policy is remembered by the shared rule.
pub use crate::reconcile::remembered::refusal_remembered;

/// Everything a pass read, from the caches and past them. The actor fills it in stages: the
/// parts some reads depend on first ([`Observed::needs_node_cidrs`], [`Observed::needs_digests`]).
pub struct Observed<'a> {
    pub obj: &'a PgToolBoxConsole,
    pub console: &'a str,
    pub namespace: &'a str,
    pub hosts: HostAllowList,
    pub images: ImageAllowList,
    pub default_image: Option<&'a str>,
    pub routes_api: Availability,
    pub http_routes_api: Availability,
    /// ClusterRoles the spec binds that do not exist (read past the cache).
    pub missing_roles: Vec<&'static str>,
    pub missing_secrets: Vec<NamedRef>,
    pub missing_config_maps: Vec<NamedRef>,
    /// The ingress policy the server refused on an earlier pass, still remembered.
    pub remembered_refusal: Option<PolicyRefusal>,
    /// An earlier object holds the hostname (`children::HostClaims`).
    pub host_conflict: Option<HostnameConflict>,
    pub route: Option<DynamicObject>,
    pub http_route: Option<DynamicObject>,
    pub ingress: Option<Ingress>,
    /// Routes/HTTPRoutes of refused kinds, read past the cache; `delete_refused`: an earlier
    /// pass's delete of the one found was refused (and is still remembered).
    pub past_cache: Vec<PastCacheCheck>,
    /// The console's own ingress policy as the cache holds it.
    pub policy: Option<ObservedPolicy>,
    /// The console's Pods, as the cache held them before the apply.
    pub pods: Vec<Arc<Pod>>,
    /// The Deployment's pod template grant as the cache holds it.
    pub template_grant: Option<String>,
    pub other_policies: Vec<NetworkPolicy>,
    pub nodes: NodeCidrs,
    /// The peers digest an earlier pass verified against a console Pod's address.
    pub verified: Option<String>,
    /// The mirrored CA bundle (`None`: the console names its own).
    pub bundle: Option<BundleOutcome>,
    /// Digests of the Secrets the Pods mount, read only when [`Observed::needs_digests`].
    pub digests: Vec<SecretDigest>,
}

/// The references the index knows do not exist; one it cannot tell yet is not said missing.
pub fn missing_refs(refs: &[NamedRef], exists: impl Fn(&str) -> Option<bool>) -> Vec<NamedRef> {
    refs.iter()
        .filter(|r| exists(&r.name) == Some(false))
        .cloned()
        .collect()
}

/// Whether the console is exposed beyond its Service.
pub fn exposed(console: &PgToolBoxConsole) -> bool {
    console.spec.exposure.type_ != ExposureType::ClusterIp
}

/// The namespace's other NetworkPolicies are read (and their namespace watched) only while the
/// console is exposed or still has a policy of its own to judge.
pub fn reads_other_policies(exposed: bool, has_policy: bool) -> bool {
    exposed || has_policy
}

impl Observed<'_> {
    pub fn host_refusal(&self) -> Option<HostnameRefusal> {
        self.hosts
            .check(self.obj.spec.exposure.hostname.as_deref())
            .err()
    }

    fn stored(&self) -> &PgToolBoxConsoleStatus {
        static NONE: std::sync::OnceLock<PgToolBoxConsoleStatus> = std::sync::OnceLock::new();
        self.obj
            .status
            .as_ref()
            .unwrap_or_else(|| NONE.get_or_init(PgToolBoxConsoleStatus::default))
    }

    /// ConfigurationValid as known before the apply (a policy refusal remembered included);
    /// what the apply finds is added with [`ConfigOutcome::with_findings`].
    pub fn config(&self) -> ConfigOutcome {
        decide(&ConsoleConfigFacts {
            namespace: self.namespace,
            image: self.obj.spec.image.as_deref(),
            default_image: self.default_image,
            allow_list: &self.images,
            missing_roles: &self.missing_roles,
            missing_secrets: &self.missing_secrets,
            missing_config_maps: &self.missing_config_maps,
            policy_refused: self.remembered_refusal.as_ref(),
            foreign_child: None,
        })
    }

    /// ExposureReady and what to publish, withdraw and delete past the cache.
    pub fn exposure(&self) -> ExposureDecision {
        let host_refusal = self.host_refusal();
        let names = ChildNames::of(self.console);
        decide_exposure(&ExposureInputs {
            exposure: ExposureView::from(&self.obj.spec.exposure),
            child_name: &names.workload,
            service_name: &names.workload,
            hostname: host_refusal.as_ref().map_or(Ok(()), Err),
            conflict: self.host_conflict.as_ref(),
            routes: &self.routes_api,
            http_routes: &self.http_routes_api,
            observed: ObservedExposure {
                route: self.route.as_ref(),
                ingress: self.ingress.as_ref(),
                http_route: self.http_route.as_ref(),
            },
            namespace: self.namespace,
            recorded: &self.stored().published_exposure_kinds,
            past_cache: &self.past_cache,
        })
    }

    /// The ingress policy this pass renders: only for something published, with peers.
    fn rendered(&self, exposure: &ExposureDecision) -> Option<RenderedPolicy> {
        exposure
            .apply
            .and_then(|_| policy_peers(&self.obj.spec))
            .map(|peers| RenderedPolicy {
                digest: peers_digest(&peers),
                peers,
            })
    }

    /// The Nodes' podCIDRs are read for a rendered policy: to verify its ipBlocks, and as the
    /// Pod network its selector peers connect from (`render::trusted_proxies`).
    pub fn needs_node_cidrs(&self) -> bool {
        self.rendered(&self.exposure())
            .is_some_and(|r| !r.peers.is_empty())
    }

    /// The mounted Secrets are read only when the children are applied.
    pub fn needs_digests(&self) -> bool {
        self.host_refusal().is_none() && self.applied_image().is_some()
    }

    /// The image to render, when the configuration as known before the apply is valid.
    fn applied_image(&self) -> Option<String> {
        let config = self.config();
        config.image.clone().filter(|_| config.valid())
    }
}

/// What a pass applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Children {
    /// A refused hostname: the exposure is withdrawn; the workload and the policy stay as they
    /// were.
    WithdrawExposure,
    /// An invalid configuration: nothing is applied.
    Hold,
    /// Every child, the Pods before the policy.
    Apply { image: String },
}

/// The pass's decisions before anything is applied.
pub struct Plan {
    pub hostname: Hostname,
    pub hostname_refused: bool,
    pub config: ConfigOutcome,
    pub exposure: ExposureDecision,
    pub confinement: Confinement,
    pub rendered: Option<RenderedPolicy>,
    pub children: Children,
}

/// The exposure kinds confinement judges: a kind that may not even be read counts as "may be
/// published" (Unknown, not False), so it is left out of what is known published.
pub(super) fn published_seen(exposure: &ExposureDecision) -> (Vec<ExposureKind>, bool) {
    let unread: Vec<_> = exposure
        .unseen
        .iter()
        .filter(|(_, found)| !found)
        .map(|(kind, _)| *kind)
        .collect();
    let published = exposure
        .published
        .iter()
        .copied()
        .filter(|k| !unread.contains(k))
        .collect();
    (published, !unread.is_empty())
}

/// The engine's hostname fact from the allow-list's answer.
fn hostname(refusal: Option<&HostnameRefusal>) -> Hostname {
    match refusal {
        Some(r) => Hostname::refused(r.message()),
        None => Hostname::Allowed,
    }
}

/// The pass's plan from what it observed; it runs once per pass.
pub fn plan(observed: &Observed<'_>) -> Plan {
    let host_refusal = observed.host_refusal();
    let exposure = observed.exposure();
    let rendered = observed.rendered(&exposure);
    let (published, unseen) = published_seen(&exposure);
    let pod_labels = pod_template_labels(observed.console, Component::Console);
    let pods: Vec<ConsolePod> = observed.pods.iter().map(|p| ConsolePod::of(p)).collect();
    let confinement = decide_confinement(&ConfinementInput {
        published: &published,
        maybe_published_unseen: unseen,
        rendered: rendered.as_ref(),
        observed: observed.policy.as_ref(),
        hostname_refused: host_refusal.is_some(),
        pods: &pods,
        template_grant: observed.template_grant.as_deref(),
        others: &observed.other_policies,
        pod_labels: &pod_labels,
        nodes: &observed.nodes,
        verified: observed.verified.as_deref(),
    });
    let children = match (&host_refusal, observed.applied_image()) {
        (Some(_), _) => Children::WithdrawExposure,
        (None, Some(image)) => Children::Apply { image },
        (None, None) => Children::Hold,
    };
    Plan {
        hostname: hostname(host_refusal.as_ref()),
        hostname_refused: host_refusal.is_some(),
        config: observed.config(),
        exposure,
        confinement,
        rendered,
        children,
    }
}

/// A refused ingress policy publishes nothing until it is accepted: an exposure applied
/// meanwhile would serve the console unconfined.
pub fn exposure_to_apply(
    planned: Option<ExposureKind>,
    policy_refused: bool,
) -> Option<ExposureKind> {
    planned.filter(|_| !policy_refused)
}

/// What the apply of [`Children::Apply`] found; `R`: the server's refusal of a child.
#[derive(Clone, Debug)]
pub struct ApplyFacts<R> {
    pub converged: bool,
    /// The bundle's ConfigMap name is held by an object the console does not control.
    pub bundle_foreign: bool,
    /// A workload, policy or exposure child name held by a foreign object.
    pub foreign: Option<ForeignChild>,
    /// The server refused the ingress policy this pass.
    pub policy_refusal: Option<PolicyRefusal>,
    /// The server refused a workload, CA bundle or exposure child.
    pub refused: Option<R>,
}

/// What became of the children.
pub enum ChildrenApplied<R> {
    /// Nothing applied.
    Held,
    /// The exposure withdrawn under a refused hostname.
    Withdrawn {
        converged: bool,
    },
    Children(ApplyFacts<R>),
}

/// What the pass concludes from, once the apply's answers are in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    pub config: ConfigOutcome,
    pub policy_refused: bool,
    /// WorkloadReady is judged from the caches (the children were applied, none refused or
    /// taken).
    pub judge_workload: bool,
    pub converged: bool,
    pub bundle_foreign: bool,
}

/// Which verdict wins after the apply: a taken name or a refused policy makes the
/// configuration invalid (decided again with it), over a refused workload or exposure child
/// (`Err`: the pass ends as an error of its class), over the workload's readiness.
pub fn settle<R>(
    observed: &Observed<'_>,
    plan: &Plan,
    applied: ChildrenApplied<R>,
) -> Result<Settled, R> {
    let kept = |converged| Settled {
        config: plan.config.clone(),
        policy_refused: observed.remembered_refusal.is_some(),
        judge_workload: false,
        converged,
        bundle_foreign: false,
    };
    let facts = match applied {
        ChildrenApplied::Held => return Ok(kept(true)),
        ChildrenApplied::Withdrawn { converged } => return Ok(kept(converged)),
        ChildrenApplied::Children(facts) => facts,
    };
    let refusal = facts
        .policy_refusal
        .as_ref()
        .or(observed.remembered_refusal.as_ref());
    let (config, judge_workload) = if facts.foreign.is_some() || refusal.is_some() {
        let config = plan.config.clone();
        let namespace = observed.namespace;
        (
            config.with_findings(namespace, refusal, facts.foreign.as_ref()),
            false,
        )
    } else if let Some(refused) = facts.refused {
        return Err(refused);
    } else {
        (plan.config.clone(), true)
    };
    Ok(Settled {
        config,
        policy_refused: refusal.is_some(),
        judge_workload,
        converged: facts.converged,
        bundle_foreign: facts.bundle_foreign,
    })
}

/// The facts the pass writes (`facts` as read from the object, nothing stated yet).
pub fn conclude_pass(
    facts: PassFacts,
    observed: &Observed<'_>,
    plan: &Plan,
    settled: &Settled,
    workload: Option<Verdict>,
) -> Result<PassFacts, FactsError> {
    let names = ChildNames::of(observed.console);
    conclude(ConsoleConclusion {
        facts: facts.with_hostname(plan.hostname.clone())?,
        config: &settled.config,
        hostname_refused: plan.hostname_refused,
        policy_refused: settled.policy_refused,
        workload,
        exposure: &plan.exposure,
        confinement: plan.confinement.verdict.as_ref(),
        bundle: observed.bundle.as_ref(),
        bundle_foreign: settled.bundle_foreign,
        names: &names,
        stored: observed.stored(),
        converged: settled.converged,
    })
}

/// A paused console's facts: only a refused hostname acts, withdrawing what was published
/// (`converged`: what became of that withdrawal; `kept`: ExposureConfined of the stall, see
/// [`super::confined::kept_under_refused_hostname`]).
pub fn conclude_paused(
    facts: PassFacts,
    refusal: Option<&HostnameRefusal>,
    stored: &PgToolBoxConsoleStatus,
    converged: bool,
    kept: Option<Verdict>,
) -> Result<PassFacts, FactsError> {
    let mut facts = facts.with_hostname(hostname(refusal))?;
    if refusal.is_some() {
        // Withdrawn while paused too: nothing is served; the policy left as it was is said kept.
        facts = withdrawn_keeping(facts, stored, kept)?;
    }
    Ok(facts.with_children_converged(converged))
}
