//! A Gateway API implementation for the GatewayClass `sim`: the class is Accepted, its Gateways are
//! Accepted and Programmed with one address and per-listener status, and each HTTPRoute gets one
//! `status.parents[]` entry per parentRef that names a Gateway of the class, with `Accepted` and
//! `ResolvedRefs` as the Gateway API specifies (reasons `NoMatchingParent`,
//! `NotAllowedByListeners`, `NoMatchingListenerHostname`, `BackendNotFound`, `RefNotPermitted`,
//! `InvalidKind`), each carrying the route's `observedGeneration`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::conditions::{self, Cond};
pub use super::gateway_rules::{CONTROLLER_NAME, GROUP};
use super::gateway_rules::{
    accept, listener_conditions, parent_gateway, parent_status, resolve_refs, s, same_parent,
};
use crate::apiserver::error::ApiError;
use crate::cluster::util::labels;
use crate::cluster::{
    Component, Ctx, Kind, NAMESPACES, Next, SECRETS, SERVICES, WorkloadFault, key_of,
};
use crate::store::objects::{Event, ObjKey};

pub const GATEWAYCLASSES: Kind = Kind::new(GROUP, "v1", "GatewayClass", "gatewayclasses");
pub const GATEWAYS: Kind = Kind::new(GROUP, "v1", "Gateway", "gateways");
pub const HTTPROUTES: Kind = Kind::new(GROUP, "v1", "HTTPRoute", "httproutes");
pub const CLASS_NAME: &str = "sim";
/// The address every Gateway of the class gets (TEST-NET-1, never routable).
pub const GATEWAY_IP: &str = "192.0.2.20";

fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// The GatewayClass the controller installs.
pub fn gateway_class() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": CLASS_NAME},
        "spec": {"controllerName": CONTROLLER_NAME},
    })
}

/// Gateways of the class `sim`.
fn ours(gateway: &Value) -> bool {
    s(gateway, "/spec/gatewayClassName") == CLASS_NAME
}

fn ns_labels(ctx: &Ctx, ns: &str) -> BTreeMap<String, String> {
    ctx.server
        .store
        .lock()
        .get(&NAMESPACES.res(), &(String::new(), ns.to_string()))
        .map(|n| labels(&n))
        .unwrap_or_default()
}

/// Accepts the GatewayClasses naming this controller.
pub struct GatewayClassController;

impl Component for GatewayClassController {
    fn name(&self) -> &'static str {
        "sim-gateway-controller"
    }

    fn primary(&self) -> Kind {
        GATEWAYCLASSES
    }

    fn setup(&self, ctx: &Ctx) -> Result<(), ApiError> {
        let served = ctx
            .server
            .registry()
            .lookup(GROUP, "v1", "gatewayclasses")
            .is_some();
        let mut tx = ctx.tx(self.name());
        if served && tx.get(GATEWAYCLASSES, "", CLASS_NAME).is_none() {
            tx.create(GATEWAYCLASSES, "", gateway_class())?;
        }
        Ok(())
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(gc) = tx.get_key(GATEWAYCLASSES, key) else {
            return Ok(Next::Done);
        };
        if s(&gc, "/spec/controllerName") != CONTROLLER_NAME {
            return Ok(Next::Done);
        }
        let cond = Cond::new("Accepted", true, "Accepted", "GatewayClass is accepted")
            .generation(generation(&gc));
        let conds = conditions::set(
            gc.pointer("/status/conditions").unwrap_or(&Value::Null),
            &cond,
            &ctx.clock.rfc3339(),
        );
        if gc.pointer("/status/conditions") != Some(&conds) {
            let mut next = (*gc).clone();
            next["status"]["conditions"] = conds;
            tx.update_status(GATEWAYCLASSES, next)?;
        }
        Ok(Next::Done)
    }
}

/// Programs the Gateways of the class: address, Accepted/Programmed, listener status.
pub struct GatewayController;

