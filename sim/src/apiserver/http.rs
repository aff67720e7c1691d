//! The Kubernetes API over HTTP: path routing, content negotiation, faults and the verbs
//! (`harness::front` hands it every request but `/_sim/` and the health probes).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::apiserver::error::ApiError;
use crate::apiserver::faults::Verdict;
use crate::apiserver::filter::{Filter, decode_continue, encode_continue, validate_list_options};
use crate::apiserver::media::BodyFormat;
use crate::apiserver::ops::{self, DeleteOpts, PatchKind, Subresource};
use crate::apiserver::server::Server;
use crate::apiserver::wire::{MAX_BODY, Shape, bytes_response, json_response, query_bool};
use crate::store::resources::ResourceInfo;
use crate::{apiserver::discovery, apiserver::openapi, apiserver::render, apiserver::watch};

/// A resource request after path parsing.
#[derive(Debug, Clone)]
pub struct Target {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
}

enum Route {
    Discovery(discovery::Discovery),
    Resource(Target),
}

fn parse_path(path: &str) -> Option<Route> {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["version"] => return Some(Route::Discovery(discovery::Discovery::Version)),
        ["api"] => return Some(Route::Discovery(discovery::Discovery::Api)),
        ["apis"] => return Some(Route::Discovery(discovery::Discovery::Apis)),
        ["api", v] => {
            return Some(Route::Discovery(discovery::Discovery::Resources(
                String::new(),
                v.to_string(),
            )));
        }
        ["apis", g] => return Some(Route::Discovery(discovery::Discovery::Group(g.to_string()))),
        ["apis", g, v] => {
            return Some(Route::Discovery(discovery::Discovery::Resources(
                g.to_string(),
                v.to_string(),
            )));
        }
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let t = |ns: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| Target {
        group: group.to_string(),
        version: version.to_string(),
        plural: plural.to_string(),
        namespace: ns.map(str::to_string),
        name: name.map(str::to_string),
        sub: sub.map(str::to_string),
    };
    let target = match rest {
        // Namespace subresources look like a namespaced collection; tell them apart.
        ["namespaces", ns, sub @ ("status" | "finalize")] if group.is_empty() => {
            t(None, "namespaces", Some(ns), Some(sub))
        }
        ["namespaces", ns, plural] => t(Some(ns), plural, None, None),
        ["namespaces", ns, plural, name] => t(Some(ns), plural, Some(name), None),
        ["namespaces", ns, plural, name, sub] => t(Some(ns), plural, Some(name), Some(sub)),
        [plural] => t(None, plural, None, None),
        [plural, name] => t(None, plural, Some(name), None),
        [plural, name, sub] => t(None, plural, Some(name), Some(sub)),
        _ => return None,
    };
    Some(Route::Resource(target))
}

fn shape(headers: &HeaderMap) -> Result<Shape, ApiError> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Clients list alternatives in preference order; take the first one we can produce.
    for alt in accept.split(',') {
        let alt = alt.trim();
        if alt.contains("as=Table") {
            return Ok(Shape::Table);
        }
        if alt.contains("as=PartialObjectMetadata") {
            return Ok(Shape::Metadata);
        }
        if alt.is_empty()
            || alt.starts_with("application/json")
            || alt.starts_with("*/*")
            || alt.starts_with("application/yaml")
        {
            return Ok(Shape::Full);
        }
    }
    if accept.contains("protobuf") {
        return Err(ApiError::not_acceptable("only application/json is served"));
    }
    Ok(Shape::Full)
}

fn verb_of(
    method: &Method,
    target: &Target,
    query: &HashMap<String, String>,
) -> Result<&'static str, ApiError> {
    let item = target.name.is_some();
    let watching = query_bool(query, "watch");
    Ok(match (method.as_str(), item) {
        ("GET", false) if watching => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", false) => "create",
        // Subresources created under an object (`serviceaccounts/NAME/token`).
        ("POST", true) if target.sub.is_some() => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
    })
}

