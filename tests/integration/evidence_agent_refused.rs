//! An EvidenceAgent whose Deployment an admission policy refuses (issue 46, finding 14): the
//! pass ends `Ready=False ReconcileError` with `AdmissionDenied` first in the message and a
//! Warning Event of that reason; once the policy goes, the agent is Ready.

use super::console_refused_children::deny_deployments;
use super::evidence_agent::{IMAGE, NS, condition_of, start, state, with_controllers};
use super::evidence_agent_tls::ready_store;
use super::wait_support::wait_event_of;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_policy_that_refuses_the_agents_deployment_is_admission_denied() {
    let env = start(
        with_controllers(),
        crate::operator_support::quick_settings(),
    )
    .await;
    ready_store(&env).await;
    let lift = deny_deployments(&env.client, "-evidence", "no agents here").await;
    env.agent("denied", "orders", Some(IMAGE), "operator").await;
    let failed = env.wait_reason("denied", "Ready", "ReconcileError").await;
    assert_eq!(state(&failed, "Ready").0, "False");
    let why = condition_of(&failed, "Ready").expect("Ready").message;
    assert!(why.starts_with("AdmissionDenied: "), "{why}");
    assert!(why.contains("no agents here"), "{why}");
    let (kind, _, note) = wait_event_of(&env.client, NS, "denied", "AdmissionDenied").await;
    assert_eq!(kind, "Warning");
    assert!(note.contains("no agents here"), "{note}");

    lift.await;
    env.wait_reason("denied", "Ready", "AsExpected").await;
}
