//! The scheduler (`default-scheduler`): binds a pending Pod to a Node that passes the filters
//! the real scheduler runs first (unschedulable nodes, readiness taint, the node's taints
//! against the Pod's tolerations, nodeSelector and required node affinity, resources fit, bound
//! PersistentVolumeClaims), preferring the least allocated node; otherwise writes
//! `PodScheduled=False` `Unschedulable` with the scheduler's message
//! (`0/3 nodes are available: 3 Insufficient cpu.`) and a `FailedScheduling` Event. Pending
//! Pods are retried when Nodes or claims change and when a Pod leaves a Node.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use rand::RngExt;
use serde_json::{Value, json};

use super::util::{self, is_deleting, is_terminal, labels, pod_requests, str_at};
use super::{Component, Ctx, EventKind, Kind, NODES, Next, PODS, Tx, key_of};
use crate::apiserver::error::ApiError;
use crate::store::objects::{Event, EventType, ObjKey};

pub const PVCS: Kind = Kind::new("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims");
const NAME: &str = "default-scheduler";
/// Unschedulable Pods are tried again at least this often (the real queue flushes them too).
const RETRY: Duration = Duration::from_secs(30);

/// What the scheduler knows of bound Pods: node and requests, kept from the change stream so
/// a decision does not scan every Pod.
#[derive(Default)]
struct Cache {
    bound: HashMap<ObjKey, (String, i64, i64)>,
    /// Sum of `bound` per node, kept in step with it.
    usage: HashMap<String, Usage>,
    /// Pods that did not fit, woken when capacity may have appeared.
    pending: BTreeSet<ObjKey>,
}

impl Cache {
    fn bind(&mut self, key: ObjKey, node: String, cpu: i64, mem: i64) {
        self.unbind(&key);
        let u = self.usage.entry(node.clone()).or_default();
        u.cpu += cpu;
        u.memory += mem;
        u.pods += 1;
        self.bound.insert(key, (node, cpu, mem));
    }

    /// Forget a bound pod; true if it was bound.
    fn unbind(&mut self, key: &ObjKey) -> bool {
        let Some((node, cpu, mem)) = self.bound.remove(key) else {
            return false;
        };
        if let Some(u) = self.usage.get_mut(&node) {
            u.cpu -= cpu;
            u.memory -= mem;
            u.pods -= 1;
        }
        true
    }
}

#[derive(Default)]
pub struct Scheduler {
    cache: Mutex<Cache>,
}

#[derive(Default, Clone, Copy)]
struct Usage {
    cpu: i64,
    memory: i64,
    pods: i64,
}

fn occupies_node(pod: &Value) -> Option<String> {
    let node = str_at(pod, "/spec/nodeName")?;
    (!is_terminal(pod)).then(|| node.to_string())
}

impl Scheduler {
    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn track(&self, pod: &Value, gone: bool) -> bool {
        let key = key_of(pod);
        let mut cache = self.cache();
        match occupies_node(pod).filter(|_| !gone) {
            Some(node) => {
                if cache.bound.get(&key).is_none_or(|(n, _, _)| *n != node) {
                    let (cpu, mem) = pod_requests(pod);
                    cache.bind(key, node, cpu, mem);
                }
                false
            }
            None => cache.unbind(&key),
        }
    }

    fn rebuild(&self, tx: &Tx<'_>) {
        let mut cache = self.cache();
        cache.bound.clear();
        cache.usage.clear();
        for pod in tx.list(PODS, None) {
            if let Some(node) = occupies_node(&pod) {
                let (cpu, mem) = pod_requests(&pod);
                cache.bind(key_of(&pod), node, cpu, mem);
            }
        }
    }
}

/// Why a pod cannot go anywhere before nodes are even looked at (PreFilter failures).
fn claims_problem(tx: &Tx<'_>, pod: &Value, ns: &str) -> Option<String> {
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array)?;
    for v in volumes {
        let Some(claim) = str_at(v, "/persistentVolumeClaim/claimName") else {
            continue;
        };
        match tx.get(PVCS, ns, claim) {
            None => return Some(format!("persistentvolumeclaim \"{claim}\" not found")),
            Some(pvc) if is_deleting(&pvc) => {
                return Some(format!(
                    "persistentvolumeclaim \"{claim}\" is being deleted"
                ));
            }
            Some(pvc) if util::phase(&pvc) != "Bound" => {
                return Some("pod has unbound immediate PersistentVolumeClaims".to_string());
            }
            Some(_) => {}
        }
    }
    None
}

fn node_ready(node: &Value) -> bool {
    util::condition_true(node, "Ready")
}

