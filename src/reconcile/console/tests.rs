use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::networking::v1::{IPBlock, NetworkPolicy, NetworkPolicyPeer};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::json;

use super::*;
use crate::api::{ExposureKind, PgToolBoxConsoleSpec};
use crate::conditions::reasons::{common, console as r};
use crate::conditions::{ConditionStatus, Reason};
use crate::reconcile::children::{Component, pod_template_labels};
use crate::reconcile::images::ImageAllowList;

fn spec(value: serde_json::Value) -> PgToolBoxConsoleSpec {
    serde_json::from_value(value).expect("valid spec")
}

// ---- names and references -------------------------------------------------------------

#[test]
fn role_grants_follow_pod_logs_and_restore_drills() {
    let cases = [
        (json!({}), vec![CONSOLE_ROLE, POD_LOGS_ROLE]),
        (json!({"podLogs": false}), vec![CONSOLE_ROLE]),
        (
            json!({"restoreDrills": {"enabled": true}}),
            vec![CONSOLE_ROLE, POD_LOGS_ROLE, RESTORE_DRILLS_ROLE],
        ),
        (
            json!({"podLogs": false, "restoreDrills": {"enabled": true}}),
            vec![CONSOLE_ROLE, RESTORE_DRILLS_ROLE],
        ),
    ];
    for (s, roles) in cases {
        let grants = role_grants("ops", &spec(s.clone()));
        let got: Vec<&str> = grants.iter().map(|g| g.cluster_role).collect();
        assert_eq!(got, roles, "{s}");
        assert_eq!(grants[0].binding, "ops-console");
    }
    let all = role_grants("ops", &spec(json!({"restoreDrills": {"enabled": true}})));
    assert_eq!(all[1].binding, "ops-console-pod-logs");
    assert_eq!(all[2].binding, "ops-console-restore-drills");
}

#[test]
fn references_name_their_fields() {
    let s = spec(json!({
        "authentication": {"oidc": {"issuerURL": "https://id.example.com", "clientID": "console",
            "clientSecretRef": {"name": "oidc", "key": "secret"}}},
        "extraSecrets": [{"name": "extra", "mountPath": "/x"}],
        "extraConfigMaps": [{"name": "conf", "mountPath": "/c"}],
        "instanceCABundleRef": {"name": "bundle", "key": "ca.crt"},
        "exposure": {"type": "route", "hostname": "c.apps.example.com", "tls": {"secretName": "tls"}},
    }));
    let secrets: Vec<(String, String)> = secret_refs(&s)
        .into_iter()
        .map(|r| (r.name, r.field))
        .collect();
    assert_eq!(
        secrets,
        [
            (
                "oidc".into(),
                "spec.authentication.oidc.clientSecretRef".into()
            ),
            ("extra".into(), "spec.extraSecrets[0]".into()),
            ("tls".into(), "spec.exposure.tls.secretName".into()),
        ]
    );
    let maps: Vec<String> = config_map_refs(&s).into_iter().map(|r| r.field).collect();
    assert_eq!(
        maps,
        ["spec.instanceCABundleRef", "spec.extraConfigMaps[0]"]
    );
}

// ---- ConfigurationValid -----------------------------------------------------------------

struct Case {
    name: &'static str,
    image: Option<&'static str>,
    default_image: Option<&'static str>,
    allowed: Vec<String>,
    roles: Vec<&'static str>,
    secrets: Vec<NamedRef>,
    maps: Vec<NamedRef>,
    refused: Option<PolicyRefusal>,
    foreign: Option<ForeignChild>,
    reason: Reason,
    says: &'static [&'static str],
}

fn case(name: &'static str, reason: Reason) -> Case {
    Case {
        name,
        image: Some("ghcr.io/pgtoolbox/console:1.0.0"),
        default_image: None,
        allowed: Vec::new(),
        roles: Vec::new(),
        secrets: Vec::new(),
        maps: Vec::new(),
        refused: None,
        foreign: None,
        reason,
        says: &[],
    }
}

fn named(name: &str, field: &str) -> NamedRef {
    NamedRef {
        name: name.into(),
        field: field.into(),
        mounted: true,
    }
}

