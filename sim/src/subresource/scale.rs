//! The `scale` subresource of Deployments, ReplicaSets and StatefulSets: an `autoscaling/v1`
//! Scale view of `spec.replicas`, `status.replicas` and the selector.

use serde_json::{Value, json};

use super::Call;
use crate::error::{ApiError, Cause};
use crate::ops::{self, PatchKind, Subresource, res_key, view};
use crate::patch;
use crate::resources::ResourceInfo;
use crate::store::Locked;

pub fn has_scale(info: &ResourceInfo) -> bool {
    !info.custom
        && info.group == "apps"
        && matches!(
            info.plural.as_str(),
            "deployments" | "replicasets" | "statefulsets"
        )
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
fn scale_of(obj: &Value) -> Value {
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
    // The apps kinds default spec.replicas to 1.
    let replicas = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut status = json!({
        "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
    });
    if let Some(sel) = obj.pointer("/spec/selector") {
        status["selector"] = json!(selector_string(sel));
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": replicas},
        "status": status,
    })
}

fn stored(call: &Call<'_>, l: &mut Locked<'_>) -> Result<Value, ApiError> {
    let key = (call.namespace.to_string(), call.name.to_string());
    l.get(&res_key(call.info), &key)
        .map(|o| view(call.info, &o))
        .ok_or_else(|| ApiError::not_found(&call.info.group, &call.info.plural, call.name))
}

pub fn get(call: &Call<'_>, l: &mut Locked<'_>) -> Result<Value, ApiError> {
    Ok(scale_of(&stored(call, l)?))
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
    let obj = stored(call, l)?;
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
            let mut scale = scale_of(&obj);
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
                    return Err(ApiError::unsupported_media_type(
                        "application/apply-patch+yaml",
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
    next["spec"]["replicas"] = json!(replicas);
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
    Ok(scale_of(&updated))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            scale_of(&d),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
                "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web"}})
        );
    }
}