impl GatewayController {
    fn status(ctx: &Ctx, gw: &Value, routes: &[std::sync::Arc<Value>], now: &str) -> Value {
        let obs_gen = generation(gw);
        let gw_key = key_of(gw);
        let secret_type = |ns: &str, name: &str| {
            ctx.server
                .store
                .lock()
                .get(&SECRETS.res(), &(ns.to_string(), name.to_string()))
                .map(|sec| s(&sec, "/type").to_string())
        };
        let prev = gw.get("status").cloned().unwrap_or(json!({}));
        let mut attached: BTreeMap<String, i64> = BTreeMap::new();
        for r in routes {
            if ctx.fault(WorkloadFault::NotAdmitted, r) {
                continue;
            }
            let route_ns = s(r, "/metadata/namespace");
            let labels = ns_labels(ctx, route_ns);
            for p in r
                .pointer("/spec/parentRefs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if parent_gateway(p, route_ns) != Some(gw_key.clone()) {
                    continue;
                }
                if let Ok(names) = accept(r, p, gw, &labels) {
                    for n in names {
                        *attached.entry(n).or_default() += 1;
                    }
                }
            }
        }
        let listeners: Vec<Value> = gw
            .pointer("/spec/listeners")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|l| {
                let name = s(l, "/name");
                let prev_conds = prev
                    .get("listeners")
                    .and_then(Value::as_array)
                    .and_then(|ls| ls.iter().find(|x| s(x, "/name") == name))
                    .and_then(|x| x.get("conditions"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let http = matches!(s(l, "/protocol"), "HTTP" | "HTTPS");
                let conds = listener_conditions(l, &gw_key.0, &secret_type);
                let conds: Vec<Cond> = conds.into_iter().map(|c| c.generation(obs_gen)).collect();
                let kinds = if http {
                    json!([{"group": GROUP, "kind": "HTTPRoute"}])
                } else {
                    json!([])
                };
                json!({
                    "name": name,
                    "supportedKinds": kinds,
                    "attachedRoutes": attached.get(name).copied().unwrap_or(0),
                    "conditions": conditions::set_all(&prev_conds, &conds, now),
                })
            })
            .collect();
        let conds = [
            Cond::new("Accepted", true, "Accepted", "Gateway is accepted").generation(obs_gen),
            Cond::new("Programmed", true, "Programmed", "Gateway is programmed")
                .generation(obs_gen),
        ];
        json!({
            "addresses": [{"type": "IPAddress", "value": GATEWAY_IP}],
            "conditions": conditions::set_all(prev.get("conditions").unwrap_or(&Value::Null), &conds, now),
            "listeners": listeners,
        })
    }
}

impl Component for GatewayController {
    fn name(&self) -> &'static str {
        "sim-gateway-controller"
    }

    fn primary(&self) -> Kind {
        GATEWAYS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![HTTPROUTES, NAMESPACES, SECRETS]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if GATEWAYS.is(&event.res) {
            return vec![key_of(&event.object)];
        }
        if HTTPROUTES.is(&event.res) {
            // attachedRoutes of every Gateway the route names (before and after the change).
            let mut keys = Vec::new();
            for obj in std::iter::once(&event.object).chain(event.previous.iter()) {
                let ns = s(obj, "/metadata/namespace");
                for p in obj
                    .pointer("/spec/parentRefs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    keys.extend(parent_gateway(p, ns));
                }
            }
            return keys;
        }
        let l = ctx.server.store.lock();
        if SECRETS.is(&event.res) {
            // Gateways of the Secret's namespace whose listeners name it.
            let name = key_of(&event.object).1;
            return l
                .list(&GATEWAYS.res(), Some(&event.namespace))
                .iter()
                .filter(|g| {
                    g.pointer("/spec/listeners")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|li| li.pointer("/tls/certificateRefs")?.as_array())
                        .flatten()
                        .any(|r| s(r, "/name") == name)
                })
                .map(|g| key_of(g))
                .collect();
        }
        l.list(&GATEWAYS.res(), None)
            .iter()
            .map(|g| key_of(g))
            .collect()
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let routes = ctx.server.store.lock().list(&HTTPROUTES.res(), None);
        let gw = {
            let tx = ctx.tx(self.name());
            tx.get_key(GATEWAYS, key)
        };
        let Some(gw) = gw else {
            return Ok(Next::Done);
        };
        if !ours(&gw) {
            return Ok(Next::Done);
        }
        let status = Self::status(ctx, &gw, &routes, &ctx.clock.rfc3339());
        let mut tx = ctx.tx(self.name());
        if let Some(current) = tx.get_key(GATEWAYS, key)
            && current.get("status") != Some(&status)
        {
            let mut next = (*current).clone();
            next["status"] = status;
            tx.update_status(GATEWAYS, next)?;
        }
        Ok(Next::Done)
    }
}