#[test]
fn configuration_valid_reasons_in_the_seed_order() {
    let cases = vec![
        case("valid", common::AS_EXPECTED),
        Case {
            image: None,
            default_image: Some("ghcr.io/pgtoolbox/console:1.0.0"),
            ..case("default image", common::AS_EXPECTED)
        },
        Case {
            image: None,
            roles: vec![CONSOLE_ROLE],
            says: &["--default-console-image"],
            ..case("no image", r::CONSOLE_IMAGE_REQUIRED)
        },
        Case {
            allowed: vec!["quay.io/fyannk".into()],
            roles: vec![CONSOLE_ROLE],
            says: &["ghcr.io/pgtoolbox/console", "quay.io/fyannk"],
            ..case("image refused first", common::IMAGE_NOT_ALLOWED)
        },
        Case {
            roles: vec![POD_LOGS_ROLE, RESTORE_DRILLS_ROLE],
            secrets: vec![named("oidc", "spec.authentication.oidc.clientSecretRef")],
            says: &[POD_LOGS_ROLE, RESTORE_DRILLS_ROLE, "two minutes"],
            ..case("roles before secrets", r::CONSOLE_ROLE_MISSING)
        },
        Case {
            secrets: vec![named("oidc", "spec.authentication.oidc.clientSecretRef")],
            maps: vec![named("conf", "spec.extraConfigMaps[0]")],
            says: &["oidc", "spec.authentication.oidc.clientSecretRef", "team-a"],
            ..case(
                "secret names itself and its field",
                common::SECRET_NOT_FOUND,
            )
        },
        Case {
            maps: vec![named("bundle", "spec.instanceCABundleRef")],
            refused: Some(PolicyRefusal {
                name: "ops-ingress".into(),
                code: 422,
                message: "invalid".into(),
            }),
            says: &["bundle", "spec.instanceCABundleRef"],
            ..case("config map", common::CONFIG_MAP_NOT_FOUND)
        },
        Case {
            refused: Some(PolicyRefusal {
                name: "ops-ingress".into(),
                code: 403,
                message: "admission webhook \"np.example.com\" denied the request: no ipBlocks"
                    .into(),
            }),
            foreign: Some(ForeignChild {
                kind: "Service".into(),
                name: "ops-console".into(),
            }),
            says: &[
                "ops-ingress",
                "403",
                "denied the request: no ipBlocks",
                "five minutes",
            ],
            ..case("policy refused", r::EXPOSURE_POLICY_INVALID)
        },
        Case {
            foreign: Some(ForeignChild {
                kind: "Service".into(),
                name: "ops-console".into(),
            }),
            says: &["Service ops-console", "not controlled"],
            ..case("foreign child", common::RESOURCE_NOT_OWNED)
        },
    ];
    for c in cases {
        let allow = ImageAllowList::new(&c.allowed);
        let outcome = decide(&ConsoleConfigFacts {
            namespace: "team-a",
            image: c.image,
            default_image: c.default_image,
            allow_list: &allow,
            missing_roles: &c.roles,
            missing_secrets: &c.secrets,
            missing_config_maps: &c.maps,
            policy_refused: c.refused.as_ref(),
            foreign_child: c.foreign.as_ref(),
        });
        assert_eq!(
            outcome.verdict.reason, c.reason,
            "{}: {}",
            c.name, outcome.verdict.message
        );
        let valid = c.reason == common::AS_EXPECTED;
        assert_eq!(outcome.valid(), valid, "{}", c.name);
        assert_eq!(
            outcome.verdict.status,
            if valid {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            "{}",
            c.name
        );
        for s in c.says {
            assert!(
                outcome.verdict.message.contains(s),
                "{}: {:?} lacks {s}",
                c.name,
                outcome.verdict.message
            );
        }
    }
}

// ---- the instance CA bundle ------------------------------------------------------------

fn pem(body: &str) -> String {
    format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
}

fn cluster(name: &str, ca: CaSource) -> ClusterCa {
    ClusterCa {
        cluster: name.into(),
        secret: Some(format!("{name}-ca")),
        ca,
    }
}

#[test]
fn bundle_is_deduplicated_and_ordered_by_cluster_name() {
    let a = pem("QUFB");
    let b = pem("QkJC");
    let clusters = [
        cluster("orders", CaSource::Text(b.clone())),
        cluster("billing", CaSource::Text(format!("{a}\n{b}"))),
        cluster("audit", CaSource::Text(a.clone())),
    ];
    let out = mirror_bundle("ops-instance-ca", &clusters, BUNDLE_LIMIT_BYTES);
    assert_eq!(out.bundle, format!("{a}{b}"));
    assert_eq!(out.status.clusters, 3);
    assert!(out.status.missing.is_empty());
    assert_eq!(out.verdict.reason, common::AS_EXPECTED);
    assert_eq!(out.status.config_map.as_deref(), Some("ops-instance-ca"));
}

#[test]
fn bundle_reasons_per_cluster() {
    let clusters = [
        cluster("a-ok", CaSource::Text(pem("QUFB"))),
        cluster("b-gone", CaSource::SecretNotFound),
        cluster("c-nokey", CaSource::KeyMissing),
        cluster("d-garbage", CaSource::Text("not a certificate".into())),
        cluster(
            "e-key",
            CaSource::Text("-----BEGIN PRIVATE KEY-----\nQUFB\n-----END PRIVATE KEY-----\n".into()),
        ),
        ClusterCa {
            cluster: "f-new".into(),
            secret: None,
            ca: CaSource::SecretNotFound,
        },
    ];
    let out = mirror_bundle("ops-instance-ca", &clusters, BUNDLE_LIMIT_BYTES);
    let got: Vec<(&str, &str)> = out
        .status
        .missing
        .iter()
        .map(|m| (m.cluster.as_str(), m.reason.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("b-gone", "SecretNotFound"),
            ("c-nokey", "SecretKeyMissing"),
            ("d-garbage", "InstanceCAInvalid"),
            ("e-key", "InstanceCAInvalid"),
            ("f-new", "SecretNotFound"),
        ]
    );
    assert_eq!(out.status.clusters, 1);
    assert_eq!(out.verdict.reason, r::INSTANCE_CA_MISSING);
    assert_eq!(out.verdict.status, ConditionStatus::False);
    for name in ["b-gone", "c-nokey", "d-garbage", "f-new", "b-gone-ca"] {
        assert!(
            out.verdict.message.contains(name),
            "{}",
            out.verdict.message
        );
    }
}

#[test]
fn a_full_bundle_lists_the_clusters_after_it() {
    let clusters: Vec<ClusterCa> = (0..5)
        .map(|i| cluster(&format!("c{i}"), CaSource::Text(pem(&format!("QUF{i}")))))
        .collect();
    let one = pem("QUF0").len();
    let out = mirror_bundle("x", &clusters, one * 3);
    assert_eq!(out.status.clusters, 3);
    let full: Vec<&str> = out
        .status
        .missing
        .iter()
        .map(|m| m.cluster.as_str())
        .collect();
    assert_eq!(full, ["c3", "c4"]);
    assert!(
        out.status
            .missing
            .iter()
            .all(|m| m.reason == "InstanceCABundleFull")
    );
}

#[test]
fn no_selected_cluster_is_complete() {
    let out = mirror_bundle("x", &[], BUNDLE_LIMIT_BYTES);
    assert_eq!(out.verdict.status, ConditionStatus::True);
    assert_eq!(out.bundle, "");
}

// ---- CIDRs and peers -------------------------------------------------------------------

fn cidr(s: &str) -> Cidr {
    Cidr::parse(s).expect("cidr")
}

fn block(c: &str) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: c.into(),
            except: None,
        }),
        ..NetworkPolicyPeer::default()
    }
}