/// The filter reasons of one node, in the scheduler's plugin order; empty when it fits.
fn node_reasons(node: &Value, pod: &Value, used: Usage, req: (i64, i64)) -> Vec<String> {
    if node.pointer("/spec/unschedulable") == Some(&json!(true)) {
        return vec!["node(s) were unschedulable".into()];
    }
    if !node_ready(node) {
        return vec!["node(s) had untolerated taint {node.kubernetes.io/not-ready: }".into()];
    }
    if let Some(taint) = untolerated_taint(node, pod) {
        return vec![taint];
    }
    if !node_affinity_matches(node, pod) {
        return vec!["node(s) didn't match Pod's node affinity/selector".into()];
    }
    let alloc = |r: &str, f: fn(&Value) -> i64| {
        node.pointer(&format!("/status/allocatable/{r}"))
            .map(f)
            .unwrap_or(0)
    };
    let mut out = Vec::new();
    if used.pods + 1 > alloc("pods", util::count) {
        out.push("Too many pods".into());
    }
    if req.0 > 0 && used.cpu + req.0 > alloc("cpu", util::cpu_millis) {
        out.push("Insufficient cpu".into());
    }
    if req.1 > 0 && used.memory + req.1 > alloc("memory", util::bytes) {
        out.push("Insufficient memory".into());
    }
    out
}

/// TaintToleration's filter: the node's first `NoSchedule` or `NoExecute` taint no toleration
/// of the Pod tolerates, in the plugin's words (`PreferNoSchedule` only scores).
fn untolerated_taint(node: &Value, pod: &Value) -> Option<String> {
    let taints = node.pointer("/spec/taints").and_then(Value::as_array)?;
    let tolerations = pod
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    taints
        .iter()
        .filter(|t| matches!(str_at(t, "/effect"), Some("NoSchedule" | "NoExecute")))
        .find(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
        .map(|t| {
            format!(
                "node(s) had untolerated taint {{{}: {}}}",
                str_at(t, "/key").unwrap_or(""),
                str_at(t, "/value").unwrap_or("")
            )
        })
}

/// `Toleration.ToleratesTaint` of k8s.io/api: an empty effect or key matches any; `Exists`
/// any value, `Equal` (or no operator) the same value.
fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let field = |v: &Value, f: &str| str_at(v, f).unwrap_or("").to_string();
    let effect = field(toleration, "/effect");
    if !effect.is_empty() && effect != field(taint, "/effect") {
        return false;
    }
    let key = field(toleration, "/key");
    if !key.is_empty() && key != field(taint, "/key") {
        return false;
    }
    match str_at(toleration, "/operator").unwrap_or("") {
        "" | "Equal" => field(toleration, "/value") == field(taint, "/value"),
        "Exists" => true,
        _ => false,
    }
}

/// NodeAffinity's filter: the Pod's `nodeSelector` and, when it has one, its required node
/// affinity (any term whose expressions and fields all match; an empty term matches nothing).
fn node_affinity_matches(node: &Value, pod: &Value) -> bool {
    let node_labels = labels(node);
    let selector_ok = pod
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .is_none_or(|sel| {
            sel.iter().all(|(k, v)| {
                v.as_str()
                    .is_some_and(|v| node_labels.get(k).is_some_and(|l| l == v))
            })
        });
    let Some(terms) = pod
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
    else {
        return selector_ok;
    };
    let name = str_at(node, "/metadata/name").unwrap_or("");
    let fields = BTreeMap::from([("metadata.name".to_string(), name.to_string())]);
    let all = |term: &Value, list: &str, values: &BTreeMap<String, String>| {
        term.get(list)
            .and_then(Value::as_array)
            .is_none_or(|reqs| reqs.iter().all(|r| requirement_matches(r, values)))
    };
    let term_ok = |term: &Value| {
        let empty = ["matchExpressions", "matchFields"].iter().all(|l| {
            term.get(*l)
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
        });
        !empty && all(term, "matchExpressions", &node_labels) && all(term, "matchFields", &fields)
    };
    selector_ok && terms.iter().any(term_ok)
}

/// One node selector requirement against a node's labels (or fields).
fn requirement_matches(req: &Value, values: &BTreeMap<String, String>) -> bool {
    let key = str_at(req, "/key").unwrap_or("");
    let wanted: Vec<&str> = req
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let have = values.get(key).map(String::as_str);
    let number = |s: &str| s.parse::<i64>().ok();
    match str_at(req, "/operator").unwrap_or("") {
        "In" => have.is_some_and(|h| wanted.contains(&h)),
        "NotIn" => have.is_none_or(|h| !wanted.contains(&h)),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        "Gt" => {
            matches!((have.and_then(number), wanted.first().and_then(|w| number(w))), (Some(h), Some(w)) if h > w)
        }
        "Lt" => {
            matches!((have.and_then(number), wanted.first().and_then(|w| number(w))), (Some(h), Some(w)) if h < w)
        }
        _ => false,
    }
}

