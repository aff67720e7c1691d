//! What every handler writes on the wire: JSON answers, the shape a client asked for, and query
//! booleans read as Go reads them. A leaf module, so the router (`http`) and the modules it calls
//! (errors, rendering, watches, discovery, admin) share it without importing each other.

use std::collections::HashMap;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// Bodies above this size are refused, as a real server does.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

pub fn json_response(code: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    bytes_response(code, body)
}

pub fn bytes_response(code: StatusCode, body: Vec<u8>) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A boolean query parameter as Go's `strconv.ParseBool` reads it (`true`, `True`, `1`, `t`...;
/// the Python client sends `True`).
pub fn query_bool(query: &HashMap<String, String>, key: &str) -> bool {
    query
        .get(key)
        .is_some_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "true" | "True" | "TRUE"))
}

/// What the client asked the answer to look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Full,
    Metadata,
    Table,
}
