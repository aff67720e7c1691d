//! Deletion: preconditions, finalizers, namespaces, and background garbage collection of
//! dependents through ownerReferences.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::apiserver::error::ApiError;
use crate::apiserver::server::Server;
use crate::store::meta::{finalizers, generation, meta_str, now_rfc3339, res_key, set_meta};
use crate::store::objects::{EventType, Locked, ObjKey, ResKey};
use crate::store::resources::ResourceInfo;

/// Delete options a client may send (`DeleteOptions`).
#[derive(Debug, Default, Clone)]
pub struct DeleteOpts {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub orphan: bool,
    pub foreground: bool,
    /// `dryRun: ["All"]` in the body (kube sends delete dry runs there, not in the query).
    pub dry_run: bool,
    /// `gracePeriodSeconds`, for kinds deleted gracefully (Pods, with the simulated cluster).
    pub grace_period_seconds: Option<i64>,
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
            foreground: body.get("propagationPolicy").and_then(Value::as_str) == Some("Foreground"),
            dry_run: body
                .get("dryRun")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v == "All")),
            grace_period_seconds: body.get("gracePeriodSeconds").and_then(Value::as_i64),
        }
    }

    /// DeleteOptions sent as query parameters (what clients do when they send no body).
    pub fn from_query(query: &std::collections::HashMap<String, String>) -> Self {
        let policy = query.get("propagationPolicy").map(String::as_str);
        Self {
            uid: query.get("preconditions.uid").cloned(),
            resource_version: query.get("preconditions.resourceVersion").cloned(),
            orphan: policy == Some("Orphan")
                || crate::apiserver::wire::query_bool(query, "orphanDependents"),
            foreground: policy == Some("Foreground"),
            dry_run: query.get("dryRun").is_some_and(|v| v == "All"),
            grace_period_seconds: query.get("gracePeriodSeconds").and_then(|v| v.parse().ok()),
        }
    }
}

/// Kinds whose registry answers a finished delete with the deleted object
/// (`ReturnDeletedObject`); every other kind answers a `Success` Status.
pub fn returns_deleted_object(info: &ResourceInfo) -> bool {
    match info.group.as_str() {
        "" => matches!(
            info.plural.as_str(),
            "pods" | "services" | "serviceaccounts"
        ),
        "storage.k8s.io" => info.plural == "storageclasses",
        _ => false,
    }
}

/// The `Status` a finished delete answers (genericregistry `finalizeDelete`): the details name
/// the resource, not the kind.
pub fn deleted_status(info: &ResourceInfo, gone: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": meta_str(gone, "name").unwrap_or(""),
            "group": info.group,
            "kind": info.plural,
            "uid": meta_str(gone, "uid").unwrap_or(""),
        },
    })
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
    crate::apiserver::admission::validate(
        server,
        l,
        &crate::apiserver::admission::Attributes {
            operation: crate::apiserver::admission::Operation::Delete,
            info,
            namespace,
            name,
            object: None,
            old_object: Some(&old),
        },
    )?;
    if opts.orphan {
        orphan_dependents(l, &uid);
    }
    if info.group.is_empty() && info.plural == "namespaces" {
        return Ok(delete_namespace(server, l, &res, &key, old));
    }
    if let Some(marked) = server.cluster.get().and_then(|cluster| {
        cluster.graceful_delete(l, info, &res, &key, &old, opts.grace_period_seconds)
    }) {
        return Ok(marked);
    }
    if opts.foreground && !l.dependents_of(&uid).is_empty() {
        return Ok(delete_foreground(server, l, &res, &key, old, &uid));
    }
    Ok(delete_object(server, l, &res, &key, old))
}

/// The finalizer that holds an owner deleted in the foreground until its dependents are gone.
const FOREGROUND: &str = "foregroundDeletion";

fn has_foreground_finalizer(obj: &Value) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x == FOREGROUND))
}

/// `propagationPolicy: Foreground`: the owner stays (deletionTimestamp + `foregroundDeletion`
/// finalizer) while its dependents are deleted, and goes once the last one has left.
fn delete_foreground(
    server: &Server,
    l: &mut Locked<'_>,
    res: &ResKey,
    key: &ObjKey,
    old: Arc<Value>,
    uid: &str,
) -> Arc<Value> {
    let mut marked = (*old).clone();
    if !has_foreground_finalizer(&marked) {
        let mut list = marked
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        list.push(json!(FOREGROUND));
        set_meta(&mut marked, "finalizers", Value::Array(list));
    }
    if marked.pointer("/metadata/deletionTimestamp").is_none() {
        set_meta(&mut marked, "deletionTimestamp", json!(now_rfc3339()));
        set_meta(&mut marked, "deletionGracePeriodSeconds", json!(0));
        if old.pointer("/metadata/generation").is_some() {
            set_meta(&mut marked, "generation", json!(generation(&old) + 1));
        }
    }
    let rv = l.next_rv();
    set_meta(&mut marked, "resourceVersion", json!(rv.to_string()));
    let marked = l.put(res, key.clone(), marked, rv, EventType::Modified);
    for (r, k, dep) in l.dependents_of(uid) {
        delete_object(server, l, &r, &k, dep);
    }
    finish_foreground(server, l, uid);
    l.get(res, key).unwrap_or(marked)
}