/// `0/N nodes are available: 2 Insufficient cpu, 1 node(s) didn't match ....` — reasons with
/// their node counts, sorted as the scheduler sorts them.
pub fn fit_error(nodes: usize, reasons: &BTreeMap<String, usize>) -> String {
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!("0/{nodes} nodes are available: {}.", parts.join(", "))
}

impl Component for Scheduler {
    fn name(&self) -> &'static str {
        NAME
    }

    fn primary(&self) -> Kind {
        PODS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![NODES, PVCS]
    }

    fn map(&self, _ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if PODS.is(&event.res) {
            let gone = event.kind == EventType::Deleted;
            let freed = self.track(&event.object, gone);
            let mut keys = vec![key_of(&event.object)];
            if freed {
                keys.extend(self.cache().pending.iter().cloned());
            }
            return keys;
        }
        let cache = self.cache();
        if PVCS.is(&event.res) {
            return cache
                .pending
                .iter()
                .filter(|(ns, _)| *ns == event.namespace)
                .cloned()
                .collect();
        }
        cache.pending.iter().cloned().collect()
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(NAME);
        let Some(pod) = tx.get_key(PODS, key) else {
            let mut cache = self.cache();
            cache.pending.remove(key);
            cache.unbind(key);
            return Ok(Next::Done);
        };
        let scheduler = str_at(&pod, "/spec/schedulerName").unwrap_or(NAME);
        if str_at(&pod, "/spec/nodeName").is_some()
            || is_deleting(&pod)
            || is_terminal(&pod)
            || scheduler != NAME
        {
            self.cache().pending.remove(key);
            return Ok(Next::Done);
        }
        let mut nodes = tx.list(NODES, None);
        nodes.sort_by_key(|n| key_of(n).1);
        let req = pod_requests(&pod);
        let choice = match claims_problem(&tx, &pod, &key.0) {
            Some(problem) => Err(format!("0/{} nodes are available: {problem}.", nodes.len())),
            None => {
                let mut found = self.pick(ctx, &nodes, &pod, req);
                if found.is_err() {
                    // The cache may have missed a change; decide a refusal on exact data.
                    self.rebuild(&tx);
                    found = self.pick(ctx, &nodes, &pod, req);
                }
                found
            }
        };
        match choice {
            Ok(node) => {
                self.bind(ctx, &mut tx, &pod, &node)?;
                let mut cache = self.cache();
                cache.pending.remove(key);
                cache.bind(key.clone(), node, req.0, req.1);
                Ok(Next::Done)
            }
            Err(message) => {
                self.cache().pending.insert(key.clone());
                let now = ctx.clock.rfc3339();
                let mut next = (*pod).clone();
                next["status"]["phase"] = json!("Pending");
                util::set_condition(
                    &mut next["status"],
                    "PodScheduled",
                    "False",
                    "Unschedulable",
                    &message,
                    &now,
                    &[("lastProbeTime", Value::Null)],
                );
                let stored = tx.update_status(PODS, next)?;
                tx.event(
                    &stored,
                    EventKind::Warning,
                    "FailedScheduling",
                    &message,
                    None,
                )?;
                Ok(Next::After(RETRY))
            }
        }
    }
}

impl Scheduler {
    /// The least allocated feasible node (ties broken by the seeded random source), or the
    /// scheduler's refusal message.
    fn pick(
        &self,
        ctx: &Ctx,
        nodes: &[std::sync::Arc<Value>],
        pod: &Value,
        req: (i64, i64),
    ) -> Result<String, String> {
        if nodes.is_empty() {
            return Err("no nodes available to schedule pods".to_string());
        }
        let cache = self.cache();
        let usage = &cache.usage;
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut best: Vec<(String, i64)> = Vec::new();
        for node in nodes {
            let name = key_of(node).1;
            let used = usage.get(&name).copied().unwrap_or_default();
            let why = node_reasons(node, pod, used, req);
            if why.is_empty() {
                let cpu =
                    util::cpu_millis(node.pointer("/status/allocatable/cpu").unwrap_or(&json!(0)))
                        .max(1);
                let mem = util::bytes(
                    node.pointer("/status/allocatable/memory")
                        .unwrap_or(&json!(0)),
                )
                .max(1);
                let pods = util::count(
                    node.pointer("/status/allocatable/pods")
                        .unwrap_or(&json!(0)),
                )
                .max(1);
                // LeastAllocated: the mean share in use after placing the pod (lower wins).
                let score = ((used.cpu + req.0) * 1000 / cpu)
                    + ((used.memory + req.1) * 1000 / mem)
                    + ((used.pods + 1) * 1000 / pods);
                best.push((name, score));
            }
            for r in why {
                *reasons.entry(r).or_default() += 1;
            }
        }
        let Some(low) = best.iter().map(|(_, s)| *s).min() else {
            return Err(fit_error(nodes.len(), &reasons));
        };
        let top: Vec<&String> = best
            .iter()
            .filter(|(_, s)| *s == low)
            .map(|(n, _)| n)
            .collect();
        let i = ctx.rng_for(NAME, |r| r.random_range(0..top.len()));
        Ok(top[i].clone())
    }