fn forbidden_message(user: &str, verb: &str, target: &Target) -> String {
    let subject = match &target.name {
        Some(n) => format!("{} \"{n}\"", qualified(target)),
        None => qualified(target),
    };
    let resource = match &target.sub {
        Some(s) => format!("{}/{s}", target.plural),
        None => target.plural.clone(),
    };
    let scope = match &target.namespace {
        Some(ns) => format!(" in the namespace \"{ns}\""),
        None => " at the cluster scope".to_string(),
    };
    format!(
        "{subject} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{}\"{scope}",
        target.group
    )
}

fn qualified(t: &Target) -> String {
    if t.group.is_empty() {
        t.plural.clone()
    } else {
        format!("{}.{}", t.plural, t.group)
    }
}

fn injected_error(code: u16) -> ApiError {
    let reason = match code {
        403 => "Forbidden",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    };
    // A 403 on a write is what a denying admission webhook answers, in its words.
    let message = match code {
        403 => format!(
            "admission webhook \"deny.sim.local\" denied the request: injected fault: the server answered {code}"
        ),
        _ => format!("injected fault: the server answered {code}"),
    };
    let mut e = ApiError::new(code, reason, message);
    if code == 429 || code == 503 {
        e.details = Some(Box::new(crate::apiserver::error::Details {
            retry_after_seconds: Some(1),
            ..Default::default()
        }));
    }
    e
}

