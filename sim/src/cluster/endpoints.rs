//! The endpoints controller: for every Service with a selector, an Endpoints object of the same
//! name listing the selected Pods that have an IP: ready ones in `addresses`, the others in
//! `notReadyAddresses`, each with `nodeName` and a `targetRef`, and the Service's ports with
//! `targetPort` resolved (named ports looked up in the Pod's containers); and the Service's
//! EndpointSlice with the same Pods.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use serde_json::{Value, json};

use super::util::{self, is_deleting, is_ready, is_terminal, str_at};
use super::{Component, Ctx, ENDPOINTS, Kind, Next, PODS, SERVICES, key_of};
use crate::apiserver::error::ApiError;
use crate::store::objects::{Event, EventType, ObjKey};

const NAME: &str = "endpoint-controller";

/// Services by one label pair of their selector, so a Pod change finds its Services without
/// looking at every Service of the namespace.
#[derive(Default)]
struct SelectorIndex {
    by_pair: HashMap<(String, String, String), BTreeSet<ObjKey>>,
    selectors: HashMap<ObjKey, BTreeMap<String, String>>,
}

impl SelectorIndex {
    fn set(&mut self, key: &ObjKey, selector: Option<BTreeMap<String, String>>) {
        if let Some(old) = self.selectors.remove(key)
            && let Some((k, v)) = old.iter().next()
        {
            let pair = (key.0.clone(), k.clone(), v.clone());
            if let Some(set) = self.by_pair.get_mut(&pair) {
                set.remove(key);
                if set.is_empty() {
                    self.by_pair.remove(&pair);
                }
            }
        }
        if let Some(sel) = selector.filter(|s| !s.is_empty()) {
            if let Some((k, v)) = sel.iter().next() {
                self.by_pair
                    .entry((key.0.clone(), k.clone(), v.clone()))
                    .or_default()
                    .insert(key.clone());
            }
            self.selectors.insert(key.clone(), sel);
        }
    }

    /// Services of `ns` whose whole selector matches `labels`.
    fn matching(&self, ns: &str, labels: &BTreeMap<String, String>, out: &mut BTreeSet<ObjKey>) {
        for (k, v) in labels {
            let Some(set) = self.by_pair.get(&(ns.to_string(), k.clone(), v.clone())) else {
                continue;
            };
            for svc in set {
                let fits = self
                    .selectors
                    .get(svc)
                    .is_some_and(|sel| sel.iter().all(|(sk, sv)| labels.get(sk) == Some(sv)));
                if fits {
                    out.insert(svc.clone());
                }
            }
        }
    }
}

fn selector_of(svc: &Value) -> Option<BTreeMap<String, String>> {
    svc.pointer("/spec/selector")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
}

#[derive(Default)]
pub struct Endpoints {
    index: Mutex<SelectorIndex>,
}

impl Endpoints {
    fn index(&self) -> std::sync::MutexGuard<'_, SelectorIndex> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The container port a Service port targets on this Pod (`None`: a named port it lacks).
fn target_port(pod: &Value, port: &Value) -> Option<i64> {
    match port.get("targetPort") {
        None => port.get("port").and_then(Value::as_i64),
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) => pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)?
            .iter()
            .flat_map(|c| {
                c.get("ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.get("containerPort").and_then(Value::as_i64)),
        Some(_) => None,
    }
}

fn address(pod: &Value) -> Value {
    let mut a = json!({
        "ip": str_at(pod, "/status/podIP").unwrap_or(""),
        "targetRef": {
            "kind": "Pod",
            "namespace": str_at(pod, "/metadata/namespace").unwrap_or(""),
            "name": str_at(pod, "/metadata/name").unwrap_or(""),
            "uid": str_at(pod, "/metadata/uid").unwrap_or(""),
        },
    });
    if let Some(n) = str_at(pod, "/spec/nodeName") {
        a["nodeName"] = json!(n);
    }
    a
}

type Subset = (Vec<Value>, Vec<Value>, Vec<Value>);

/// Subsets grouped by resolved port set, addresses sorted by IP.
fn subsets(svc: &Value, pods: &[std::sync::Arc<Value>]) -> Vec<Value> {
    let ports: Vec<Value> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let publish = svc.pointer("/spec/publishNotReadyAddresses") == Some(&json!(true));
    // resolved ports (as text) -> (ready addresses, not-ready addresses, ports)
    let mut groups: BTreeMap<String, Subset> = BTreeMap::new();
    for pod in pods {
        let resolved: Option<Vec<Value>> = ports
            .iter()
            .map(|p| {
                let mut out = json!({
                    "port": target_port(pod, p)?,
                    "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP")),
                });
                if let Some(n) = p
                    .get("name")
                    .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
                {
                    out["name"] = n.clone();
                }
                if let Some(a) = p.get("appProtocol") {
                    out["appProtocol"] = a.clone();
                }
                Some(out)
            })
            .collect();
        let Some(resolved) = resolved else { continue };
        let group = groups
            .entry(serde_json::to_string(&resolved).unwrap_or_default())
            .or_insert_with(|| (Vec::new(), Vec::new(), resolved));
        if is_ready(pod) || publish {
            group.0.push(address(pod));
        } else {
            group.1.push(address(pod));
        }
    }
    groups
        .into_values()
        .map(|(mut ready, mut unready, ports)| {
            let by_ip = |a: &Value, b: &Value| a["ip"].as_str().cmp(&b["ip"].as_str());
            ready.sort_by(by_ip);
            unready.sort_by(by_ip);
            let mut s = json!({});
            if !ready.is_empty() {
                s["addresses"] = Value::Array(ready);
            }
            if !unready.is_empty() {
                s["notReadyAddresses"] = Value::Array(unready);
            }
            if !ports.is_empty() {
                s["ports"] = Value::Array(ports);
            }
            s
        })
        .collect()
}

