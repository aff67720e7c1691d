//! Server-side apply (`application/apply-patch+yaml`).
//!
//! Each applier's owned fields are kept in `metadata.managedFields` (FieldsV1, lists treated
//! as atomic values). Applying again without a field the same manager applied before removes
//! it, unless another applier also owns it; changing a field another applier owns is a 409
//! conflict unless `force=true`, which moves the ownership. Other writes that name a
//! `fieldManager` are recorded as `Update` managers of the fields they change (writes without
//! one are not tracked, where a real server would derive a manager from the user agent).

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause};
use crate::ops::{self, Subresource};
use crate::resources::ResourceInfo;
use crate::server::Server;
use crate::store::Locked;

type Path = Vec<String>;

/// Metadata fields that identify an object rather than configure it.
const IDENTITY: [&str; 11] = [
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

/// Leaf paths set by an apply configuration; a list or an empty map is one leaf.
pub fn leaves(config: &Value) -> BTreeSet<Path> {
    fn walk(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
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
                    walk(child, path, out);
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
    walk(config, &mut Vec::new(), &mut out);
    out
}

/// FieldsV1 (`{"f:spec": {"f:replicas": {}}}`) from leaf paths.
pub fn to_fields_v1(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut node = &mut root;
        for seg in p {
            let entry = node.entry(format!("f:{seg}")).or_insert_with(|| json!({}));
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

/// Leaf paths from FieldsV1; keys other than `f:` (list keys, `.`) are not produced here.
pub fn from_fields_v1(fields: &Value) -> BTreeSet<Path> {
    fn walk(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
        let children: Vec<(&String, &Value)> = v
            .as_object()
            .map(|m| m.iter().filter(|(k, _)| k.starts_with("f:")).collect())
            .unwrap_or_default();
        if children.is_empty() {
            if !path.is_empty() {
                out.insert(path.clone());
            }
            return;
        }
        for (k, child) in children {
            path.push(k[2..].to_string());
            walk(child, path, out);
            path.pop();
        }
    }
    let mut out = BTreeSet::new();
    walk(fields, &mut Vec::new(), &mut out);
    out
}

fn value_at<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |node, seg| node.get(seg))
}

fn remove_at(v: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = v;
    for seg in parents {
        match node.get_mut(seg) {
            Some(n) => node = n,
            None => return,
        }
    }
    if let Some(m) = node.as_object_mut() {
        m.remove(last);
    }
}

/// Deep merge of maps; anything else in `config` replaces what is there.
fn merge_into(target: &mut Value, config: &Value) {
    match (target.as_object_mut(), config.as_object()) {
        (Some(t), Some(c)) => {
            for (k, v) in c {
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        merge_into(existing, v)
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        _ => *target = config.clone(),
    }
}

struct Manager {
    entry: Value,
    name: String,
    apply: bool,
    fields: BTreeSet<Path>,
}

fn managers(obj: &Value) -> Vec<Manager> {
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
                    fields: e.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
                    entry: e.clone(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

fn entry_for(manager: &str, api_version: &str, fields: &BTreeSet<Path>) -> Value {
    json!({
        "manager": manager, "operation": "Apply", "apiVersion": api_version,
        "time": ops::now_rfc3339(), "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(fields),
    })
}

/// Apply `config` as `manager`; creates the object when it does not exist (201).
#[allow(clippy::too_many_arguments)]
pub fn server_side_apply(
    server: &Server,
    l: &mut Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    config: Value,
    sub: Subresource,
    manager: &str,
    force: bool,
) -> Result<(StatusCode, Arc<Value>), ApiError> {
    if manager.is_empty() {
        return Err(ApiError::bad_request(
            "fieldManager is required for apply requests",
        ));
    }
    if config.get("metadata").is_some_and(|m| !m.is_object()) {
        return Err(ApiError::bad_request(
            "metadata of an apply configuration must be an object",
        ));
    }
    if !config.is_object() || config.get("apiVersion").is_none() || config.get("kind").is_none() {
        return Err(ApiError::bad_request(
            "an apply configuration needs apiVersion and kind",
        ));
    }
    if let Some(n) = ops::meta_str(&config, "name")
        && n != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    let api_version = info.api_version();
    let applied = leaves(&config);
    let res = ops::res_key(info);
    let key = (
        if info.namespaced {
            namespace.to_string()
        } else {
            String::new()
        },
        name.to_string(),
    );
    let Some(old) = l.get(&res, &key) else {
        if sub == Subresource::Status {
            return Err(ApiError::not_found(&info.group, &info.plural, name));
        }
        let mut body = config;
        if body.get("metadata").is_none() {
            body["metadata"] = json!({});
        }
        body["metadata"]["name"] = json!(name);
        body["metadata"]["managedFields"] = json!([entry_for(manager, &api_version, &applied)]);
        let created = ops::create(server, l, info, namespace, body)?;
        return Ok((StatusCode::CREATED, created));
    };

    let mut owners = managers(&old);
    let conflicts: Vec<(String, Path)> = applied
        .iter()
        .filter(|p| value_at(&config, p) != value_at(&old, p))
        .flat_map(|p| {
            owners
                .iter()
                .filter(|m| m.name != manager && m.fields.iter().any(|f| overlaps(f, p)))
                .map(|m| (m.name.clone(), p.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    if !conflicts.is_empty() && !force {
        let causes: Vec<Cause> = conflicts
            .iter()
            .map(|(m, p)| Cause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with \"{m}\""),
                field: format!(".{}", p.join(".")),
            })
            .collect();
        let listed: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.message, c.field))
            .collect();
        let mut err = ApiError::conflict(&info.group, &info.plural, name, "");
        err.message = format!(
            "Apply failed with {} conflict(s): {}",
            causes.len(),
            listed.join(", ")
        );
        if let Some(d) = err.details.as_mut() {
            d.causes = causes;
        }
        return Err(err);
    }
    if force {
        for m in owners.iter_mut().filter(|m| m.name != manager) {
            m.fields.retain(|f| !applied.iter().any(|p| overlaps(f, p)));
        }
    }
    let before: BTreeSet<Path> = owners
        .iter()
        .find(|m| m.apply && m.name == manager)
        .map(|m| m.fields.clone())
        .unwrap_or_default();
    let mut merged = (*old).clone();
    for dropped in before.difference(&applied) {
        let shared = owners
            .iter()
            .any(|m| m.name != manager && m.fields.contains(dropped));
        if !shared {
            remove_at(&mut merged, dropped);
        }
    }
    merge_into(&mut merged, &config);
    let mut entries: Vec<Value> = owners
        .into_iter()
        .filter(|m| {
            let own_apply = m.apply && m.name == manager;
            !own_apply && !m.fields.is_empty()
        })
        .map(|m| {
            let mut e = m.entry;
            e["fieldsV1"] = to_fields_v1(&m.fields);
            e
        })
        .collect();
    if !applied.is_empty() {
        entries.push(entry_for(manager, &api_version, &applied));
    }
    merged["metadata"]["managedFields"] = Value::Array(entries);
    merged["apiVersion"] = json!(api_version);
    let updated = ops::update(server, l, info, namespace, name, merged, sub)?;
    Ok((StatusCode::OK, updated))
}

/// Record a non-apply write by `manager`: it takes the leaf fields whose value it changed.
pub fn record_update(new: &mut Value, old: Option<&Value>, manager: &str, api_version: &str) {
    let changed: BTreeSet<Path> = leaves(new)
        .into_iter()
        .filter(|p| old.is_none_or(|o| value_at(o, p) != value_at(new, p)))
        .collect();
    if changed.is_empty() {
        return;
    }
    let mut owners = managers(new);
    for m in owners.iter_mut().filter(|m| m.name != manager || m.apply) {
        m.fields.retain(|f| !changed.iter().any(|c| overlaps(f, c)));
    }
    let mut mine = owners
        .iter()
        .find(|m| m.name == manager && !m.apply)
        .map(|m| m.fields.clone())
        .unwrap_or_default();
    mine.extend(changed);
    let mut entries: Vec<Value> = owners
        .into_iter()
        .filter(|m| !m.fields.is_empty() && (m.name != manager || m.apply))
        .map(|m| {
            let mut e = m.entry;
            e["fieldsV1"] = to_fields_v1(&m.fields);
            e
        })
        .collect();
    let mut entry = entry_for(manager, api_version, &mine);
    entry["operation"] = json!("Update");
    entries.push(entry);
    if new.get("metadata").is_some_and(Value::is_object) {
        new["metadata"]["managedFields"] = Value::Array(entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_skip_identity_and_treat_lists_as_atomic() {
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"a": "1"}}, "data": {"k": "v"}, "list": [1, 2]});
        let got: Vec<String> = leaves(&cfg).into_iter().map(|p| p.join(".")).collect();
        assert_eq!(got, vec!["data.k", "list", "metadata.labels.a"]);
    }

    #[test]
    fn fields_v1_round_trips() {
        let cfg = json!({"spec": {"a": 1, "b": {"c": true}}, "metadata": {"labels": {"x": "y"}}});
        let paths = leaves(&cfg);
        assert_eq!(from_fields_v1(&to_fields_v1(&paths)), paths);
        assert_eq!(to_fields_v1(&paths)["f:spec"]["f:b"]["f:c"], json!({}));
    }

    #[test]
    fn merge_replaces_lists_and_merges_maps() {
        let mut t = json!({"a": {"x": 1, "y": 2}, "l": [1, 2, 3]});
        merge_into(&mut t, &json!({"a": {"y": 3}, "l": [9]}));
        assert_eq!(t, json!({"a": {"x": 1, "y": 3}, "l": [9]}));
    }
}
