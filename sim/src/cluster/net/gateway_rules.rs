//! The Gateway API's attachment rules as pure functions: which listeners accept a route, how
//! its backend references resolve, and the `status.parents[]` entry they make.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::conditions::{self, Cond};
pub(super) use crate::cluster::net::text as s;
use crate::cluster::util::selector_matches;

pub const GROUP: &str = "gateway.networking.k8s.io";
/// The controller the GatewayClass `sim` names.
pub const CONTROLLER_NAME: &str = "sim.local/gateway-controller";

/// May a route of `route_ns` (labels `ns_labels`) attach to `listener` of a Gateway in `gw_ns`?
pub fn listener_allows(
    listener: &Value,
    gw_ns: &str,
    route_ns: &str,
    ns_labels: &BTreeMap<String, String>,
) -> bool {
    let protocol = s(listener, "/protocol");
    if protocol != "HTTP" && protocol != "HTTPS" {
        return false;
    }
    if let Some(kinds) = listener
        .pointer("/allowedRoutes/kinds")
        .and_then(Value::as_array)
        && !kinds.is_empty()
        && !kinds
            .iter()
            .any(|k| s(k, "/kind") == "HTTPRoute" && matches!(s(k, "/group"), "" | GROUP))
    {
        return false;
    }
    match s(listener, "/allowedRoutes/namespaces/from") {
        "All" => true,
        "Selector" => listener
            .pointer("/allowedRoutes/namespaces/selector")
            .is_some_and(|sel| selector_matches(Some(sel), ns_labels)),
        _ => gw_ns == route_ns,
    }
}

/// Does a listener hostname (perhaps `*.example.com`) accept any of the route's hostnames?
pub fn hostnames_intersect(listener_host: &str, route_hosts: &[&str]) -> bool {
    if listener_host.is_empty() || route_hosts.is_empty() {
        return true;
    }
    let matches = |l: &str, r: &str| {
        if l == r {
            return true;
        }
        let suffix_match = |wild: &str, other: &str| {
            wild.strip_prefix('*')
                .is_some_and(|suffix| other.ends_with(suffix) && other.len() > suffix.len())
        };
        suffix_match(l, r) || suffix_match(r, l)
    };
    route_hosts.iter().any(|r| matches(listener_host, r))
}

/// The Gateway a parentRef of a route in `route_ns` names, if it names one.
pub fn parent_gateway(parent: &Value, route_ns: &str) -> Option<(String, String)> {
    let group = parent.get("group").and_then(Value::as_str).unwrap_or(GROUP);
    let kind = parent
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Gateway");
    if group != GROUP || kind != "Gateway" {
        return None;
    }
    let ns = parent
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or(route_ns);
    Some((ns.to_string(), s(parent, "/name").to_string()))
}

