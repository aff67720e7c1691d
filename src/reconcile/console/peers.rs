//! Which peers of `spec.exposure.networkPolicy.from` admit (nearly) everyone (pure). A peer
//! that does is "broad": the console then trusts no peer with `X-Forwarded-For`.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::cidr::Cidr;

/// Label keys every namespace (or Pod) may carry alike: pinning only them pins nothing.
const SHARED_LABEL_PREFIXES: &[&str] = &["pod-security.kubernetes.io/", "security.openshift.io/"];

/// The private IPv4 ranges a peer must not hold whole.
const PRIVATE_V4: &[&str] = &["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];
/// Unique-local IPv6 addresses; a block of them wider than /64 spans more than one subnet.
const UNIQUE_LOCAL_V6: &str = "fc00::/7";

/// Above this many Nodes their podCIDRs are not checked.
pub const MAX_NODES: usize = 10_000;

/// What is known of the Nodes' `spec.podCIDRs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeCidrs {
    Known(Vec<(String, Vec<Cidr>)>),
    /// The operator may not list Nodes.
    NoGrant,
    TooMany,
    /// No Node reports `spec.podCIDRs`.
    NoPodCidrs,
}

/// A console Pod as the peer analysis sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodAddress {
    pub pod: String,
    pub ip: IpAddr,
    pub node: Option<String>,
}

/// A Pod's address as the analysis sees it; `None` before it has one.
pub fn pod_address(pod: &Pod) -> Option<PodAddress> {
    let ip = pod.status.as_ref()?.pod_ip.as_deref()?.parse().ok()?;
    Some(PodAddress {
        pod: pod.metadata.name.clone().unwrap_or_default(),
        ip,
        node: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
    })
}

/// The Nodes' podCIDRs from one list of them; `truncated` when the list went past
/// [`MAX_NODES`] (or the server said there was more).
pub fn node_cidrs_of(nodes: &[Node], truncated: bool) -> NodeCidrs {
    if truncated || nodes.len() > MAX_NODES {
        return NodeCidrs::TooMany;
    }
    let known: Vec<(String, Vec<Cidr>)> = nodes
        .iter()
        .map(|n| {
            let cidrs = n
                .spec
                .as_ref()
                .and_then(|s| s.pod_cidrs.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|c| Cidr::parse(c))
                .collect();
            (n.metadata.name.clone().unwrap_or_default(), cidrs)
        })
        .collect();
    if known.iter().all(|(_, c)| c.is_empty()) {
        NodeCidrs::NoPodCidrs
    } else {
        NodeCidrs::Known(known)
    }
}

fn shared(key: &str) -> bool {
    SHARED_LABEL_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Whether a selector pins at least one value of a label that is not shared: `key: value`,
/// or `key In (values)`. `Exists`, `NotIn` and `DoesNotExist` admit an open set.
pub fn pins_value(selector: &LabelSelector) -> bool {
    let labels = selector
        .match_labels
        .iter()
        .flatten()
        .any(|(k, _)| !shared(k));
    let expressions = selector.match_expressions.iter().flatten().any(|e| {
        e.operator == "In" && !shared(&e.key) && e.values.as_ref().is_some_and(|v| !v.is_empty())
    });
    labels || expressions
}

/// Why an ipBlock admits (nearly) everyone, if it does.
pub fn broad_block(block: &Cidr, pods: &[PodAddress], nodes: &NodeCidrs) -> Option<String> {
    match block {
        Cidr::V4 { prefix, .. } if *prefix < 8 => {
            return Some(format!("ipBlock {block} is wider than /8"));
        }
        Cidr::V6 { prefix, .. } if *prefix < 32 => {
            return Some(format!("ipBlock {block} is wider than /32"));
        }
        _ => {}
    }
    if let Some(range) = PRIVATE_V4
        .iter()
        .filter_map(|r| Cidr::parse(r))
        .find(|r| block.contains(r))
    {
        return Some(format!(
            "ipBlock {block} holds the whole private range {range}"
        ));
    }
    if let Some(ula) = Cidr::parse(UNIQUE_LOCAL_V6)
        && ula.overlaps(block)
        && block.prefix() < 64
    {
        return Some(format!(
            "ipBlock {block} is a unique-local block wider than /64"
        ));
    }
    if let Some(pod) = pods.iter().find(|p| block.contains_addr(p.ip)) {
        return Some(format!(
            "ipBlock {block} holds console Pod {}'s address {}",
            pod.pod, pod.ip
        ));
    }
    if let NodeCidrs::Known(nodes) = nodes {
        for (node, cidrs) in nodes {
            if let Some(cidr) = cidrs.iter().find(|c| c.overlaps(block)) {
                return Some(format!(
                    "ipBlock {block} overlaps Node {node}'s podCIDR {cidr} (the Pod network)"
                ));
            }
        }
    }
    None
}

/// Why one peer admits (nearly) everyone, if it does.
pub fn broad_peer(
    peer: &NetworkPolicyPeer,
    pods: &[PodAddress],
    nodes: &NodeCidrs,
) -> Option<String> {
    if let Some(block) = &peer.ip_block {
        return match Cidr::parse(&block.cidr) {
            Some(cidr) => broad_block(&cidr, pods, nodes),
            None => Some(format!("ipBlock {} is not a CIDR", block.cidr)),
        };
    }
    match (&peer.namespace_selector, &peer.pod_selector) {
        (Some(ns), _) if !pins_value(ns) => Some(
            "a namespaceSelector pins no label value (or only labels every namespace may carry): it admits (nearly) every namespace"
                .to_owned(),
        ),
        (None, Some(pods)) if !pins_value(pods) => Some(
            "a podSelector alone pins no label value: it admits every Pod of the namespace".to_owned(),
        ),
        (None, None) => Some("an empty peer admits every source".to_owned()),
        _ => None,
    }
}

/// What the Node check could not do, for the message: `None` when it was meaningful.
pub fn node_check_note(nodes: &NodeCidrs, pods: &[PodAddress]) -> Option<String> {
    match nodes {
        NodeCidrs::NoGrant => Some(
            "the Nodes' podCIDRs were not checked: the operator may not list Nodes".to_owned(),
        ),
        NodeCidrs::TooMany => Some(format!(
            "the Nodes' podCIDRs were not checked: there are more than {MAX_NODES} Nodes"
        )),
        NodeCidrs::NoPodCidrs => Some(
            "the Nodes' podCIDRs were not checked: the Nodes report no spec.podCIDRs".to_owned(),
        ),
        NodeCidrs::Known(nodes) => pods.iter().find_map(|pod| {
            let node = pod.node.as_ref()?;
            let (_, cidrs) = nodes.iter().find(|(n, _)| n == node)?;
            (!cidrs.is_empty() && !cidrs.iter().any(|c| c.contains_addr(pod.ip))).then(|| {
                format!(
                    "the podCIDR check is not meaningful: console Pod {} has address {} outside its Node {node}'s podCIDRs (the CNI allocates elsewhere)",
                    pod.pod, pod.ip
                )
            })
        }),
    }
}
