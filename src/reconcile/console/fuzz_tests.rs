//! Property tests (proptest) of the ingress peer analysis and the instance CA bundle: generated
//! CIDRs, selectors, peers and PEM texts. `PROPTEST_CASES=10000 cargo test --lib console::fuzz`
//! runs them longer by hand.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use k8s_openapi::api::networking::v1::{IPBlock, NetworkPolicyPeer};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use proptest::prelude::*;

use crate::reconcile::fuzz_support::{edits, mutate};

use super::*;
use crate::reconcile::evidence_agent::pki::OperatorCa;

// ---- an independent reference: networks as inclusive address ranges ---------------------

/// First and last address of a network, computed from its size rather than a mask.
fn range(c: &Cidr) -> (u128, u128, bool) {
    match *c {
        Cidr::V4 { net, prefix } => {
            let size = 1u128 << (32 - u32::from(prefix));
            let first = u128::from(net) / size * size;
            (first, first + size - 1, true)
        }
        Cidr::V6 { net, prefix } => {
            let host_bits = 128 - u32::from(prefix);
            let first = if host_bits == 128 {
                0
            } else {
                net >> host_bits << host_bits
            };
            let last = if host_bits == 128 {
                u128::MAX
            } else {
                first | ((1u128 << host_bits) - 1)
            };
            (first, last, false)
        }
    }
}

fn ref_contains(outer: &Cidr, inner: &Cidr) -> bool {
    let (a0, a1, a4) = range(outer);
    let (b0, b1, b4) = range(inner);
    a4 == b4 && a0 <= b0 && b1 <= a1
}

fn ref_contains_addr(c: &Cidr, addr: IpAddr) -> bool {
    let (first, last, v4) = range(c);
    match addr {
        IpAddr::V4(a) => v4 && (first..=last).contains(&u128::from(u32::from(a))),
        IpAddr::V6(a) => !v4 && (first..=last).contains(&u128::from(a)),
    }
}

fn ref_overlaps(a: &Cidr, b: &Cidr) -> bool {
    let (a0, a1, a4) = range(a);
    let (b0, b1, b4) = range(b);
    a4 == b4 && a0 <= b1 && b0 <= a1
}

fn cidr(text: &str) -> Cidr {
    Cidr::parse(text).expect("a valid CIDR")
}

/// The documented rule of a broad ipBlock, from the ranges alone.
fn ref_broad(block: &Cidr, pods: &[PodAddress], nodes: &[Cidr]) -> bool {
    let too_wide = match block {
        Cidr::V4 { prefix, .. } => *prefix < 8,
        Cidr::V6 { prefix, .. } => *prefix < 32,
    };
    let private = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]
        .iter()
        .any(|r| ref_contains(block, &cidr(r)));
    let unique_local = ref_overlaps(block, &cidr("fc00::/7")) && block.prefix() < 64;
    too_wide
        || private
        || unique_local
        || pods.iter().any(|p| ref_contains_addr(block, p.ip))
        || nodes.iter().any(|n| ref_overlaps(block, n))
}

// ---- generators --------------------------------------------------------------------------

fn any_cidr() -> impl Strategy<Value = Cidr> {
    prop_oneof![
        (any::<u32>(), 0u8..=32).prop_map(|(a, p)| cidr(&format!("{}/{p}", Ipv4Addr::from(a)))),
        // Addresses near the private ranges, so containment is exercised, not only disjointness.
        (
            prop::sample::select(vec![
                10u32 << 24,
                172 << 24 | 16 << 16,
                192 << 24 | 168 << 16
            ]),
            any::<u16>(),
            0u8..=32
        )
            .prop_map(|(base, low, p)| cidr(&format!(
                "{}/{p}",
                Ipv4Addr::from(base | u32::from(low))
            ))),
        (any::<u128>(), 0u8..=128).prop_map(|(a, p)| cidr(&format!("{}/{p}", Ipv6Addr::from(a)))),
        (any::<u64>(), 0u8..=128).prop_map(|(low, p)| cidr(&format!(
            "{}/{p}",
            Ipv6Addr::from(0xfd00u128 << 112 | u128::from(low))
        ))),
    ]
}

