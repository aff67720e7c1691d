//! The OpenShift router (`openshift/router`, HAProxy template router `default`): it admits Routes
//! into `status.ingress[]`, and refuses a host an older Route already holds with the router's
//! `HostAlreadyClaimed` rejection. A Route created without a host gets one generated from the
//! router domain, as OpenShift's route host allocator does. TLS material that does not parse is
//! refused by the extended validation (`ExtendedValidationFailed`, see `route_tls`).

use serde_json::{Value, json};

use super::conditions;
use crate::apiserver::error::ApiError;
use crate::cluster::net::text as s;
use crate::cluster::{Component, Ctx, Kind, Next, WorkloadFault, key_of};
use crate::store::objects::{Event, ObjKey};

pub const ROUTES: Kind = Kind::new("route.openshift.io", "v1", "Route", "routes");
/// The router's name, as the default IngressController names it.
pub const ROUTER_NAME: &str = "default";
/// The cluster's router domain (`*.apps.<cluster domain>` on OpenShift).
pub const ROUTER_DOMAIN: &str = "apps.sim.local";
pub const CANONICAL_HOSTNAME: &str = "router-default.apps.sim.local";
/// Set on a Route whose host the platform generated.
pub const HOST_GENERATED: &str = "openshift.io/host.generated";

/// The host OpenShift allocates for a Route that names none.
pub fn generated_host(name: &str, namespace: &str) -> String {
    format!("{name}-{namespace}.{ROUTER_DOMAIN}")
}

/// OpenShift's route host allocation at create: a Route without `spec.host` gets the generated
/// one (and the annotation saying so) before it is stored. A Route that asks for a
/// `spec.subdomain` keeps an empty host: the router serves it under its own domain.
pub fn allocate_host(namespace: &str, body: &mut Value) {
    if !host_of(body).is_empty() || !s(body, "/spec/subdomain").is_empty() {
        return;
    }
    let name = s(body, "/metadata/name").to_string();
    if !body["spec"].is_object() {
        body["spec"] = json!({});
    }
    body["spec"]["host"] = json!(generated_host(&name, namespace));
    if !body["metadata"]["annotations"].is_object() {
        body["metadata"]["annotations"] = json!({});
    }
    body["metadata"]["annotations"][HOST_GENERATED] = json!("true");
}

/// What the router makes of a Route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    Rejected {
        reason: &'static str,
        message: String,
    },
}

pub fn host_of(route: &Value) -> &str {
    s(route, "/spec/host")
}

/// The host the router admits a Route under: `spec.host`, or else `<spec.subdomain>.<router
/// domain>` (what the router reports in `status.ingress[].host` while `spec.host` stays
/// empty); empty when the Route names neither.
pub fn admitted_host(route: &Value) -> String {
    match (host_of(route), s(route, "/spec/subdomain")) {
        ("", "") => String::new(),
        ("", sub) => format!("{sub}.{ROUTER_DOMAIN}"),
        (host, _) => host.to_string(),
    }
}

/// The router's ordering of Routes: the older one wins, ties go to the smaller uid.
fn older(a: &Value, b: &Value) -> bool {
    let key = |r: &Value| {
        (
            s(r, "/metadata/creationTimestamp").to_string(),
            s(r, "/metadata/uid").to_string(),
        )
    };
    key(a) < key(b)
}

/// Admission of `route` against the other Routes holding hosts (`others` may include `route`).
/// Mirrors the host admitter: in the same namespace, an older Route with the same host and path
/// wins; a Route of another namespace that holds the host first owns the whole host.
pub fn decide(route: &Value, others: &[&Value]) -> Admission {
    if s(route, "/spec/wildcardPolicy") == "Subdomain" {
        // The default router runs without ROUTER_ALLOW_WILDCARD_ROUTES.
        return Admission::Rejected {
            reason: "RouteNotAdmitted",
            message: "wildcard routes are not allowed".into(),
        };
    }
    let host = admitted_host(route);
    let ns = s(route, "/metadata/namespace");
    let uid = s(route, "/metadata/uid");
    let blocker = others
        .iter()
        .filter(|o| admitted_host(o) == host && s(o, "/metadata/uid") != uid)
        .filter(|o| {
            s(o, "/metadata/namespace") != ns || s(o, "/spec/path") == s(route, "/spec/path")
        })
        .filter(|o| older(o, route))
        .min_by(|a, b| {
            if older(a, b) {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            }
        });
    match blocker {
        // The host is this Route's: the extended validation comes next in the router's chain.
        None => match super::route_tls::validate(route) {
            None => Admission::Admitted,
            Some(message) => Admission::Rejected {
                reason: "ExtendedValidationFailed",
                message,
            },
        },
        Some(o) if s(o, "/metadata/namespace") == ns => Admission::Rejected {
            reason: "HostAlreadyClaimed",
            message: format!("route {}/{} has host {host}", ns, s(o, "/metadata/name")),
        },
        Some(_) => Admission::Rejected {
            reason: "HostAlreadyClaimed",
            message: format!("a route in another namespace holds host {host}"),
        },
    }
}

