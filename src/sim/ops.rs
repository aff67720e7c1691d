//! Object semantics of the verbs: what create, update, patch and delete do to an object and
//! its metadata, run under the store lock so each is atomic.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::sim::error::{ApiError, Cause};
use crate::sim::patch;
use crate::sim::resources::{self, ResourceInfo};
use crate::sim::server::Server;
use crate::sim::store::{EventType, Locked, ObjKey, ResKey};

/// RFC 3339 time with second precision, as metadata timestamps are written.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

pub fn res_key(info: &ResourceInfo) -> ResKey {
    (info.group.clone(), info.plural.clone())
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
}

/// Make `obj` an object with an object `metadata`, so indexing below cannot panic.
fn ensure_metadata(obj: &mut Value) {
    if !obj.is_object() {
        *obj = json!({});
    }
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
}

fn set_meta(obj: &mut Value, field: &str, value: Value) {
    ensure_metadata(obj);
    obj["metadata"][field] = value;
}

fn remove_meta(obj: &mut Value, field: &str) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove(field);
    }
}

fn finalizers(obj: &Value) -> usize {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// What a client may change through one endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    Main,
    Status,
}

/// Does anything outside metadata (and status, when it has its own endpoint) differ?
fn spec_changed(old: &Value, new: &Value, status_separate: bool) -> bool {
    let empty = serde_json::Map::new();
    let o = old.as_object().unwrap_or(&empty);
    let n = new.as_object().unwrap_or(&empty);
    let skip = |k: &str| {
        k == "metadata" || k == "apiVersion" || k == "kind" || (status_separate && k == "status")
    };
    o.iter()
        .filter(|(k, _)| !skip(k))
        .any(|(k, v)| n.get(k) != Some(v))
        || n.iter()
            .filter(|(k, _)| !skip(k))
            .any(|(k, _)| !o.contains_key(k))
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Name rules of the kind: namespaces are DNS labels, RBAC names are path segments
/// (`system:foo`), everything else a DNS subdomain.
fn name_problem(info: &ResourceInfo, name: &str) -> Option<String> {
    let ok = if info.group.is_empty() && info.plural == "namespaces" {
        is_dns_label(name)
    } else if info.group == "rbac.authorization.k8s.io" {
        !name.is_empty()
            && name != "."
            && name != ".."
            && !name.contains('/')
            && !name.contains('%')
    } else {
        is_dns_subdomain(name)
    };
    (!ok).then(|| {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".to_string()
    })
}

fn generate_suffix(seed: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (seed >> 7);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(x % ALPHABET.len() as u64) as usize] as char;
            x /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// Refuse a body whose kind or apiVersion is not the one of the URL; fill them in when absent.
fn check_type(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    let want = info.api_version();
    match obj.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => obj["apiVersion"] = json!(want),
        Some(v) if v == want => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({want})"
            )));
        }
    }
    match obj.get("kind").and_then(Value::as_str) {
        None | Some("") => obj["kind"] = json!(info.kind),
        Some(k) if k == info.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
    }
    ensure_metadata(obj);
    Ok(())
}

/// Defaults, pruning and validation of a custom resource against its CRD schema.
fn apply_schema(info: &ResourceInfo, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
    let Some(schema) = &info.schema else {
        return Ok(());
    };
    // The server never prunes the type and object metadata, whatever the schema says.
    let keep: Vec<(String, Value)> = ["apiVersion", "kind", "metadata"]
        .iter()
        .filter_map(|k| obj.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    schema.apply_defaults(obj);
    schema.prune(obj);
    for (k, v) in keep {
        obj[k.as_str()] = v;
    }
    schema.validate(obj, old).map_err(|errors| {
        let causes = errors
            .into_iter()
            .map(|e| Cause {
                reason: e.kind.reason().to_string(),
                field: e.path,
                message: e.message,
            })
            .collect();
        ApiError::invalid(
            &info.group,
            &info.kind,
            meta_str(obj, "name").unwrap_or(""),
            causes,
        )
    })
}

fn check_namespace(l: &Locked<'_>, info: &ResourceInfo, namespace: &str) -> Result<(), ApiError> {
    if !info.namespaced {
        return Ok(());
    }
    let ns_key = (String::new(), "namespaces".to_string());
    match l.get(&ns_key, &(String::new(), namespace.to_string())) {
        None => Err(ApiError::not_found("", "namespaces", namespace)),
        Some(ns) if ns.pointer("/metadata/deletionTimestamp").is_some() => {
            Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                info.plural,
                meta_str(&ns, "name").unwrap_or("")
            )))
        }
        Some(_) => Ok(()),
    }
}

