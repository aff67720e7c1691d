//! The door every request comes through, over the socket or in process: `/_sim/` to the admin
//! endpoint, the health probes, then the Kubernetes API (`apiserver::http`), with the warnings
//! a write recorded as `Warning` headers and every answer's code counted.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::apiserver::error::ApiError;
use crate::apiserver::http;
use crate::apiserver::server::Server;

/// Entry point for every request.
pub async fn handle(server: Arc<Server>, req: Request<Body>) -> Response {
    let path = req.uri().path().to_string();
    // The `verb group/resource` of a resource request, once known (for the error counts).
    let request = std::sync::OnceLock::new();
    let response = if path.starts_with("/_sim") {
        crate::harness::admin::endpoint::handle(server.clone(), req).await
    } else if matches!(path.as_str(), "/healthz" | "/readyz" | "/livez") {
        (StatusCode::OK, "ok").into_response()
    } else if server.faults.unauthorized() {
        ApiError::unauthorized().into_response()
    } else {
        let warnings = crate::store::objects::Warnings::default();
        let mut response = match http::api(server.clone(), req, &warnings, &request).await {
            Ok(r) => r,
            Err(e) => e.into_response(),
        };
        // Whatever the answer, as a real server's warning recorder adds them to any response.
        let warned = std::mem::take(&mut *warnings.lock().unwrap_or_else(|p| p.into_inner()));
        for text in warned {
            if let Ok(v) = HeaderValue::from_bytes(warning_header(&text).as_bytes()) {
                response.headers_mut().append(header::WARNING, v);
            }
        }
        response
    };
    server.stats.count_code(
        response.status().as_u16(),
        request.get().map(String::as_str),
    );
    response
}

/// A `Warning` header as a real server writes one: code 299, agent `-`, and the text quoted
/// with `"` and `\` escaped (`299 - "unknown field \"spec.foo\""`).
fn warning_header(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    format!("299 - \"{quoted}\"")
}
