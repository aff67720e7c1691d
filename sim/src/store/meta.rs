//! Metadata helpers shared by the verbs: timestamps, storage keys, metadata fields, generation.

use serde_json::{Value, json};

use crate::store::events;
use crate::store::objects::ResKey;
use crate::store::resources::ResourceInfo;

thread_local! {
    /// `(epoch, start)`: this thread's timestamps read `epoch` at tokio instant `start`.
    static FOLLOWED: std::cell::Cell<Option<(jiff::Timestamp, tokio::time::Instant)>> =
        const { std::cell::Cell::new(None) };
}

/// Make the timestamps this thread writes follow tokio's (paused) clock from `epoch`, so an
/// in-process simulation on one current-thread runtime agrees with its own clock; `None` goes
/// back to the system clock.
pub fn follow_tokio_clock(epoch: Option<jiff::Timestamp>) {
    FOLLOWED.with(|f| f.set(epoch.map(|e| (e, tokio::time::Instant::now()))));
}

/// The time of day timestamps are written with.
pub fn now() -> jiff::Timestamp {
    match FOLLOWED.with(std::cell::Cell::get) {
        None => jiff::Timestamp::now(),
        Some((epoch, start)) => jiff::SignedDuration::try_from(start.elapsed())
            .ok()
            .and_then(|d| epoch.checked_add(d).ok())
            .unwrap_or(epoch),
    }
}

/// RFC 3339 time with second precision, as metadata timestamps are written.
pub fn now_rfc3339() -> String {
    now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Where a kind's objects are stored; events.k8s.io Events live with core Events.
pub fn res_key(info: &ResourceInfo) -> ResKey {
    if events::is_events_api(info) {
        return (String::new(), "events".to_string());
    }
    (info.group.clone(), info.plural.clone())
}

/// The body in its stored shape (after `check_type` has accepted it for `info`).
pub(crate) fn stored_shape(info: &ResourceInfo, body: Value) -> Value {
    if events::is_events_api(info) {
        events::to_core(&body)
    } else if crate::store::hpa::is_v1(info) {
        crate::store::hpa::v1_to_v2(body)
    } else {
        body
    }
}

/// The stored object as seen through `info` (patches apply to this view).
pub fn view(info: &ResourceInfo, obj: &Value) -> Value {
    if events::is_events_api(info) {
        events::from_core(obj)
    } else if crate::store::hpa::is_v1(info) {
        crate::store::hpa::v2_to_v1(obj)
    } else {
        obj.clone()
    }
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
}

/// Make `obj` an object with an object `metadata`, so indexing below cannot panic.
pub(crate) fn ensure_metadata(obj: &mut Value) {
    if !obj.is_object() {
        *obj = json!({});
    }
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
}

pub(crate) fn set_meta(obj: &mut Value, field: &str, value: Value) {
    ensure_metadata(obj);
    obj["metadata"][field] = value;
}

pub(crate) fn remove_meta(obj: &mut Value, field: &str) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove(field);
    }
}

pub(crate) fn finalizers(obj: &Value) -> usize {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// Kinds whose strategy maintains `metadata.generation` (custom resources and the workload,
/// networking and extension kinds); ConfigMaps, Secrets and the like carry none.
pub(crate) fn tracks_generation(info: &ResourceInfo) -> bool {
    const GROUPS: [&str; 7] = [
        "admissionregistration.k8s.io",
        "apps",
        "batch",
        "networking.k8s.io",
        "apiextensions.k8s.io",
        "policy",
        "autoscaling",
    ];
    info.custom
        || GROUPS.contains(&info.group.as_str())
        || (info.group.is_empty() && info.plural == "pods")
}

pub(crate) fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// What a client may change through one endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    Main,
    Status,
    /// `namespaces/NAME/finalize`: only `spec.finalizers` moves.
    Finalize,
}

/// Does anything outside metadata (and status, when it has its own endpoint) differ?
pub(crate) fn spec_changed(old: &Value, new: &Value, status_separate: bool) -> bool {
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

/// The strings of the array `v[key]` (none when absent or not an array; non-strings skipped),
/// as RBAC rules, admission rules and review bodies list them.
pub fn string_list(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}
