//! Helpers of the shared-actor tests.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use pgtoolbox_sim::{DenyRule, Sim, SimConfig};
use serde_json::json;

pub async fn sim_with(deny: &[&str], unserve: &[&str]) -> Sim {
    let config = SimConfig {
        deny: deny
            .iter()
            .map(|rule| DenyRule::parse(rule).expect("deny rule"))
            .collect(),
        unserve: unserve.iter().map(|g| (*g).to_owned()).collect(),
        ..SimConfig::default()
    };
    Sim::start(config).await.expect("sim starts")
}

pub async fn create_namespaces(client: &kube::Client, names: &[&str]) {
    let api: Api<Namespace> = Api::all(client.clone());
    for name in names {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("ns");
        api.create(&PostParams::default(), &ns)
            .await
            .expect("namespace created");
    }
}

/// Polls `check` every 20 ms until it holds; panics after `limit`.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
