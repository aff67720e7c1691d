//! `metadata.managedFields`: which manager owns which fields (FieldsV1), read and written.
//! Server-side apply (`crate::apiserver::apply`) merges with these sets; every other write is recorded
//! here as an `Update` manager of the fields it changed.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::store::list_keys;
use crate::store::resources::ResourceInfo;

pub(crate) type Path = Vec<String>;

/// Metadata fields that identify an object rather than configure it.
pub(crate) const IDENTITY: [&str; 11] = [
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "generateName",
];

/// Field names of a path, without element (`k:{...}`) and presence (`.`) segments.
pub(crate) fn names(path: &[String]) -> Vec<&str> {
    path.iter()
        .map(String::as_str)
        .filter(|s| *s != "." && !list_keys::is_element(s))
        .collect()
}

/// Leaf paths set by an apply configuration. An atomic list or an empty map is one leaf; an
/// element of a keyed list is `k:{...}` followed by its own leaves, and `.` for its presence.
pub fn leaves(info: &ResourceInfo, config: &Value) -> BTreeSet<Path> {
    fn walk(info: &ResourceInfo, v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, child) in m {
                    if path.len() == 1 && path[0] == "metadata" && IDENTITY.contains(&k.as_str()) {
                        continue;
                    }
                    if path.is_empty() && (k == "apiVersion" || k == "kind") {
                        continue;
                    }
                    path.push(k.clone());
                    walk(info, child, path, out);
                    path.pop();
                }
            }
            // An empty set or map list owns nothing: the elements are what managers own.
            Value::Array(items)
                if items.is_empty()
                    && !path.is_empty()
                    && (list_keys::is_set(info, &names(path))
                        || list_keys::keys_of(info, &names(path)).is_some()) => {}
            Value::Array(items)
                if !items.is_empty()
                    && !path.is_empty()
                    && list_keys::is_set(info, &names(path)) =>
            {
                for item in items {
                    path.push(list_keys::set_segment(item));
                    out.insert(path.clone());
                    path.pop();
                }
            }
            Value::Array(items) if !items.is_empty() && !path.is_empty() => {
                let Some(keys) = list_keys::keys_of(info, &names(path)) else {
                    out.insert(path.clone());
                    return;
                };
                for item in items {
                    let Some(seg) = list_keys::element_segment(&keys, item) else {
                        continue;
                    };
                    path.push(seg);
                    path.push(".".into());
                    out.insert(path.clone());
                    path.pop();
                    walk(info, item, path, out);
                    path.pop();
                }
            }
            _ if !path.is_empty() => {
                out.insert(path.clone());
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(info, config, &mut Vec::new(), &mut out);
    out
}

/// FieldsV1 (`{"f:spec": {"f:replicas": {}}}`) from leaf paths.
pub fn to_fields_v1(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut node = &mut root;
        for seg in p {
            let key = if seg == "." || list_keys::is_element(seg) {
                seg.clone()
            } else {
                format!("f:{seg}")
            };
            let entry = node.entry(key).or_insert_with(|| json!({}));
            if !entry.is_object() {
                *entry = json!({});
            }
            match entry.as_object_mut() {
                Some(m) => node = m,
                None => break,
            }
        }
    }
    Value::Object(root)
}

/// Leaf paths from FieldsV1 (fields, list elements by key and `.` presence markers).
pub fn from_fields_v1(fields: &Value) -> BTreeSet<Path> {
    fn walk(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
        let mut had_child = false;
        for (k, child) in v.as_object().into_iter().flatten() {
            let seg = if k == "." {
                let mut p = path.clone();
                p.push(".".into());
                out.insert(p);
                had_child = true;
                continue;
            } else if let Some(field) = k.strip_prefix("f:") {
                field.to_string()
            } else if list_keys::is_element(k) {
                k.clone()
            } else {
                continue;
            };
            had_child = true;
            path.push(seg);
            walk(child, path, out);
            path.pop();
        }
        if !had_child && !path.is_empty() {
            out.insert(path.clone());
        }
    }
    let mut out = BTreeSet::new();
    walk(fields, &mut Vec::new(), &mut out);
    out
}

