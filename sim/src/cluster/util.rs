//! Small readers shared by the components: quantities, label selectors, pod requests and
//! conditions.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// CPU in millicores from a quantity (`500m`, `2`, `0.5`); unreadable is 0.
pub fn cpu_millis(q: &Value) -> i64 {
    let text = quantity_text(q);
    if let Some(m) = text.strip_suffix('m') {
        return m.parse::<f64>().map(|v| v.ceil() as i64).unwrap_or(0);
    }
    scaled(&text)
        .map(|v| (v * 1000.0).ceil() as i64)
        .unwrap_or(0)
}

/// Bytes from a quantity (`16Gi`, `512M`, `1e3`); unreadable is 0.
pub fn bytes(q: &Value) -> i64 {
    scaled(&quantity_text(q))
        .map(|v| v.ceil() as i64)
        .unwrap_or(0)
}

/// A plain count (`pods: "10"`).
pub fn count(q: &Value) -> i64 {
    scaled(&quantity_text(q)).map(|v| v as i64).unwrap_or(0)
}

fn quantity_text(q: &Value) -> String {
    match q {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn scaled(text: &str) -> Option<f64> {
    const SUFFIXES: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
        ("m", 1e-3),
    ];
    for (suffix, factor) in SUFFIXES {
        if let Some(n) = text.strip_suffix(suffix) {
            return n.parse::<f64>().ok().map(|v| v * factor);
        }
    }
    text.parse::<f64>().ok()
}

/// CPU as the API prints it: whole cores without a suffix, else millicores.
pub fn format_cpu(millis: i64) -> String {
    if millis % 1000 == 0 {
        (millis / 1000).to_string()
    } else {
        format!("{millis}m")
    }
}

/// Memory as the API prints it: the largest binary suffix that divides, else plain bytes.
pub fn format_bytes(b: i64) -> String {
    for (suffix, factor) in [("Gi", 1i64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if b != 0 && b % factor == 0 {
            return format!("{}{suffix}", b / factor);
        }
    }
    b.to_string()
}

pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Does a `metav1.LabelSelector` (matchLabels, matchExpressions) select these labels? An empty
/// selector selects everything; `None` (absent) selects nothing.
pub fn selector_matches(selector: Option<&Value>, labels: &BTreeMap<String, String>) -> bool {
    let Some(sel) = selector.filter(|s| s.is_object()) else {
        return false;
    };
    let by_labels = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| {
            m.iter().all(|(k, v)| {
                v.as_str()
                    .is_some_and(|v| labels.get(k).is_some_and(|l| l == v))
            })
        });
    let by_expressions = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_none_or(|exprs| {
            exprs.iter().all(|e| {
                let key = e.get("key").and_then(Value::as_str).unwrap_or("");
                let values: Vec<&str> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let have = labels.get(key);
                match e.get("operator").and_then(Value::as_str) {
                    Some("In") => have.is_some_and(|h| values.contains(&h.as_str())),
                    Some("NotIn") => have.is_none_or(|h| !values.contains(&h.as_str())),
                    Some("Exists") => have.is_some(),
                    Some("DoesNotExist") => have.is_none(),
                    _ => false,
                }
            })
        });
    by_labels && by_expressions
}

/// A Service's `spec.selector` (a plain map) over labels; empty or absent selects nothing.
pub fn map_selector_matches(selector: Option<&Value>, labels: &BTreeMap<String, String>) -> bool {
    match selector.and_then(Value::as_object) {
        Some(m) if !m.is_empty() => m.iter().all(|(k, v)| {
            v.as_str()
                .is_some_and(|v| labels.get(k).is_some_and(|l| l == v))
        }),
        _ => false,
    }
}

fn containers<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// One container's request of a resource; a limit stands in for a missing request, as the
/// API server defaults requests from limits.
fn request<'a>(c: &'a Value, resource: &str) -> Option<&'a Value> {
    c.pointer(&format!("/resources/requests/{resource}"))
        .or_else(|| c.pointer(&format!("/resources/limits/{resource}")))
}

