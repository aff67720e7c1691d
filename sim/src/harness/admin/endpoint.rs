//! `/_sim/` admin endpoint: the HTTP face of [`Admin`](super::Admin).
//!
//! | method + path                | body                                          |
//! |------------------------------|-----------------------------------------------|
//! | GET  /_sim/stats             | —  (counters)                                 |
//! | DELETE /_sim/stats           | —  (reset counters)                           |
//! | GET  /_sim/faults            | —  (current fault state)                      |
//! | POST /_sim/deny              | `{"rule": "create:secrets:team-d"}`           |
//! | DELETE /_sim/deny            | —  (clear deny rules)                         |
//! | POST /_sim/unserve           | `{"group": "route.openshift.io"}` (or `"G/RESOURCE"`) |
//! | POST /_sim/serve             | `{"group": "route.openshift.io"}`             |
//! | POST /_sim/unauthorized      | `{"enabled": true}`                           |
//! | POST /_sim/errors            | `{"match": "*:*:*", "code": 503, "count": 3}` |
//! | POST /_sim/latency           | `{"match": "get:*:*", "millis": 200, "count": 5}` (count optional) |
//! | POST /_sim/clear             | —  (remove every runtime fault)               |
//! | POST /_sim/watches/drop      | —  (end all open watches)                     |
//! | POST /_sim/watches/gone      | —  (next watch answers 410 Gone)              |
//! | GET  /_sim/workloads/faults  | —  (workload fault rules)                     |
//! | POST /_sim/workloads/faults  | `{"namespace": "a", "selector": "app=web", "fault": "ImagePullBackOff"}` |
//! | DELETE /_sim/workloads/faults | optional rule body: remove it; none: remove all |
//! | GET  /_sim/kubeconfig?user=U&groups=G1,G2 | —  (a kubeconfig authenticating as U in G1, G2) |
//! | GET  /_sim/rbac/exercised    | —  (stored RBAC rules that allowed requests, per user) |
//! | DELETE /_sim/rbac/exercised  | —  (forget them)                              |
//! | POST /_sim/cnpg/switchover   | `{"namespace": "a", "cluster": "db", "instance"?: "db-2"}` (answers `targetPrimary`) |

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::apiserver::error::ApiError;
use crate::apiserver::server::Server;
use crate::apiserver::wire::{MAX_BODY, json_response};
use crate::apiserver::workload_faults::WorkloadFaultRule;

use super::Admin;

pub async fn handle(server: Arc<Server>, req: Request<Body>) -> Response {
    match run(server, req).await {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => e.into_response(),
    }
}

fn field<'a>(body: &'a Value, name: &str) -> Result<&'a Value, ApiError> {
    body.get(name)
        .ok_or_else(|| ApiError::bad_request(format!("missing field {name:?}")))
}

fn text<'a>(body: &'a Value, name: &str) -> Result<&'a str, ApiError> {
    field(body, name)?
        .as_str()
        .ok_or_else(|| ApiError::bad_request(format!("{name:?} must be a string")))
}

