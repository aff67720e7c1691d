//! `ExposureConfined` and the trust grant (pure).
//!
//! Console Pods trust `X-Forwarded-For` only from the peers the ingress NetworkPolicy admits,
//! and only while that policy is confined and verified. The order of every change is Pods
//! first, policy second: a changed `from` is held back (the old policy kept) until no console
//! Pod carries a grant, and a policy no longer rendered is kept until then; a grant is given
//! only once the rendered policy is the one the cluster holds. So no Pod ever trusts peers the
//! current policy does not confine.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};

use super::peers::{NodeCidrs, PodAddress, broad_peer, node_check_note, pod_address};
use super::render::{CONSOLE_PORT, TRUST_ANNOTATION};
use crate::api::ExposureKind;
use crate::conditions::Verdict;
use crate::conditions::reasons::{common, console};

/// Above these counts the analysis does not vouch for the peers.
pub const MAX_OTHER_POLICIES: usize = 250;
pub const MAX_CONSOLE_PODS: usize = 250;

const TRUSTS: &str = "console Pods trust X-Forwarded-For from the peers the policy admits";
/// Selector peers connect from the Pod network, known from the Nodes' podCIDRs; without them
/// only the ipBlock peers are believed.
const TRUSTS_BLOCKS_ONLY: &str = "console Pods trust X-Forwarded-For only from the policy's ipBlock peers: the Pod network its selector peers connect from is not known (the Nodes' podCIDRs could not be read)";
const TRUSTS_NONE: &str = "the console trusts no peer with X-Forwarded-For";
/// While the policy is kept, Pods that carry the grant run with CONSOLE_TRUST_X_FORWARDED_FOR
/// set: the message says so rather than that nobody is trusted.
const TRUSTS_KEPT: &str = "console Pods that carry the grant trust X-Forwarded-For from the peers the kept policy admits, the others trust no peer";

/// A console Pod as the trust analysis sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsolePod {
    pub name: String,
    pub address: Option<PodAddress>,
    /// The peers digest it was granted trust for (its template's annotation).
    pub grant: Option<String>,
    /// `metadata.deletionTimestamp`, for a Pod stuck terminating.
    pub deleting_since: Option<String>,
}

impl ConsolePod {
    /// The console Pod as the cache holds it.
    pub fn of(pod: &Pod) -> Self {
        ConsolePod {
            name: pod.name_any(),
            address: pod_address(pod),
            grant: pod.annotations().get(TRUST_ANNOTATION).cloned(),
            deleting_since: pod
                .metadata
                .deletion_timestamp
                .as_ref()
                .map(|t| t.0.to_string()),
        }
    }
}

/// The ingress policy this pass renders.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderedPolicy {
    pub peers: Vec<NetworkPolicyPeer>,
    pub digest: String,
}

/// The console's own policy as the cache holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedPolicy {
    /// Its peers digest annotation.
    pub digest: Option<String>,
}

pub struct ConfinementInput<'a> {
    /// The exposure objects published (found), after this pass's decision.
    pub published: &'a [ExposureKind],
    /// A Route/HTTPRoute published before its kind was refused may still serve, unseen.
    pub maybe_published_unseen: bool,
    pub rendered: Option<&'a RenderedPolicy>,
    pub observed: Option<&'a ObservedPolicy>,
    /// The console is stalled on HostnameNotAllowed: workload and policy stay as they were.
    pub hostname_refused: bool,
    pub pods: &'a [ConsolePod],
    /// The Deployment's pod template grant as the cache holds it.
    pub template_grant: Option<&'a str>,
    /// The namespace's other NetworkPolicies.
    pub others: &'a [NetworkPolicy],
    /// The console Pods' labels (to know which policies select them).
    pub pod_labels: &'a BTreeMap<String, String>,
    pub nodes: &'a NodeCidrs,
    /// The peers digest whose ipBlocks an earlier pass verified against Pod addresses.
    pub verified: Option<&'a str>,
}

/// What to do with the console's ingress NetworkPolicy this pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyAction {
    Apply,
    /// Leave the cached one as it is (neither apply nor delete).
    Keep,
    Remove,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confinement {
    /// `None`: the condition is absent (nothing published, no policy kept).
    pub verdict: Option<Verdict>,
    /// The grant to render on the pod template.
    pub grant: Option<String>,
    pub policy: PolicyAction,
    /// The digest whose ipBlocks are verified now.
    pub verified: Option<String>,
}

fn holders(pods: &[ConsolePod]) -> Vec<&ConsolePod> {
    pods.iter().filter(|p| p.grant.is_some()).collect()
}

fn name_holders(holders: &[&ConsolePod]) -> String {
    let named: Vec<String> = holders
        .iter()
        .take(5)
        .map(|p| match &p.deleting_since {
            Some(since) => format!(
                "Pod {} (stuck terminating, deletion asked at {since})",
                p.name
            ),
            None => format!("Pod {}", p.name),
        })
        .collect();
    let more = holders.len().saturating_sub(5);
    if more > 0 {
        format!("{} and {more} more", named.join(", "))
    } else {
        named.join(", ")
    }
}