fn any_addr() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        any::<u16>().prop_map(|low| IpAddr::V4(Ipv4Addr::from(10 << 24 | u32::from(low)))),
        any::<u128>().prop_map(|a| IpAddr::V6(Ipv6Addr::from(a))),
    ]
}

/// Texts around the CIDR grammar: valid ones, near misses and noise.
fn cidr_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any_cidr().prop_map(|c| c.to_string()),
        "[0-9a-fA-F:./ +-]{0,45}",
        "([0-9]{1,4}\\.){0,4}[0-9]{0,4}(/[+-]?[0-9]{0,4})?",
        "[0-9a-f:]{0,40}(/[0-9]{0,4})?",
        any::<String>(),
    ]
}

const KEYS: &[&str] = &[
    "team",
    "kubernetes.io/metadata.name",
    "pod-security.kubernetes.io/enforce",
    "security.openshift.io/scc",
    "network.openshift.io/policy-group",
    "",
];

fn label_key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(KEYS).prop_map(str::to_owned),
        any::<String>(),
    ]
}

fn selector() -> impl Strategy<Value = LabelSelector> {
    let requirement = (
        label_key(),
        prop_oneof![
            prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"])
                .prop_map(str::to_owned),
            any::<String>(),
        ],
        prop::option::of(prop::collection::vec("[a-z]{0,3}", 0..3)),
    )
        .prop_map(|(key, operator, values)| LabelSelectorRequirement {
            key,
            operator,
            values,
        });
    (
        prop::option::of(prop::collection::btree_map(label_key(), "[a-z]{0,3}", 0..3)),
        prop::option::of(prop::collection::vec(requirement, 0..3)),
    )
        .prop_map(|(match_labels, match_expressions)| LabelSelector {
            match_labels,
            match_expressions,
        })
}

fn peer() -> impl Strategy<Value = NetworkPolicyPeer> {
    (
        prop::option::of(
            (
                cidr_text(),
                prop::option::of(prop::collection::vec(cidr_text(), 0..3)),
            )
                .prop_map(|(cidr, except)| IPBlock { cidr, except }),
        ),
        prop::option::of(selector()),
        prop::option::of(selector()),
    )
        .prop_map(
            |(ip_block, namespace_selector, pod_selector)| NetworkPolicyPeer {
                ip_block,
                namespace_selector,
                pod_selector,
            },
        )
}

fn pods() -> impl Strategy<Value = Vec<PodAddress>> {
    prop::collection::vec(
        (any_addr(), prop::option::of("n[0-2]")).prop_map(|(ip, node)| PodAddress {
            pod: "console-0".into(),
            ip,
            node,
        }),
        0..3,
    )
}

fn node_cidrs() -> impl Strategy<Value = Vec<Cidr>> {
    prop::collection::vec(any_cidr(), 0..3)
}

// ---- CIDRs and peers ----------------------------------------------------------------------

