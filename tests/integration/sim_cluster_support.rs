//! Helpers of the simulated-cluster tests: a sim with controllers, waiting on conditions.

use std::time::Duration;

use kube::api::DynamicObject;
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
