//! A pass over a converged console reads only caches and writes nothing: zero API requests,
//! counted by the embedded server. The caches and the reconciler are driven pass by pass.

use std::sync::Arc;

use pgtoolbox_operator::testing::actors::console::ConsoleReconciler;
use pgtoolbox_operator::testing::actors::{ObjectContext, PassEnv, Reconciler, Shared};
use pgtoolbox_operator::testing::k8s::{EventSink, WriteBudget};
use pgtoolbox_operator::testing::messages::ObjectKey;
use serde_json::json;

use super::console_support::{
    IMAGE, NS, settings, start_without_operator, state, with_controllers,
};
use super::wait_support::wait_for;

async fn converges_without_requests(name: &str, spec: serde_json::Value) {
    let env = start_without_operator(with_controllers()).await;
    let client = env.client.clone();
    env.console(name, spec).await;

    let (caches, _drain) = crate::harness::watched_caches(&client, NS);
    let reconciler = ConsoleReconciler::new(caches, EventSink::new(client.clone()));
    let pass_env = Arc::new(PassEnv {
        client: client.clone(),
        writes: WriteBudget::new(4),
        shared: Arc::new(Shared::new(settings())),
    });
    let cx = ObjectContext::new(ObjectKey::new(NS, name), pass_env, 0);
    wait_for(
        &format!("{name} converged to a pass without requests"),
        || async {
            let current = env.consoles().get(name).await.map_err(|e| e.to_string())?;
            env.sim.admin().reset_stats();
            reconciler
                .reconcile(Arc::new(current), &cx)
                .await
                .map_err(|e| e.to_string())?;
            let stats = env.sim.stats();
            let now = env.consoles().get(name).await.map_err(|e| e.to_string())?;
            let confined = state(&now, "ExposureConfined").1;
            if stats.total == 0
                && state(&now, "Ready") == ("True".into(), "AsExpected".into())
                && (confined.is_empty() || confined == "AsExpected")
            {
                Ok(())
            } else {
                Err(format!("the last pass made {:?}", stats.by_verb_resource))
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_pass_over_a_converged_console_makes_no_api_request() {
    converges_without_requests("steady", json!({"image": IMAGE})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_pass_over_a_converged_exposed_console_makes_no_api_request() {
    converges_without_requests(
        "exposed",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": "exposed.apps.sim.local",
               "networkPolicy": {"from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]}}}),
    )
    .await;
}