proptest! {
    #[test]
    fn parsing_any_text_never_panics_and_what_parses_prints_and_parses_back(text in cidr_text()) {
        if let Some(c) = Cidr::parse(&text) {
            prop_assert_eq!(Cidr::parse(&c.to_string()), Some(c), "{} printed {}", text, c);
            // Host bits are cleared: the printed network is its own first address.
            prop_assert!(c.contains(&c));
        }
    }

    #[test]
    fn a_printed_network_parses_back_to_itself(c in any_cidr()) {
        let text = c.to_string();
        prop_assert_eq!(Cidr::parse(&text), Some(c));
        prop_assert_eq!(Cidr::parse(&format!(" {text}\n")), Some(c));
    }

    #[test]
    fn containment_and_overlap_agree_with_address_ranges(a in any_cidr(), b in any_cidr(), addr in any_addr()) {
        prop_assert_eq!(a.contains(&b), ref_contains(&a, &b), "{} contains {}", a, b);
        prop_assert_eq!(a.overlaps(&b), ref_overlaps(&a, &b), "{} overlaps {}", a, b);
        prop_assert_eq!(a.contains_addr(addr), ref_contains_addr(&a, addr), "{} contains {}", a, addr);
    }

    #[test]
    fn a_block_is_broad_exactly_when_the_reference_says_so(
        block in any_cidr(),
        pods in pods(),
        nodes in node_cidrs(),
    ) {
        let known = NodeCidrs::Known(vec![("n0".into(), nodes.clone())]);
        let verdict = broad_block(&block, &pods, &known);
        prop_assert_eq!(verdict.is_some(), ref_broad(&block, &pods, &nodes), "{} {:?}", block, verdict);
        // Without a Node list the podCIDRs cannot make it broad.
        let unknown = broad_block(&block, &pods, &NodeCidrs::NoGrant);
        prop_assert_eq!(unknown.is_some(), ref_broad(&block, &pods, &[]));
    }

    #[test]
    fn a_confined_block_holds_no_private_range_no_pod_and_no_pod_network(
        block in any_cidr(),
        pods in pods(),
        nodes in node_cidrs(),
    ) {
        let known = NodeCidrs::Known(vec![("n0".into(), nodes.clone())]);
        if broad_block(&block, &pods, &known).is_some() {
            return Ok(());
        }
        for private in ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"] {
            prop_assert!(!ref_contains(&block, &cidr(private)), "{} holds {}", block, private);
        }
        prop_assert!(pods.iter().all(|p| !ref_contains_addr(&block, p.ip)));
        prop_assert!(nodes.iter().all(|n| !ref_overlaps(&block, n)));
        if ref_overlaps(&block, &cidr("fc00::/7")) {
            prop_assert!(block.prefix() >= 64, "{}", block);
        }
    }

    #[test]
    fn any_peer_is_judged_without_panicking(peer in peer(), pods in pods(), nodes in node_cidrs()) {
        let known = NodeCidrs::Known(vec![("n0".into(), nodes)]);
        let why = broad_peer(&peer, &pods, &known);
        // An ipBlock that is not a CIDR is never trusted.
        if let Some(block) = &peer.ip_block
            && Cidr::parse(&block.cidr).is_none()
        {
            prop_assert!(why.is_some());
        }
        let _ = node_check_note(&known, &pods);
    }

    #[test]
    fn a_selector_that_pins_a_value_selects_no_namespace_of_shared_labels_only(
        selector in selector(),
        shared in prop::collection::btree_map(
            prop::sample::select(vec![
                "pod-security.kubernetes.io/enforce",
                "pod-security.kubernetes.io/audit",
                "security.openshift.io/scc",
            ]).prop_map(str::to_owned),
            "[a-z]{0,3}",
            0..3,
        ),
    ) {
        if pins_value(&selector) {
            prop_assert!(
                !crate::reconcile::pgadmin::selector_matches(&selector, &shared),
                "{:?} selects {:?}", selector, shared
            );
        }
    }
}

// ---- PEM ------------------------------------------------------------------------------------

/// Three real certificates (rcgen), made once.
fn certificates() -> &'static [String] {
    static PEMS: OnceLock<Vec<String>> = OnceLock::new();
    PEMS.get_or_init(|| {
        let now = jiff::Timestamp::now();
        let later = now + jiff::SignedDuration::from_hours(24);
        (0..3)
            .map(|_| {
                OperatorCa::generate(now, later)
                    .expect("CA")
                    .cert_pem()
                    .to_owned()
            })
            .collect()
    })
}

/// Separators a bundle may carry between blocks: blank lines, comments, CRLF, indentation.
fn separator() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        "\n",
        "\r\n",
        "# subject: CN=x\n",
        "junk text\n\n",
        "  ",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        // A truncated block: what follows it still counts.
        "-----BEGIN CERTIFICATE-----\nMIIB\n",
    ])
    .prop_map(str::to_owned)
}

