//! Object semantics of the verbs: what create, update, patch and delete do to an object and
//! its metadata, run under the store lock so each is atomic.

mod checks;
mod delete;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::patch;
use crate::apiserver::server::Server;
use crate::store::objects::{EventType, Locked, ObjKey};
use crate::store::resources::ResourceInfo;

pub use crate::apiserver::media::PatchKind;
use crate::store::meta::*;
pub use crate::store::meta::{Subresource, meta_str, now, now_rfc3339, res_key, view};
use checks::*;
pub(crate) use delete::after_removal;
pub use delete::{DeleteOpts, delete, deleted_status, returns_deleted_object};

/// Create `body` in `namespace` (empty for cluster-scoped kinds).
pub fn create(
    server: &Server,
    l: &mut Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    mut body: Value,
) -> Result<Arc<Value>, ApiError> {
    check_type(info, &mut body)?;
    decode_builtin(l, info, &mut body)?;
    let mut body = stored_shape(info, body);
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
    let problems = name_problems(info, &name);
    if !problems.is_empty() {
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            &name,
            problems
                .into_iter()
                .map(|problem| Cause {
                    field: "metadata.name".into(),
                    message: format!("Invalid value: \"{name}\": {problem}"),
                    reason: "FieldValueInvalid".into(),
                })
                .collect(),
        ));
    }
    check_namespace(l, info, namespace, &name)?;
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
    apply_schema(l, info, &mut body, None)?;
    let crd = if info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions"
    {
        Some(crd_resources(&body)?)
    } else {
        None
    };
    builtin_defaults(info, &mut body);
    crate::apiserver::defaults::apply(info, &mut body);
    // The field manager records the decoded, defaulted object, before the registry sets its
    // own fields (a Job's generated selector, the uid, the creation time): as on a real server,
    // those belong to no manager.
    if let Some(manager) = l.field_manager().map(str::to_string) {
        crate::apiserver::managed_fields::record_update(info, &mut body, None, &manager, "");
    }
    let uid = l.new_uid();
    if !info.custom && info.group.is_empty() && info.plural == "pods" {
        admit_service_account(l, namespace, &mut body, rv.wrapping_mul(0x2545_F491) ^ 0x5a);
    }
    let mut problems = Vec::new();
    if !info.custom && info.group == "batch" && info.kind == "Job" {
        problems.extend(crate::apiserver::defaults::job_selector(&mut body, &uid));
    }
    problems.extend(crate::apiserver::validate::check(info, &body, None));
    if !problems.is_empty() {
        return Err(ApiError::invalid(&info.group, &info.kind, &name, problems));
    }
    set_meta(&mut body, "uid", json!(uid));
    set_meta(&mut body, "resourceVersion", json!(rv.to_string()));
    set_meta(&mut body, "creationTimestamp", json!(now_rfc3339()));
    if tracks_generation(info) {
        set_meta(&mut body, "generation", json!(1));
    }
    for f in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        remove_meta(&mut body, f);
    }
    crate::apiserver::pod_security::admit(l, info, namespace, &name, &body, None)?;
    crate::apiserver::admission::validate(
        server,
        l,
        &crate::apiserver::admission::Attributes {
            operation: crate::apiserver::admission::Operation::Create,
            info,
            namespace,
            name: &name,
            object: Some(&body),
            old_object: None,
        },
    )?;
    if let Some(cluster) = server.cluster.get() {
        cluster.admit_create(l, info, namespace, &mut body)?;
    }
    let stored = l.put(&res, key.clone(), body, rv, EventType::Added);
    delete::collect_if_orphaned(server, l, &res, &key, &stored);
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
    decode_builtin(l, info, &mut body)?;
    let mut body = stored_shape(info, body);
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
        Subresource::Finalize => {
            let mut merged = (*old).clone();
            match body.pointer("/spec/finalizers") {
                Some(f) => merged["spec"]["finalizers"] = f.clone(),
                None => {
                    if let Some(spec) = merged["spec"].as_object_mut() {
                        spec.remove("finalizers");
                    }
                }
            }
            merged
        }
        Subresource::Main => {
            if info.group.is_empty() && info.plural == "namespaces" {
                // A namespace's finalizers move only through `finalize`.
                match old.pointer("/spec/finalizers") {
                    Some(f) => body["spec"]["finalizers"] = f.clone(),
                    None => {
                        if let Some(spec) = body["spec"].as_object_mut() {
                            spec.remove("finalizers");
                        }
                    }
                }
            }
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
    apply_schema(l, info, &mut new, Some(&old))?;
    crate::apiserver::defaults::apply(info, &mut new);
    if sub == Subresource::Main {
        let problems = crate::apiserver::validate::check(info, &new, Some(&old));
        if !problems.is_empty() {
            return Err(ApiError::invalid(&info.group, &info.kind, name, problems));
        }
        crate::apiserver::pod_security::admit(l, info, namespace, name, &new, Some(&old))?;
    }
    let crd = if info.group == "apiextensions.k8s.io"
        && info.plural == "customresourcedefinitions"
        && sub == Subresource::Main
    {
        crd_accept_names(&mut new);
        Some(crd_resources(&new)?)
    } else {
        None
    };
    set_meta(&mut new, "resourceVersion", json!(old_rv));
    crate::apiserver::managed_fields::normalize_times(&mut new);
    crate::apiserver::admission::validate(
        server,
        l,
        &crate::apiserver::admission::Attributes {
            operation: crate::apiserver::admission::Operation::Update,
            info,
            namespace,
            name,
            object: Some(&new),
            old_object: Some(&old),
        },
    )?;
    if new == *old {
        // A no-op write changes nothing, not even the resourceVersion, and notifies nobody.
        return Ok(old);
    }
    if tracks_generation(info) && spec_changed(&old, &new, info.status_subresource) {
        set_meta(&mut new, "generation", json!(generation(&old) + 1));
    }
    if let Some(manager) = l.field_manager().map(str::to_string) {
        let sub_name = match sub {
            Subresource::Status => "status",
            Subresource::Finalize => "finalize",
            Subresource::Main => "",
        };
        crate::apiserver::managed_fields::record_update(
            info,
            &mut new,
            Some(&old),
            &manager,
            sub_name,
        );
    }
    let rv = l.next_rv();
    set_meta(&mut new, "resourceVersion", json!(rv.to_string()));
    // A namespace also waits for its `spec.finalizers` (the namespace controller's and others').
    let spec_finalizers = info.group.is_empty()
        && info.plural == "namespaces"
        && new
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
    if deleting && finalizers(&new) == 0 && !spec_finalizers {
        let gone = l.remove(&res, &key, new, rv);
        after_removal(server, l, &gone, &key);
        return Ok(gone);
    }
    let stored = l.put(&res, key.clone(), new, rv, EventType::Modified);
    delete::collect_if_orphaned(server, l, &res, &key, &stored);
    if let Some(infos) = crd {
        register_crd(server, l, infos);
    }
    Ok(stored)
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
    let mut target = view(info, &old);
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
                return Err(crate::apiserver::media::unsupported(
                    crate::apiserver::media::patch_types(true),
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
            return Err(crate::apiserver::media::unsupported(
                crate::apiserver::media::patch_types(info.custom),
            ));
        }
    }
    update(server, l, info, namespace, name, target, sub)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::resources;

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
        let problems = |g: &str, p: &str, name: &str| name_problems(&find(g, p), name);
        assert!(problems("", "configmaps", "a.b-c").is_empty());
        // A subdomain's parts have no limit of their own, only the whole name (253).
        assert!(problems("", "configmaps", &"c".repeat(253)).is_empty());
        assert_eq!(
            problems("", "configmaps", &"c".repeat(254)),
            ["must be no more than 253 characters"]
        );
        assert_eq!(
            problems("", "configmaps", "Bad_Name"),
            [
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(problems("", "namespaces", "a.b"), ["must not contain dots"]);
        assert!(problems("", "services", "web-1").is_empty());
        for service in ["a.b", "1web", "web-", &"w".repeat(64)] {
            assert!(!problems("", "services", service).is_empty(), "{service}");
        }
        let rbac = "rbac.authorization.k8s.io";
        assert!(problems(rbac, "clusterroles", "system:x").is_empty());
        assert_eq!(
            problems(rbac, "clusterroles", "a/b%"),
            ["may not contain '/'", "may not contain '%'"]
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