fn selector(v: serde_json::Value) -> LabelSelector {
    serde_json::from_value(v).expect("selector")
}

fn pod_at(name: &str, ip: &str, node: &str) -> PodAddress {
    PodAddress {
        pod: name.into(),
        ip: ip.parse().expect("ip"),
        node: Some(node.into()),
    }
}

#[test]
fn broad_peers_table() {
    let pods = [pod_at("ops-console-1", "10.244.1.7", "node-1")];
    let nodes = NodeCidrs::Known(vec![("node-1".into(), vec![cidr("10.244.1.0/24")])]);
    let ns = |v| NetworkPolicyPeer {
        namespace_selector: Some(selector(v)),
        ..NetworkPolicyPeer::default()
    };
    let pods_only = |v| NetworkPolicyPeer {
        pod_selector: Some(selector(v)),
        ..NetworkPolicyPeer::default()
    };
    let cases: Vec<(&str, NetworkPolicyPeer, Option<&str>)> = vec![
        (
            "router namespaces",
            ns(json!({"matchLabels": {"network.openshift.io/policy-group": "ingress"}})),
            None,
        ),
        (
            "named namespace",
            ns(json!({"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}})),
            None,
        ),
        (
            "In with values",
            ns(
                json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["edge"]}]}),
            ),
            None,
        ),
        (
            "empty namespaceSelector",
            ns(json!({})),
            Some("namespaceSelector"),
        ),
        (
            "Exists only",
            ns(json!({"matchExpressions": [{"key": "team", "operator": "Exists"}]})),
            Some("namespaceSelector"),
        ),
        (
            "NotIn only",
            ns(
                json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["x"]}]}),
            ),
            Some("namespaceSelector"),
        ),
        (
            "shared label only",
            ns(json!({"matchLabels": {"pod-security.kubernetes.io/enforce": "restricted"}})),
            Some("namespaceSelector"),
        ),
        (
            "empty podSelector alone",
            pods_only(json!({})),
            Some("podSelector"),
        ),
        (
            "router pods of the namespace",
            pods_only(json!({"matchLabels": {"app": "router"}})),
            None,
        ),
        ("v4 /0", block("0.0.0.0/0"), Some("wider than /8")),
        ("v4 /7", block("10.0.0.0/7"), Some("wider than /8")),
        (
            "v4 private 10/8",
            block("10.0.0.0/8"),
            Some("whole private range 10.0.0.0/8"),
        ),
        (
            "v4 172.16/12",
            block("172.16.0.0/12"),
            Some("172.16.0.0/12"),
        ),
        (
            "v4 192.168/16",
            block("192.168.0.0/16"),
            Some("192.168.0.0/16"),
        ),
        (
            "v4 holds pod",
            block("10.244.1.0/28"),
            Some("ops-console-1"),
        ),
        (
            "v4 overlaps node podCIDR",
            block("10.244.1.128/25"),
            Some("podCIDR"),
        ),
        ("v4 load balancer", block("192.0.2.10/32"), None),
        ("v6 /16", block("2001::/16"), Some("wider than /32")),
        ("v6 ULA /48", block("fd00:1::/48"), Some("unique-local")),
        ("v6 ULA /64", block("fd00:1:2:3::/64"), None),
        ("v6 global /56", block("2001:db8:1::/56"), None),
        ("not a CIDR", block("ten.0.0.0/8"), Some("not a CIDR")),
    ];
    for (name, peer, want) in cases {
        let got = broad_peer(&peer, &pods, &nodes);
        match want {
            None => assert_eq!(got, None, "{name}"),
            Some(s) => assert!(
                got.as_deref().is_some_and(|m| m.contains(s)),
                "{name}: {got:?}"
            ),
        }
    }
}

#[test]
fn node_check_notes() {
    let pods = [pod_at("p", "10.9.0.4", "node-1")];
    let known = NodeCidrs::Known(vec![("node-1".into(), vec![cidr("10.244.1.0/24")])]);
    assert!(node_check_note(&known, &pods).is_some_and(|n| n.contains("not meaningful")));
    let inside = [pod_at("p", "10.244.1.4", "node-1")];
    assert_eq!(node_check_note(&known, &inside), None);
    assert!(
        node_check_note(&NodeCidrs::NoGrant, &pods)
            .is_some_and(|n| n.contains("may not list Nodes"))
    );
    assert!(node_check_note(&NodeCidrs::TooMany, &pods).is_some_and(|n| n.contains("10000")));
    assert!(
        node_check_note(&NodeCidrs::NoPodCidrs, &pods).is_some_and(|n| n.contains("spec.podCIDRs"))
    );
}

/// A random prefix of one family, as text.
fn random_block(rng: &mut StdRng, v6: bool) -> (u128, u8, String) {
    if v6 {
        let net: u128 = rng.random();
        let prefix: u8 = rng.random_range(0..=128);
        (
            net,
            prefix,
            format!("{}/{prefix}", std::net::Ipv6Addr::from(net)),
        )
    } else {
        let net: u32 = rng.random();
        let prefix: u8 = rng.random_range(0..=32);
        (
            u128::from(net),
            prefix,
            format!("{}/{prefix}", std::net::Ipv4Addr::from(net)),
        )
    }
}

