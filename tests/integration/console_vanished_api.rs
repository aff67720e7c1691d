//! A kind served when the operator started and gone since (issue 46, finding 13): the Route
//! API of a console's exposure stops being served, its watch's store holds the last list, and
//! a pass must fail (Ready=False ReconcileError, retried) rather than say Ready from that list.

use serde_json::json;

use super::console_support::{IMAGE, message, settings, start_probed, state, with_controllers};

const HOST: &str = "gone.apps.sim.local";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_api_gone_since_the_start_fails_the_loop_instead_of_a_stale_ready() {
    let env = start_probed(with_controllers(), settings()).await;
    env.console(
        "gone",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": HOST}}),
    )
    .await;
    env.ready("gone").await;

    // The API goes (an aggregated API unregistered): open watches end, and every request about
    // Routes is answered 404 from now on. Nothing else changes.
    let admin = env.sim.admin();
    admin.unserve("route.openshift.io");
    admin.drop_watches();
    let failed = env.wait("gone", "Ready", "ReconcileError").await;
    assert_eq!(state(&failed, "Ready").0, "False");
    let why = message(&failed, "Ready");
    assert!(why.contains("Routes are no longer served"), "{why}");

    // Served again: the watch lists again, the end of that list wakes the console, and it is
    // Ready from a true list (nothing else changed to wake it).
    admin.serve("route.openshift.io");
    env.ready("gone").await;
}