fn false_(reason: crate::conditions::Reason, body: String) -> Option<Verdict> {
    Some(Verdict::fails(reason, format!("{body}; {TRUSTS_NONE}")))
}

pub fn decide_confinement(input: &ConfinementInput<'_>) -> Confinement {
    let holders = holders(input.pods);
    let granted = !holders.is_empty() || input.template_grant.is_some();
    if input.hostname_refused {
        return Confinement {
            verdict: kept_under_refused_hostname(
                input.observed.is_some(),
                input.pods,
                input.template_grant,
            ),
            grant: input.template_grant.map(str::to_owned),
            policy: PolicyAction::Keep,
            verified: input.verified.map(str::to_owned),
        };
    }
    let Some(rendered) = input.rendered else {
        if input.observed.is_some() && granted {
            let who = if holders.is_empty() {
                "the Deployment's pod template still carries the grant".to_owned()
            } else {
                format!("{} still trusts its peers", name_holders(&holders))
            };
            return Confinement {
                verdict: Some(Verdict::fails(
                    console::EXPOSURE_POLICY_KEPT,
                    format!(
                        "the ingress NetworkPolicy is no longer rendered and is kept until the rollout without the grant is through: {who}; {TRUSTS_KEPT}"
                    ),
                )),
                grant: None,
                policy: PolicyAction::Keep,
                verified: None,
            };
        }
        let verdict = if !input.published.is_empty() {
            false_(
                console::EXPOSURE_OPEN,
                format!(
                    "{} is published without an ingress NetworkPolicy (spec.exposure.networkPolicy is off, or names no peer for an Ingress or a Gateway): any Pod can reach the console port",
                    kinds(input.published)
                ),
            )
        } else if input.maybe_published_unseen {
            Some(Verdict::unknown(
                console::EXPOSURE_OPEN,
                format!(
                    "an exposure object the operator may no longer read may still serve without an ingress NetworkPolicy; {TRUSTS_NONE}"
                ),
            ))
        } else {
            None
        };
        return Confinement {
            verdict,
            grant: None,
            policy: PolicyAction::Remove,
            verified: None,
        };
    };
    let observed_digest = input.observed.and_then(|o| o.digest.as_deref());
    let current = observed_digest == Some(rendered.digest.as_str());
    if input.observed.is_some() && !current && granted {
        let who = if holders.is_empty() {
            "the Deployment's pod template still carries the grant".to_owned()
        } else {
            format!(
                "{} still trusts every peer of the current policy",
                name_holders(&holders)
            )
        };
        return Confinement {
            verdict: false_(
                console::EXPOSURE_TRUST_UNVERIFIED,
                format!(
                    "the changed spec.exposure.networkPolicy.from is held back until no console Pod trusts every peer: {who}"
                ),
            ),
            grant: None,
            policy: PolicyAction::Keep,
            verified: input.verified.map(str::to_owned),
        };
    }
    let (verdict, grant, verified) = analyse(input, rendered, current);
    Confinement {
        verdict: Some(verdict),
        grant,
        policy: PolicyAction::Apply,
        verified,
    }
}

/// ExposureConfined of a console stalled on HostnameNotAllowed (paused or not): its ingress
/// policy (`has_policy`) and its workload stay as they were, so the condition says the policy is
/// kept and what the Pods do with X-Forwarded-For as they run; absent without a policy.
pub fn kept_under_refused_hostname(
    has_policy: bool,
    pods: &[ConsolePod],
    template_grant: Option<&str>,
) -> Option<Verdict> {
    if !has_policy {
        return None;
    }
    let granted = !holders(pods).is_empty() || template_grant.is_some();
    let trust = if granted { TRUSTS_KEPT } else { TRUSTS_NONE };
    Some(Verdict::fails(
        console::EXPOSURE_POLICY_KEPT,
        format!(
            "the console is stalled on HostnameNotAllowed: the exposure is withdrawn, the workload and the ingress NetworkPolicy stay as they were; {trust}"
        ),
    ))
}

fn kinds(published: &[ExposureKind]) -> String {
    let names: Vec<&str> = published
        .iter()
        .map(|k| match k {
            ExposureKind::Route => "a Route",
            ExposureKind::Ingress => "an Ingress",
            ExposureKind::HttpRoute => "an HTTPRoute",
        })
        .collect();
    names.join(" and ")
}