fn naive_contains(v6: bool, (n1, p1): (u128, u8), addr: u128) -> bool {
    let bits = if v6 { 128 } else { 32 };
    let shift = bits - u32::from(p1);
    if shift >= bits {
        return true;
    }
    (n1 >> shift) == (addr >> shift)
}

#[test]
fn property_containment_and_overlap_agree_with_address_sets() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    for round in 0..4000 {
        let v6 = round % 2 == 1;
        let (n1, p1, t1) = random_block(&mut rng, v6);
        // Half the time the second block is derived from the first, to hit containment often.
        let (n2, p2, t2) = if rng.random() {
            let p2 = rng.random_range(p1..=if v6 { 128 } else { 32 });
            let noise: u128 = if v6 {
                rng.random()
            } else {
                u128::from(rng.random::<u32>())
            };
            let host_bits = if v6 {
                u128::MAX.checked_shr(u32::from(p1)).unwrap_or(0)
            } else {
                u128::from(u32::MAX.checked_shr(u32::from(p1)).unwrap_or(0))
            };
            let n2 = n1 ^ (noise & host_bits);
            let text = if v6 {
                format!("{}/{p2}", std::net::Ipv6Addr::from(n2))
            } else {
                format!("{}/{p2}", std::net::Ipv4Addr::from(n2 as u32))
            };
            (n2, p2, text)
        } else {
            random_block(&mut rng, v6)
        };
        let (a, b) = (cidr(&t1), cidr(&t2));
        assert_eq!(a.prefix(), p1);
        // a contains b iff a is no longer and b's network lies in a.
        let want = p1 <= p2 && naive_contains(v6, (n1, p1), n2);
        assert_eq!(a.contains(&b), want, "{t1} ⊇ {t2}");
        assert_eq!(a.overlaps(&b), b.overlaps(&a), "{t1} ∩ {t2} symmetric");
        assert_eq!(a.overlaps(&b), a.contains(&b) || b.contains(&a));
        assert!(a.contains(&a));
        // An address in b is in a whenever a contains b.
        let addr: IpAddr = if v6 {
            IpAddr::V6(std::net::Ipv6Addr::from(n2))
        } else {
            IpAddr::V4(std::net::Ipv4Addr::from(n2 as u32))
        };
        assert!(b.contains_addr(addr), "{t2} holds its own address");
        if a.contains(&b) {
            assert!(a.contains_addr(addr));
        }
        // The families never mix.
        let other = if v6 {
            cidr("10.0.0.0/8")
        } else {
            cidr("fd00::/8")
        };
        assert!(!a.overlaps(&other));
    }
}

#[test]
fn property_blocks_wider_than_the_limits_are_always_broad() {
    let mut rng = StdRng::seed_from_u64(7);
    let none = NodeCidrs::Known(Vec::new());
    for round in 0..3000 {
        let v6 = round % 2 == 0;
        let (_, prefix, text) = random_block(&mut rng, v6);
        let c = cidr(&text);
        let broad = broad_block(&c, &[], &none);
        if (!v6 && prefix < 8) || (v6 && prefix < 32) {
            assert!(broad.is_some(), "{text}");
        }
        if !v6
            && ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]
                .iter()
                .any(|r| c.contains(&cidr(r)))
        {
            assert!(broad.is_some(), "{text} holds a private range");
        }
        // A pod address inside the block always makes it broad.
        let pod = PodAddress {
            pod: "p".into(),
            ip: match c {
                Cidr::V4 { net, .. } => IpAddr::V4(net.into()),
                Cidr::V6 { net, .. } => IpAddr::V6(net.into()),
            },
            node: None,
        };
        assert!(broad_block(&c, &[pod], &none).is_some(), "{text}");
        // Narrow blocks of a public range with no pod and no node are never broad.
        if !v6
            && prefix >= 24
            && !cidr("10.0.0.0/8").overlaps(&c)
            && !cidr("172.16.0.0/12").overlaps(&c)
            && !cidr("192.168.0.0/16").overlaps(&c)
        {
            assert_eq!(broad_block(&c, &[], &none), None, "{text}");
        }
    }
}

#[test]
fn property_selector_breadth() {
    let mut rng = StdRng::seed_from_u64(11);
    let keys = [
        "team",
        "pod-security.kubernetes.io/enforce",
        "security.openshift.io/scc",
        "kubernetes.io/metadata.name",
    ];
    let ops = ["In", "NotIn", "Exists", "DoesNotExist"];
    for _ in 0..2000 {
        let labels: BTreeMap<String, String> = (0..rng.random_range(0..3))
            .map(|_| {
                (
                    keys[rng.random_range(0..keys.len())].to_owned(),
                    "v".to_owned(),
                )
            })
            .collect();
        let exprs: Vec<serde_json::Value> = (0..rng.random_range(0..3))
            .map(|_| {
                let op = ops[rng.random_range(0..ops.len())];
                let key = keys[rng.random_range(0..keys.len())];
                match op {
                    "In" | "NotIn" => json!({"key": key, "operator": op, "values": ["v"]}),
                    _ => json!({"key": key, "operator": op}),
                }
            })
            .collect();
        let sel = selector(json!({"matchLabels": labels, "matchExpressions": exprs}));
        let pinned_label = labels
            .keys()
            .any(|k| k == "team" || k == "kubernetes.io/metadata.name");
        let pinned_in = exprs.iter().any(|e| {
            e["operator"] == "In"
                && (e["key"] == "team" || e["key"] == "kubernetes.io/metadata.name")
        });
        assert_eq!(pins_value(&sel), pinned_label || pinned_in, "{sel:?}");
    }
}

// ---- ExposureConfined and the trust grant -------------------------------------------------