/// The Kubernetes API; the warnings of a write (pruned unknown fields) go to `warnings`.
pub(crate) async fn api(
    server: Arc<Server>,
    req: Request<Body>,
    warnings: &crate::store::objects::Warnings,
    request: &std::sync::OnceLock<String>,
) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    let query: HashMap<String, String> =
        axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map(|q| q.0)
            .map_err(|e| ApiError::bad_request(format!("invalid query: {e}")))?;
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let requester = crate::apiserver::auth::authenticate(&server, authorization)?;
    let identity =
        crate::apiserver::auth::impersonate::resolve(&server, requester, &parts.headers)?;
    let route = parse_path(parts.uri.path());
    if !identity.is_admin() && !matches!(route, Some(Route::Resource(_))) {
        let a = crate::apiserver::auth::Attributes {
            verb: parts.method.as_str().to_ascii_lowercase(),
            path: Some(parts.uri.path().to_string()),
            ..Default::default()
        };
        if !crate::apiserver::auth::authorize(&server, &identity, &a) {
            return Err(crate::apiserver::auth::forbidden(&identity, &a, None));
        }
    }
    if let Some(rest) = parts.uri.path().strip_prefix("/openapi/v3") {
        let rest = rest.trim_matches('/');
        let doc = if rest.is_empty() {
            Some(openapi::index(&server))
        } else {
            openapi::group_version(&server, rest)
        };
        return doc
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::not_found_path);
    }
    let target = match route.ok_or_else(ApiError::not_found_path)? {
        Route::Discovery(d) => return discovery::answer(&server, d, &parts.headers),
        Route::Resource(t) => t,
    };
    // A group or kind made unserved is not installed at all: no handler answers for it.
    if server.faults.is_unserved(&target.group) {
        return Err(ApiError::path_not_installed());
    }
    let info = server
        .registry()
        .lookup(&target.group, &target.version, &target.plural)
        .ok_or_else(ApiError::not_found_path)?;
    if server
        .faults
        .is_unserved_resource(&info.group, &info.plural)
    {
        return Err(ApiError::path_not_installed());
    }
    let misplaced = (!info.namespaced && target.namespace.is_some())
        || (info.namespaced
            && target.namespace.is_none()
            && (target.name.is_some() || parts.method == Method::POST));
    if misplaced {
        return Err(ApiError::not_found_path());
    }
    let sub = match target.sub.as_deref() {
        None => Subresource::Main,
        Some("status") if info.status_subresource => Subresource::Status,
        Some("finalize") if info.group.is_empty() && info.plural == "namespaces" => {
            Subresource::Finalize
        }
        Some(s) if crate::apiserver::subresource::serves(&server, &info, s) => Subresource::Main,
        Some(_) => return Err(ApiError::not_found_path()),
    };
    let verb = verb_of(&parts.method, &target, &query)?;
    if info.create_only && verb != "create" {
        return Err(ApiError::method_not_allowed(format!(
            "{} only supports create",
            info.plural
        )));
    }
    let namespace = target.namespace.clone().unwrap_or_default();
    let counted_resource = match &target.sub {
        Some(s) => format!("{}/{s}", info.group_resource()),
        None => info.group_resource(),
    };
    server.stats.count(verb, &counted_resource, &namespace);
    let _ = request.set(format!("{verb} {counted_resource}"));
    if !identity.is_admin() {
        let a = crate::apiserver::auth::Attributes {
            verb: verb.to_string(),
            path: None,
            group: target.group.clone(),
            resource: target.plural.clone(),
            subresource: target.sub.clone().unwrap_or_default(),
            name: target.name.clone().unwrap_or_default(),
            namespace: namespace.clone(),
        };
        if !crate::apiserver::auth::authorize(&server, &identity, &a) {
            return Err(crate::apiserver::auth::forbidden(
                &identity,
                &a,
                target.name.as_deref(),
            ));
        }
    }
    let deny_resource = match &target.sub {
        Some(s) => format!("{}/{s}", target.plural),
        None => target.plural.clone(),
    };
    if server
        .faults
        .denied(verb, &target.group, &target.plural, &namespace)
        .is_some()
        || (target.sub.is_some()
            && server
                .faults
                .denied(verb, &target.group, &deny_resource, &namespace)
                .is_some())
    {
        let mut e = ApiError::forbidden(forbidden_message(&identity.user, verb, &target));
        e.details = Some(Box::new(crate::apiserver::error::Details {
            name: target.name.clone().unwrap_or_default(),
            group: target.group.clone(),
            kind: target.plural.clone(),
            ..Default::default()
        }));
        return Err(e);
    }
    let (delay, verdict) = server
        .faults
        .injected(verb, &target.group, &target.plural, &namespace);
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    if let Verdict::Fail(code) = verdict {
        return Err(injected_error(code));
    }
    let shape = shape(&parts.headers)?;
    let dry_run = match query.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unsupported dryRun value {other:?}: only All"
            )));
        }
    };
    let validation = crate::store::objects::FieldValidation::from_query(
        query.get("fieldValidation").map(String::as_str),
    );
    // Without `fieldManager` a real server names the writer after its User-Agent's product.
    let field_manager = query
        .get("fieldManager")
        .filter(|m| !m.is_empty())
        .cloned()
        .or_else(|| manager_from_user_agent(&parts.headers));
    // Whose writes the admission policies judge (the escalation checks' dry runs are not).
    let requester = crate::apiserver::admission::requester(&identity, target.sub.as_deref());
    let write_lock = || {
        let mut l = if dry_run {
            server.store.lock_dry_run()
        } else {
            server.store.lock()
        };
        l.set_field_validation(validation, warnings.clone());
        l.set_field_manager(field_manager.clone());
        l.set_admission_requester(requester.clone());
        l
    };
    let name = target.name.clone().unwrap_or_default();
    let ctx = Ctx {
        server: &server,
        info: &info,
        namespace: &namespace,
        shape,
        requester: requester.clone(),
        warnings,
    };
    if let Some(s) = target.sub.as_deref()
        && sub == Subresource::Main
    {
        use crate::apiserver::subresource::Request as SubRequest;
        if !matches!(verb, "get" | "create" | "update" | "patch") {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({}/{s})",
                info.plural
            )));
        }
        let req = match verb {
            "create" => SubRequest::Create(read_body(body, &parts.headers).await?),
            "update" => SubRequest::Put(read_body(body, &parts.headers).await?),
            "patch" => {
                let (kind, patch) = read_patch(body, &parts.headers, &info).await?;
                SubRequest::Patch(kind, patch)
            }
            _ => SubRequest::Get,
        };
        let call = crate::apiserver::subresource::Call {
            server: &server,
            info: &info,
            namespace: &namespace,
            name: &name,
            query: &query,
        };
        return crate::apiserver::subresource::handle(&call, &mut write_lock(), s, req);
    }
    match verb {
        "get" => ctx.get(&name),
        "list" => ctx.list(&query),
        "watch" => watch::start(
            server.clone(),
            info.clone(),
            target.namespace.clone(),
            &query,
            shape,
        ),
        "create" => {
            let body = read_body(body, &parts.headers).await?;
            if info.create_only
                && let Some(answer) =
                    crate::apiserver::reviews::answer(&server, &identity, &info, body.clone())
            {
                return Ok(json_response(StatusCode::CREATED, &answer));
            }
            if rbac_kind(&info) && !identity.is_admin() {
                let mut dry = server.store.lock_dry_run();
                let would = ops::create(&server, &mut dry, &info, &namespace, body.clone())?;
                drop(dry);
                crate::apiserver::auth::escalation::check(
                    &server,
                    &identity,
                    &info.plural,
                    &namespace,
                    &would,
                    None,
                )?;
            }
            let created = ops::create(&server, &mut write_lock(), &info, &namespace, body)?;
            Ok(ctx.object(StatusCode::CREATED, &created))
        }
        "update" => {
            let body = read_body(body, &parts.headers).await?;
            if rbac_kind(&info) && !identity.is_admin() {
                let mut dry = server.store.lock_dry_run();
                let old = dry.get(&ops::res_key(&info), &(namespace.clone(), name.clone()));
                let would = ops::update(
                    &server,
                    &mut dry,
                    &info,
                    &namespace,
                    &name,
                    body.clone(),
                    sub,
                )?;
                drop(dry);
                crate::apiserver::auth::escalation::check(
                    &server,
                    &identity,
                    &info.plural,
                    &namespace,
                    &would,
                    old.as_deref(),
                )?;
            }
            let updated = ops::update(
                &server,
                &mut write_lock(),
                &info,
                &namespace,
                &name,
                body,
                sub,
            )?;
            Ok(ctx.object(StatusCode::OK, &updated))
        }
        "patch" => {
            let (kind, patch) = read_patch(body, &parts.headers, &info).await?;
            if kind == PatchKind::Apply && query.get("fieldManager").is_none_or(String::is_empty) {
                return Err(crate::apiserver::apply::field_manager_required());
            }
            // An apply that creates the object needs `create` too, as on a real server.
            if kind == PatchKind::Apply && !identity.is_admin() {
                let missing = server
                    .store
                    .lock()
                    .get(&ops::res_key(&info), &(namespace.clone(), name.clone()))
                    .is_none();
                let a = crate::apiserver::auth::Attributes {
                    verb: "create".into(),
                    path: None,
                    group: target.group.clone(),
                    resource: target.plural.clone(),
                    subresource: target.sub.clone().unwrap_or_default(),
                    name: name.clone(),
                    namespace: namespace.clone(),
                };
                if missing && !crate::apiserver::auth::authorize(&server, &identity, &a) {
                    return Err(crate::apiserver::auth::forbidden(
                        &identity,
                        &a,
                        Some(&name),
                    ));
                }
            }
            if rbac_kind(&info) && !identity.is_admin() {
                let mut dry = server.store.lock_dry_run();
                let old = dry.get(&ops::res_key(&info), &(namespace.clone(), name.clone()));
                let would = if kind == PatchKind::Apply {
                    let manager = query.get("fieldManager").cloned().unwrap_or_default();
                    dry.set_field_manager(None);
                    crate::apiserver::apply::server_side_apply(
                        &server,
                        &mut dry,
                        &info,
                        &namespace,
                        &name,
                        patch.clone(),
                        sub,
                        &manager,
                        query_bool(&query, "force"),
                    )?
                    .1
                } else {
                    ops::patch(
                        &server, &mut dry, &info, &namespace, &name, kind, &patch, sub,
                    )?
                };
                drop(dry);
                crate::apiserver::auth::escalation::check(
                    &server,
                    &identity,
                    &info.plural,
                    &namespace,
                    &would,
                    old.as_deref(),
                )?;
            }
            if kind == PatchKind::Apply {
                let manager = query.get("fieldManager").cloned().unwrap_or_default();
                let force = query_bool(&query, "force");
                // Apply keeps its own ownership records; it is not an Update.
                let mut lock = write_lock();
                lock.set_field_manager(None);
                let (code, applied) = crate::apiserver::apply::server_side_apply(
                    &server, &mut lock, &info, &namespace, &name, patch, sub, &manager, force,
                )?;
                return Ok(ctx.object(code, &applied));
            }
            let patched = ops::patch(
                &server,
                &mut write_lock(),
                &info,
                &namespace,
                &name,
                kind,
                &patch,
                sub,
            )?;
            Ok(ctx.object(StatusCode::OK, &patched))
        }
        "delete" => {
            let bytes = read_bytes(body).await?;
            let opts = if bytes.iter().all(u8::is_ascii_whitespace) {
                DeleteOpts::from_query(&query)
            } else {
                DeleteOpts::from_body(&decode_any(&bytes, &parts.headers)?)
            };
            let mut lock = if opts.dry_run {
                let mut l = server.store.lock_dry_run();
                l.set_field_validation(validation, warnings.clone());
                l.set_admission_requester(requester.clone());
                l
            } else {
                write_lock()
            };
            let gone = ops::delete(&server, &mut lock, &info, &namespace, &name, &opts)?;
            let pending = gone.pointer("/metadata/deletionTimestamp").is_some()
                || (info.group.is_empty() && info.plural == "namespaces")
                || info.plural == "customresourcedefinitions";
            if pending || ops::returns_deleted_object(&info) {
                return Ok(ctx.object(StatusCode::OK, &gone));
            }
            Ok(json_response(
                StatusCode::OK,
                &ops::deleted_status(&info, &gone),
            ))
        }
        "deletecollection" => ctx.delete_collection(&query),
        _ => Err(ApiError::method_not_allowed(verb.to_string())),
    }
}