impl Component for Endpoints {
    fn name(&self) -> &'static str {
        NAME
    }

    fn primary(&self) -> Kind {
        SERVICES
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![PODS]
    }

    fn map(&self, _ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        let key = key_of(&event.object);
        if SERVICES.is(&event.res) {
            let selector = (event.kind != EventType::Deleted)
                .then(|| selector_of(&event.object))
                .flatten();
            self.index().set(&key, selector);
            return vec![key];
        }
        let mut out = BTreeSet::new();
        let index = self.index();
        index.matching(&event.namespace, &util::labels(&event.object), &mut out);
        if let Some(before) = &event.previous {
            index.matching(&event.namespace, &util::labels(before), &mut out);
        }
        out.into_iter().collect()
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(NAME);
        let stored = tx.get_key(SERVICES, key);
        // A resync reconciles every Service: the index catches up with missed changes here.
        self.index()
            .set(key, stored.as_deref().and_then(selector_of));
        let Some(svc) = stored else {
            if tx.get_key(ENDPOINTS, key).is_some() {
                tx.delete(ENDPOINTS, &key.0, &key.1)?;
            }
            return Ok(Next::Done);
        };
        let selector = svc.pointer("/spec/selector");
        if selector
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty())
        {
            return Ok(Next::Done); // endpoints of a selector-less Service are the user's
        }
        let pods: Vec<_> = tx
            .list(PODS, Some(&key.0))
            .into_iter()
            .filter(|p| util::map_selector_matches(selector, &util::labels(p)))
            .filter(|p| str_at(p, "/status/podIP").is_some() && !is_terminal(p) && !is_deleting(p))
            .collect();
        let subsets = subsets(&svc, &pods);
        let mut labels = svc
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or(json!({}));
        if str_at(&svc, "/spec/clusterIP") == Some("None") {
            labels["service.kubernetes.io/headless"] = json!("");
        }
        let mut body = match tx.get_key(ENDPOINTS, key) {
            Some(existing) => (*existing).clone(),
            None => json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": key.1, "namespace": key.0}}),
        };
        let unchanged = body.get("subsets") == Some(&json!(subsets))
            || (subsets.is_empty() && body.get("subsets").is_none());
        if !unchanged {
            body["metadata"]["annotations"] = json!({
                "endpoints.kubernetes.io/last-change-trigger-time": ctx.clock.rfc3339(),
            });
        }
        if labels.as_object().is_some_and(|m| !m.is_empty()) {
            body["metadata"]["labels"] = labels;
        }
        match body.as_object_mut() {
            Some(m) if subsets.is_empty() => {
                m.remove("subsets");
            }
            Some(m) => {
                m.insert("subsets".into(), Value::Array(subsets));
            }
            None => {}
        }
        if body.pointer("/metadata/uid").is_some() {
            tx.update(ENDPOINTS, body)?;
        } else {
            tx.create(ENDPOINTS, &key.0, body)?;
        }
        write_slice(ctx, &mut tx, &svc, &pods)?;
        Ok(Next::Done)
    }
}

pub const ENDPOINT_SLICES: Kind =
    Kind::new("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices");
const SLICE_MANAGER: &str = "endpointslice-controller.k8s.io";

