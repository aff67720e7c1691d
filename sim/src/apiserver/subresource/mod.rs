//! Subresources that are not the object itself: `scale` of the apps workloads (and custom
//! resources), `log` and `eviction` of Pods, and `token` of ServiceAccounts.

mod eviction;
mod log;
mod scale;
mod token;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use crate::apiserver::error::ApiError;
use crate::apiserver::ops::PatchKind;
use crate::apiserver::server::Server;
use crate::apiserver::wire::json_response;
use crate::store::objects::Locked;
use crate::store::resources::ResourceInfo;

/// What a request to a subresource carries.
pub enum Request {
    Get,
    Create(Value),
    Put(Value),
    Patch(PatchKind, Value),
}

/// Whether `info` has the subresource `sub` served here. Takes the store lock (a custom
/// resource's scale is declared in its CRD): call it without holding the store or registry.
pub fn serves(server: &Server, info: &ResourceInfo, sub: &str) -> bool {
    match sub {
        "scale" => scale::paths(&server.store.lock(), info).is_some(),
        "log" => !info.custom && info.group.is_empty() && info.plural == "pods",
        "eviction" => !info.custom && info.group.is_empty() && info.plural == "pods",
        "token" => !info.custom && info.group.is_empty() && info.plural == "serviceaccounts",
        _ => false,
    }
}

pub struct Call<'a> {
    pub server: &'a Server,
    pub info: &'a ResourceInfo,
    pub namespace: &'a str,
    pub name: &'a str,
    pub query: &'a std::collections::HashMap<String, String>,
}

pub fn handle(
    call: &Call<'_>,
    l: &mut Locked<'_>,
    sub: &str,
    req: Request,
) -> Result<Response, ApiError> {
    match (sub, req) {
        ("log", Request::Get) => log::answer(call, l),
        ("scale", Request::Get) => Ok(json_response(StatusCode::OK, &scale::get(call, l)?)),
        ("eviction", Request::Create(body)) => {
            let (code, status) = eviction::create(call, l, &body)?;
            Ok(json_response(code, &status))
        }
        ("token", Request::Create(body)) => Ok(json_response(
            StatusCode::CREATED,
            &token::create(call, l, body)?,
        )),
        ("scale", Request::Put(body)) => Ok(json_response(
            StatusCode::OK,
            &scale::write(call, l, scale::Edit::Replace(body))?,
        )),
        ("scale", Request::Patch(kind, patch)) => Ok(json_response(
            StatusCode::OK,
            &scale::write(call, l, scale::Edit::Patch(kind, patch))?,
        )),
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({}/{sub})",
            call.info.plural
        ))),
    }
}
