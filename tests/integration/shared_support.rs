//! Helpers of the shared-actor tests.

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

pub use super::wait_support::eventually;
