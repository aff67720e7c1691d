//! `pods/log`: simulated Pods run no process, so their log is one line saying so.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::Call;
use crate::error::ApiError;
use crate::ops::res_key;
use crate::store::Locked;

fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}"))?.as_array())
        .flatten()
        .filter_map(|c| c.get("name")?.as_str())
        .collect()
}

pub fn answer(call: &Call<'_>, l: &mut Locked<'_>) -> Result<Response, ApiError> {
    let key = (call.namespace.to_string(), call.name.to_string());
    let pod = l
        .get(&res_key(call.info), &key)
        .ok_or_else(|| ApiError::not_found("", "pods", call.name))?;
    let names = container_names(&pod);
    // The API server picks the container as a real one does: named, or the only one.
    let container = match call.query.get("container").filter(|c| !c.is_empty()) {
        Some(c) if names.contains(&c.as_str()) => c.clone(),
        Some(c) => {
            return Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {}",
                call.name
            )));
        }
        None => match names.as_slice() {
            [only] => only.to_string(),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {}, choose one of: [{}]",
                    call.name,
                    names.join(" ")
                )));
            }
        },
    };
    let line = format!(
        "pgtoolbox sim: Pod {}/{} is simulated; container {container} runs no process and writes no logs\n",
        call.namespace, call.name
    );
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], line).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_of_every_list_are_named() {
        let pod = serde_json::json!({"spec": {"initContainers": [{"name": "init"}],
            "containers": [{"name": "app"}, {"name": "sidecar"}]}});
        assert_eq!(container_names(&pod), vec!["init", "app", "sidecar"]);
    }
}