/// `status` with this router's `ingress[]` entry set to `admission`; other routers' entries stay.
pub fn status_with(route: &Value, admission: &Admission, now: &str) -> Value {
    let mut status = route.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut ingress: Vec<Value> = status
        .get("ingress")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut cond = match admission {
        Admission::Admitted => json!({"type": "Admitted", "status": "True"}),
        Admission::Rejected { reason, message } => json!({
            "type": "Admitted", "status": "False", "reason": reason, "message": message,
        }),
    };
    let pos = ingress
        .iter()
        .position(|i| i.get("routerName").and_then(Value::as_str) == Some(ROUTER_NAME));
    // The router keeps the transition time while the condition (all but the time) is unchanged.
    let previous = pos
        .and_then(|p| conditions::find(&ingress[p]["conditions"], "Admitted"))
        .cloned();
    cond["lastTransitionTime"] = json!(now);
    if let Some(prev) = previous {
        let mut without_time = prev.clone();
        if let Some(m) = without_time.as_object_mut() {
            m.remove("lastTransitionTime");
        }
        let mut new_without = cond.clone();
        if let Some(m) = new_without.as_object_mut() {
            m.remove("lastTransitionTime");
        }
        if without_time == new_without
            && let Some(t) = prev.get("lastTransitionTime")
        {
            cond["lastTransitionTime"] = t.clone();
        }
    }
    let policy = match s(route, "/spec/wildcardPolicy") {
        "" => "None",
        p => p,
    };
    let entry = json!({
        "host": admitted_host(route),
        "routerName": ROUTER_NAME,
        "routerCanonicalHostname": CANONICAL_HOSTNAME,
        "wildcardPolicy": policy,
        "conditions": [cond],
    });
    match pos {
        Some(p) => ingress[p] = entry,
        None => ingress.push(entry),
    }
    status["ingress"] = Value::Array(ingress);
    status
}

pub struct OpenShiftRouter;

