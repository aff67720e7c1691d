//! The `scale` subresource of Deployments, ReplicaSets, StatefulSets and custom resources whose
//! CRD declares one: an `autoscaling/v1` Scale view of the replicas and the selector.

use serde_json::{Value, json};

use super::Call;
use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::ops::{self, PatchKind, Subresource, res_key, view};
use crate::apiserver::patch;
use crate::store::objects::{Locked, ObjKey, ResKey};
use crate::store::resources::ResourceInfo;

/// Where a kind keeps what its Scale shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    spec_replicas: String,
    status_replicas: String,
    /// A LabelSelector object under `spec` (apps kinds) or a string (custom resources).
    selector: Option<(String, bool)>,
    /// What `spec.replicas` reads when the object has none: 1 for the apps kinds (their
    /// default), 0 for custom resources.
    default_replicas: i64,
}

fn apps_paths(info: &ResourceInfo) -> Option<ScalePaths> {
    let apps = !info.custom
        && info.group == "apps"
        && matches!(
            info.plural.as_str(),
            "deployments" | "replicasets" | "statefulsets"
        );
    apps.then(|| ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        selector: Some((".spec.selector".into(), true)),
        default_replicas: 1,
    })
}

/// Where the CustomResourceDefinition serving `info` is stored (its name is `plural.group`).
fn crd_key(info: &ResourceInfo) -> (ResKey, ObjKey) {
    (
        (
            "apiextensions.k8s.io".to_string(),
            "customresourcedefinitions".to_string(),
        ),
        (String::new(), format!("{}.{}", info.plural, info.group)),
    )
}

/// The `subresources.scale` of the CRD version serving `info`.
fn crd_paths(crd: &Value, info: &ResourceInfo) -> Option<ScalePaths> {
    let version = crd
        .pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(info.version.as_str()))?;
    let scale = version.pointer("/subresources/scale")?;
    let path = |k: &str| scale.get(k).and_then(Value::as_str).map(str::to_string);
    Some(ScalePaths {
        spec_replicas: path("specReplicasPath")?,
        status_replicas: path("statusReplicasPath")?,
        selector: path("labelSelectorPath").map(|p| (p, false)),
        default_replicas: 0,
    })
}

/// The scale paths of `info`, reading its CRD through `l` for custom resources.
pub fn paths(l: &Locked<'_>, info: &ResourceInfo) -> Option<ScalePaths> {
    if !info.custom {
        return apps_paths(info);
    }
    let (res, key) = crd_key(info);
    crd_paths(l.get(&res, &key)?.as_ref(), info)
}

/// `.spec.replicas` as a JSON pointer.
fn pointer(path: &str) -> String {
    path.split('.')
        .filter(|s| !s.is_empty())
        .fold(String::new(), |acc, seg| format!("{acc}/{seg}"))
}

fn set_at(obj: &mut Value, path: &str, value: Value) {
    let segs: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    let mut cur = obj;
    for seg in &segs[..segs.len().saturating_sub(1)] {
        if !cur[*seg].is_object() {
            cur[*seg] = json!({});
        }
        cur = &mut cur[*seg];
    }
    if let Some(last) = segs.last() {
        cur[*last] = value;
    }
}

/// A label selector in the string form `status.selector` carries (`labels.Selector.String()`):
/// requirements sorted by key, values sorted.
pub fn selector_string(selector: &Value) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let mut values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// The Scale a real server answers for `obj`.
fn scale_of(obj: &Value, paths: &ScalePaths) -> Value {
    let m = &obj["metadata"];
    let mut meta = json!({});
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(k) {
            meta[k] = v.clone();
        }
    }
    let replicas = obj
        .pointer(&pointer(&paths.spec_replicas))
        .and_then(Value::as_i64)
        .unwrap_or(paths.default_replicas);
    let mut status = json!({
        "replicas": obj.pointer(&pointer(&paths.status_replicas)).and_then(Value::as_i64).unwrap_or(0),
    });
    match &paths.selector {
        Some((path, true)) => {
            if let Some(sel) = obj.pointer(&pointer(path)) {
                status["selector"] = json!(selector_string(sel));
            }
        }
        Some((path, false)) => {
            if let Some(sel) = obj.pointer(&pointer(path)).and_then(Value::as_str) {
                status["selector"] = json!(sel);
            }
        }
        None => {}
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": replicas},
        "status": status,
    })
}

fn stored(call: &Call<'_>, l: &mut Locked<'_>) -> Result<(Value, ScalePaths), ApiError> {
    let not_found = || ApiError::not_found(&call.info.group, &call.info.plural, call.name);
    let paths = paths(l, call.info).ok_or_else(ApiError::not_found_path)?;
    let key = (call.namespace.to_string(), call.name.to_string());
    let obj = l
        .get(&res_key(call.info), &key)
        .map(|o| view(call.info, &o))
        .ok_or_else(not_found)?;
    Ok((obj, paths))
}