/// `prefixFromUserAgent` of the apiserver: the User-Agent up to its first `/`.
fn manager_from_user_agent(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|m| !m.is_empty())
        .map(|m| m.chars().take(128).collect())
}

/// Bodies are read to the end (up to a hard cap) before an oversized one is refused: answering
/// mid-upload makes the connection reset under the client instead of delivering the 413.
/// A real server's answer (410 `Expired`) to a continue token whose snapshot has been compacted.
const CONTINUE_TOO_OLD: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// A real server's answer (410 `Expired`) to an exact list of a version etcd has compacted.
const LIST_TOO_OLD: &str = "The resourceVersion for the provided list is too old.";

/// The version a list asks for with `resourceVersionMatch=Exact` (the other rules of the
/// pair are `validate_list_options`'), or `None` for every other list.
fn exact_version(query: &HashMap<String, String>) -> Result<Option<u64>, ApiError> {
    if query.get("resourceVersionMatch").map(String::as_str) != Some("Exact") {
        return Ok(None);
    }
    let rv = query
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or("");
    rv.parse::<u64>()
        .map(Some)
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))
}

/// What an exact list of a version the store has not reached gets: etcd's refusal, passed
/// through as an internal error (the watch cache is not consulted for exact lists).
fn future_revision() -> ApiError {
    ApiError::internal(
        "Internal error occurred: etcdserver: mvcc: required revision is a future revision",
    )
}