fn console_pod(name: &str, ip: Option<&str>, grant: Option<&str>) -> ConsolePod {
    ConsolePod {
        name: name.into(),
        address: ip.map(|ip| pod_at(name, ip, "node-1")),
        grant: grant.map(str::to_owned),
        deleting_since: None,
    }
}

struct Trust {
    published: Vec<ExposureKind>,
    unseen: bool,
    rendered: Option<RenderedPolicy>,
    observed: Option<ObservedPolicy>,
    hostname_refused: bool,
    pods: Vec<ConsolePod>,
    template_grant: Option<&'static str>,
    others: Vec<NetworkPolicy>,
    verified: Option<&'static str>,
}

fn router_policy() -> RenderedPolicy {
    let peers = policy_peers(&spec(
        json!({"exposure": {"type": "route", "hostname": "c.apps.example.com"}}),
    ))
    .expect("a Route renders a policy");
    RenderedPolicy {
        digest: peers_digest(&peers),
        peers,
    }
}

fn trust() -> Trust {
    let rendered = router_policy();
    Trust {
        published: vec![ExposureKind::Route],
        unseen: false,
        observed: Some(ObservedPolicy {
            digest: Some(rendered.digest.clone()),
        }),
        rendered: Some(rendered),
        hostname_refused: false,
        pods: vec![console_pod("ops-console-a", Some("10.244.1.5"), None)],
        template_grant: None,
        others: Vec::new(),
        verified: None,
    }
}

impl Trust {
    fn run(&self) -> Confinement {
        self.run_with(&NodeCidrs::Known(vec![(
            "node-1".into(),
            vec![cidr("10.244.1.0/24")],
        )]))
    }

    fn run_with(&self, nodes: &NodeCidrs) -> Confinement {
        let labels = pod_template_labels("ops", Component::Console);
        decide_confinement(&ConfinementInput {
            published: &self.published,
            maybe_published_unseen: self.unseen,
            rendered: self.rendered.as_ref(),
            observed: self.observed.as_ref(),
            hostname_refused: self.hostname_refused,
            pods: &self.pods,
            template_grant: self.template_grant,
            others: &self.others,
            pod_labels: &labels,
            nodes,
            verified: self.verified,
        })
    }
}

#[test]
fn selector_peers_are_believed_only_while_the_pod_network_is_known() {
    let message = |c: &Confinement| {
        c.verdict
            .as_ref()
            .map(|v| v.message.clone())
            .unwrap_or_default()
    };
    let known = trust().run();
    assert!(known.grant.is_some());
    assert!(
        message(&known).ends_with("trust X-Forwarded-For from the peers the policy admits"),
        "{}",
        message(&known)
    );
    // The router namespaces are a selector: without the Nodes' podCIDRs the Pods are still
    // granted (ipBlocks, had there been any, would be believed) and the message says who is not.
    for unknown in [
        NodeCidrs::NoGrant,
        NodeCidrs::TooMany,
        NodeCidrs::NoPodCidrs,
    ] {
        let c = trust().run_with(&unknown);
        assert!(c.grant.is_some());
        assert!(
            message(&c).contains("only from the policy's ipBlock peers"),
            "{}",
            message(&c)
        );
    }
}

fn other_policy(from: serde_json::Value, ports: serde_json::Value) -> NetworkPolicy {
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "allow-monitoring", "namespace": "team-a"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"],
                 "ingress": [{"from": from, "ports": ports}]},
    }))
    .expect("policy")
}