/// The Service's EndpointSlice (one per Service here), as the endpointslice controller writes
/// it: `kubernetes.io/service-name` and managed-by labels, owned by the Service, one endpoint
/// per Pod with `ready` / `serving` / `terminating` conditions.
fn write_slice(
    ctx: &Ctx,
    tx: &mut super::Tx<'_>,
    svc: &Value,
    pods: &[std::sync::Arc<Value>],
) -> Result<(), ApiError> {
    let (ns, name) = key_of(svc);
    let uid = str_at(svc, "/metadata/uid").unwrap_or("").to_string();
    let existing = tx.dependents(&uid, ENDPOINT_SLICES).into_iter().next();
    let publish = svc.pointer("/spec/publishNotReadyAddresses") == Some(&json!(true));
    let svc_ports: Vec<Value> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ports: Vec<Value> = pods
        .first()
        .map(|pod| {
            svc_ports
                .iter()
                .filter_map(|p| {
                    Some(json!({
                        "name": p.get("name").cloned().unwrap_or(json!("")),
                        "port": target_port(pod, p)?,
                        "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP")),
                    }))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut endpoints: Vec<Value> = pods
        .iter()
        .map(|pod| {
            let ready = is_ready(pod) || publish;
            let mut e = json!({
                "addresses": [str_at(pod, "/status/podIP").unwrap_or("")],
                "conditions": {"ready": ready, "serving": is_ready(pod), "terminating": false},
                "targetRef": address(pod)["targetRef"].clone(),
            });
            if let Some(n) = str_at(pod, "/spec/nodeName") {
                e["nodeName"] = json!(n);
            }
            e
        })
        .collect();
    endpoints.sort_by(|a, b| a["addresses"][0].as_str().cmp(&b["addresses"][0].as_str()));
    let mut labels = svc
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    if !labels.is_object() {
        labels = json!({});
    }
    labels["kubernetes.io/service-name"] = json!(name);
    labels["endpointslice.kubernetes.io/managed-by"] = json!(SLICE_MANAGER);
    let mut body = match &existing {
        Some(s) => (**s).clone(),
        None => json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"generateName": format!("{name}-"), "namespace": ns,
                "ownerReferences": [util::controller_ref(svc, "v1", "Service")]},
            "addressType": "IPv4",
        }),
    };
    let changed = body.get("endpoints") != Some(&json!(endpoints))
        || body.get("ports") != Some(&json!(ports));
    if !changed && existing.is_some() {
        return Ok(());
    }
    body["metadata"]["labels"] = labels;
    body["metadata"]["annotations"] = json!({
        "endpoints.kubernetes.io/last-change-trigger-time": ctx.clock.rfc3339(),
    });
    body["endpoints"] = Value::Array(endpoints);
    body["ports"] = Value::Array(ports);
    if existing.is_some() {
        tx.update(ENDPOINT_SLICES, body)?;
    } else {
        tx.create(ENDPOINT_SLICES, &ns, body)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_index_finds_services_by_any_label_pair() {
        let mut idx = SelectorIndex::default();
        let web = ("a".to_string(), "web".to_string());
        let sel: BTreeMap<String, String> = [
            ("app".into(), "web".into()),
            ("tier".into(), "front".into()),
        ]
        .into();
        idx.set(&web, Some(sel));
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let mut out = BTreeSet::new();
        idx.matching(
            "a",
            &labels(&[("app", "web"), ("tier", "front"), ("x", "y")]),
            &mut out,
        );
        assert_eq!(out.len(), 1);
        out.clear();
        idx.matching("a", &labels(&[("app", "web")]), &mut out);
        assert!(out.is_empty(), "the whole selector must match");
        idx.matching("b", &labels(&[("app", "web"), ("tier", "front")]), &mut out);
        assert!(out.is_empty(), "other namespace");
        idx.set(&web, None);
        idx.matching("a", &labels(&[("app", "web"), ("tier", "front")]), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn named_target_ports_resolve_per_pod() {
        let pod = json!({"spec": {"containers": [{"name": "a", "ports": [{"name": "http", "containerPort": 8080}]}]}});
        assert_eq!(
            target_port(&pod, &json!({"port": 80, "targetPort": "http"})),
            Some(8080)
        );
        assert_eq!(
            target_port(&pod, &json!({"port": 80, "targetPort": 9090})),
            Some(9090)
        );
        assert_eq!(target_port(&pod, &json!({"port": 80})), Some(80));
        assert_eq!(
            target_port(&pod, &json!({"port": 80, "targetPort": "grpc"})),
            None
        );
    }
}