    fn bind(&self, ctx: &Ctx, tx: &mut Tx<'_>, pod: &Value, node: &str) -> Result<(), ApiError> {
        let now = ctx.clock.rfc3339();
        let mut bound = pod.clone();
        bound["spec"]["nodeName"] = json!(node);
        let bound = tx.update(PODS, bound)?;
        let mut next = (*bound).clone();
        util::set_condition(
            &mut next["status"],
            "PodScheduled",
            "True",
            "",
            "",
            &now,
            &[("lastProbeTime", Value::Null)],
        );
        if next["status"].get("phase").is_none() {
            next["status"]["phase"] = json!("Pending");
        }
        let stored = tx.update_status(PODS, next)?;
        let (ns, name) = key_of(&stored);
        tx.event(
            &stored,
            EventKind::Normal,
            "Scheduled",
            &format!("Successfully assigned {ns}/{name} to {node}"),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_errors_read_like_the_scheduler() {
        let reasons: BTreeMap<String, usize> = [("Insufficient cpu".to_string(), 3)].into();
        assert_eq!(
            fit_error(3, &reasons),
            "0/3 nodes are available: 3 Insufficient cpu."
        );
        let reasons: BTreeMap<String, usize> = [
            (
                "node(s) didn't match Pod's node affinity/selector".to_string(),
                1,
            ),
            ("Insufficient memory".to_string(), 2),
        ]
        .into();
        assert_eq!(
            fit_error(3, &reasons),
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient memory."
        );
    }

    #[test]
    fn node_filters_follow_plugin_order() {
        let node = json!({"metadata": {"labels": {"disk": "ssd"}},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]}});
        let pod = json!({"spec": {"nodeSelector": {"disk": "hdd"}}});
        assert_eq!(
            node_reasons(&node, &pod, Usage::default(), (0, 0)),
            vec!["node(s) didn't match Pod's node affinity/selector"]
        );
        let pod = json!({"spec": {}});
        let used = Usage {
            cpu: 3500,
            memory: 0,
            pods: 110,
        };
        assert_eq!(
            node_reasons(&node, &pod, used, (1000, 0)),
            vec!["Too many pods", "Insufficient cpu"]
        );
        assert!(node_reasons(&node, &pod, Usage::default(), (4000, 1 << 30)).is_empty());
    }

    #[test]
    fn taints_need_a_toleration_and_node_affinity_is_required() {
        let node = json!({"metadata": {"name": "sim-node-1", "labels": {"zone": "a", "cores": "8"}},
            "spec": {"taints": [
                {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
                {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]}});
        let reasons = |pod: Value| node_reasons(&node, &pod, Usage::default(), (0, 0));
        assert_eq!(
            reasons(json!({"spec": {}})),
            vec!["node(s) had untolerated taint {dedicated: db}"]
        );
        for tol in [
            json!({"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}),
            json!({"key": "dedicated", "operator": "Exists"}),
            json!({"operator": "Exists"}),
            json!({"key": "dedicated", "value": "db"}),
        ] {
            assert!(
                reasons(json!({"spec": {"tolerations": [tol]}})).is_empty(),
                "{tol}"
            );
        }
        for tol in [
            json!({"key": "dedicated", "operator": "Equal", "value": "web"}),
            json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}),
            json!({"key": "other", "operator": "Exists"}),
        ] {
            assert_eq!(
                reasons(json!({"spec": {"tolerations": [tol]}})).len(),
                1,
                "{tol}"
            );
        }
        let tolerated = json!({"operator": "Exists"});
        let affinity = |term: Value| {
            json!({"spec": {"tolerations": [tolerated], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}}})
        };
        let fits = |term: Value| reasons(affinity(term)).is_empty();
        assert!(fits(
            json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]})
        ));
        assert!(!fits(
            json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]})
        ));
        assert!(fits(
            json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]})
        ));
        assert!(!fits(
            json!({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]})
        ));
        assert!(fits(
            json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["sim-node-1"]}]})
        ));
        assert!(!fits(json!({})));
        assert_eq!(
            reasons(affinity(
                json!({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]})
            )),
            vec!["node(s) didn't match Pod's node affinity/selector"]
        );
    }
}