#[test]
fn exposure_confined_table() {
    let digest = router_policy().digest;
    let widened = RenderedPolicy {
        peers: vec![block("198.51.100.0/24")],
        digest: peers_digest(&[block("198.51.100.0/24")]),
    };
    type Check = fn(&Confinement) -> bool;
    type Want = Option<(ConditionStatus, Reason)>;
    let cases: Vec<(&str, Trust, Want, PolicyAction, Check)> = vec![
        (
            "confined and current: granted",
            trust(),
            Some((ConditionStatus::True, common::AS_EXPECTED)),
            PolicyAction::Apply,
            |c| {
                c.grant.is_some()
                    && c.verdict
                        .as_ref()
                        .is_some_and(|v| v.message.contains("trust X-Forwarded-For"))
            },
        ),
        (
            "policy not observed yet: no grant",
            Trust {
                observed: None,
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_TRUST_UNVERIFIED)),
            PolicyAction::Apply,
            |c| c.grant.is_none(),
        ),
        (
            "nothing published, no policy: absent",
            Trust {
                published: vec![],
                rendered: None,
                observed: None,
                ..trust()
            },
            None,
            PolicyAction::Remove,
            |c| c.grant.is_none(),
        ),
        (
            "published without policy: open",
            Trust {
                published: vec![ExposureKind::Ingress],
                rendered: None,
                observed: None,
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_OPEN)),
            PolicyAction::Remove,
            |c| {
                c.verdict
                    .as_ref()
                    .is_some_and(|v| v.message.contains("trusts no peer with X-Forwarded-For"))
            },
        ),
        (
            "unseen route: unknown open",
            Trust {
                published: vec![],
                unseen: true,
                rendered: None,
                observed: None,
                ..trust()
            },
            Some((ConditionStatus::Unknown, r::EXPOSURE_OPEN)),
            PolicyAction::Remove,
            |_| true,
        ),
        (
            "broad peer",
            Trust {
                rendered: Some(RenderedPolicy {
                    peers: vec![block("10.0.0.0/8")],
                    digest: "b".into(),
                }),
                observed: Some(ObservedPolicy {
                    digest: Some("b".into()),
                }),
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_PEERS_BROAD)),
            PolicyAction::Apply,
            |c| c.grant.is_none(),
        ),
        (
            "bypassed by an allow-all",
            Trust {
                others: vec![other_policy(json!([]), json!([]))],
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_POLICY_BYPASSED)),
            PolicyAction::Apply,
            |c| {
                c.grant.is_none()
                    && c.verdict
                        .as_ref()
                        .is_some_and(|v| v.message.contains("allow-monitoring"))
            },
        ),
        (
            "another port is no bypass",
            Trust {
                others: vec![other_policy(json!([]), json!([{"port": 9090}]))],
                ..trust()
            },
            Some((ConditionStatus::True, common::AS_EXPECTED)),
            PolicyAction::Apply,
            |c| c.grant.is_some(),
        ),
        (
            "the named port is covered",
            Trust {
                others: vec![other_policy(
                    json!([{"podSelector": {}}]),
                    json!([{"port": "http"}]),
                )],
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_POLICY_BYPASSED)),
            PolicyAction::Apply,
            |_| true,
        ),
        (
            "too many policies",
            Trust {
                others: (0..=MAX_OTHER_POLICIES)
                    .map(|_| other_policy(json!([]), json!([{"port": 1}])))
                    .collect(),
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_POLICY_BYPASSED)),
            PolicyAction::Apply,
            |_| true,
        ),
        (
            "too many pods",
            Trust {
                pods: (0..=MAX_CONSOLE_PODS)
                    .map(|i| console_pod(&format!("p{i}"), None, None))
                    .collect(),
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_TRUST_UNVERIFIED)),
            PolicyAction::Apply,
            |_| true,
        ),
        (
            "ipBlock without a pod address",
            Trust {
                rendered: Some(widened.clone()),
                observed: Some(ObservedPolicy {
                    digest: Some(widened.digest.clone()),
                }),
                pods: vec![console_pod("p", None, None)],
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_TRUST_UNVERIFIED)),
            PolicyAction::Apply,
            |c| c.grant.is_none(),
        ),
        (
            "ipBlock verified earlier",
            Trust {
                rendered: Some(widened.clone()),
                observed: Some(ObservedPolicy {
                    digest: Some(widened.digest.clone()),
                }),
                pods: vec![console_pod("p", None, None)],
                verified: Some(Box::leak(widened.digest.clone().into_boxed_str())),
                ..trust()
            },
            Some((ConditionStatus::True, common::AS_EXPECTED)),
            PolicyAction::Apply,
            |c| c.grant.is_some(),
        ),
        (
            "changed from held back while a Pod trusts",
            Trust {
                rendered: Some(widened.clone()),
                pods: vec![ConsolePod {
                    deleting_since: Some("2026-12-01T06:00:00Z".into()),
                    ..console_pod(
                        "ops-console-old",
                        Some("10.244.1.9"),
                        Some(Box::leak(digest.clone().into_boxed_str())),
                    )
                }],
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_TRUST_UNVERIFIED)),
            PolicyAction::Keep,
            |c| {
                c.grant.is_none()
                    && c.verdict.as_ref().is_some_and(|v| {
                        v.message.contains("ops-console-old")
                            && v.message.contains("2026-12-01T06:00:00Z")
                    })
            },
        ),
        (
            "changed from applied once no Pod trusts",
            Trust {
                rendered: Some(widened.clone()),
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_TRUST_UNVERIFIED)),
            PolicyAction::Apply,
            |c| c.grant.is_none(),
        ),
        (
            "policy off: kept while granted",
            Trust {
                rendered: None,
                template_grant: Some("x"),
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_POLICY_KEPT)),
            PolicyAction::Keep,
            |c| {
                // The Pods that still carry the grant run with the trust on: said so.
                c.grant.is_none()
                    && c.verdict.as_ref().is_some_and(|v| {
                        v.message.contains("carry the grant trust X-Forwarded-For")
                            && !v.message.contains("the console trusts no peer")
                    })
            },
        ),
        (
            "policy off: removed once nobody trusts",
            Trust {
                rendered: None,
                published: vec![],
                ..trust()
            },
            None,
            PolicyAction::Remove,
            |_| true,
        ),
        (
            "hostname refused: kept as it was",
            Trust {
                hostname_refused: true,
                template_grant: Some("x"),
                published: vec![],
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_POLICY_KEPT)),
            PolicyAction::Keep,
            |c| {
                c.grant.as_deref() == Some("x")
                    && c.verdict.as_ref().is_some_and(|v| {
                        v.message.contains("carry the grant trust X-Forwarded-For")
                            && !v.message.contains("the console trusts no peer")
                    })
            },
        ),
        (
            "hostname refused without a grant: kept, nobody trusted",
            Trust {
                hostname_refused: true,
                template_grant: None,
                published: vec![],
                ..trust()
            },
            Some((ConditionStatus::False, r::EXPOSURE_POLICY_KEPT)),
            PolicyAction::Keep,
            |c| {
                c.grant.is_none()
                    && c.verdict
                        .as_ref()
                        .is_some_and(|v| v.message.contains("the console trusts no peer"))
            },
        ),
    ];
    for (name, t, want, action, check) in cases {
        let c = t.run();
        assert_eq!(
            c.verdict.as_ref().map(|v| (v.status, v.reason)),
            want,
            "{name}: {:?}",
            c.verdict
        );
        assert_eq!(c.policy, action, "{name}");
        assert!(check(&c), "{name}: {c:?}");
    }
}

