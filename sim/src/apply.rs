//! Server-side apply (`application/apply-patch+yaml`).
//!
//! Each applier's owned fields are kept in `metadata.managedFields` (FieldsV1). Lists marked
//! as maps in Kubernetes' schema (containers by name, ports by containerPort+protocol, env,
//! volumes, ...; `x-kubernetes-list-map-keys` for custom resources) merge element by element,
//! so two managers can own different elements and fields of one pod template; other lists are
//! atomic. Applying again without a field the same manager applied before removes it, unless
//! another manager also owns it; changing a field another applier owns is a 409 conflict unless
//! `force=true`, which moves the ownership. Other writes are recorded as `Update` managers of
//! the fields they change (named by `fieldManager`, or after the User-Agent as a real server
//! does).

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause};
use crate::list_keys;
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

/// Field names of a path, without element (`k:{...}`) and presence (`.`) segments.
fn names(path: &[String]) -> Vec<&str> {
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
fn element_matches(seg: &str, item: &Value) -> bool {
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

fn value_at<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
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

fn value_at_mut<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut node = v;
    for seg in path {
        node = if list_keys::is_element(seg) {
            node.as_array_mut()?
                .iter_mut()
                .find(|i| element_matches(seg, i))?
        } else {
            node.get_mut(seg)?
        };
    }
    Some(node)
}

/// Remove the field at `path`; a path ending in `.` removes the list element.
fn remove_at(v: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    if last == "." {
        if let Some((elem, list_path)) = parents.split_last()
            && let Some(list) = value_at_mut(v, list_path).and_then(Value::as_array_mut)
        {
            list.retain(|i| !element_matches(elem, i));
        }
        return;
    }
    if last.starts_with("v:") {
        if let Some(list) = value_at_mut(v, parents).and_then(Value::as_array_mut) {
            list.retain(|i| !element_matches(last, i));
        }
        return;
    }
    if let Some(m) = value_at_mut(v, parents).and_then(Value::as_object_mut) {
        m.remove(last);
    }
}

/// Deep merge of maps and of keyed lists (element by element); anything else in `config`
/// replaces what is there.
fn merge_into(info: &ResourceInfo, target: &mut Value, config: &Value, path: &mut Path) {
    match (target, config) {
        (Value::Object(t), Value::Object(c)) => {
            for (k, v) in c {
                path.push(k.clone());
                match t.get_mut(k) {
                    Some(existing)
                        if (existing.is_object() && v.is_object())
                            || (existing.is_array() && v.is_array()) =>
                    {
                        merge_into(info, existing, v, path)
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
                path.pop();
            }
        }
        (Value::Array(t), Value::Array(c)) if list_keys::is_set(info, &names(path)) => {
            for item in c {
                if !t.contains(item) {
                    t.push(item.clone());
                }
            }
        }
        (Value::Array(t), Value::Array(c)) => {
            let Some(keys) = list_keys::keys_of(info, &names(path)) else {
                *t = c.clone();
                return;
            };
            for item in c {
                let seg = list_keys::element_segment(&keys, item);
                match seg
                    .as_deref()
                    .and_then(|s| t.iter_mut().find(|i| element_matches(s, i)))
                {
                    Some(existing) => merge_into(info, existing, item, path),
                    None => t.push(item.clone()),
                }
            }
        }
        (target, config) => *target = config.clone(),
    }
}

/// A field path as structured-merge-diff prints it: `.spec.containers[name="web"].image`.
fn shown_path(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path {
        if seg == "." {
            continue;
        }
        match seg
            .strip_prefix("k:")
            .and_then(|j| serde_json::from_str::<Map<String, Value>>(j).ok())
        {
            Some(keys) => {
                let pairs: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!("[{}]", pairs.join(",")));
            }
            None => {
                out.push('.');
                out.push_str(seg);
            }
        }
    }
    out
}

/// How a conflict names its manager: an `Update` one with its apiVersion and time.
fn shown_manager(m: &Manager) -> String {
    if m.apply {
        return format!("{:?}", m.name);
    }
    let api = m
        .entry
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    match m.entry.get("time").and_then(Value::as_str) {
        Some(t) => format!("{:?} using {api} at {t}", m.name),
        None => format!("{:?} using {api}", m.name),
    }
}

/// The 409 of a conflicting apply, worded as the API server words it.
fn conflict_error(info: &ResourceInfo, name: &str, conflicts: &[(String, Path)]) -> ApiError {
    let causes: Vec<Cause> = conflicts
        .iter()
        .map(|(m, p)| Cause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {m}"),
            field: shown_path(p),
        })
        .collect();
    let message = match causes.as_slice() {
        [one] => format!(
            "Apply failed with 1 conflict: {}: {}",
            one.message, one.field
        ),
        _ => {
            let mut by_manager: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
            for (m, p) in conflicts {
                by_manager.entry(m).or_default().push(shown_path(p));
            }
            let mut lines = Vec::new();
            for (m, paths) in by_manager {
                lines.push(format!("conflicts with {m}:"));
                lines.extend(paths.into_iter().map(|p| format!("- {p}")));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                causes.len(),
                lines.join("\n")
            )
        }
    };
    let mut err = ApiError::conflict(&info.group, &info.plural, name, "");
    err.message = message;
    if let Some(d) = err.details.as_mut() {
        d.causes = causes;
    }
    err
}

fn is_presence(p: &[String]) -> bool {
    p.last().is_some_and(|s| s == ".")
}

struct Manager {
    entry: Value,
    name: String,
    apply: bool,
    /// `status` for writes through the status subresource (a manager of its own).
    subresource: String,
    fields: BTreeSet<Path>,
}

impl Manager {
    /// Whether this is `manager`'s apply entry. A real server keys ownership by manager *and*
    /// operation: the same manager's `Update` entry (a create by POST, a patch) is another owner
    /// to an apply, so a field it holds is kept when the apply drops it, and can conflict.
    fn is_apply_of(&self, manager: &str) -> bool {
        self.apply && self.name == manager
    }
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

fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

fn entry_for(manager: &str, api_version: &str, fields: &BTreeSet<Path>) -> Value {
    json!({
        "manager": manager, "operation": "Apply", "apiVersion": api_version,
        "time": ops::now_rfc3339(), "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(fields),
    })
}

/// An apply without `fieldManager`, refused as `ValidatePatchOptions` refuses it (422 on
/// `PatchOptions.meta.k8s.io`, before the body is looked at).
pub fn field_manager_required() -> ApiError {
    ApiError::invalid(
        "meta.k8s.io",
        "PatchOptions",
        "",
        vec![Cause {
            field: "fieldManager".into(),
            message: "Required value: is required for apply patch".into(),
            reason: "FieldValueRequired".into(),
        }],
    )
}

/// The storage layer's answer to a uid precondition on an object that does not exist.
fn uid_precondition_failed(
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    uid: &str,
) -> ApiError {
    let group = if info.group.is_empty() {
        String::new()
    } else {
        format!("{}/", info.group)
    };
    let scope = if info.namespaced {
        format!("{namespace}/")
    } else {
        String::new()
    };
    ApiError::conflict(
        &info.group,
        &info.plural,
        name,
        &format!(
            "StorageError: invalid object, Code: 4, Key: /registry/{group}{}/{scope}{name}, \
             ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: \
             {uid}, UID in object meta: ",
            info.plural
        ),
    )
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
        return Err(field_manager_required());
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
    let applied = leaves(info, &config);
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
        // A uid in the configuration is a precondition on the live object, so with none there
        // it fails rather than creating (the API server's storage answers 409).
        if let Some(uid) = ops::meta_str(&config, "uid").filter(|uid| !uid.is_empty()) {
            return Err(uid_precondition_failed(info, namespace, name, uid));
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
        .filter(|p| !is_presence(p) && value_at(&config, p) != value_at(&old, p))
        .flat_map(|p| {
            owners
                .iter()
                .filter(|m| !m.is_apply_of(manager) && m.fields.iter().any(|f| overlaps(f, p)))
                .map(|m| (shown_manager(m), p.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(info, name, &conflicts));
    }
    if force {
        // Forcing takes the contested fields only; a field set to the value another manager
        // already gave it becomes shared, as on a real server.
        for m in owners.iter_mut().filter(|m| !m.is_apply_of(manager)) {
            m.fields
                .retain(|f| !conflicts.iter().any(|(_, p)| overlaps(f, p)));
        }
    }
    let before: BTreeSet<Path> = owners
        .iter()
        .find(|m| m.is_apply_of(manager))
        .map(|m| m.fields.clone())
        .unwrap_or_default();
    let mut merged = (*old).clone();
    for dropped in before.difference(&applied) {
        // An element stays while another manager owns anything in it.
        let element = &dropped[..dropped.len().saturating_sub(1)];
        let shared = owners.iter().any(|m| {
            !m.is_apply_of(manager)
                && (m.fields.contains(dropped)
                    || (is_presence(dropped) && m.fields.iter().any(|f| f.starts_with(element))))
        });
        if !shared {
            remove_at(&mut merged, dropped);
        }
    }
    merge_into(info, &mut merged, &config, &mut Vec::new());
    let mut entries: Vec<Value> = owners
        .into_iter()
        .filter(|m| {
            let own_apply = m.is_apply_of(manager);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;

    fn info(kind: &str) -> ResourceInfo {
        resources::builtins()
            .into_iter()
            .find(|i| i.kind == kind)
            .unwrap()
    }

    fn joined(paths: &BTreeSet<Path>) -> Vec<String> {
        paths.iter().map(|p| p.join(".")).collect()
    }

    #[test]
    fn leaves_skip_identity_and_treat_lists_as_atomic() {
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"a": "1"}}, "data": {"k": "v"}, "list": [1, 2]});
        let got = joined(&leaves(&info("ConfigMap"), &cfg));
        assert_eq!(got, vec!["data.k", "list", "metadata.labels.a"]);
    }

    #[test]
    fn keyed_lists_have_element_leaves() {
        let cfg = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}],
            "tolerations": [{"key": "a"}]}}}});
        let got = joined(&leaves(&info("Deployment"), &cfg));
        let c = r#"spec.template.spec.containers.k:{"name":"web"}"#;
        let port = r#"ports.k:{"containerPort":80,"protocol":"TCP"}"#;
        assert_eq!(
            got,
            vec![
                format!("{c}.."),
                format!("{c}.image"),
                format!("{c}.name"),
                format!("{c}.{port}.."),
                format!("{c}.{port}.containerPort"),
                "spec.template.spec.tolerations".to_string(),
            ]
        );
    }

    #[test]
    fn finalizers_are_a_set_each_value_owned_on_its_own() {
        let cm = info("ConfigMap");
        let cfg = json!({"metadata": {"finalizers": ["a.io/x", "b.io/y"]}});
        let paths = leaves(&cm, &cfg);
        assert_eq!(
            joined(&paths),
            vec![
                r#"metadata.finalizers.v:"a.io/x""#,
                r#"metadata.finalizers.v:"b.io/y""#
            ]
        );
        assert_eq!(from_fields_v1(&to_fields_v1(&paths)), paths);
        let mut live = json!({"metadata": {"finalizers": ["c.io/z"]}});
        merge_into(&cm, &mut live, &cfg, &mut Vec::new());
        assert_eq!(
            live["metadata"]["finalizers"],
            json!(["c.io/z", "a.io/x", "b.io/y"])
        );
        let first = paths.iter().next().cloned().unwrap();
        remove_at(&mut live, &first);
        assert_eq!(live["metadata"]["finalizers"], json!(["c.io/z", "b.io/y"]));
    }

    #[test]
    fn fields_v1_round_trips() {
        let cfg = json!({"spec": {"a": 1, "b": {"c": true}}, "metadata": {"labels": {"x": "y"}}});
        let paths = leaves(&info("ConfigMap"), &cfg);
        assert_eq!(from_fields_v1(&to_fields_v1(&paths)), paths);
        assert_eq!(to_fields_v1(&paths)["f:spec"]["f:b"]["f:c"], json!({}));
        let pod = json!({"spec": {"containers": [{"name": "a", "image": "x"}]}});
        let paths = leaves(&info("Pod"), &pod);
        let fields = to_fields_v1(&paths);
        assert_eq!(
            fields["f:spec"]["f:containers"][r#"k:{"name":"a"}"#],
            json!({".": {}, "f:image": {}, "f:name": {}})
        );
        assert_eq!(from_fields_v1(&fields), paths);
    }

    #[test]
    fn merge_replaces_atomic_lists_and_merges_keyed_ones() {
        let cm = info("ConfigMap");
        let mut t = json!({"a": {"x": 1, "y": 2}, "l": [1, 2, 3]});
        merge_into(
            &cm,
            &mut t,
            &json!({"a": {"y": 3}, "l": [9]}),
            &mut Vec::new(),
        );
        assert_eq!(t, json!({"a": {"x": 1, "y": 3}, "l": [9]}));
        let pod = info("Pod");
        let mut t = json!({"spec": {"containers": [{"name": "a", "image": "x"}]}});
        let cfg = json!({"spec": {"containers": [{"name": "b", "image": "y"}, {"name": "a", "env": [{"name": "E", "value": "1"}]}]}});
        merge_into(&pod, &mut t, &cfg, &mut Vec::new());
        assert_eq!(
            t,
            json!({"spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}, {"name": "b", "image": "y"}]}})
        );
        let element = vec![
            "spec".to_string(),
            "containers".into(),
            r#"k:{"name":"b"}"#.into(),
            ".".into(),
        ];
        remove_at(&mut t, &element);
        assert_eq!(t["spec"]["containers"].as_array().map(Vec::len), Some(1));
    }
}
