//! ResourceQuota: the admission check (403 `exceeded quota: NAME, requested: ..., used: ...,
//! limited: ...` and `failed quota: NAME: must specify ...`) and the controller keeping
//! `status.hard` / `status.used` current.
//!
//! A quota on compute resources refuses Pods whose containers (init containers too) do not
//! state them: `failed quota: NAME: must specify requests.cpu,requests.memory`.
//!
//! Usage is counted from the store at each decision (exact, no pending charges), for `pods`,
//! `requests.cpu`/`cpu`, `requests.memory`/`memory`, `limits.cpu`, `limits.memory`,
//! `requests.storage`, the object counts (`services`, `secrets`, `configmaps`,
//! `persistentvolumeclaims`, `resourcequotas`) and `count/<resource>[.<group>]`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::util::{self, is_terminal};
use super::{Component, Ctx, Kind, Next, key_of};
use crate::apiserver::error::ApiError;
use crate::apiserver::ops::meta_str;
use crate::store::objects::{Event, Locked, ObjKey};
use crate::store::resources::ResourceInfo;

pub const QUOTAS: Kind = Kind::new("", "v1", "ResourceQuota", "resourcequotas");
const NAME: &str = "resourcequota-controller";

/// How a quota key is measured: by kind `(group, plural)` and what of it.
#[derive(Debug, Clone, PartialEq)]
enum Measure {
    Count(String, String),
    PodCpu(bool),
    PodMemory(bool),
    Storage,
    Unknown,
}

fn measure(key: &str) -> Measure {
    let core = |p: &str| Measure::Count(String::new(), p.to_string());
    match key {
        "pods" => core("pods"),
        "services"
        | "secrets"
        | "configmaps"
        | "persistentvolumeclaims"
        | "resourcequotas"
        | "replicationcontrollers" => core(key),
        "cpu" | "requests.cpu" => Measure::PodCpu(false),
        "limits.cpu" => Measure::PodCpu(true),
        "memory" | "requests.memory" => Measure::PodMemory(false),
        "limits.memory" => Measure::PodMemory(true),
        "requests.storage" => Measure::Storage,
        _ => match key.strip_prefix("count/") {
            Some(rest) => match rest.split_once('.') {
                Some((plural, group)) => Measure::Count(group.to_string(), plural.to_string()),
                None => core(rest),
            },
            None => Measure::Unknown,
        },
    }
}

fn is_cpu(key: &str) -> bool {
    matches!(measure(key), Measure::PodCpu(_))
}

fn is_bytes(key: &str) -> bool {
    matches!(measure(key), Measure::PodMemory(_) | Measure::Storage)
}

/// `hard` read as numbers in the key's unit (millicores, bytes, counts).
fn amount(key: &str, q: &Value) -> i64 {
    if is_cpu(key) {
        util::cpu_millis(q)
    } else if is_bytes(key) {
        util::bytes(q)
    } else {
        util::count(q)
    }
}

fn format(key: &str, n: i64) -> String {
    if is_cpu(key) {
        util::format_cpu(n)
    } else if is_bytes(key) {
        util::format_bytes(n)
    } else {
        n.to_string()
    }
}

/// What one object adds to `key` (0 when the key does not concern it).
fn charge(key: &str, group: &str, plural: &str, obj: &Value) -> i64 {
    let pod = group.is_empty() && plural == "pods";
    match measure(key) {
        Measure::Count(g, p) => i64::from(g == group && p == plural && !(pod && is_terminal(obj))),
        Measure::PodCpu(limits) if pod && !is_terminal(obj) => {
            if limits {
                util::pod_limits(obj).0
            } else {
                util::pod_requests(obj).0
            }
        }
        Measure::PodMemory(limits) if pod && !is_terminal(obj) => {
            if limits {
                util::pod_limits(obj).1
            } else {
                util::pod_requests(obj).1
            }
        }
        Measure::Storage if group.is_empty() && plural == "persistentvolumeclaims" => obj
            .pointer("/spec/resources/requests/storage")
            .map(util::bytes)
            .unwrap_or(0),
        _ => 0,
    }
}

