//! What every integration test waits for and reads the same way, once: a poll with one
//! deadline, an object (typed or as JSON) or a list until a check holds, an object's
//! conditions, the Events recorded on an object (events.k8s.io, or core/v1 for the simulated
//! cluster's components, which write those).

use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DynamicObject, ListParams};
use pgtoolbox_operator::api::ReportsConditions;
use pgtoolbox_operator::testing::actors::Shared;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// How long a wait may take before the test fails: far above what any wait needs (a second
/// or two), so a slow CI machine is not a failure.
pub const DEADLINE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);

/// Polls `probe` until it answers `Ok`; after [`DEADLINE`], fails saying `what` and the last
/// `Err` (what was seen instead).
pub async fn wait_for<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match probe().await {
            Ok(found) => return found,
            Err(seen) => assert!(
                tokio::time::Instant::now() < deadline,
                "never {what}; {seen}"
            ),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Polls `check` until it holds; fails saying `what` after `within` (a test's own bound, for
/// the waits that a shorter one keeps honest).
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until the runtime has counted more than `seen` + `more` - 1 passes of `kind` (see
/// [`passes_of`]): the pass a change woke, or the retries a test expects, have run. A test
/// that checks that nothing happened waits on this instead of sleeping.
pub async fn until_passes(shared: &Shared, kind: &str, seen: u64, more: u64, what: &str) -> u64 {
    wait_for(what, || async {
        let now = passes_of(shared, kind);
        if now >= seen + more {
            Ok(now)
        } else {
            Err(format!("{now} {kind} passes, {seen} before"))
        }
    })
    .await
}

/// The passes of `kind` ended so far, any result.
pub fn passes_of(shared: &Shared, kind: &str) -> u64 {
    shared.runtime.passes(kind)
}

/// The object's condition of `type_`, if it has one.
pub fn condition_of<K: ReportsConditions>(obj: &K, type_: &str) -> Option<Condition> {
    obj.common_status()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .cloned()
}

/// `(status, reason)` of the object's condition of `type_` (empty strings when absent).
pub fn state<K: ReportsConditions>(obj: &K, type_: &str) -> (String, String) {
    condition_of(obj, type_)
        .map(|c| (c.status, c.reason))
        .unwrap_or_default()
}

/// The object's conditions, for a failure message.
pub fn conditions<K: ReportsConditions>(obj: &K) -> Vec<(String, String, String)> {
    obj.common_status()
        .map(|s| {
            s.conditions
                .iter()
                .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
                .collect()
        })
        .unwrap_or_default()
}

async fn events_regarding(client: &kube::Client, namespace: &str, name: &str) -> Vec<Event> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let list = api.list(&ListParams::default()).await.expect("events");
    list.items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect()
}

/// `(type, reason, note)` of the Events recorded on the object `namespace/name`.
pub async fn events_of(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    events_regarding(client, namespace, name)
        .await
        .into_iter()
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
            )
        })
        .collect()
}

/// How often `reason` was recorded on the object: once per Event, or its series' count (a
/// repeat of the same Event is counted in the first one's series).
pub async fn occurrences_of(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    reason: &str,
) -> i32 {
    events_regarding(client, namespace, name)
        .await
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum()
}

/// Waits for an Event with `reason` on the object and returns the first one found.
pub async fn wait_event_of(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    reason: &str,
) -> (String, String, String) {
    wait_for(&format!("a {reason} Event on {name}"), || async {
        let events = events_of(client, namespace, name).await;
        match events.iter().find(|e| e.1 == reason) {
            Some(e) => Ok(e.clone()),
            None => Err(format!("events: {events:#?}")),
        }
    })
    .await
}

/// The object `name` once `check` holds on it; fails with the last one seen.
pub async fn until<K, F>(api: &Api<K>, name: &str, what: &str, check: F) -> K
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
    F: Fn(&K) -> bool,
{
    wait_for(&format!("{name}: {what}"), || async {
        let obj = api.get(name).await.map_err(|e| e.to_string())?;
        if check(&obj) {
            Ok(obj)
        } else {
            Err(format!("last seen: {obj:#?}"))
        }
    })
    .await
}

/// Waits until the object `name` no longer exists; fails with the last one seen.
pub async fn until_gone<K>(api: &Api<K>, name: &str, what: &str)
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    wait_for(&format!("{name} gone: {what}"), || async {
        match api.get_opt(name).await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(obj) => Err(format!("still there: {obj:#?}")),
        }
    })
    .await
}

/// As [`until`], for an object read as JSON.
pub async fn until_json(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    wait_for(&format!("{name}: {what}"), || async {
        let obj = api.get(name).await.map_err(|e| e.to_string())?;
        let obj = serde_json::to_value(&obj).map_err(|e| e.to_string())?;
        if check(&obj) {
            Ok(obj)
        } else {
            Err(format!("last seen: {obj:#}"))
        }
    })
    .await
}

/// As [`until_json`], until the object's condition `type_` has `field` (`status`, `reason`)
/// equal to `value`.
pub async fn until_condition_json(
    api: &Api<DynamicObject>,
    name: &str,
    type_: &str,
    field: &str,
    value: &str,
) -> Value {
    until_json(api, name, &format!("{type_} {field} {value}"), |obj| {
        obj.pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == type_ && c[field] == value)
    })
    .await
}

/// The items of a list once `check` holds on them; fails with the last ones seen.
pub async fn until_list<K, F>(api: &Api<K>, lp: &ListParams, what: &str, check: F) -> Vec<K>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
    F: Fn(&[K]) -> bool,
{
    wait_for(what, || async {
        let items = api.list(lp).await.map_err(|e| e.to_string())?.items;
        if check(&items) {
            Ok(items)
        } else {
            Err(format!("last seen: {items:#?}"))
        }
    })
    .await
}

/// `(type, reason, message)` of the core/v1 Events about `namespace/name`.
pub async fn core_events_of(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), namespace);
    let lp = ListParams::default().fields(&format!("involvedObject.name={name}"));
    api.list(&lp)
        .await
        .expect("events")
        .items
        .into_iter()
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits for a core/v1 Event with `reason` about `namespace/name`; returns its message.
pub async fn wait_core_event(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    reason: &str,
) -> String {
    wait_for(&format!("a {reason} Event about {name}"), || async {
        let events = core_events_of(client, namespace, name).await;
        match events.iter().find(|(_, r, _)| r == reason) {
            Some((_, _, message)) => Ok(message.clone()),
            None => Err(format!("events: {events:#?}")),
        }
    })
    .await
}