/// Accepted of one parentRef: `Ok(listener names attached)` or `Err((reason, message))`.
pub fn accept(
    route: &Value,
    parent: &Value,
    gateway: &Value,
    ns_labels: &BTreeMap<String, String>,
) -> Result<Vec<String>, (&'static str, String)> {
    let route_ns = s(route, "/metadata/namespace");
    let gw_ns = s(gateway, "/metadata/namespace");
    let section = parent.get("sectionName").and_then(Value::as_str);
    let port = parent.get("port").and_then(Value::as_i64);
    let listeners: Vec<&Value> = gateway
        .pointer("/spec/listeners")
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    let named: Vec<&Value> = listeners
        .into_iter()
        .filter(|l| section.is_none_or(|sn| s(l, "/name") == sn))
        .filter(|l| port.is_none_or(|p| l.get("port").and_then(Value::as_i64) == Some(p)))
        .collect();
    if named.is_empty() {
        return Err((
            "NoMatchingParent",
            "No listener matches the parentRef's sectionName or port".into(),
        ));
    }
    let allowed: Vec<&Value> = named
        .into_iter()
        .filter(|l| listener_allows(l, gw_ns, route_ns, ns_labels))
        .collect();
    if allowed.is_empty() {
        return Err((
            "NotAllowedByListeners",
            format!(
                "No listener of Gateway {gw_ns}/{} allows this route",
                s(gateway, "/metadata/name")
            ),
        ));
    }
    let route_hosts: Vec<&str> = route
        .pointer("/spec/hostnames")
        .and_then(Value::as_array)
        .map(|h| h.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let attached: Vec<String> = allowed
        .into_iter()
        .filter(|l| hostnames_intersect(s(l, "/hostname"), &route_hosts))
        .map(|l| s(l, "/name").to_string())
        .collect();
    if attached.is_empty() {
        return Err((
            "NoMatchingListenerHostname",
            "No listener hostname matches the route's hostnames".into(),
        ));
    }
    Ok(attached)
}

/// ResolvedRefs of a route: every backendRef must be a Service of the route's namespace that
/// exists (`exists(namespace, name)`).
pub fn resolve_refs(
    route: &Value,
    exists: &dyn Fn(&str, &str) -> bool,
) -> Result<(), (&'static str, String)> {
    let route_ns = s(route, "/metadata/namespace");
    let rules = route
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for rule in &rules {
        for b in rule
            .get("backendRefs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let group = b.get("group").and_then(Value::as_str).unwrap_or("");
            let kind = b.get("kind").and_then(Value::as_str).unwrap_or("Service");
            let name = s(b, "/name");
            if !group.is_empty() || kind != "Service" {
                return Err((
                    "InvalidKind",
                    format!("Unsupported backendRef kind {group}/{kind}"),
                ));
            }
            let ns = b
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or(route_ns);
            if ns != route_ns {
                // No ReferenceGrant is served, so no cross-namespace reference is permitted.
                return Err((
                    "RefNotPermitted",
                    format!(
                        "Backend ref to Service {ns}/{name} not permitted by any ReferenceGrant"
                    ),
                ));
            }
            if !exists(ns, name) {
                return Err(("BackendNotFound", format!("Service {ns}/{name} not found")));
            }
        }
    }
    Ok(())
}

/// Resolution of an HTTPS listener's `tls.certificateRefs` (`secret_type(ns, name)` answers the
/// type of an existing Secret): `Err((reason, message))` for the listener's ResolvedRefs.
pub fn certificate_refs(
    listener: &Value,
    gw_ns: &str,
    secret_type: &dyn Fn(&str, &str) -> Option<String>,
) -> Result<(), (&'static str, String)> {
    if s(listener, "/protocol") != "HTTPS" {
        return Ok(());
    }
    let refs = listener
        .pointer("/tls/certificateRefs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if refs.is_empty() {
        return Err((
            "InvalidCertificateRef",
            "Listener has no certificateRefs".to_string(),
        ));
    }
    for r in &refs {
        let group = r.get("group").and_then(Value::as_str).unwrap_or("");
        let kind = r.get("kind").and_then(Value::as_str).unwrap_or("Secret");
        let name = s(r, "/name");
        let ns = r.get("namespace").and_then(Value::as_str).unwrap_or(gw_ns);
        if !group.is_empty() || kind != "Secret" {
            return Err((
                "InvalidCertificateRef",
                format!("Unsupported certificateRef kind {group}/{kind}"),
            ));
        }
        if ns != gw_ns {
            return Err((
                "RefNotPermitted",
                format!(
                    "Certificate ref to Secret {ns}/{name} not permitted by any ReferenceGrant"
                ),
            ));
        }
        match secret_type(ns, name) {
            None => {
                return Err((
                    "InvalidCertificateRef",
                    format!("Secret {ns}/{name} does not exist"),
                ));
            }
            Some(t) if t != "kubernetes.io/tls" => {
                return Err((
                    "InvalidCertificateRef",
                    format!("Secret {ns}/{name} must be of type kubernetes.io/tls"),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The conditions of one listener: protocol support and certificate references.
pub fn listener_conditions(
    listener: &Value,
    gw_ns: &str,
    secret_type: &dyn Fn(&str, &str) -> Option<String>,
) -> Vec<Cond<'static>> {
    let resolved = Cond::new(
        "ResolvedRefs",
        true,
        "ResolvedRefs",
        "Resolved all the Object references",
    );
    let no_conflict = Cond::new("Conflicted", false, "NoConflicts", "No conflicts");
    if !matches!(s(listener, "/protocol"), "HTTP" | "HTTPS") {
        return vec![
            Cond::new(
                "Accepted",
                false,
                "UnsupportedProtocol",
                format!("Protocol {} is not supported", s(listener, "/protocol")),
            ),
            Cond::new("Programmed", false, "Invalid", "Listener is invalid"),
            resolved,
            no_conflict,
        ];
    }
    match certificate_refs(listener, gw_ns, secret_type) {
        Ok(()) => vec![
            Cond::new("Accepted", true, "Accepted", "Listener is accepted"),
            Cond::new("Programmed", true, "Programmed", "Listener is programmed"),
            resolved,
            no_conflict,
        ],
        Err((reason, message)) => vec![
            Cond::new("Accepted", true, "Accepted", "Listener is accepted"),
            Cond::new(
                "Programmed",
                false,
                "Invalid",
                "Listener is invalid, see other Conditions",
            ),
            Cond::new("ResolvedRefs", false, reason, message),
            no_conflict,
        ],
    }
}

/// The parentRef as the status echoes it (defaults filled in as the API server would).
fn echoed_parent_ref(parent: &Value) -> Value {
    let mut p = parent.clone();
    if p.get("group").is_none() {
        p["group"] = json!(GROUP);
    }
    if p.get("kind").is_none() {
        p["kind"] = json!("Gateway");
    }
    p
}

/// One `status.parents[]` entry for a parentRef.
pub fn parent_status(
    existing: Option<&Value>,
    parent: &Value,
    accepted: &Result<Vec<String>, (&'static str, String)>,
    resolved: &Result<(), (&'static str, String)>,
    obs_gen: i64,
    now: &str,
) -> Value {
    let prev = existing
        .and_then(|e| e.get("conditions"))
        .cloned()
        .unwrap_or(Value::Null);
    let acc = match accepted {
        Ok(_) => Cond::new("Accepted", true, "Accepted", "Route is accepted"),
        Err((reason, msg)) => Cond::new("Accepted", false, reason, msg.clone()),
    }
    .generation(obs_gen);
    let res = match resolved {
        Ok(()) => Cond::new(
            "ResolvedRefs",
            true,
            "ResolvedRefs",
            "Resolved all the Object references for the Route",
        ),
        Err((reason, msg)) => Cond::new("ResolvedRefs", false, reason, msg.clone()),
    }
    .generation(obs_gen);
    json!({
        "parentRef": echoed_parent_ref(parent),
        "controllerName": CONTROLLER_NAME,
        "conditions": conditions::set_all(&prev, &[acc, res], now),
    })
}

pub(super) fn same_parent(a: &Value, b: &Value) -> bool {
    echoed_parent_ref(a) == echoed_parent_ref(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(listeners: Value) -> Value {
        json!({"metadata": {"namespace": "infra", "name": "gw", "generation": 1},
            "spec": {"gatewayClassName": "sim", "listeners": listeners}})
    }

    fn route(ns: &str, parent: Value) -> Value {
        json!({"metadata": {"namespace": ns, "name": "r", "generation": 3},
            "spec": {"parentRefs": [parent], "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}})
    }

    #[test]
    fn listeners_allow_the_same_namespace_by_default_all_or_a_selector() {
        let same = json!({"name": "http", "protocol": "HTTP", "port": 80});
        let none = BTreeMap::new();
        assert!(listener_allows(&same, "a", "a", &none));
        assert!(!listener_allows(&same, "a", "b", &none));
        let all = json!({"name": "h", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}});
        assert!(listener_allows(&all, "a", "b", &none));
        let sel = json!({"name": "h", "protocol": "HTTPS", "port": 443, "allowedRoutes": {"namespaces": {"from": "Selector",
            "selector": {"matchLabels": {"expose": "yes"}}}}});
        let mut labels = BTreeMap::new();
        assert!(!listener_allows(&sel, "a", "b", &labels));
        labels.insert("expose".to_string(), "yes".to_string());
        assert!(listener_allows(&sel, "a", "b", &labels));
        let tcp = json!({"name": "t", "protocol": "TCP", "port": 5432, "allowedRoutes": {"namespaces": {"from": "All"}}});
        assert!(!listener_allows(&tcp, "a", "a", &labels));
    }

    #[test]
    fn accepted_reasons_follow_the_spec() {
        let gw = gateway(
            json!([{"name": "http", "protocol": "HTTP", "port": 80, "hostname": "*.example.com"}]),
        );
        let none = BTreeMap::new();
        let r = route("infra", json!({"name": "gw"}));
        assert_eq!(
            accept(&r, &json!({"name": "gw"}), &gw, &none),
            Ok(vec!["http".to_string()])
        );
        let wrong_section = json!({"name": "gw", "sectionName": "https"});
        assert_eq!(
            accept(&r, &wrong_section, &gw, &none).unwrap_err().0,
            "NoMatchingParent"
        );
        let wrong_port = json!({"name": "gw", "port": 8080});
        assert_eq!(
            accept(&r, &wrong_port, &gw, &none).unwrap_err().0,
            "NoMatchingParent"
        );
        let other_ns = route("team-a", json!({"name": "gw", "namespace": "infra"}));
        assert_eq!(
            accept(
                &other_ns,
                &json!({"name": "gw", "namespace": "infra"}),
                &gw,
                &none
            )
            .unwrap_err()
            .0,
            "NotAllowedByListeners"
        );
        let mut hosted = r.clone();
        hosted["spec"]["hostnames"] = json!(["db.other.org"]);
        assert_eq!(
            accept(&hosted, &json!({"name": "gw"}), &gw, &none)
                .unwrap_err()
                .0,
            "NoMatchingListenerHostname"
        );
        hosted["spec"]["hostnames"] = json!(["db.example.com"]);
        assert!(accept(&hosted, &json!({"name": "gw"}), &gw, &none).is_ok());
    }

    #[test]
    fn resolved_refs_need_an_existing_service_of_the_route_namespace() {
        let r = route("a", json!({"name": "gw"}));
        assert_eq!(resolve_refs(&r, &|_, _| true), Ok(()));
        let err = resolve_refs(&r, &|_, _| false).unwrap_err();
        assert_eq!(
            err,
            ("BackendNotFound", "Service a/web not found".to_string())
        );
        let mut cross = r.clone();
        cross["spec"]["rules"][0]["backendRefs"][0]["namespace"] = json!("b");
        assert_eq!(
            resolve_refs(&cross, &|_, _| true).unwrap_err().0,
            "RefNotPermitted"
        );
        let mut kind = r.clone();
        kind["spec"]["rules"][0]["backendRefs"][0]["kind"] = json!("ConfigMap");
        assert_eq!(
            resolve_refs(&kind, &|_, _| true).unwrap_err().0,
            "InvalidKind"
        );
    }

    #[test]
    fn https_listeners_need_existing_tls_secrets_of_their_namespace() {
        let types = |_: &str, name: &str| match name {
            "tls" => Some("kubernetes.io/tls".to_string()),
            "opaque" => Some("Opaque".to_string()),
            _ => None,
        };
        let https = |refs: Value| json!({"name": "https", "protocol": "HTTPS", "port": 443, "tls": {"certificateRefs": refs}});
        assert_eq!(
            certificate_refs(&https(json!([{"name": "tls"}])), "infra", &types),
            Ok(())
        );
        assert_eq!(
            certificate_refs(&https(json!([{"name": "gone"}])), "infra", &types),
            Err((
                "InvalidCertificateRef",
                "Secret infra/gone does not exist".to_string()
            ))
        );
        assert_eq!(
            certificate_refs(&https(json!([{"name": "opaque"}])), "infra", &types)
                .unwrap_err()
                .0,
            "InvalidCertificateRef"
        );
        assert_eq!(
            certificate_refs(
                &https(json!([{"name": "tls", "namespace": "other"}])),
                "infra",
                &types
            )
            .unwrap_err()
            .0,
            "RefNotPermitted"
        );
        let conds = listener_conditions(&https(json!([{"name": "gone"}])), "infra", &types);
        let programmed = conds.iter().find(|c| c.type_ == "Programmed").unwrap();
        assert!(!programmed.status);
        let http = json!({"name": "http", "protocol": "HTTP", "port": 80});
        assert!(
            listener_conditions(&http, "infra", &types)
                .iter()
                .all(|c| c.type_ == "Conflicted" || c.status)
        );
    }

    #[test]
    fn a_parent_entry_echoes_the_ref_with_defaults_and_the_route_generation() {
        let e = parent_status(
            None,
            &json!({"name": "gw"}),
            &Ok(vec![]),
            &Err(("BackendNotFound", "m".into())),
            3,
            "t",
        );
        assert_eq!(e["controllerName"], CONTROLLER_NAME);
        assert_eq!(
            e["parentRef"],
            json!({"name": "gw", "group": GROUP, "kind": "Gateway"})
        );
        let acc = conditions::find(&e["conditions"], "Accepted").unwrap();
        assert_eq!(
            (
                acc["status"].as_str(),
                acc["reason"].as_str(),
                acc["observedGeneration"].as_i64()
            ),
            (Some("True"), Some("Accepted"), Some(3))
        );
        let res = conditions::find(&e["conditions"], "ResolvedRefs").unwrap();
        assert_eq!(
            (res["status"].as_str(), res["reason"].as_str()),
            (Some("False"), Some("BackendNotFound"))
        );
    }
}