const DRAIN_CAP: usize = 64 * 1024 * 1024;

async fn read_bytes(body: Body) -> Result<Bytes, ApiError> {
    let bytes = axum::body::to_bytes(body, DRAIN_CAP)
        .await
        .map_err(|_| ApiError::too_large())?;
    if bytes.len() > MAX_BODY {
        return Err(ApiError::too_large());
    }
    Ok(bytes)
}

fn decode(bytes: &[u8], yaml: bool) -> Result<Value, ApiError> {
    if yaml {
        return serde_yaml_ng::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!("couldn't decode the request body as JSON: {e}"))
    })
}

/// The `Content-Type` of a request, when it has one a header can hold.
fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

/// A body in JSON, YAML or (for the kinds `proto` knows) protobuf, by its content type; any
/// other content type is refused (415) before the body is decoded.
fn decode_any(bytes: &[u8], headers: &HeaderMap) -> Result<Value, ApiError> {
    match crate::apiserver::media::body_format(content_type(headers))? {
        BodyFormat::Protobuf => Ok(crate::apiserver::proto::decode(bytes)?),
        format => decode(bytes, format == BodyFormat::Yaml),
    }
}

async fn read_patch(
    body: Body,
    headers: &HeaderMap,
    info: &ResourceInfo,
) -> Result<(PatchKind, Value), ApiError> {
    let bytes = read_bytes(body).await?;
    let kind =
        crate::apiserver::media::patch_kind(content_type(headers).unwrap_or(""), info.custom)?;
    Ok((kind, decode(&bytes, kind == PatchKind::Apply)?))
}