fn hard(quota: &Value) -> BTreeMap<String, Value> {
    quota
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Current usage of every key of `hard` in `namespace`.
fn usage(l: &Locked<'_>, namespace: &str, keys: &[String]) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = keys.iter().map(|k| (k.clone(), 0)).collect();
    let mut kinds: Vec<(String, String)> = Vec::new();
    for k in keys {
        let kind = match measure(k) {
            Measure::Count(g, p) => (g, p),
            Measure::PodCpu(_) | Measure::PodMemory(_) => (String::new(), "pods".into()),
            Measure::Storage => (String::new(), "persistentvolumeclaims".into()),
            Measure::Unknown => continue,
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    for (g, p) in kinds {
        for obj in l.list(&(g.clone(), p.clone()), Some(namespace)) {
            for k in keys {
                if let Some(v) = out.get_mut(k) {
                    *v += charge(k, &g, &p, &obj);
                }
            }
        }
    }
    out
}

/// Refuse the creation of `obj` if it would exceed a quota of its namespace.
pub fn admit(
    l: &Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    let quotas = l.list(&QUOTAS.res(), Some(namespace));
    if quotas.is_empty() {
        return Ok(());
    }
    let name = meta_str(obj, "name").unwrap_or("");
    let subject = if info.group.is_empty() {
        format!("{} \"{name}\"", info.plural)
    } else {
        format!("{}.{} \"{name}\"", info.plural, info.group)
    };
    let pod = info.group.is_empty() && info.plural == "pods";
    for quota in quotas {
        let qname = meta_str(&quota, "name").unwrap_or("");
        let hard = hard(&quota);
        // A quota on compute resources needs every container to state them.
        if pod {
            let mut missing: Vec<String> = Vec::new();
            for key in hard.keys() {
                let (res, limits) = match key.as_str() {
                    "cpu" | "requests.cpu" => ("cpu", false),
                    "memory" | "requests.memory" => ("memory", false),
                    "limits.cpu" => ("cpu", true),
                    "limits.memory" => ("memory", true),
                    _ => continue,
                };
                if !util::containers_without(obj, res, limits).is_empty() {
                    missing.push(key.clone());
                }
            }
            if !missing.is_empty() {
                missing.sort();
                return Err(ApiError::forbidden(format!(
                    "{subject} is forbidden: failed quota: {qname}: must specify {}",
                    missing.join(",")
                )));
            }
        }
        let requested: BTreeMap<String, i64> = hard
            .keys()
            .map(|k| (k.clone(), charge(k, &info.group, &info.plural, obj)))
            .filter(|(_, v)| *v > 0)
            .collect();
        if requested.is_empty() {
            continue;
        }
        let keys: Vec<String> = requested.keys().cloned().collect();
        let used = usage(l, namespace, &keys);
        let exceeded: Vec<&String> = keys
            .iter()
            .filter(|k| {
                let limit = hard.get(*k).map(|q| amount(k, q)).unwrap_or(i64::MAX);
                used.get(*k).copied().unwrap_or(0) + requested[*k] > limit
            })
            .collect();
        if exceeded.is_empty() {
            continue;
        }
        let show = |f: &dyn Fn(&str) -> i64| {
            exceeded
                .iter()
                .map(|k| format!("{k}={}", format(k, f(k))))
                .collect::<Vec<_>>()
                .join(",")
        };
        return Err(ApiError::forbidden(format!(
            "{subject} is forbidden: exceeded quota: {qname}, requested: {}, used: {}, limited: {}",
            show(&|k| requested[k]),
            show(&|k| used.get(k).copied().unwrap_or(0)),
            show(&|k| hard.get(k).map(|q| amount(k, q)).unwrap_or(0)),
        )));
    }
    Ok(())
}

/// Keeps `status.hard` and `status.used` of every quota current.
pub struct QuotaController;

impl Component for QuotaController {
    fn name(&self) -> &'static str {
        NAME
    }

    fn primary(&self) -> Kind {
        QUOTAS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![
            super::PODS,
            super::SERVICES,
            super::SECRETS,
            super::CONFIGMAPS,
            super::scheduler::PVCS,
            super::DEPLOYMENTS,
            super::REPLICASETS,
            super::JOBS,
        ]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if QUOTAS.is(&event.res) {
            return vec![key_of(&event.object)];
        }
        let tx = ctx.tx(NAME);
        tx.list(QUOTAS, Some(&event.namespace))
            .iter()
            .map(|q| key_of(q))
            .collect()
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(NAME);
        let Some(quota) = tx.get_key(QUOTAS, key) else {
            return Ok(Next::Done);
        };
        let hard = hard(&quota);
        let keys: Vec<String> = hard.keys().cloned().collect();
        let used = usage(tx.locked(), &key.0, &keys);
        let used_json: Map<String, Value> = used
            .iter()
            .map(|(k, v)| (k.clone(), json!(format(k, *v))))
            .collect();
        let mut next = (*quota).clone();
        next["status"] = json!({
            "hard": quota.pointer("/spec/hard").cloned().unwrap_or(json!({})),
            "used": used_json,
        });
        tx.update_status(QUOTAS, next)?;
        Ok(Next::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_measure_the_right_things() {
        assert_eq!(
            measure("count/deployments.apps"),
            Measure::Count("apps".into(), "deployments".into())
        );
        assert_eq!(
            measure("count/pods"),
            Measure::Count(String::new(), "pods".into())
        );
        assert_eq!(measure("requests.cpu"), Measure::PodCpu(false));
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}});
        assert_eq!(charge("requests.cpu", "", "pods", &pod), 500);
        assert_eq!(charge("pods", "", "pods", &pod), 1);
        assert_eq!(charge("services", "", "pods", &pod), 0);
        let done = json!({"status": {"phase": "Succeeded"}});
        assert_eq!(charge("pods", "", "pods", &done), 0);
        assert_eq!(format("requests.memory", 1 << 30), "1Gi");
        assert_eq!(format("requests.cpu", 1500), "1500m");
    }
}
