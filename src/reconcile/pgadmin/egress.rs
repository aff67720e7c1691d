//! The egress NetworkPolicy `<name>-pgadmin-egress` (pure) and `PgAdminEgressConfined`: DNS,
//! the registered Clusters' instance Pods and Poolers on 5432 (by CloudNativePG's labels,
//! across namespaces), the OAuth2 issuer on 443, plus `spec.egress.extraRules`. Every rule that
//! does not confine egress to named destinations is named.

use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::json;

use super::offered::POSTGRES_PORT;
use super::render::RenderError;
use crate::conditions::Verdict;
use crate::conditions::reasons::{common, pgadmin};
use crate::reconcile::children::{Component, child_labels};
use crate::reconcile::workload::dns_egress_rule;

const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// One rule with what it is for, as the condition names it.
#[derive(Clone, Debug, PartialEq)]
pub struct EgressRule {
    pub what: String,
    pub rule: NetworkPolicyEgressRule,
}

fn rule(what: String, value: serde_json::Value) -> Result<EgressRule, RenderError> {
    Ok(EgressRule {
        what,
        rule: super::render::typed("egress rule", value)?,
    })
}

fn in_namespace(ns: &str, pods: serde_json::Value) -> serde_json::Value {
    json!({
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: ns}},
        "podSelector": {"matchLabels": pods},
    })
}

/// The generated rules, then the user's.
/// Whom pgAdmin reaches to sign users in, on any address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignInPeer {
    /// The OAuth2 issuer, on 443.
    OAuth2Issuer,
    /// The LDAP directory, on its port.
    LdapDirectory(i32),
}

pub fn egress_rules(
    clusters: &[(String, String)],
    poolers: &[(String, String)],
    sign_in: Option<SignInPeer>,
    extra: &[NetworkPolicyEgressRule],
) -> Result<Vec<EgressRule>, RenderError> {
    let postgres = json!([{"protocol": "TCP", "port": POSTGRES_PORT}]);
    let mut rules = vec![EgressRule {
        what: "DNS".to_owned(),
        rule: dns_egress_rule(),
    }];
    for (ns, cluster) in clusters {
        rules.push(rule(
            format!("Cluster {ns}/{cluster}"),
            json!({"to": [in_namespace(ns, json!({"cnpg.io/cluster": cluster}))], "ports": postgres}),
        )?);
    }
    for (ns, pooler) in poolers {
        rules.push(rule(
            format!("Pooler {ns}/{pooler}"),
            json!({"to": [in_namespace(ns, json!({"cnpg.io/poolerName": pooler}))], "ports": postgres}),
        )?);
    }
    if let Some(peer) = sign_in {
        // The issuer or directory lives at an address the operator cannot know.
        let (what, port) = match peer {
            SignInPeer::OAuth2Issuer => ("the OAuth2 issuer", 443),
            SignInPeer::LdapDirectory(port) => ("the LDAP directory", port),
        };
        rules.push(rule(
            what.to_owned(),
            json!({"ports": [{"protocol": "TCP", "port": port}]}),
        )?);
    }
    for (i, r) in extra.iter().enumerate() {
        rules.push(EgressRule {
            what: format!("spec.egress.extraRules[{i}]"),
            rule: r.clone(),
        });
    }
    Ok(rules)
}

pub fn egress_policy(
    owner: &str,
    name: &str,
    rules: &[EgressRule],
) -> Result<NetworkPolicy, RenderError> {
    let egress: Vec<&NetworkPolicyEgressRule> = rules.iter().map(|r| &r.rule).collect();
    super::render::typed(
        "NetworkPolicy",
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name},
            "spec": {
                "podSelector": {"matchLabels": child_labels(owner, Component::PgAdmin)},
                "policyTypes": ["Egress"],
                "egress": egress,
            },
        }),
    )
}

fn pins(selector: Option<&LabelSelector>) -> bool {
    selector.is_some_and(|s| {
        s.match_labels.as_ref().is_some_and(|m| !m.is_empty())
            || s.match_expressions.as_ref().is_some_and(|e| !e.is_empty())
    })
}

/// Why a peer does not confine, if it does not.
fn open_peer(peer: &NetworkPolicyPeer) -> Option<String> {
    if let Some(block) = &peer.ip_block {
        return wide_block(&block.cidr).then(|| format!("ipBlock {} is wide", block.cidr));
    }
    let ns = peer.namespace_selector.as_ref();
    let pods = peer.pod_selector.as_ref();
    match (ns, pods) {
        (None, None) => Some("a peer selects nothing in particular".to_owned()),
        _ if pins(ns) || pins(pods) => None,
        (Some(_), _) => Some("a namespaceSelector that pins nothing".to_owned()),
        (None, Some(_)) => Some("a podSelector that pins nothing".to_owned()),
    }
}