/// The pod's effective requests `(cpu millicores, memory bytes)`: the sum over containers,
/// or the largest init container when that is more (the scheduler's rule).
pub fn pod_requests(pod: &Value) -> (i64, i64) {
    let sum = |f: fn(&Value) -> i64, res: &str| -> i64 {
        containers(pod, "containers")
            .map(|c| request(c, res).map(f).unwrap_or(0))
            .sum()
    };
    let max_init = |f: fn(&Value) -> i64, res: &str| -> i64 {
        containers(pod, "initContainers")
            .map(|c| request(c, res).map(f).unwrap_or(0))
            .max()
            .unwrap_or(0)
    };
    (
        sum(cpu_millis, "cpu").max(max_init(cpu_millis, "cpu")),
        sum(bytes, "memory").max(max_init(bytes, "memory")),
    )
}

/// The pod's limits `(cpu millicores, memory bytes)` summed over containers.
pub fn pod_limits(pod: &Value) -> (i64, i64) {
    let sum = |f: fn(&Value) -> i64, res: &str| -> i64 {
        containers(pod, "containers")
            .filter_map(|c| c.pointer(&format!("/resources/limits/{res}")))
            .map(f)
            .sum()
    };
    (sum(cpu_millis, "cpu"), sum(bytes, "memory"))
}

/// Names of the containers (init containers too) that set no request (and no limit) for
/// `resource`.
pub fn containers_without(pod: &Value, resource: &str, limits: bool) -> Vec<String> {
    containers(pod, "containers")
        .chain(containers(pod, "initContainers"))
        .filter(|c| {
            if limits {
                c.pointer(&format!("/resources/limits/{resource}"))
                    .is_none()
            } else {
                request(c, resource).is_none()
            }
        })
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

pub fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub fn is_terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

pub fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some()
}

pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// A condition inside a status object (`status.conditions`).
pub fn status_condition<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status
        .get("conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

pub fn condition_true(obj: &Value, kind: &str) -> bool {
    condition(obj, kind).and_then(|c| c.get("status")) == Some(&json!("True"))
}

pub fn is_ready(pod: &Value) -> bool {
    condition_true(pod, "Ready")
}

/// Set a condition in `conditions` as the controllers' helpers do: an unchanged status and
/// reason leaves it alone; a new status moves `lastTransitionTime`; the changed condition
/// goes to the end of the list. `extra` holds the time fields to write (besides
/// `lastTransitionTime`, e.g. `lastUpdateTime` or `lastProbeTime`).
pub fn set_condition(
    status: &mut Value,
    kind: &str,
    state: &str,
    reason: &str,
    message: &str,
    now: &str,
    extra: &[(&str, Value)],
) {
    if !status.is_object() {
        *status = json!({});
    }
    let mut list: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current = list
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        .cloned();
    if let Some(c) = &current
        && c.get("status").and_then(Value::as_str) == Some(state)
        && c.get("reason").and_then(Value::as_str) == Some(reason)
        && c.get("message").and_then(Value::as_str) == Some(message)
    {
        return;
    }
    let transition = match &current {
        Some(c) if c.get("status").and_then(Value::as_str) == Some(state) => c
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or_else(|| json!(now)),
        _ => json!(now),
    };
    let mut cond = json!({"type": kind, "status": state});
    for (k, v) in extra {
        cond[*k] = v.clone();
    }
    cond["lastTransitionTime"] = transition;
    if !reason.is_empty() {
        cond["reason"] = json!(reason);
    }
    if !message.is_empty() {
        cond["message"] = json!(message);
    }
    list.retain(|c| c.get("type").and_then(Value::as_str) != Some(kind));
    list.push(cond);
    status["conditions"] = Value::Array(list);
}

pub fn remove_condition(status: &mut Value, kind: &str) {
    if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some(kind));
    }
}

pub fn int_at(obj: &Value, pointer: &str) -> Option<i64> {
    obj.pointer(pointer).and_then(Value::as_i64)
}

pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

/// Keep only non-zero counters, as Go's `omitempty` does for the status integers.
pub fn put_count(status: &mut Value, field: &str, n: i64) {
    if let Some(m) = status.as_object_mut() {
        if n == 0 {
            m.remove(field);
        } else {
            m.insert(field.to_string(), json!(n));
        }
    }
}

/// An ownerReference making `owner` the controller of a new object.
pub fn controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": str_at(owner, "/metadata/name").unwrap_or(""),
        "uid": str_at(owner, "/metadata/uid").unwrap_or(""),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// A 64-bit FNV-1a hash (stable across runs, used for template hashes and fake digests).
pub fn fnv64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// 32-bit FNV-1a, the hash the deployment controller uses for `pod-template-hash`.
pub fn fnv32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// apimachinery's `rand.SafeEncodeString`: digits and letters without vowels and look-alikes.
pub fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// 64 hex digits derived from `seed` (fake image digests and container ids).
pub fn hex64(seed: u64) -> String {
    let mut x = seed;
    (0..4)
        .map(|_| {
            // splitmix64
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            format!("{:016x}", z ^ (z >> 31))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_and_print() {
        assert_eq!(cpu_millis(&json!("500m")), 500);
        assert_eq!(cpu_millis(&json!("2")), 2000);
        assert_eq!(cpu_millis(&json!(0.5)), 500);
        assert_eq!(bytes(&json!("16Gi")), 16 << 30);
        assert_eq!(bytes(&json!("1M")), 1_000_000);
        assert_eq!(count(&json!("110")), 110);
        assert_eq!(format_cpu(1500), "1500m");
        assert_eq!(format_cpu(2000), "2");
        assert_eq!(format_bytes(1 << 30), "1Gi");
        assert_eq!(format_bytes(1000), "1000");
    }

    #[test]
    fn label_selectors_match_like_the_api() {
        let l: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        assert!(selector_matches(
            Some(&json!({"matchLabels": {"app": "web"}})),
            &l
        ));
        assert!(selector_matches(Some(&json!({})), &l));
        assert!(!selector_matches(None, &l));
        assert!(selector_matches(
            Some(
                &json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]})
            ),
            &l
        ));
        assert!(!selector_matches(
            Some(&json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})),
            &l
        ));
        assert!(map_selector_matches(Some(&json!({"app": "web"})), &l));
        assert!(!map_selector_matches(Some(&json!({})), &l));
    }

    #[test]
    fn pod_requests_take_limits_and_init_containers_into_account() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "1"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"memory": "1Gi"}}}],
        }});
        assert_eq!(pod_requests(&pod), (1250, 1 << 30));
        assert_eq!(containers_without(&pod, "memory", false), vec!["b"]);
    }

    #[test]
    fn conditions_keep_transition_times_and_move_to_the_end() {
        let mut status = json!({});
        set_condition(&mut status, "Progressing", "True", "A", "m", "t1", &[]);
        set_condition(&mut status, "Available", "False", "B", "m", "t1", &[]);
        set_condition(&mut status, "Progressing", "True", "C", "m2", "t2", &[]);
        let conds = status["conditions"].as_array().unwrap();
        assert_eq!(conds[1]["type"], "Progressing");
        assert_eq!(conds[1]["lastTransitionTime"], "t1");
        assert_eq!(conds[1]["reason"], "C");
        set_condition(&mut status, "Available", "True", "D", "", "t3", &[]);
        assert_eq!(
            status_condition(&status, "Available").unwrap()["lastTransitionTime"],
            "t3"
        );
        assert!(condition_true(&json!({"status": status}), "Available"));
    }

    #[test]
    fn hashes_are_stable_and_encoded_safely() {
        assert_eq!(fnv32(b"a"), 0xe40c292c);
        let enc = safe_encode("123456789");
        assert!(
            enc.chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
        assert_eq!(hex64(7).len(), 64);
        assert_eq!(hex64(7), hex64(7));
    }
}
