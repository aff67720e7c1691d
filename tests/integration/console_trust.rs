//! The trust analysis's corners on the simulated cluster: Nodes the operator may not list (the
//! message says the podCIDR check was not made), and a changed `from` held back while a Pod
//! stuck terminating still trusts the old peers (named).

use pgtoolbox_sim::{DenyRule, SimConfig};
use serde_json::json;

use super::console_support::{IMAGE, message, settings, start, with_controllers};
use super::wait_support::until;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_without_a_node_grant_says_the_pod_cidr_check_was_not_made() {
    let env = start(
        SimConfig {
            deny: vec![DenyRule::parse("list:nodes:*").expect("rule")],
            ..with_controllers()
        },
        settings(),
        true,
    )
    .await;
    env.console(
        "ops",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": "ops.apps.sim.local",
               "networkPolicy": {"from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]}}}),
    )
    .await;
    let obj = env.wait("ops", "ExposureConfined", "AsExpected").await;
    let text = message(&obj, "ExposureConfined");
    assert!(text.contains("may not list Nodes"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_changed_from_is_held_back_while_a_stuck_pod_trusts_the_old_peers() {
    let env = super::console_support::routed_with_a_stuck_pod("ops").await;
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"networkPolicy": {"from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]}}}}),
    )
    .await;
    let obj = until(
        &env.consoles(),
        "ops",
        "ExposureConfined says the change is held back by a stuck Pod",
        |obj| {
            let text = message(obj, "ExposureConfined");
            text.contains("held back") && text.contains("stuck terminating")
        },
    )
    .await;
    let text = message(&obj, "ExposureConfined");
    assert!(
        text.contains("trusts no peer with X-Forwarded-For"),
        "{text}"
    );
}