/// Writes the HTTPRoutes' `status.parents[]` for Gateways of the class.
pub struct HttpRouteController;

impl Component for HttpRouteController {
    fn name(&self) -> &'static str {
        "sim-gateway-controller"
    }

    fn primary(&self) -> Kind {
        HTTPROUTES
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![GATEWAYS, SERVICES, NAMESPACES]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if HTTPROUTES.is(&event.res) {
            return vec![key_of(&event.object)];
        }
        let changed = key_of(&event.object);
        let l = ctx.server.store.lock();
        l.list(&HTTPROUTES.res(), None)
            .iter()
            .filter(|r| {
                let ns = s(r, "/metadata/namespace");
                if GATEWAYS.is(&event.res) {
                    r.pointer("/spec/parentRefs")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .any(|p| parent_gateway(p, ns) == Some(changed.clone()))
                } else if SERVICES.is(&event.res) {
                    ns == changed.0
                } else {
                    ns == changed.1
                }
            })
            .map(|r| key_of(r))
            .collect()
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let labels = ns_labels(ctx, &key.0);
        let mut tx = ctx.tx(self.name());
        let Some(route) = tx.get_key(HTTPROUTES, key) else {
            return Ok(Next::Done);
        };
        let obs_gen = generation(&route);
        let now = ctx.clock.rfc3339();
        let faulted = ctx.fault(WorkloadFault::NotAdmitted, &route);
        let exists = |ns: &str, name: &str| tx.get(SERVICES, ns, name).is_some();
        let resolved = resolve_refs(&route, &exists);
        let existing: Vec<Value> = route
            .pointer("/status/parents")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        // Entries of other controllers stay; ours are rebuilt from the parentRefs.
        let mut parents: Vec<Value> = existing
            .iter()
            .filter(|p| s(p, "/controllerName") != CONTROLLER_NAME)
            .cloned()
            .collect();
        for p in route
            .pointer("/spec/parentRefs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some((gns, gname)) = parent_gateway(p, &key.0) else {
                continue;
            };
            let Some(gw) = tx.get(GATEWAYS, &gns, &gname) else {
                continue;
            };
            if !ours(&gw) {
                continue;
            }
            let accepted = if faulted {
                Err((
                    "NotAllowedByListeners",
                    "Route is not accepted: the simulated fault NotAdmitted is set".to_string(),
                ))
            } else {
                accept(&route, p, &gw, &labels)
            };
            let prev = existing.iter().find(|e| {
                s(e, "/controllerName") == CONTROLLER_NAME
                    && e.get("parentRef").is_some_and(|r| same_parent(r, p))
            });
            parents.push(parent_status(prev, p, &accepted, &resolved, obs_gen, &now));
        }
        let mut status = route.get("status").cloned().unwrap_or(json!({}));
        status["parents"] = Value::Array(parents);
        if route.get("status") != Some(&status) {
            let mut next = (*route).clone();
            next["status"] = status;
            tx.update_status(HTTPROUTES, next)?;
        }
        Ok(Next::Done)
    }
}