/// Kind-specific defaults a real control plane fills in at creation.
fn builtin_defaults(info: &ResourceInfo, obj: &mut Value) {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") if obj.pointer("/status/phase").is_none() => {
            obj["status"] = json!({"phase": "Active"});
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let names = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
            let now = now_rfc3339();
            let cond = |t: &str, reason: &str, msg: &str| json!({"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": msg});
            obj["status"] = json!({
                "acceptedNames": names,
                "conditions": [
                    cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                    cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
                ],
                "storedVersions": obj.pointer("/spec/versions").and_then(Value::as_array).map(|vs| {
                    vs.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                        .filter_map(|v| v.get("name").cloned()).collect::<Vec<_>>()
                }).unwrap_or_default(),
            });
        }
        _ => {}
    }
}

/// The name of a CRD must be `<plural>.<group>`; returns the kinds it serves.
fn crd_resources(obj: &Value) -> Result<Vec<ResourceInfo>, ApiError> {
    let name = meta_str(obj, "name").unwrap_or("");
    let invalid = |field: &str, message: String| {
        ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            vec![Cause {
                field: field.into(),
                message,
                reason: "FieldValueInvalid".into(),
            }],
        )
    };
    let infos = resources::from_crd(obj).map_err(|e| invalid("spec", e))?;
    let group = obj
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let plural = obj
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name != format!("{plural}.{group}") {
        return Err(invalid(
            "metadata.name",
            format!("must be spec.names.plural+\".\"+spec.group: {plural}.{group}"),
        ));
    }
    Ok(infos)
}

fn register_crd(server: &Server, l: &Locked<'_>, infos: Vec<ResourceInfo>) {
    if l.is_dry_run() {
        return;
    }
    let mut reg = server.registry_mut();
    if let Some(first) = infos.first() {
        reg.remove(&first.group, &first.plural);
    }
    for info in infos {
        reg.add(info);
    }
}

/// Create `body` in `namespace` (empty for cluster-scoped kinds).
pub fn create(
    server: &Server,
    l: &mut Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    mut body: Value,
) -> Result<Arc<Value>, ApiError> {
    check_type(info, &mut body)?;
    match (info.namespaced, meta_str(&body, "namespace")) {
        (true, Some(ns)) if !ns.is_empty() && ns != namespace => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        (true, _) => set_meta(&mut body, "namespace", json!(namespace)),
        (false, _) => remove_meta(&mut body, "namespace"),
    }
    let rv = l.next_rv();
    let name = match meta_str(&body, "name") {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => match meta_str(&body, "generateName") {
            Some(prefix) if !prefix.is_empty() => {
                let name = format!("{prefix}{}", generate_suffix(rv));
                set_meta(&mut body, "name", json!(name));
                name
            }
            _ => {
                return Err(ApiError::invalid(
                    &info.group,
                    &info.kind,
                    "",
                    vec![Cause {
                        field: "metadata.name".into(),
                        message: "Required value: name or generateName is required".into(),
                        reason: "FieldValueRequired".into(),
                    }],
                ));
            }
        },
    };
    if let Some(problem) = name_problem(info, &name) {
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            &name,
            vec![Cause {
                field: "metadata.name".into(),
                message: format!("Invalid value: \"{name}\": {problem}"),
                reason: "FieldValueInvalid".into(),
            }],
        ));
    }
    check_namespace(l, info, namespace)?;
    let res = res_key(info);
    let key: ObjKey = (
        if info.namespaced {
            namespace.to_string()
        } else {
            String::new()
        },
        name.clone(),
    );
    if l.get(&res, &key).is_some() {
        return Err(ApiError::already_exists(&info.group, &info.plural, &name));
    }
    if info.custom && info.status_subresource {
        // Status is written through its own endpoint only.
        if let Some(m) = body.as_object_mut() {
            m.remove("status");
        }
    }
    apply_schema(info, &mut body, None)?;
    let crd = if info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions"
    {
        Some(crd_resources(&body)?)
    } else {
        None
    };
    builtin_defaults(info, &mut body);
    let uid = l.new_uid();
    set_meta(&mut body, "uid", json!(uid));
    set_meta(&mut body, "resourceVersion", json!(rv.to_string()));
    set_meta(&mut body, "creationTimestamp", json!(now_rfc3339()));
    set_meta(&mut body, "generation", json!(1));
    for f in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        remove_meta(&mut body, f);
    }
    let stored = l.put(&res, key, body, rv, EventType::Added);
    if let Some(infos) = crd {
        register_crd(server, l, infos);
    }
    Ok(stored)
}

