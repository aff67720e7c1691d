//! The operator as `run` starts it, for tests that drive it in-process: the names older tests
//! call, kept as thin functions over the one harness (`harness.rs`).

use pgtoolbox_operator::testing::actors::shared::SharedActors;
use pgtoolbox_operator::testing::supervisor::{Operator, OperatorSettings};

#[allow(
    unused_imports,
    reason = "kept under its old name for tests written against operator_support"
)]
pub use super::harness::all_kinds;
pub use super::harness::quick_settings;

/// The shared actors, probing for `kinds`, and the operator on them.
pub async fn run_operator(
    client: &kube::Client,
    kinds: &[String],
    settings: OperatorSettings,
) -> (Operator, SharedActors) {
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    let running = super::harness::Wiring::with(settings)
        .kinds(&kinds)
        .start(client)
        .await;
    (running.operator, running.actors.expect("shared actors"))
}
