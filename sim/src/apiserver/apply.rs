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

use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::managed_fields::{
    Manager, Path, element_matches, entry_for, is_presence, leaves, managers, names, overlaps,
    to_fields_v1, value_at,
};
use crate::apiserver::ops::{self, Subresource};
use crate::apiserver::server::Server;
use crate::store::list_keys;
use crate::store::objects::Locked;
use crate::store::resources::ResourceInfo;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::managed_fields::*;
    use crate::store::resources;

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