impl Component for OpenShiftRouter {
    fn name(&self) -> &'static str {
        "openshift-router"
    }

    fn primary(&self) -> Kind {
        ROUTES
    }

    /// A change to one Route can move the claim of every Route with the same host.
    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        let mut hosts = vec![admitted_host(&event.object)];
        if let Some(prev) = &event.previous {
            hosts.push(admitted_host(prev));
        }
        let mut keys = vec![key_of(&event.object)];
        let l = ctx.server.store.lock();
        for r in l.list(&ROUTES.res(), None) {
            let h = admitted_host(&r);
            if !h.is_empty() && hosts.contains(&h) {
                keys.push(key_of(&r));
            }
        }
        keys
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(route) = tx.get_key(ROUTES, key) else {
            return Ok(Next::Done);
        };
        if route.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok(Next::Done);
        }
        // A host cleared by an update is allocated again, as the route strategy does (not
        // for a Route asking for a subdomain).
        let route = if admitted_host(&route).is_empty() {
            let mut next = (*route).clone();
            allocate_host(&key.0, &mut next);
            tx.update(ROUTES, next)?
        } else {
            route
        };
        let admission = if ctx.fault(WorkloadFault::NotAdmitted, &route) {
            Admission::Rejected {
                reason: "RouteNotAdmitted",
                message: "route not admitted: the simulated fault NotAdmitted is set".into(),
            }
        } else {
            let all = tx.list(ROUTES, None);
            let holders: Vec<&Value> = all
                .iter()
                .map(|r| r.as_ref())
                .filter(|r| admitted_host(r) == admitted_host(&route))
                .filter(|r| r.pointer("/metadata/deletionTimestamp").is_none())
                .filter(|r| !ctx.fault(WorkloadFault::NotAdmitted, r))
                .collect();
            decide(&route, &holders)
        };
        let status = status_with(&route, &admission, &ctx.clock.rfc3339());
        if route.get("status") != Some(&status) {
            let mut next = (*route).clone();
            next["status"] = status;
            tx.update_status(ROUTES, next)?;
        }
        Ok(Next::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(ns: &str, name: &str, host: &str, created: &str, uid: &str) -> Value {
        json!({"metadata": {"namespace": ns, "name": name, "uid": uid,
            "creationTimestamp": created}, "spec": {"host": host}})
    }

    #[test]
    fn the_older_route_keeps_the_host_and_the_younger_is_refused_with_the_routers_message() {
        let old = route("a", "first", "x.example", "2026-01-01T00:00:00Z", "u1");
        let young = route("a", "second", "x.example", "2026-01-02T00:00:00Z", "u2");
        let all = [&old, &young];
        assert_eq!(decide(&old, &all), Admission::Admitted);
        assert_eq!(
            decide(&young, &all),
            Admission::Rejected {
                reason: "HostAlreadyClaimed",
                message: "route a/first has host x.example".into()
            }
        );
        let other_ns = route("b", "third", "x.example", "2026-01-03T00:00:00Z", "u3");
        assert_eq!(
            decide(&other_ns, &[&old, &other_ns]),
            Admission::Rejected {
                reason: "HostAlreadyClaimed",
                message: "a route in another namespace holds host x.example".into()
            }
        );
    }

    #[test]
    fn different_paths_share_a_host_in_one_namespace_and_ties_go_to_the_smaller_uid() {
        let mut a = route("a", "api", "x.example", "2026-01-01T00:00:00Z", "u1");
        a["spec"]["path"] = json!("/api");
        let b = route("a", "web", "x.example", "2026-01-02T00:00:00Z", "u2");
        assert_eq!(decide(&b, &[&a, &b]), Admission::Admitted);
        let t1 = route("a", "t1", "y.example", "2026-01-01T00:00:00Z", "u9");
        let t2 = route("a", "t2", "y.example", "2026-01-01T00:00:00Z", "u5");
        assert_eq!(decide(&t2, &[&t1, &t2]), Admission::Admitted);
        assert!(matches!(
            decide(&t1, &[&t1, &t2]),
            Admission::Rejected { .. }
        ));
    }

    #[test]
    fn wildcard_routes_are_refused_by_the_default_router() {
        let mut r = route("a", "w", "x.example", "2026-01-01T00:00:00Z", "u1");
        r["spec"]["wildcardPolicy"] = json!("Subdomain");
        assert_eq!(
            decide(&r, &[&r]),
            Admission::Rejected {
                reason: "RouteNotAdmitted",
                message: "wildcard routes are not allowed".into()
            }
        );
    }

    #[test]
    fn status_keeps_other_routers_and_the_transition_time_of_an_unchanged_condition() {
        let mut r = route("a", "w", "w-a.apps.sim.local", "2026-01-01T00:00:00Z", "u1");
        r["status"] = json!({"ingress": [{"routerName": "sharded", "host": "h"}]});
        let s1 = status_with(&r, &Admission::Admitted, "t1");
        assert_eq!(s1["ingress"].as_array().unwrap().len(), 2);
        let mine = &s1["ingress"][1];
        assert_eq!(mine["routerName"], "default");
        assert_eq!(mine["wildcardPolicy"], "None");
        assert_eq!(mine["host"], "w-a.apps.sim.local");
        assert_eq!(mine["conditions"][0]["type"], "Admitted");
        assert_eq!(mine["conditions"][0]["status"], "True");
        r["status"] = s1;
        let s2 = status_with(&r, &Admission::Admitted, "t2");
        assert_eq!(
            s2["ingress"][1]["conditions"][0]["lastTransitionTime"],
            "t1"
        );
        let rejected = Admission::Rejected {
            reason: "HostAlreadyClaimed",
            message: "m".into(),
        };
        let s3 = status_with(&r, &rejected, "t3");
        assert_eq!(
            s3["ingress"][1]["conditions"][0]["lastTransitionTime"],
            "t3"
        );
        assert_eq!(
            s3["ingress"][1]["conditions"][0]["reason"],
            "HostAlreadyClaimed"
        );
        assert_eq!(generated_host("web", "team-a"), "web-team-a.apps.sim.local");
    }

    #[test]
    fn a_route_asking_for_a_subdomain_keeps_an_empty_host_and_is_admitted_under_the_domain() {
        let mut r = json!({"metadata": {"name": "web", "namespace": "a", "uid": "u1",
            "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"subdomain": "shop"}});
        allocate_host("a", &mut r);
        assert!(r["spec"].get("host").is_none(), "{r}");
        assert!(r["metadata"].get("annotations").is_none());
        assert_eq!(admitted_host(&r), "shop.apps.sim.local");
        let status = status_with(&r, &decide(&r, &[&r]), "t");
        assert_eq!(status["ingress"][0]["host"], "shop.apps.sim.local");
        // A younger Route naming that host outright is refused: the claim is the same host.
        let other = route(
            "a",
            "w2",
            "shop.apps.sim.local",
            "2026-01-02T00:00:00Z",
            "u2",
        );
        assert!(matches!(
            decide(&other, &[&r, &other]),
            Admission::Rejected {
                reason: "HostAlreadyClaimed",
                ..
            }
        ));
    }

    #[test]
    fn a_route_without_host_is_allocated_one_at_create() {
        let mut r = json!({"metadata": {"name": "web"}, "spec": {"to": {"name": "web"}}});
        allocate_host("team-a", &mut r);
        assert_eq!(r["spec"]["host"], "web-team-a.apps.sim.local");
        assert_eq!(r["metadata"]["annotations"][HOST_GENERATED], "true");
        let mut given = json!({"metadata": {"name": "web"}, "spec": {"host": "x.example"}});
        allocate_host("team-a", &mut given);
        assert_eq!(given["spec"]["host"], "x.example");
        assert!(given["metadata"].get("annotations").is_none());
    }
}
