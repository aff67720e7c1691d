//! `pods/log`: simulated Pods run no process, so their log is one line saying so.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::Call;
use crate::apiserver::error::ApiError;
use crate::apiserver::ops::res_key;
use crate::store::objects::Locked;

fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}"))?.as_array())
        .flatten()
        .filter_map(|c| c.get("name")?.as_str())
        .collect()
}

/// What the kubelet answers instead of logs (its `validateContainerLogStatus`), judged from the
/// container status the simulated kubelet wrote; without a status the sim's line is answered.
fn kubelet_refusal(pod: &Value, container: &str, call: &Call<'_>) -> Option<String> {
    let status = ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/status/{k}"))?.as_array())
        .flatten()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(container))?;
    let pod_name = call.name;
    if call.query.get("previous").is_some_and(|p| p == "true") {
        return status.pointer("/lastState/terminated").is_none().then(|| {
            format!("previous terminated container \"{container}\" in pod \"{pod_name}\" not found")
        });
    }
    let state = |k: &str| status.pointer(&format!("/state/{k}")).is_some();
    if state("running") || state("terminated") || status.pointer("/lastState/terminated").is_some()
    {
        return None;
    }
    let prefix = format!("container \"{container}\" in pod \"{pod_name}\" is waiting to start");
    Some(
        match status
            .pointer("/state/waiting/reason")
            .and_then(Value::as_str)
        {
            Some("ErrImagePull") => format!("{prefix}: image can't be pulled"),
            Some("ImagePullBackOff") => format!("{prefix}: trying and failing to pull image"),
            Some(reason) => format!("{prefix}: {reason}"),
            None => format!("{prefix} - no logs yet"),
        },
    )
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
    if let Some(refusal) = kubelet_refusal(&pod, &container, call) {
        return Err(ApiError::bad_request(refusal));
    }
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
    fn waiting_containers_and_missing_previous_instances_have_no_logs() {
        let server = crate::apiserver::server::Server::new(
            crate::apiserver::config::SimConfig::default(),
            "127.0.0.1:0".into(),
        );
        let registry = server.registry();
        let info = registry.lookup("", "v1", "pods").unwrap();
        let mut query = std::collections::HashMap::new();
        let call = |query: &std::collections::HashMap<String, String>| {
            kubelet_refusal(
                &serde_json::json!({"status": {"containerStatuses": [
                    {"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}}]}}),
                "app",
                &Call {
                    server: &server,
                    info: &info,
                    namespace: "ns",
                    name: "p",
                    query,
                },
            )
        };
        assert_eq!(
            call(&query).as_deref(),
            Some("container \"app\" in pod \"p\" is waiting to start: ContainerCreating")
        );
        let pulling = serde_json::json!({"status": {"containerStatuses": [
            {"name": "app", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}});
        let call_for = Call {
            server: &server,
            info: &info,
            namespace: "ns",
            name: "p",
            query: &query,
        };
        assert_eq!(
            kubelet_refusal(&pulling, "app", &call_for).as_deref(),
            Some(
                "container \"app\" in pod \"p\" is waiting to start: trying and failing to pull image"
            )
        );
        query.insert("previous".into(), "true".into());
        assert_eq!(
            call(&query).as_deref(),
            Some("previous terminated container \"app\" in pod \"p\" not found")
        );
        let running = serde_json::json!({"status": {"containerStatuses": [
            {"name": "app", "state": {"running": {}}}]}});
        query.clear();
        let call = Call {
            server: &server,
            info: &info,
            namespace: "ns",
            name: "p",
            query: &query,
        };
        assert_eq!(kubelet_refusal(&running, "app", &call), None);
        assert_eq!(kubelet_refusal(&serde_json::json!({}), "app", &call), None);
    }

    #[test]
    fn containers_of_every_list_are_named() {
        let pod = serde_json::json!({"spec": {"initContainers": [{"name": "init"}],
            "containers": [{"name": "app"}, {"name": "sidecar"}]}});
        assert_eq!(container_names(&pod), vec!["init", "app", "sidecar"]);
    }
}