/// Replace an object (PUT, and the tail of every patch).
pub fn update(
    server: &Server,
    l: &mut Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    mut body: Value,
    sub: Subresource,
) -> Result<Arc<Value>, ApiError> {
    check_type(info, &mut body)?;
    let res = res_key(info);
    let key: ObjKey = (
        if info.namespaced {
            namespace.to_string()
        } else {
            String::new()
        },
        name.to_string(),
    );
    let Some(old) = l.get(&res, &key) else {
        return Err(ApiError::not_found(&info.group, &info.plural, name));
    };
    match meta_str(&body, "name") {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    if info.namespaced
        && let Some(ns) = meta_str(&body, "namespace")
        && !ns.is_empty()
        && ns != namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let old_rv = meta_str(&old, "resourceVersion").unwrap_or("");
    if let Some(rv) = meta_str(&body, "resourceVersion")
        && !rv.is_empty()
        && rv != old_rv
    {
        return Err(ApiError::conflict(
            &info.group,
            &info.plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        ));
    }
    let old_uid = meta_str(&old, "uid").unwrap_or("");
    if let Some(uid) = meta_str(&body, "uid")
        && !uid.is_empty()
        && uid != old_uid
    {
        return Err(ApiError::conflict(
            &info.group,
            &info.plural,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}"
            ),
        ));
    }

    let mut new = match sub {
        Subresource::Status => {
            // Only the status moves; everything else stays as stored.
            let mut merged = (*old).clone();
            match body.get("status") {
                Some(s) => merged["status"] = s.clone(),
                None => {
                    if let Some(m) = merged.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            merged
        }
        Subresource::Main => {
            if info.status_subresource {
                match old.get("status") {
                    Some(s) => body["status"] = s.clone(),
                    None => {
                        if let Some(m) = body.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            // System-owned metadata survives whatever the client sent.
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match old.pointer(&format!("/metadata/{f}")) {
                    Some(v) => set_meta(&mut body, f, v.clone()),
                    None => remove_meta(&mut body, f),
                }
            }
            if info.namespaced {
                set_meta(&mut body, "namespace", json!(namespace));
            }
            set_meta(&mut body, "name", json!(name));
            body
        }
    };
    let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
    if deleting && finalizers(&new) > finalizers(&old) {
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            vec![Cause {
                field: "metadata.finalizers".into(),
                message: "Forbidden: no new finalizers can be added if the object is being deleted"
                    .into(),
                reason: "FieldValueForbidden".into(),
            }],
        ));
    }
    apply_schema(info, &mut new, Some(&old))?;
    let crd = if info.group == "apiextensions.k8s.io"
        && info.plural == "customresourcedefinitions"
        && sub == Subresource::Main
    {
        Some(crd_resources(&new)?)
    } else {
        None
    };
    set_meta(&mut new, "resourceVersion", json!(old_rv));
    if new == *old {
        // A no-op write changes nothing, not even the resourceVersion, and notifies nobody.
        return Ok(old);
    }
    if spec_changed(&old, &new, info.status_subresource) {
        set_meta(&mut new, "generation", json!(generation(&old) + 1));
    }
    let rv = l.next_rv();
    set_meta(&mut new, "resourceVersion", json!(rv.to_string()));
    if deleting && finalizers(&new) == 0 {
        let gone = l.remove(&res, &key, new, rv);
        after_removal(server, l, &gone, &key);
        return Ok(gone);
    }
    let stored = l.put(&res, key, new, rv, EventType::Modified);
    if let Some(infos) = crd {
        register_crd(server, l, infos);
    }
    Ok(stored)
}

/// The patch formats the server understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchKind {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let base = ct.split(';').next().unwrap_or("").trim();
        match base {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Apply a merge, JSON or strategic merge patch to the stored object and write the result.
#[allow(clippy::too_many_arguments)]
pub fn patch(
    server: &Server,
    l: &mut Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    kind: PatchKind,
    patch_body: &Value,
    sub: Subresource,
) -> Result<Arc<Value>, ApiError> {
    let res = res_key(info);
    let key: ObjKey = (
        if info.namespaced {
            namespace.to_string()
        } else {
            String::new()
        },
        name.to_string(),
    );
    let Some(old) = l.get(&res, &key) else {
        return Err(ApiError::not_found(&info.group, &info.plural, name));
    };
    let mut target = (*old).clone();
    match kind {
        PatchKind::Merge => {
            if !patch_body.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            patch::merge_patch(&mut target, patch_body);
        }
        PatchKind::Json => {
            if !patch_body.is_array() {
                return Err(ApiError::bad_request(
                    "a JSON patch must be a JSON array of operations",
                ));
            }
            patch::json_patch(&mut target, patch_body).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?;
        }
        PatchKind::Strategic => {
            if info.custom {
                return Err(ApiError::unsupported_media_type(
                    "application/strategic-merge-patch+json",
                ));
            }
            patch::strategic_merge_patch(
                &mut target,
                patch_body,
                &patch::GroupKind::new(&info.group, &info.kind),
            )
            .map_err(ApiError::bad_request)?;
        }
        PatchKind::Apply => {
            return Err(ApiError::unsupported_media_type(
                "application/apply-patch+yaml",
            ));
        }
    }
    update(server, l, info, namespace, name, target, sub)
}

/// Delete options a client may send (`DeleteOptions`).
#[derive(Debug, Default, Clone)]
pub struct DeleteOpts {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub orphan: bool,
    /// `dryRun: ["All"]` in the body (kube sends delete dry runs there, not in the query).
    pub dry_run: bool,
}

impl DeleteOpts {
    pub fn from_body(body: &Value) -> Self {
        let pre = body.get("preconditions");
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        Self {
            uid: s(pre.and_then(|p| p.get("uid"))),
            resource_version: s(pre.and_then(|p| p.get("resourceVersion"))),
            orphan: body.get("propagationPolicy").and_then(Value::as_str) == Some("Orphan")
                || body.get("orphanDependents").and_then(Value::as_bool) == Some(true),
            dry_run: body
                .get("dryRun")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v == "All")),
        }
    }
}