/// Release an owner held by `foregroundDeletion` once none of its dependents is left.
fn finish_foreground(server: &Server, l: &mut Locked<'_>, owner_uid: &str) {
    if !l.dependents_of(owner_uid).is_empty() {
        return;
    }
    let Some((res, key, owner)) = l.locate(owner_uid) else {
        return;
    };
    if !has_foreground_finalizer(&owner) {
        return;
    }
    let mut next = (*owner).clone();
    if let Some(list) = next
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        list.retain(|f| f != FOREGROUND);
    }
    let rv = l.next_rv();
    set_meta(&mut next, "resourceVersion", json!(rv.to_string()));
    if finalizers(&next) == 0 {
        let gone = l.remove(&res, &key, next, rv);
        after_removal(server, l, &gone, &key);
    } else {
        l.put(&res, key, next, rv, EventType::Modified);
    }
}

/// Mark for deletion when finalizers remain, otherwise remove and collect dependents.
/// The garbage collector's look at an object just written: when every owner it names is gone (a
/// reference added after its owner was deleted included), it is deleted in the background, as
/// a real collector does once it finds the owners absent.
pub(crate) fn collect_if_orphaned(
    server: &Server,
    l: &mut Locked<'_>,
    res: &ResKey,
    key: &ObjKey,
    written: &Arc<Value>,
) {
    let owners = crate::store::objects::owner_uids(written);
    if l.is_dry_run() || owners.is_empty() || owners.iter().any(|uid| l.uid_alive(uid)) {
        return;
    }
    delete_object(server, l, res, key, written.clone());
}

pub(crate) fn delete_object(
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
        if old.pointer("/metadata/generation").is_some() {
            set_meta(&mut marked, "generation", json!(generation(&old) + 1));
        }
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

pub(crate) fn delete_namespace(
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
    if !marked["status"].is_object() {
        marked["status"] = json!({});
    }
    marked["status"]["phase"] = json!("Terminating");
    let rv = l.next_rv();
    set_meta(&mut marked, "resourceVersion", json!(rv.to_string()));
    let marked = l.put(res, key.clone(), marked, rv, EventType::Modified);
    for (r, k) in l.keys_in_namespace(&ns) {
        if let Some(obj) = l.get(&r, &k) {
            delete_object(server, l, &r, &k, obj);
        }
    }
    match l.get(res, key) {
        Some(still) if l.keys_in_namespace(&ns).is_empty() => finish_namespace(l, res, key, still),
        // Content remains (finalizers, Pods terminating): the namespace controller reports it.
        Some(still) => report_namespace_content(l, res, key, still),
        None => marked,
    }
}

/// The end of an emptied terminating namespace, as the namespace controller ends it: its
/// `kubernetes` finalizer is removed (`finalize`, one MODIFIED event), then the namespace goes
/// once no finalizer is left. Finalizers of others keep it, Terminating, until they are
/// removed through `finalize` (or `metadata.finalizers` by an update).
fn finish_namespace(l: &mut Locked<'_>, res: &ResKey, key: &ObjKey, ns: Arc<Value>) -> Arc<Value> {
    let mut current = ns;
    let has_ours = current
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|f| f == super::checks::NAMESPACE_FINALIZER));
    if has_ours {
        let mut finalized = (*current).clone();
        if let Some(list) = finalized["spec"]["finalizers"].as_array_mut() {
            list.retain(|f| f != super::checks::NAMESPACE_FINALIZER);
        }
        let rv = l.next_rv();
        set_meta(&mut finalized, "resourceVersion", json!(rv.to_string()));
        current = l.put(res, key.clone(), finalized, rv, EventType::Modified);
    }
    let spec_left = current
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if spec_left || finalizers(&current) > 0 {
        return current;
    }
    let mut last = (*current).clone();
    let rv = l.next_rv();
    set_meta(&mut last, "resourceVersion", json!(rv.to_string()));
    l.remove(res, key, last, rv)
}