/// Does list element `item` carry the key values of segment `seg` (`k:{...}`), or is it the
/// set value `v:...`?
pub(crate) fn element_matches(seg: &str, item: &Value) -> bool {
    if let Some(v) = seg.strip_prefix("v:") {
        return serde_json::from_str::<Value>(v).is_ok_and(|v| v == *item);
    }
    let Some(Value::Object(want)) = seg
        .strip_prefix("k:")
        .and_then(|j| serde_json::from_str::<Value>(j).ok())
    else {
        return false;
    };
    want.iter().all(|(k, v)| match item.get(k) {
        Some(have) => have == v,
        None => k == "protocol" && v == "TCP",
    })
}

pub(crate) fn value_at<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |node, seg| {
        if seg == "." {
            Some(node)
        } else if list_keys::is_element(seg) {
            node.as_array()?.iter().find(|i| element_matches(seg, i))
        } else {
            node.get(seg)
        }
    })
}

pub(crate) fn is_presence(p: &[String]) -> bool {
    p.last().is_some_and(|s| s == ".")
}

pub(crate) struct Manager {
    pub(crate) entry: Value,
    pub(crate) name: String,
    pub(crate) apply: bool,
    /// `status` for writes through the status subresource (a manager of its own).
    pub(crate) subresource: String,
    pub(crate) fields: BTreeSet<Path>,
}

impl Manager {
    /// Whether this is `manager`'s apply entry. A real server keys ownership by manager *and*
    /// operation: the same manager's `Update` entry (a create by POST, a patch) is another owner
    /// to an apply, so a field it holds is kept when the apply drops it, and can conflict.
    pub(crate) fn is_apply_of(&self, manager: &str) -> bool {
        self.apply && self.name == manager
    }
}

pub(crate) fn managers(obj: &Value) -> Vec<Manager> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| Manager {
                    name: e
                        .get("manager")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    apply: e.get("operation").and_then(Value::as_str) == Some("Apply"),
                    subresource: e
                        .get("subresource")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    fields: e.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
                    entry: e.clone(),
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

pub(crate) fn entry_for(manager: &str, api_version: &str, fields: &BTreeSet<Path>) -> Value {
    json!({
        "manager": manager, "operation": "Apply", "apiVersion": api_version,
        "time": crate::store::meta::now_rfc3339(), "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(fields),
    })
}

/// `metadata.managedFields[].time` as the server writes a `metav1.Time` back: UTC, whole
/// seconds, `Z` (`2026-01-02T03:04:05Z`), whatever form the client sent it in (the Python client
/// sends `+00:00`), so an object sent back as read compares equal to the stored one.
pub fn normalize_times(obj: &mut Value) {
    let Some(entries) = obj
        .pointer_mut("/metadata/managedFields")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for entry in entries {
        if let Some(time) = entry.get_mut("time")
            && let Some(ts) = time
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        {
            *time = json!(ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
    }
}

/// Record a non-apply write by `manager`: it takes the leaf fields whose value it changed.
pub fn record_update(
    info: &ResourceInfo,
    new: &mut Value,
    old: Option<&Value>,
    manager: &str,
    subresource: &str,
) {
    let api_version = info.api_version();
    let api_version = api_version.as_str();
    let changed: BTreeSet<Path> = leaves(info, new)
        .into_iter()
        .filter(|p| match old {
            None => true,
            // An element's presence changes only when it appears.
            Some(o) if is_presence(p) => value_at(o, p).is_none(),
            Some(o) => value_at(o, p) != value_at(new, p),
        })
        .collect();
    if changed.is_empty() {
        return;
    }
    let is_mine = |m: &Manager| m.name == manager && !m.apply && m.subresource == subresource;
    let mut owners = managers(new);
    for m in owners.iter_mut().filter(|m| !is_mine(m)) {
        m.fields.retain(|f| !changed.iter().any(|c| overlaps(f, c)));
    }
    let mut mine = owners
        .iter()
        .find(|m| is_mine(m))
        .map(|m| m.fields.clone())
        .unwrap_or_default();
    mine.extend(changed);
    let mut entries: Vec<Value> = owners
        .into_iter()
        .filter(|m| !m.fields.is_empty() && !is_mine(m))
        .map(|m| {
            let mut e = m.entry;
            e["fieldsV1"] = to_fields_v1(&m.fields);
            e
        })
        .collect();
    let mut entry = entry_for(manager, api_version, &mine);
    entry["operation"] = json!("Update");
    if !subresource.is_empty() {
        entry["subresource"] = json!(subresource);
    }
    entries.push(entry);
    if new.get("metadata").is_some_and(Value::is_object) {
        new["metadata"]["managedFields"] = Value::Array(entries);
    }
}