async fn read_body(body: Body, headers: &HeaderMap) -> Result<Value, ApiError> {
    let bytes = read_bytes(body).await?;
    let value = decode_any(&bytes, headers)?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(value)
}

/// A SelfSubjectAccessReview answered from the deny rules.
/// Roles and bindings, whose writes the escalation checks guard.
fn rbac_kind(info: &ResourceInfo) -> bool {
    info.group == crate::apiserver::auth::rbac::GROUP
        && matches!(
            info.plural.as_str(),
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        )
}

struct Ctx<'a> {
    server: &'a Server,
    info: &'a ResourceInfo,
    namespace: &'a str,
    shape: Shape,
    /// Who writes, for the admission policies (deletecollection).
    requester: Arc<crate::apiserver::admission::Requester>,
    warnings: &'a crate::store::objects::Warnings,
}

impl Ctx<'_> {
    fn object(&self, code: StatusCode, obj: &Value) -> Response {
        let body = render::object(self.info, obj, self.shape);
        json_response(code, &body)
    }

    fn get(&self, name: &str) -> Result<Response, ApiError> {
        let key = (self.namespace.to_string(), name.to_string());
        let obj = self.server.store.lock().get(&ops::res_key(self.info), &key);
        let obj =
            obj.ok_or_else(|| ApiError::not_found(&self.info.group, &self.info.plural, name))?;
        Ok(self.object(StatusCode::OK, &obj))
    }

    fn scope(&self) -> Option<&str> {
        self.info
            .namespaced
            .then_some(self.namespace)
            .filter(|ns| !ns.is_empty())
    }

    fn list(&self, query: &HashMap<String, String>) -> Result<Response, ApiError> {
        validate_list_options(query)?;
        let filter =
            Filter::from_query(query, self.info, self.server.config.sharded_list_and_watch)?;
        if filter.shard_selector().is_some() {
            self.server
                .stats
                .count_shard_selected(&format!("list {}", self.info.group_resource()));
        }
        let limit = match query.get("limit") {
            Some(l) => l
                .parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
            None => 0,
        };
        let res = ops::res_key(self.info);
        let (rv, candidates) = {
            let l = self.server.store.lock();
            match query.get("continue").filter(|c| !c.is_empty()) {
                // Every later page comes from the first page's snapshot, and the list reports
                // that revision: a watch started from it misses nothing that changed meanwhile.
                Some(token) => {
                    let token = decode_continue(token)?;
                    let objs = l
                        .list_after_at(&res, self.scope(), &token.after, token.rv)
                        .map_err(|_| ApiError::gone(CONTINUE_TOO_OLD))?;
                    (token.rv, objs)
                }
                None => match exact_version(query)? {
                    // `resourceVersionMatch=Exact`: the collection as it was at that version,
                    // rebuilt from the kept history as a continued page is.
                    Some(at) if at > l.current_rv() => return Err(future_revision()),
                    Some(at) => {
                        let start = (self.scope().unwrap_or("").to_string(), String::new());
                        let objs = l
                            .list_after_at(&res, self.scope(), &start, at)
                            .map_err(|_| ApiError::gone(LIST_TOO_OLD))?;
                        (at, objs)
                    }
                    None => (l.current_rv(), l.list(&res, self.scope())),
                },
            }
        };
        let mut items = Vec::new();
        let mut next = None;
        let mut matched_after = 0usize;
        for obj in candidates.iter().filter(|o| filter.matches(o)) {
            if limit > 0 && items.len() == limit {
                matched_after += 1;
                continue;
            }
            items.push(obj.clone());
        }
        if matched_after > 0
            && let Some(last) = items.last()
        {
            next = Some(encode_continue(last, rv));
        }
        let body = render::list(
            self.info,
            &items,
            rv,
            next.as_deref(),
            (matched_after > 0).then_some(matched_after),
            filter.shard_selector(),
            self.shape,
        );
        Ok(bytes_response(StatusCode::OK, body))
    }

    fn delete_collection(&self, query: &HashMap<String, String>) -> Result<Response, ApiError> {
        validate_list_options(query)?;
        let filter =
            Filter::from_query(query, self.info, self.server.config.sharded_list_and_watch)?;
        let res = ops::res_key(self.info);
        // DeleteOptions from the query apply to every object (propagationPolicy, dryRun).
        let opts = DeleteOpts::from_query(query);
        let mut l = if opts.dry_run {
            self.server.store.lock_dry_run()
        } else {
            self.server.store.lock()
        };
        l.set_field_validation(
            crate::store::objects::FieldValidation::Ignore,
            self.warnings.clone(),
        );
        l.set_admission_requester(self.requester.clone());
        let targets: Vec<Arc<Value>> = l
            .list(&res, self.scope())
            .into_iter()
            .filter(|o| filter.matches(o))
            .collect();
        let mut gone = Vec::new();
        for obj in targets {
            let ns = ops::meta_str(&obj, "namespace").unwrap_or("");
            let name = ops::meta_str(&obj, "name").unwrap_or("");
            if let Ok(g) = ops::delete(self.server, &mut l, self.info, ns, name, &opts) {
                gone.push(g);
            }
        }
        let rv = l.current_rv();
        drop(l);
        Ok(bytes_response(
            StatusCode::OK,
            render::list(self.info, &gone, rv, None, None, None, Shape::Full),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(path: &str) -> Target {
        match parse_path(path) {
            Some(Route::Resource(t)) => t,
            _ => panic!("{path} is not a resource path"),
        }
    }

    #[test]
    fn paths_map_to_targets() {
        let t = target("/api/v1/namespaces/a/pods/p/status");
        assert_eq!(
            (
                t.group.as_str(),
                t.plural.as_str(),
                t.namespace.as_deref(),
                t.name.as_deref(),
                t.sub.as_deref()
            ),
            ("", "pods", Some("a"), Some("p"), Some("status"))
        );
        let t = target("/api/v1/namespaces/a/status");
        assert_eq!(
            (t.plural.as_str(), t.name.as_deref(), t.sub.as_deref()),
            ("namespaces", Some("a"), Some("status"))
        );
        let t = target("/apis/apps/v1/deployments");
        assert_eq!(
            (t.group.as_str(), t.namespace, t.name),
            ("apps", None, None)
        );
        let t = target("/api/v1/namespaces/a/configmaps");
        assert_eq!(
            (t.plural.as_str(), t.namespace.as_deref()),
            ("configmaps", Some("a"))
        );
        assert!(parse_path("/nope").is_none());
    }

    #[test]
    fn accept_headers_pick_the_shape() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
                .parse()
                .unwrap(),
        );
        assert_eq!(shape(&h).unwrap(), Shape::Table);
        h.insert(
            header::ACCEPT,
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
                .parse()
                .unwrap(),
        );
        assert_eq!(shape(&h).unwrap(), Shape::Metadata);
        h.insert(header::ACCEPT, "application/json".parse().unwrap());
        assert_eq!(shape(&h).unwrap(), Shape::Full);
        h.insert(
            header::ACCEPT,
            "application/vnd.kubernetes.protobuf".parse().unwrap(),
        );
        assert!(shape(&h).is_err());
    }
}