async fn run(server: Arc<Server>, req: Request<Body>) -> Result<Value, ApiError> {
    let (parts, body) = req.into_parts();
    // The endpoint is for test programs: a browser's request (it always says where it comes
    // from) is refused, and a body is JSON, never what a cross-site form or `text/plain` sends.
    if parts.headers.contains_key(axum::http::header::ORIGIN) {
        return Err(ApiError::forbidden(
            "the /_sim endpoint does not answer requests from web pages",
        ));
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| ApiError::too_large())?;
    let body: Value = if bytes.is_empty() {
        json!({})
    } else {
        let content_type = parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("\u{fffd}"));
        if !matches!(
            crate::apiserver::media::body_format(content_type),
            Ok(crate::apiserver::media::BodyFormat::Json)
        ) {
            return Err(crate::apiserver::media::unsupported(&["application/json"]));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::bad_request(format!("admin body is not JSON: {e}")))?
    };
    let admin = Admin {
        server: server.clone(),
    };
    let ok = json!({"ok": true});
    let path = parts.uri.path().trim_end_matches('/');
    match (&parts.method, path) {
        (&Method::GET, "/_sim/stats") => {
            serde_json::to_value(admin.stats()).map_err(|e| ApiError::internal(e.to_string()))
        }
        (&Method::DELETE, "/_sim/stats") => {
            admin.reset_stats();
            Ok(ok)
        }
        (&Method::GET, "/_sim/faults") => {
            serde_json::to_value(admin.state()).map_err(|e| ApiError::internal(e.to_string()))
        }
        (&Method::POST, "/_sim/deny") => {
            admin
                .deny(text(&body, "rule")?)
                .map_err(ApiError::bad_request)?;
            Ok(ok)
        }
        (&Method::DELETE, "/_sim/deny") => {
            admin.clear_deny();
            Ok(ok)
        }
        (&Method::POST, "/_sim/unserve") => {
            admin.unserve(text(&body, "group")?);
            Ok(ok)
        }
        (&Method::POST, "/_sim/serve") => {
            admin.serve(text(&body, "group")?);
            Ok(ok)
        }
        (&Method::POST, "/_sim/unauthorized") => {
            admin.set_unauthorized(field(&body, "enabled")?.as_bool().unwrap_or(false));
            Ok(ok)
        }
        (&Method::POST, "/_sim/errors") => {
            let code = field(&body, "code")?
                .as_u64()
                .filter(|c| (400..600).contains(c))
                .ok_or_else(|| ApiError::bad_request("code must be 400..599"))?;
            let count = body.get("count").and_then(Value::as_u64).unwrap_or(1) as u32;
            admin
                .inject_errors(text(&body, "match")?, code as u16, count)
                .map_err(ApiError::bad_request)?;
            Ok(ok)
        }
        (&Method::POST, "/_sim/latency") => {
            let millis = field(&body, "millis")?
                .as_u64()
                .ok_or_else(|| ApiError::bad_request("millis must be a number"))?;
            let count = body.get("count").and_then(Value::as_u64).map(|c| c as u32);
            admin
                .inject_latency(text(&body, "match")?, Duration::from_millis(millis), count)
                .map_err(ApiError::bad_request)?;
            Ok(ok)
        }
        (&Method::POST, "/_sim/clear") => {
            admin.clear_faults();
            Ok(ok)
        }
        (&Method::POST, "/_sim/watches/drop") => {
            admin.drop_watches();
            Ok(ok)
        }
        (&Method::POST, "/_sim/cnpg/switchover") => {
            let target = crate::cluster::cnpg::switchover::request(
                &server,
                text(&body, "namespace")?,
                text(&body, "cluster")?,
                body.get("instance").and_then(Value::as_str),
            )?;
            Ok(json!({"ok": true, "targetPrimary": target}))
        }
        (&Method::GET, "/_sim/workloads/faults") => serde_json::to_value(admin.workload_faults())
            .map_err(|e| ApiError::internal(e.to_string())),
        (&Method::POST, "/_sim/workloads/faults") => {
            let rule: WorkloadFaultRule = serde_json::from_value(body)
                .map_err(|e| ApiError::bad_request(format!("invalid workload fault: {e}")))?;
            server
                .workload_faults
                .add(rule)
                .map_err(ApiError::bad_request)?;
            Ok(ok)
        }
        (&Method::DELETE, "/_sim/workloads/faults") => {
            let rule: Option<WorkloadFaultRule> =
                if body.as_object().is_some_and(|m| m.is_empty()) {
                    None
                } else {
                    Some(serde_json::from_value(body).map_err(|e| {
                        ApiError::bad_request(format!("invalid workload fault: {e}"))
                    })?)
                };
            let removed = admin.clear_workload_faults(rule.as_ref());
            Ok(json!({"ok": true, "removed": removed}))
        }
        (&Method::GET, "/_sim/kubeconfig") => {
            let query: std::collections::HashMap<String, String> =
                axum::extract::Query::try_from_uri(&parts.uri)
                    .map(|q: axum::extract::Query<_>| q.0)
                    .map_err(|e| ApiError::bad_request(format!("invalid query: {e}")))?;
            let user = query
                .get("user")
                .filter(|u| !u.is_empty())
                .ok_or_else(|| ApiError::bad_request("missing query parameter user"))?;
            let groups: Vec<String> = query
                .get("groups")
                .map(|g| {
                    g.split(',')
                        .filter(|g| !g.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            Ok(admin.kubeconfig_for(user, &groups))
        }
        (&Method::GET, "/_sim/rbac/exercised") => serde_json::to_value(admin.exercised_rules())
            .map_err(|e| ApiError::internal(e.to_string())),
        (&Method::DELETE, "/_sim/rbac/exercised") => {
            admin.clear_exercised_rules();
            Ok(ok)
        }
        (&Method::POST, "/_sim/watches/gone") => {
            admin.force_gone_next_watch();
            Ok(ok)
        }
        _ => Err(ApiError::not_found_path()),
    }
}
