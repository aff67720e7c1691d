//! Helpers of the simulated-cluster tests: a sim with controllers, waiting on conditions.

use std::time::Duration;

use kube::api::{Api, DynamicObject, ListParams};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::Value;

use crate::sim_support::{namespace, start_with};

/// A sim with the cluster components on, quick pod starts, a fixed seed, and namespace `ns`.
pub async fn cluster(ns: &str) -> (Sim, kube::Client) {
    cluster_with(ns, SimConfig::default()).await
}

pub async fn cluster_with(ns: &str, config: SimConfig) -> (Sim, kube::Client) {
    let (sim, client) = start_with(SimConfig {
        controllers: true,
        pod_start: Duration::from_millis(100),
        seed: config.seed.or(Some(7)),
        ..config
    })
    .await;
    namespace(&client, ns).await;
    (sim, client)
}

/// Poll `get` until `check` holds (10 s at most); returns the last value seen.
pub async fn until<K, F>(api: &Api<K>, name: &str, what: &str, check: F) -> K
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: Fn(&K) -> bool,
{
    let mut last = None;
    for _ in 0..200 {
        if let Ok(obj) = api.get(name).await {
            if check(&obj) {
                return obj;
            }
            last = Some(obj);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name}: {what} never happened; last seen: {last:#?}");
}

/// Poll a list until `check` holds on it.
pub async fn until_list<K, F>(api: &Api<K>, lp: &ListParams, what: &str, check: F) -> Vec<K>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: Fn(&[K]) -> bool,
{
    let mut last = Vec::new();
    for _ in 0..200 {
        if let Ok(list) = api.list(lp).await {
            if check(&list.items) {
                return list.items;
            }
            last = list.items;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} never happened; last seen: {last:#?}");
}

/// Events about `name` in `ns` as `(type, reason, message)`.
pub async fn events_of(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), ns);
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

/// Wait until an Event with `reason` about `name` exists; returns its message.
pub async fn until_event(client: &kube::Client, ns: &str, name: &str, reason: &str) -> String {
    for _ in 0..200 {
        if let Some((_, _, m)) = events_of(client, ns, name)
            .await
            .into_iter()
            .find(|(_, r, _)| r == reason)
        {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "no {reason} Event about {name}: {:#?}",
        events_of(client, ns, name).await
    );
}

/// A pod's condition `(status, reason, message)`.
pub fn pod_condition(
    pod: &k8s_openapi::api::core::v1::Pod,
    kind: &str,
) -> Option<(String, String, String)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// The first container's waiting reason and message.
pub fn waiting(pod: &k8s_openapi::api::core::v1::Pod) -> Option<(String, String)> {
    let w = pod
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .clone()?;
    Some((w.reason.unwrap_or_default(), w.message.unwrap_or_default()))
}

pub fn json<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("valid object")
}

#[allow(dead_code)]
pub fn dynamic(v: Value) -> DynamicObject {
    json(v)
}