/// The condition types the namespace controller maintains on a terminating namespace, in its
/// order, each with the reason and message it writes while nothing is wrong.
const NAMESPACE_CONDITIONS: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
];

/// The status conditions of a terminating namespace as the namespace controller's deleter
/// writes them after a pass: what remains per resource (`configmaps. has 2 resource
/// instances`, `<resource>.<group>`, sorted) and per finalizer, the other three conditions
/// False. A condition keeps its `lastTransitionTime` while its status is unchanged.
fn namespace_conditions(l: &Locked<'_>, namespace: &str, previous: &Value) -> Value {
    use std::collections::BTreeMap;
    let mut per_resource: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_finalizer: BTreeMap<String, usize> = BTreeMap::new();
    for (res, key) in l.keys_in_namespace(namespace) {
        let Some(obj) = l.get(&res, &key) else {
            continue;
        };
        *per_resource
            .entry(format!("{}.{}", res.1, res.0))
            .or_default() += 1;
        for f in obj
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            *per_finalizer.entry(f.to_string()).or_default() += 1;
        }
    }
    let remaining = |counts: &BTreeMap<String, usize>, words: &str| {
        let mut parts: Vec<String> = counts
            .iter()
            .map(|(what, n)| format!("{what}{words}{n} resource instances"))
            .collect();
        parts.sort();
        parts.join(", ")
    };
    let now = now_rfc3339();
    NAMESPACE_CONDITIONS
        .iter()
        .map(|(kind, ok_reason, ok_message)| {
            let (status, reason, message) = match *kind {
                "NamespaceContentRemaining" if !per_resource.is_empty() => (
                    "True",
                    "SomeResourcesRemain".to_string(),
                    format!(
                        "Some resources are remaining: {}",
                        remaining(&per_resource, " has ")
                    ),
                ),
                "NamespaceFinalizersRemaining" if !per_finalizer.is_empty() => (
                    "True",
                    // Sic: the controller writes this reason without the plural's s.
                    "SomeFinalizerRemain".to_string(),
                    format!(
                        "Some finalizers are remaining: {}",
                        remaining(&per_finalizer, " in ")
                    ),
                ),
                _ => ("False", ok_reason.to_string(), ok_message.to_string()),
            };
            let since = previous
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
                .filter(|c| c.get("status").and_then(Value::as_str) == Some(status))
                .and_then(|c| c.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            json!({
                "type": kind, "status": status, "lastTransitionTime": since,
                "reason": reason, "message": message,
            })
        })
        .collect()
}

/// Write the deleter's conditions on a terminating namespace whose content remains (once its
/// first pass is over: later removals refresh them); nothing when they are unchanged.
fn report_namespace_content(
    l: &mut Locked<'_>,
    res: &ResKey,
    key: &ObjKey,
    ns: Arc<Value>,
) -> Arc<Value> {
    let previous = ns
        .pointer("/status/conditions")
        .cloned()
        .unwrap_or(Value::Null);
    let conditions = namespace_conditions(l, &key.1, &previous);
    if previous == conditions {
        return ns;
    }
    let mut next = (*ns).clone();
    next["status"]["conditions"] = conditions;
    let rv = l.next_rv();
    set_meta(&mut next, "resourceVersion", json!(rv.to_string()));
    l.put(res, key.clone(), next, rv, EventType::Modified)
}

/// Follow-ups of an object leaving the store: background collection of dependents whose
/// owners are all gone, the end of a terminating namespace, and unserving a deleted CRD's kind.
pub(crate) fn after_removal(server: &Server, l: &mut Locked<'_>, gone: &Value, key: &ObjKey) {
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
    // An owner deleted in the foreground may have been waiting for this dependent.
    for owner in crate::store::objects::owner_uids(gone) {
        finish_foreground(server, l, &owner);
    }
    if !key.0.is_empty() {
        let ns_res = (String::new(), "namespaces".to_string());
        let ns_key = (String::new(), key.0.clone());
        if let Some(ns) = l.get(&ns_res, &ns_key)
            && ns.pointer("/metadata/deletionTimestamp").is_some()
        {
            if l.keys_in_namespace(&key.0).is_empty() {
                finish_namespace(l, &ns_res, &ns_key, ns);
            } else if ns.pointer("/status/conditions").is_some() {
                // Not during the namespace's own first pass, which reports once at its end.
                report_namespace_content(l, &ns_res, &ns_key, ns);
            }
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
pub(crate) fn orphan_dependents(l: &mut Locked<'_>, owner_uid: &str) {
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
