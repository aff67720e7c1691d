//! The operator as `run` starts it, for tests that drive it in-process: the shared actors
//! (the optional APIs probed for the kinds it serves), then every kind registered.

use std::sync::Arc;

use pgtoolbox_operator::cli::register_all;
use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::actors::shared::{SharedActors, start_shared_actors};
use pgtoolbox_operator::testing::health::Readiness;
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::{
    BackoffPolicy, Operator, OperatorBuilder, OperatorSettings,
};

/// The settings a test starts the operator with: no start-up jitter, and retries of a failing
/// pass capped at two seconds. A refusal the operator does not watch (a quota, an admission
/// policy) is seen lifted by the next retry; with the five-minute production cap, a test that
/// lifts it after a few failures on a loaded machine would wait past its deadline.
pub fn quick_settings() -> OperatorSettings {
    OperatorSettings {
        startup_jitter: std::time::Duration::ZERO,
        retry: BackoffPolicy {
            min_delay: std::time::Duration::from_millis(200),
            max_delay: std::time::Duration::from_secs(2),
        },
        ..OperatorSettings::default()
    }
}

/// Every kind the operator registers.
pub fn all_kinds(client: &kube::Client) -> Vec<String> {
    register_all(OperatorBuilder::new(
        client.clone(),
        Arc::new(Shared::default()),
    ))
    .kind_names()
}

/// The shared actors, probing for `kinds`, and the operator on them.
pub async fn run_operator(
    client: &kube::Client,
    kinds: &[String],
    settings: OperatorSettings,
) -> (Operator, SharedActors) {
    let shared = start_shared_actors(
        client,
        kinds,
        settings,
        OperatorMetrics::new(),
        Readiness::new(),
    )
    .await
    .expect("shared actors start");
    let operator = register_all(OperatorBuilder::new(client.clone(), shared.shared.clone()))
        .start()
        .await
        .expect("operator starts");
    (operator, shared)
}
