//! Server-side apply (`application/apply-patch+yaml`).

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::Value;

use crate::sim::error::ApiError;
use crate::sim::ops::Subresource;
use crate::sim::resources::ResourceInfo;
use crate::sim::server::Server;
use crate::sim::store::Locked;

/// Server-side apply is not implemented: the sim answers 415 like a server without the
/// feature, so clients fall back or fail loudly instead of getting wrong field ownership.
#[allow(clippy::too_many_arguments)]
pub fn server_side_apply(
    _server: &Server,
    _l: &mut Locked<'_>,
    _info: &ResourceInfo,
    _namespace: &str,
    _name: &str,
    _patch: Value,
    _sub: Subresource,
    _manager: &str,
    _force: bool,
) -> Result<(StatusCode, Arc<Value>), ApiError> {
    Err(ApiError::unsupported_media_type(
        "application/apply-patch+yaml",
    ))
}