/// The ordering invariant over generated sequences: whatever the spec does, a pass never
/// grants trust for peers other than those of the policy the cluster holds, and never
/// changes the policy while a Pod holds a grant for another one.
#[test]
fn property_no_pod_trusts_peers_the_policy_does_not_confine() {
    let mut rng = StdRng::seed_from_u64(42);
    let choices: Vec<Option<RenderedPolicy>> = vec![
        Some(router_policy()),
        Some(RenderedPolicy {
            peers: vec![block("198.51.100.0/24")],
            digest: peers_digest(&[block("198.51.100.0/24")]),
        }),
        Some(RenderedPolicy {
            peers: vec![block("203.0.113.0/24")],
            digest: peers_digest(&[block("203.0.113.0/24")]),
        }),
        None,
    ];
    for _ in 0..300 {
        let mut cluster_policy: Option<String> = None;
        let mut pods: Vec<Option<String>> = vec![None, None];
        let mut template: Option<String> = None;
        let mut verified: Option<String> = None;
        let mut rendered = choices[0].clone();
        for _ in 0..40 {
            if rng.random_range(0..4) == 0 {
                rendered = choices[rng.random_range(0..choices.len())].clone();
            }
            let console_pods: Vec<ConsolePod> = pods
                .iter()
                .enumerate()
                .map(|(i, g)| ConsolePod {
                    name: format!("p{i}"),
                    address: Some(pod_at("p", &format!("10.244.1.{}", i + 2), "node-1")),
                    grant: g.clone(),
                    deleting_since: None,
                })
                .collect();
            let labels = pod_template_labels("ops", Component::Console);
            let nodes = NodeCidrs::Known(vec![("node-1".into(), vec![cidr("10.244.1.0/24")])]);
            let observed = cluster_policy
                .clone()
                .map(|d| ObservedPolicy { digest: Some(d) });
            let c = decide_confinement(&ConfinementInput {
                published: &[ExposureKind::Route],
                maybe_published_unseen: false,
                rendered: rendered.as_ref(),
                observed: observed.as_ref(),
                hostname_refused: false,
                pods: &console_pods,
                template_grant: template.as_deref(),
                others: &[],
                pod_labels: &labels,
                nodes: &nodes,
                verified: verified.as_deref(),
            });
            verified = c.verified.clone();
            // A grant names the peers of the policy the cluster holds now.
            if let Some(g) = &c.grant {
                assert_eq!(Some(g), cluster_policy.as_ref());
            }
            // The policy changes only while no Pod and no template holds a grant for another.
            let next = match c.policy {
                PolicyAction::Apply => rendered.as_ref().map(|r| r.digest.clone()),
                PolicyAction::Remove => None,
                PolicyAction::Keep => cluster_policy.clone(),
            };
            if next != cluster_policy {
                assert!(
                    pods.iter()
                        .chain([&template])
                        .all(|g| g.is_none() || g.as_ref() == next.as_ref()),
                    "policy {cluster_policy:?} -> {next:?} while grants {pods:?} {template:?}"
                );
            }
            cluster_policy = next;
            template = c.grant.clone();
            // The rollout replaces Pods one at a time (sometimes not at all this step).
            if rng.random() {
                let i = rng.random_range(0..pods.len());
                pods[i] = template.clone();
            }
            for g in pods.iter().flatten() {
                assert!(
                    cluster_policy.as_ref() == Some(g),
                    "a Pod trusts {g} under policy {cluster_policy:?}"
                );
            }
        }
    }
}

// ---- rendering --------------------------------------------------------------------------

#[test]
fn rendered_children_are_stable_and_carry_the_grant_only_when_granted() {
    let s = spec(json!({
        "replicas": 2,
        "authentication": {"oidc": {"issuerURL": "https://id.example.com", "clientID": "console",
            "clientSecretRef": {"name": "oidc", "key": "secret"}}},
        "extraSecrets": [{"name": "extra", "mountPath": "/x"}],
        "extraConfigMaps": [{"name": "conf", "mountPath": "/c"}],
    }));
    let proxies = vec!["10.128.0.0/23".to_string(), "192.0.2.0/24".to_string()];
    let input = |grant| RenderInput {
        console: "ops",
        namespace: "team-a",
        spec: &s,
        image: "ghcr.io/pgtoolbox/console:1.0.0",
        grant,
        trusted_proxies: &proxies,
        secrets: &[],
    };
    let plain = deployment(&input(None), None);
    assert_eq!(
        crate::reconcile::workload::restricted_violations(
            &serde_json::to_value(&plain.spec.template).unwrap()
        ),
        "",
        "the console's Pod passes Pod Security \"restricted\""
    );
    assert_eq!(
        serde_json::to_value(&plain).ok(),
        serde_json::to_value(deployment(&input(None), None)).ok()
    );
    let granted = deployment(&input(Some("abc")), None);
    let annotations = |d: &k8s_openapi::api::apps::v1::Deployment| {
        d.spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        annotations(&granted)
            .get(TRUST_ANNOTATION)
            .map(String::as_str),
        Some("abc")
    );
    assert!(!annotations(&plain).contains_key(TRUST_ANNOTATION));
    let value = serde_json::to_value(&granted).expect("json");
    let env = &value["spec"]["template"]["spec"]["containers"][0]["env"];
    let find = |n: &str| {
        env.as_array()
            .and_then(|a| a.iter().find(|e| e["name"] == n))
            .cloned()
    };
    assert_eq!(
        find(TRUST_ENV).map(|e| e["value"].clone()),
        Some(json!("true"))
    );
    // The peers' CIDRs go with the grant, never without it.
    assert_eq!(
        find(crate::reconcile::console::render::TRUSTED_PROXIES_ENV).map(|e| e["value"].clone()),
        Some(json!("10.128.0.0/23,192.0.2.0/24"))
    );
    let plain_value = serde_json::to_value(&plain).expect("json");
    assert!(
        !plain_value["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .is_some_and(|a| a.iter().any(|e| e["name"] == "CONSOLE_TRUSTED_PROXIES")),
        "no trusted proxies without the grant"
    );
    assert_eq!(
        find("CONSOLE_OIDC_CLIENT_SECRET").map(|e| e["valueFrom"]["secretKeyRef"]["name"].clone()),
        Some(json!("oidc"))
    );
    assert_eq!(value["spec"]["replicas"], json!(2));
    let volumes = value["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = volumes.iter().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(names, ["instance-ca", "secret-0", "configmap-0"]);
    assert_eq!(volumes[0]["configMap"]["name"], json!("ops-instance-ca"));

    let rb = role_binding(&input(None), &role_grants("ops", &s)[1]);
    let rb = serde_json::to_value(rb).expect("json");
    assert_eq!(rb["roleRef"]["name"], json!(POD_LOGS_ROLE));
    assert_eq!(
        rb["subjects"][0],
        json!({"kind": "ServiceAccount", "name": "ops-console", "namespace": "team-a"})
    );

    let peers = policy_peers(&spec(
        json!({"exposure": {"type": "route", "hostname": "c.apps.example.com"}}),
    ))
    .expect("route");
    let np = serde_json::to_value(network_policy(&input(None), &peers)).expect("json");
    assert_eq!(np["metadata"]["name"], json!("ops-ingress"));
    assert_eq!(
        np["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"][POLICY_GROUP_LABEL],
        json!("ingress")
    );
    assert_eq!(np["spec"]["ingress"][0]["ports"][0]["port"], json!(8080));
}

#[test]
fn which_exposures_render_a_policy() {
    let cases = [
        (json!({}), false),
        (
            json!({"exposure": {"type": "route", "hostname": "h.example.com"}}),
            true,
        ),
        (
            json!({"exposure": {"type": "ingress", "hostname": "h.example.com"}}),
            false,
        ),
        (
            json!({"exposure": {"type": "ingress", "hostname": "h.example.com", "networkPolicy": {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}]}}}),
            true,
        ),
        (
            json!({"exposure": {"type": "route", "hostname": "h.example.com", "networkPolicy": {"enabled": false}}}),
            false,
        ),
        (
            json!({"exposure": {"type": "gateway", "hostname": "h.example.com", "gateway": {"parentRef": {"name": "gw"}}}}),
            false,
        ),
    ];
    for (s, renders) in cases {
        assert_eq!(policy_peers(&spec(s.clone())).is_some(), renders, "{s}");
    }
}