fn crlf(text: &str, on: bool) -> String {
    if on {
        text.replace('\n', "\r\n")
    } else {
        text.to_owned()
    }
}

proptest! {
    #[test]
    fn a_valid_bundle_keeps_its_certificate_count(
        picks in prop::collection::vec((0usize..3, separator(), any::<bool>()), 0..6),
    ) {
        let mut text = String::new();
        for (i, sep, windows) in &picks {
            text.push_str(sep);
            text.push_str(&crlf(&certificates()[*i], *windows));
        }
        let blocks = pem_certificates(&text);
        prop_assert_eq!(blocks.len(), picks.len());
        // Normalised blocks read back as themselves.
        prop_assert_eq!(pem_certificates(&blocks.concat()), blocks.clone());
        for (block, (i, _, _)) in blocks.iter().zip(&picks) {
            prop_assert_eq!(block, &certificates()[*i]);
        }
    }

    #[test]
    fn mutated_pem_never_panics_and_yields_at_most_its_blocks(
        picks in prop::collection::vec(0usize..3, 1..4),
        changes in edits(),
    ) {
        let text: String = picks.iter().map(|i| certificates()[*i].as_str()).collect();
        let mutated = mutate(&text, &changes);
        let blocks = pem_certificates(&mutated);
        prop_assert!(blocks.len() <= picks.len() + changes.len());
        for block in &blocks {
            prop_assert!(block.starts_with("-----BEGIN CERTIFICATE-----\n"));
            prop_assert!(block.ends_with("-----END CERTIFICATE-----\n"));
        }
    }

    #[test]
    fn any_text_is_read_without_panicking(text in any::<String>()) {
        for block in pem_certificates(&text) {
            prop_assert!(block.ends_with("-----END CERTIFICATE-----\n"));
        }
    }

    #[test]
    fn the_mirrored_bundle_respects_its_limit_and_accounts_for_every_cluster(
        sources in prop::collection::vec(
            (
                prop::option::of("ca-[a-z]"),
                prop_oneof![
                    Just(CaSource::SecretNotFound),
                    Just(CaSource::KeyMissing),
                    prop::collection::vec(0usize..3, 0..3).prop_map(|picks| CaSource::Text(
                        picks.iter().map(|i| certificates()[*i].as_str()).collect()
                    )),
                    any::<String>().prop_map(CaSource::Text),
                ],
            ),
            0..5,
        ),
        limit in 0usize..4000,
    ) {
        let clusters: Vec<ClusterCa> = sources
            .into_iter()
            .enumerate()
            .map(|(i, (secret, ca))| ClusterCa { cluster: format!("c{i}"), secret, ca })
            .collect();
        let outcome = mirror_bundle("console-instance-ca", &clusters, limit);
        prop_assert!(outcome.bundle.len() <= limit);
        prop_assert_eq!(
            usize::try_from(outcome.status.clusters).unwrap_or(usize::MAX) + outcome.status.missing.len(),
            clusters.len()
        );
        // Every certificate is in the bundle once.
        let blocks = pem_certificates(&outcome.bundle);
        let distinct: std::collections::BTreeSet<&String> = blocks.iter().collect();
        prop_assert_eq!(distinct.len(), blocks.len());
    }
}

// ---- regressions the properties found ---------------------------------------------------------

#[test]
fn a_truncated_block_hides_no_certificate_after_it() {
    let text = format!("-----BEGIN CERTIFICATE-----\nMIIB\n{}", certificates()[0]);
    assert_eq!(pem_certificates(&text), vec![certificates()[0].clone()]);
}

#[test]
fn a_certificate_repeated_in_one_secret_is_mirrored_once() {
    let twice = certificates()[0].repeat(2);
    let cluster = ClusterCa {
        cluster: "c0".into(),
        secret: Some("ca".into()),
        ca: CaSource::Text(twice),
    };
    let outcome = mirror_bundle("console-instance-ca", &[cluster], BUNDLE_LIMIT_BYTES);
    assert_eq!(outcome.bundle, certificates()[0]);
}