/// Delete one object: preconditions, finalizers, namespace contents and dependents.
pub fn delete(
    server: &Server,
    l: &mut Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    opts: &DeleteOpts,
) -> Result<Arc<Value>, ApiError> {
    let res = res_key(info);
    let key: ObjKey = (
        if info.namespaced {
            namespace.to_string()
        } else {
            String::new()
        },
        name.to_string(),
    );
    let Some(old) = l.get(&res, &key) else {
        return Err(ApiError::not_found(&info.group, &info.plural, name));
    };
    let uid = meta_str(&old, "uid").unwrap_or("").to_string();
    if let Some(want) = &opts.uid
        && *want != uid
    {
        return Err(ApiError::conflict(
            &info.group,
            &info.plural,
            name,
            &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
        ));
    }
    let old_rv = meta_str(&old, "resourceVersion").unwrap_or("");
    if let Some(want) = &opts.resource_version
        && want != old_rv
    {
        return Err(ApiError::conflict(
            &info.group,
            &info.plural,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {old_rv}"
            ),
        ));
    }
    if opts.orphan {
        orphan_dependents(l, &uid);
    }
    if info.group.is_empty() && info.plural == "namespaces" {
        return Ok(delete_namespace(server, l, &res, &key, old));
    }
    Ok(delete_object(server, l, &res, &key, old))
}

/// Mark for deletion when finalizers remain, otherwise remove and collect dependents.
fn delete_object(
    server: &Server,
    l: &mut Locked<'_>,
    res: &ResKey,
    key: &ObjKey,
    old: Arc<Value>,
) -> Arc<Value> {
    if finalizers(&old) > 0 {
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            return old;
        }
        let mut marked = (*old).clone();
        set_meta(&mut marked, "deletionTimestamp", json!(now_rfc3339()));
        set_meta(&mut marked, "deletionGracePeriodSeconds", json!(0));
        set_meta(&mut marked, "generation", json!(generation(&old) + 1));
        let rv = l.next_rv();
        set_meta(&mut marked, "resourceVersion", json!(rv.to_string()));
        return l.put(res, key.clone(), marked, rv, EventType::Modified);
    }
    let mut last = (*old).clone();
    let rv = l.next_rv();
    set_meta(&mut last, "resourceVersion", json!(rv.to_string()));
    let gone = l.remove(res, key, last, rv);
    after_removal(server, l, &gone, key);
    gone
}

fn delete_namespace(
    server: &Server,
    l: &mut Locked<'_>,
    res: &ResKey,
    key: &ObjKey,
    old: Arc<Value>,
) -> Arc<Value> {
    let ns = key.1.clone();
    let mut marked = (*old).clone();
    if marked.pointer("/metadata/deletionTimestamp").is_none() {
        set_meta(&mut marked, "deletionTimestamp", json!(now_rfc3339()));
    }
    marked["status"] = json!({"phase": "Terminating"});
    let rv = l.next_rv();
    set_meta(&mut marked, "resourceVersion", json!(rv.to_string()));
    let marked = l.put(res, key.clone(), marked, rv, EventType::Modified);
    for (r, k) in l.keys_in_namespace(&ns) {
        if let Some(obj) = l.get(&r, &k) {
            delete_object(server, l, &r, &k, obj);
        }
    }
    match l.get(res, key) {
        Some(still) if l.keys_in_namespace(&ns).is_empty() => {
            let mut last = (*still).clone();
            let rv = l.next_rv();
            set_meta(&mut last, "resourceVersion", json!(rv.to_string()));
            l.remove(res, key, last, rv)
        }
        _ => marked,
    }
}

