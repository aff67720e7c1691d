//! Whether the platform took the published object: a Route's routers (`status.ingress[]`), an
//! Ingress's load balancer (`status.loadBalancer.ingress`), an HTTPRoute's Gateways
//! (`status.parents[]`, at the route's current generation).

use k8s_openapi::api::networking::v1::Ingress;
use kube::api::DynamicObject;
use serde::Deserialize;

use crate::api::GatewayParentRef;

/// What the platform says of one exposure object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Taken: `host` is the name it is served under; `by` names the routers, load balancer
    /// addresses or Gateway controllers that took it.
    Admitted {
        host: Option<String>,
        by: Vec<String>,
    },
    /// Refused by `by`, with its reason and message.
    Refused {
        by: String,
        reason: String,
        message: String,
    },
    /// Nobody has said anything about the current object yet.
    Pending { detail: String },
}

#[derive(Debug, Default, Deserialize)]
struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "observedGeneration")]
    observed_generation: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RouteIngress {
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    router_name: Option<String>,
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ParentRef {
    #[serde(default)]
    kind: Option<String>,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    section_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RouteParentStatus {
    parent_ref: ParentRef,
    #[serde(default)]
    controller_name: Option<String>,
    #[serde(default)]
    conditions: Vec<Condition>,
}

/// Reads `data[path...]` as `T`; absent or malformed fields read as absent.
fn field<T: for<'de> Deserialize<'de>>(obj: &DynamicObject, path: &[&str]) -> Option<T> {
    let mut value = &obj.data;
    for key in path {
        value = value.get(key)?;
    }
    serde_json::from_value(value.clone()).ok()
}

fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// A Route is admitted by every router whose `status.ingress[]` entry (for the current
/// `spec.host`) says `Admitted=True`; with none, the first refusing router's reason stands.
pub fn route_admission(route: &DynamicObject) -> Admission {
    let spec_host: Option<String> = field(route, &["spec", "host"]);
    let mut entries: Vec<RouteIngress> = field(route, &["status", "ingress"]).unwrap_or_default();
    // An entry for another host is what a router wrote before the host changed.
    entries.retain(|e| match (&spec_host, &e.host) {
        (Some(want), Some(got)) => want == got,
        _ => true,
    });
    entries.sort_by(|a, b| a.router_name.cmp(&b.router_name));
    let router = |e: &RouteIngress| e.router_name.clone().unwrap_or_else(|| "(unnamed)".into());
    let admitted: Vec<&RouteIngress> = entries
        .iter()
        .filter(|e| condition(&e.conditions, "Admitted").is_some_and(|c| c.status == "True"))
        .collect();
    if let Some(first) = admitted.first() {
        return Admission::Admitted {
            host: first.host.clone().or(spec_host),
            by: admitted.iter().map(|e| router(e)).collect(),
        };
    }
    let refused = entries.iter().find_map(|e| {
        let c = condition(&e.conditions, "Admitted").filter(|c| c.status == "False")?;
        Some((router(e), c))
    });
    match refused {
        Some((by, c)) => Admission::Refused {
            by,
            reason: c.reason.clone().unwrap_or_else(|| "NotAdmitted".into()),
            message: c.message.clone().unwrap_or_default(),
        },
        None => Admission::Pending {
            detail: "no router has reported on it".into(),
        },
    }
}

/// An Ingress is taken once its controller publishes a load balancer address; controllers
/// write nothing when they ignore one, so until then it is pending, not refused.
pub fn ingress_admission(ingress: &Ingress) -> Admission {
    let addresses: Vec<String> = ingress
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|i| i.hostname.clone().or_else(|| i.ip.clone()))
        .map(|address| format!("load balancer {address}"))
        .collect();
    if addresses.is_empty() {
        return Admission::Pending {
            detail: "no load balancer address is published for it".into(),
        };
    }
    let host = ingress
        .spec
        .as_ref()
        .and_then(|s| s.rules.as_ref())
        .and_then(|r| r.first())
        .and_then(|r| r.host.clone());
    Admission::Admitted {
        host,
        by: addresses,
    }
}

/// An HTTPRoute is taken when, for each status entry of our parent Gateway, `Accepted` and
/// `ResolvedRefs` are True at the route's current generation. A False one at that generation
/// is a refusal; conditions of an older generation say nothing yet.
pub fn http_route_admission(route: &DynamicObject, parent: &GatewayParentRef) -> Admission {
    let generation = route.metadata.generation;
    let namespace = route.metadata.namespace.as_deref().unwrap_or_default();
    let parents: Vec<RouteParentStatus> = field(route, &["status", "parents"]).unwrap_or_default();
    let ours: Vec<&RouteParentStatus> = parents
        .iter()
        .filter(|p| {
            let r = &p.parent_ref;
            r.kind.as_deref().unwrap_or("Gateway") == "Gateway"
                && r.name == parent.name
                && r.namespace.as_deref().unwrap_or(namespace)
                    == parent.namespace.as_deref().unwrap_or(namespace)
                && r.section_name == parent.section_name
        })
        .collect();
    let gateway = format!(
        "Gateway {}/{}",
        parent.namespace.as_deref().unwrap_or(namespace),
        parent.name
    );
    let current = |c: &&Condition| {
        generation.is_none() || c.observed_generation.is_none_or(|g| Some(g) == generation)
    };
    let controller =
        |p: &RouteParentStatus| p.controller_name.clone().unwrap_or_else(|| gateway.clone());
    for p in &ours {
        for type_ in ["Accepted", "ResolvedRefs"] {
            if let Some(c) = condition(&p.conditions, type_)
                .filter(current)
                .filter(|c| c.status == "False")
            {
                return Admission::Refused {
                    by: format!("{} for {gateway}", controller(p)),
                    reason: c.reason.clone().unwrap_or_else(|| type_.to_owned()),
                    message: c.message.clone().unwrap_or_default(),
                };
            }
        }
    }
    let holds = |p: &&RouteParentStatus| {
        ["Accepted", "ResolvedRefs"].iter().all(|t| {
            condition(&p.conditions, t)
                .filter(current)
                .is_some_and(|c| c.status == "True")
        })
    };
    if !ours.is_empty() && ours.iter().all(holds) {
        let hostnames: Vec<String> = field(route, &["spec", "hostnames"]).unwrap_or_default();
        return Admission::Admitted {
            host: hostnames.into_iter().next(),
            by: ours.iter().map(|p| controller(p)).collect(),
        };
    }
    let detail = match (ours.is_empty(), generation) {
        (true, _) => format!("{gateway} has not reported on it"),
        (false, Some(g)) => format!("{gateway} has not reported on its generation {g}"),
        (false, None) => format!("{gateway} has not reported Accepted and ResolvedRefs"),
    };
    Admission::Pending { detail }
}