#[test]
fn a_changed_secret_changes_the_workload_hash() {
    use crate::reconcile::workload::{SecretDigest, WORKLOAD_HASH_ANNOTATION};
    let s = spec(json!({}));
    let secret = |v: &str| -> k8s_openapi::api::core::v1::Secret {
        serde_json::from_value(json!({"metadata": {"name": "oidc"}, "data": {"k": v}}))
            .expect("secret")
    };
    let hash = |digests: &[SecretDigest]| {
        let d = deployment(
            &RenderInput {
                console: "ops",
                namespace: "team-a",
                spec: &s,
                image: "ghcr.io/pgtoolbox/console:1.0.0",
                grant: None,
                trusted_proxies: &[],
                secrets: digests,
            },
            None,
        );
        d.spec
            .template
            .metadata
            .and_then(|m| m.annotations)
            .and_then(|a| a.get(WORKLOAD_HASH_ANNOTATION).cloned())
    };
    let one = [SecretDigest::of_secret("oidc", Some(&secret("YQ==")))];
    let two = [SecretDigest::of_secret("oidc", Some(&secret("Yg==")))];
    assert!(hash(&one).is_some());
    assert_eq!(hash(&one), hash(&one));
    assert_ne!(hash(&one), hash(&two));
    assert_ne!(hash(&one), hash(&[]));
}

#[test]
fn trusted_proxies_are_the_ipblocks_and_the_pod_network_for_selector_peers() {
    use crate::reconcile::console::{NodeCidrs, trusted_proxies};
    let peer = |v: serde_json::Value| -> NetworkPolicyPeer { serde_json::from_value(v).unwrap() };
    let block = peer(json!({"ipBlock": {"cidr": "192.0.2.7/24", "except": ["192.0.2.128/25"]}}));
    let v6 = peer(json!({"ipBlock": {"cidr": "2001:db8::1/64"}}));
    let routers = peer(
        json!({"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress"}}}),
    );
    let nodes = NodeCidrs::Known(vec![
        (
            "n1".into(),
            vec![crate::reconcile::console::Cidr::parse("10.128.0.0/23").unwrap()],
        ),
        (
            "n2".into(),
            vec![crate::reconcile::console::Cidr::parse("10.128.2.0/23").unwrap()],
        ),
    ]);
    // ipBlocks alone: their networks (host bits cleared), whatever the Nodes say.
    assert_eq!(
        trusted_proxies(&[block.clone(), v6.clone()], &NodeCidrs::NoGrant),
        ["192.0.2.0/24", "2001:db8::/64"]
    );
    // A selector peer: the Pod network, each Node's block once.
    assert_eq!(
        trusted_proxies(&[routers.clone(), routers.clone()], &nodes),
        ["10.128.0.0/23", "10.128.2.0/23"]
    );
    assert_eq!(
        trusted_proxies(&[routers.clone(), block], &nodes),
        ["10.128.0.0/23", "10.128.2.0/23", "192.0.2.0/24"]
    );
    // The Pod network unknown: a selector peer is believed from no one.
    for unknown in [
        NodeCidrs::NoGrant,
        NodeCidrs::TooMany,
        NodeCidrs::NoPodCidrs,
    ] {
        assert!(trusted_proxies(std::slice::from_ref(&routers), &unknown).is_empty());
    }
    assert!(trusted_proxies(&[], &nodes).is_empty());
}