/// Follow-ups of an object leaving the store: background collection of dependents whose
/// owners are all gone, the end of a terminating namespace, and unserving a deleted CRD's kind.
fn after_removal(server: &Server, l: &mut Locked<'_>, gone: &Value, key: &ObjKey) {
    if let Some(uid) = meta_str(gone, "uid") {
        for (r, k, dep) in l.dependents_of(uid) {
            let orphaned = dep
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter().all(|o| {
                        !o.get("uid")
                            .and_then(Value::as_str)
                            .is_some_and(|u| l.uid_alive(u))
                    })
                });
            if orphaned {
                delete_object(server, l, &r, &k, dep);
            }
        }
    }
    if !key.0.is_empty() {
        let ns_res = (String::new(), "namespaces".to_string());
        let ns_key = (String::new(), key.0.clone());
        if let Some(ns) = l.get(&ns_res, &ns_key)
            && ns.pointer("/metadata/deletionTimestamp").is_some()
            && l.keys_in_namespace(&key.0).is_empty()
        {
            let mut last = (*ns).clone();
            let rv = l.next_rv();
            set_meta(&mut last, "resourceVersion", json!(rv.to_string()));
            l.remove(&ns_res, &ns_key, last, rv);
        }
    }
    if gone.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        && let (Some(group), Some(plural)) = (
            gone.pointer("/spec/group").and_then(Value::as_str),
            gone.pointer("/spec/names/plural").and_then(Value::as_str),
        )
    {
        let res = (group.to_string(), plural.to_string());
        for obj in l.list(&res, None) {
            let k = (
                meta_str(&obj, "namespace").unwrap_or("").to_string(),
                meta_str(&obj, "name").unwrap_or("").to_string(),
            );
            let mut last = (*obj).clone();
            let rv = l.next_rv();
            set_meta(&mut last, "resourceVersion", json!(rv.to_string()));
            l.remove(&res, &k, last, rv);
        }
        if !l.is_dry_run() {
            server.registry_mut().remove(group, plural);
        }
    }
}

/// `propagationPolicy: Orphan`: dependents lose their reference to the owner instead of going.
fn orphan_dependents(l: &mut Locked<'_>, owner_uid: &str) {
    for (r, k, dep) in l.dependents_of(owner_uid) {
        let mut changed = (*dep).clone();
        if let Some(refs) = changed
            .pointer_mut("/metadata/ownerReferences")
            .and_then(Value::as_array_mut)
        {
            refs.retain(|o| o.get("uid").and_then(Value::as_str) != Some(owner_uid));
        }
        let rv = l.next_rv();
        set_meta(&mut changed, "resourceVersion", json!(rv.to_string()));
        l.put(&r, k, changed, rv, EventType::Modified);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_ignores_metadata_and_separate_status() {
        let old = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let relabelled =
            json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 1}, "status": {"y": 2}});
        assert!(!spec_changed(&old, &relabelled, true));
        assert!(spec_changed(&old, &relabelled, false));
        let respec = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(spec_changed(&old, &respec, true));
        let added = json!({"metadata": {}, "spec": {"x": 1}, "data": {}});
        assert!(spec_changed(&old, &added, true));
    }

    #[test]
    fn names_follow_the_kind_rules() {
        let infos = resources::builtins();
        let find = |g: &str, p: &str| {
            infos
                .iter()
                .find(|i| i.group == g && i.plural == p)
                .cloned()
                .unwrap()
        };
        assert!(name_problem(&find("", "configmaps"), "a.b-c").is_none());
        assert!(name_problem(&find("", "configmaps"), "Upper").is_some());
        assert!(name_problem(&find("", "namespaces"), "a.b").is_some());
        assert!(
            name_problem(
                &find("rbac.authorization.k8s.io", "clusterroles"),
                "system:x"
            )
            .is_none()
        );
    }

    #[test]
    fn generated_suffixes_differ() {
        assert_ne!(generate_suffix(1), generate_suffix(2));
        assert_eq!(generate_suffix(7).len(), 5);
    }

    #[test]
    fn patch_kind_from_content_type() {
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchKind::Merge)
        );
        assert_eq!(PatchKind::from_content_type("application/json"), None);
    }
}