/// An IPv4 block of /8 or wider, one holding a whole private range, or an IPv6 block wider
/// than /64.
fn wide_block(cidr: &str) -> bool {
    let Some((addr, prefix)) = cidr.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return true;
    };
    if addr.contains(':') {
        return prefix < 64;
    }
    let first: Vec<u8> = addr.split('.').filter_map(|o| o.parse().ok()).collect();
    let holds_private = match first.as_slice() {
        [10, ..] => prefix <= 8,
        [172, b, ..] if (16..32).contains(b) => prefix <= 12,
        [192, 168, ..] => prefix <= 16,
        _ => false,
    };
    prefix <= 8 || holds_private
}

/// `PgAdminEgressConfined`: Unknown until pgAdmin runs, False naming every open rule.
pub fn egress_confined(rules: &[EgressRule], running: bool, policy: &str) -> Verdict {
    if !running {
        return Verdict::unknown(
            pgadmin::PGADMIN_NOT_RUNNING,
            format!("pgAdmin has no Ready Pod yet: NetworkPolicy {policy} is judged once it has"),
        );
    }
    let open: Vec<String> = rules
        .iter()
        .filter_map(|r| {
            let why = match r.rule.to.as_deref() {
                None | Some([]) => Some("any address".to_owned()),
                Some(peers) => {
                    let reasons: Vec<String> = peers.iter().filter_map(open_peer).collect();
                    (!reasons.is_empty()).then(|| reasons.join(", "))
                }
            }?;
            Some(format!("{} ({why})", r.what))
        })
        .collect();
    if open.is_empty() {
        Verdict::holds(
            common::AS_EXPECTED,
            format!(
                "NetworkPolicy {policy} confines pgAdmin's egress to {} named destinations",
                rules.len()
            ),
        )
    } else {
        Verdict::fails(
            pgadmin::PGADMIN_EGRESS_OPEN,
            format!(
                "NetworkPolicy {policy} does not confine egress: {}",
                open.join("; ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::ConditionStatus;

    fn extra(yaml: &str) -> NetworkPolicyEgressRule {
        serde_yaml_ng::from_str(yaml).expect("rule parses")
    }

    #[test]
    fn generated_rules_confine_and_open_ones_are_named() {
        let clusters = [("team-b".to_owned(), "billing".to_owned())];
        let poolers = [("team-a".to_owned(), "orders-pooler".to_owned())];
        type Case<'a> = (
            &'a str,
            bool,
            Vec<NetworkPolicyEgressRule>,
            ConditionStatus,
            &'a [&'a str],
        );
        let cases: Vec<Case<'_>> = vec![
            ("generated only", false, vec![], ConditionStatus::True, &[]),
            (
                "OAuth2 issuer: any address on 443",
                true,
                vec![],
                ConditionStatus::False,
                &["the OAuth2 issuer (any address)"],
            ),
            (
                "a pinned extra rule",
                false,
                vec![extra(
                    "to: [{ipBlock: {cidr: 203.0.113.10/32}}]\nports: [{port: 443}]",
                )],
                ConditionStatus::True,
                &[],
            ),
            (
                "wide and unpinned extra rules",
                false,
                vec![
                    extra("to: [{ipBlock: {cidr: 10.0.0.0/8}}]"),
                    extra("to: [{namespaceSelector: {}}]"),
                    extra("to: [{podSelector: {}}]"),
                    extra("to: [{ipBlock: {cidr: '0.0.0.0/0'}}]"),
                    extra("ports: [{port: 5432}]"),
                    extra("to: [{ipBlock: {cidr: 'fd00::/48'}}]"),
                ],
                ConditionStatus::False,
                &[
                    "spec.egress.extraRules[0] (ipBlock 10.0.0.0/8 is wide)",
                    "spec.egress.extraRules[1] (a namespaceSelector that pins nothing)",
                    "spec.egress.extraRules[2] (a podSelector that pins nothing)",
                    "spec.egress.extraRules[3] (ipBlock 0.0.0.0/0 is wide)",
                    "spec.egress.extraRules[4] (any address)",
                    "spec.egress.extraRules[5] (ipBlock fd00::/48 is wide)",
                ],
            ),
        ];
        for (name, oauth2, extra, status, named) in cases {
            let rules = egress_rules(
                &clusters,
                &poolers,
                oauth2.then_some(SignInPeer::OAuth2Issuer),
                &extra,
            )
            .unwrap();
            let v = egress_confined(&rules, true, "p-pgadmin-egress");
            assert_eq!(v.status, status, "{name}: {}", v.message);
            for n in named {
                assert!(v.message.contains(n), "{name}: {} lacks {n}", v.message);
            }
            let policy = egress_policy("p", "p-pgadmin-egress", &rules).unwrap();
            let value = serde_json::to_value(&policy).unwrap();
            assert_eq!(value["spec"]["policyTypes"], json!(["Egress"]), "{name}");
            assert_eq!(
                value["spec"]["egress"][1]["to"][0]["podSelector"]["matchLabels"]["cnpg.io/cluster"],
                "billing"
            );
        }
        let rules = egress_rules(&clusters, &poolers, None, &[]).unwrap();
        assert_eq!(
            egress_confined(&rules, false, "p").reason,
            pgadmin::PGADMIN_NOT_RUNNING
        );
    }
}