fn analyse(
    input: &ConfinementInput<'_>,
    rendered: &RenderedPolicy,
    current: bool,
) -> (Verdict, Option<String>, Option<String>) {
    let addresses: Vec<PodAddress> = input
        .pods
        .iter()
        .filter_map(|p| p.address.clone())
        .collect();
    let has_blocks = rendered.peers.iter().any(|p| p.ip_block.is_some());
    let note = has_blocks
        .then(|| node_check_note(input.nodes, &addresses))
        .flatten()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    let none = |reason, body: String| {
        (
            Verdict::fails(reason, format!("{body}{note}; {TRUSTS_NONE}")),
            None,
            input.verified.map(str::to_owned),
        )
    };
    if input.pods.len() > MAX_CONSOLE_PODS {
        return none(
            console::EXPOSURE_TRUST_UNVERIFIED,
            format!(
                "there are more than {MAX_CONSOLE_PODS} console Pods to check the peers against"
            ),
        );
    }
    if let Some(why) = rendered
        .peers
        .iter()
        .find_map(|p| broad_peer(p, &addresses, input.nodes))
    {
        return none(
            console::EXPOSURE_PEERS_BROAD,
            format!("a peer of spec.exposure.networkPolicy.from admits (nearly) everyone: {why}"),
        );
    }
    if let Some(why) = bypass(input.others, input.pod_labels, &rendered.peers) {
        return none(console::EXPOSURE_POLICY_BYPASSED, why);
    }
    let verified_before = input.verified == Some(rendered.digest.as_str());
    if has_blocks && addresses.is_empty() && !verified_before {
        return none(
            console::EXPOSURE_TRUST_UNVERIFIED,
            "the ipBlock peers cannot be checked until a console Pod has an address".into(),
        );
    }
    if !current {
        return none(
            console::EXPOSURE_TRUST_UNVERIFIED,
            "the ingress NetworkPolicy for these peers is not in the cluster yet".into(),
        );
    }
    let verified = has_blocks.then(|| rendered.digest.clone());
    // A selector peer is believed from the Pod network (render::trusted_proxies): unknown,
    // only the ipBlocks are.
    let selectors = rendered.peers.iter().any(|p| p.ip_block.is_none());
    let pod_network =
        matches!(input.nodes, NodeCidrs::Known(n) if n.iter().any(|(_, c)| !c.is_empty()));
    let trusts = if selectors && !pod_network {
        TRUSTS_BLOCKS_ONLY
    } else {
        TRUSTS
    };
    (
        Verdict::holds(
            common::AS_EXPECTED,
            format!(
                "the ingress NetworkPolicy admits only the listed router, ingress controller or gateway peers to the console port{note}; {trusts}"
            ),
        ),
        Some(rendered.digest.clone()),
        verified.or_else(|| input.verified.map(str::to_owned)),
    )
}

fn selects(policy: &NetworkPolicy, labels: &BTreeMap<String, String>) -> bool {
    let Some(spec) = &policy.spec else {
        return false;
    };
    let selector = spec.pod_selector.clone().unwrap_or_default();
    Selector::try_from(selector).is_ok_and(|s| s.matches(labels))
}

fn covers_port(ports: Option<&Vec<NetworkPolicyPort>>) -> bool {
    let Some(ports) = ports.filter(|p| !p.is_empty()) else {
        return true;
    };
    ports.iter().any(|p| match &p.port {
        None => true,
        Some(IntOrString::String(name)) => name == CONSOLE_PORT.name,
        Some(IntOrString::Int(n)) => match p.end_port {
            Some(end) => (*n..=end).contains(&CONSOLE_PORT.number),
            None => *n == CONSOLE_PORT.number,
        },
    })
}

/// Another policy of the namespace that admits to the console port peers ours does not list
/// (NetworkPolicies add up), or too many to check.
pub fn bypass(
    others: &[NetworkPolicy],
    pod_labels: &BTreeMap<String, String>,
    ours: &[NetworkPolicyPeer],
) -> Option<String> {
    if others.len() > MAX_OTHER_POLICIES {
        return Some(format!(
            "the namespace has more than {MAX_OTHER_POLICIES} other NetworkPolicies to check"
        ));
    }
    for policy in others.iter().filter(|p| selects(p, pod_labels)) {
        let Some(spec) = &policy.spec else { continue };
        let ingress_typed = spec
            .policy_types
            .as_ref()
            .is_none_or(|t| t.iter().any(|t| t == "Ingress"));
        if !ingress_typed {
            continue;
        }
        for rule in spec.ingress.iter().flatten() {
            if !covers_port(rule.ports.as_ref()) {
                continue;
            }
            let name = policy.metadata.name.as_deref().unwrap_or_default();
            let from = rule.from.as_deref().unwrap_or_default();
            if from.is_empty() {
                return Some(format!(
                    "NetworkPolicy {name} admits every source to the console port"
                ));
            }
            if from.iter().any(|peer| !ours.contains(peer)) {
                return Some(format!(
                    "NetworkPolicy {name} admits peers spec.exposure.networkPolicy.from does not list to the console port"
                ));
            }
        }
    }
    None
}