pub fn get(call: &Call<'_>, l: &mut Locked<'_>) -> Result<Value, ApiError> {
    let (obj, paths) = stored(call, l)?;
    Ok(scale_of(&obj, &paths))
}

fn invalid(name: &str, value: &Value, why: &str) -> ApiError {
    ApiError::invalid(
        "autoscaling",
        "Scale",
        name,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {value}: {why}"),
            field: "spec.replicas".into(),
        }],
    )
}

/// A PUT or a PATCH of the Scale.
pub enum Edit {
    Replace(Value),
    Patch(PatchKind, Value),
}

/// PUT or PATCH of the Scale: only `spec.replicas` reaches the object (with the Scale's
/// `resourceVersion` as precondition).
pub fn write(call: &Call<'_>, l: &mut Locked<'_>, req: Edit) -> Result<Value, ApiError> {
    let (obj, paths) = stored(call, l)?;
    let wanted = match req {
        Edit::Replace(body) => {
            if let Some(kind) = body.get("kind").and_then(Value::as_str)
                && kind != "Scale"
            {
                return Err(ApiError::bad_request(format!(
                    "the body is a {kind}, not an autoscaling/v1 Scale"
                )));
            }
            body
        }
        Edit::Patch(kind, p) => {
            let mut scale = scale_of(&obj, &paths);
            match kind {
                // A Scale has no lists, so a strategic merge patch merges like a merge patch.
                PatchKind::Merge | PatchKind::Strategic => patch::merge_patch(&mut scale, &p),
                PatchKind::Json => patch::json_patch(&mut scale, &p).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: {e}"
                        ),
                    )
                })?,
                PatchKind::Apply => {
                    return Err(crate::apiserver::media::unsupported(
                        crate::apiserver::media::patch_types(false),
                    ));
                }
            }
            scale
        }
    };
    let value = wanted
        .pointer("/spec/replicas")
        .cloned()
        .unwrap_or(json!(0));
    let replicas = match value.as_i64() {
        Some(n) if n < 0 => {
            return Err(invalid(
                call.name,
                &value,
                "must be greater than or equal to 0",
            ));
        }
        Some(n) if n <= i64::from(i32::MAX) => n,
        _ => return Err(invalid(call.name, &value, "must be a 32-bit integer")),
    };
    let mut next = obj;
    set_at(&mut next, &paths.spec_replicas, json!(replicas));
    match wanted
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
    {
        Some(rv) if !rv.is_empty() => next["metadata"]["resourceVersion"] = json!(rv),
        _ => {}
    }
    let updated = ops::update(
        call.server,
        l,
        call.info,
        call.namespace,
        call.name,
        next,
        Subresource::Main,
    )?;
    Ok(scale_of(&updated, &paths))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crd_scale_reads_and_writes_its_declared_paths() {
        let crd = json!({"spec": {"versions": [{"name": "v1", "subresources": {"scale": {
            "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready",
            "labelSelectorPath": ".status.selector"}}}]}});
        let mut info = crate::store::resources::builtins().remove(0);
        info.custom = true;
        info.version = "v1".into();
        let paths = crd_paths(&crd, &info).unwrap();
        let mut obj =
            json!({"metadata": {"name": "w"}, "status": {"ready": 2, "selector": "app=w"}});
        assert_eq!(
            scale_of(&obj, &paths)["spec"],
            json!({"replicas": 0}),
            "a missing spec path reads 0"
        );
        set_at(&mut obj, &paths.spec_replicas, json!(4));
        let scale = scale_of(&obj, &paths);
        assert_eq!(
            (&scale["spec"], &scale["status"]),
            (
                &json!({"replicas": 4}),
                &json!({"replicas": 2, "selector": "app=w"})
            )
        );
        info.version = "v2".into();
        assert_eq!(crd_paths(&crd, &info), None);
    }

    #[test]
    fn selectors_print_as_label_selector_strings() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]},
                                 {"key": "gone", "operator": "DoesNotExist"}]});
        assert_eq!(selector_string(&sel), "a=1,b=2,!gone,tier in (api,web)");
    }

    #[test]
    fn the_scale_view_reads_spec_status_and_selector() {
        let d = json!({"metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                "labels": {"x": "y"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2}});
        assert_eq!(
            scale_of(
                &d,
                &apps_paths(
                    &crate::store::resources::builtins()
                        .into_iter()
                        .find(|i| i.plural == "deployments")
                        .unwrap()
                )
                .unwrap()
            ),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
                "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web"}})
        );
    }
}
