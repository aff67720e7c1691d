//! The stall rechecks at their real durations (every other test shortens them): two minutes
//! for a ClusterRole the console binds and that is missing, five minutes for an ingress
//! NetworkPolicy the API server refused. Neither input is watched, so only the recheck can see
//! it fixed; until then the operator sends the API server nothing but its standing watches.
//! Slow by nature (about 2 and 5 minutes of idle waiting each); they run beside the others.

use std::time::Duration;

use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::SimConfig;
use serde_json::json;

use super::console_support::{Env, IMAGE, NS, start, state};
use super::wait_support::{condition_of, eventually, wait_event_of};

/// The real durations: the defaults, nothing shortened.
fn real_rechecks() -> OperatorSettings {
    OperatorSettings {
        startup_jitter: Duration::ZERO,
        ..OperatorSettings::default()
    }
}

/// How long before the recheck is due the quiet window ends (the stall's status write came at
/// most a poll before the test saw it).
const MARGIN: Duration = Duration::from_secs(10);

/// Once `reason` stalls the console `ops` (seen with its Warning Event) and the fix the
/// operator cannot see is made: stays idle until shortly before `interval` has passed, checks
/// that no request but a watch reached the API server meanwhile and that the stall still
/// holds, then that the recheck resolves it no sooner than `interval` after the stall.
async fn quiet_until_the_recheck(
    env: &Env,
    reason: &str,
    interval: Duration,
    fix: impl AsyncFnOnce(),
) {
    let obj = env.wait("ops", "Stalled", reason).await;
    let seen = tokio::time::Instant::now();
    assert_eq!(state(&obj, "Stalled").0, "True");
    let stalled_at = condition_of(&obj, "Stalled")
        .expect("Stalled")
        .last_transition_time;
    wait_event_of(&env.client, NS, "ops", reason).await;
    fix().await;
    env.sim.admin().reset_stats();
    tokio::time::sleep_until(seen + interval - MARGIN).await;
    let stats = env.sim.stats();
    let requests: Vec<(&String, &u64)> = stats
        .by_verb_resource
        .iter()
        .filter(|(request, _)| !request.starts_with("watch "))
        .collect();
    assert!(
        requests.is_empty(),
        "requests before the recheck was due: {requests:#?}"
    );
    let obj = env.consoles().get("ops").await.expect("console");
    assert_eq!(
        state(&obj, "Stalled"),
        ("True".into(), reason.into()),
        "resolved before the recheck"
    );
    // Due within MARGIN; a loaded machine may take longer to run the pass.
    let resolved = || async {
        let obj = env.consoles().get("ops").await.expect("console");
        condition_of(&obj, "ConfigurationValid")
            .filter(|c| c.reason == "AsExpected")
            .map(|c| c.last_transition_time)
    };
    eventually(MARGIN * 12, "the recheck resolves the stall", || async {
        resolved().await.is_some()
    })
    .await;
    let resolved = resolved().await.expect("resolved");
    let after = stalled_at.0.duration_until(resolved.0);
    let interval_secs = i64::try_from(interval.as_secs()).expect("seconds");
    // Both times are stored in whole seconds.
    assert!(
        after.as_secs() >= interval_secs - 1,
        "resolved {after:?} after the stall, before the {interval:?} recheck"
    );
}

/// One test for both: side by side, they hold one test thread for five minutes, not two
/// threads for seven (the other tests keep the second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_rechecks_run_after_two_and_five_real_minutes_with_no_request_meanwhile() {
    tokio::join!(
        a_missing_cluster_role_is_rechecked_after_two_real_minutes(),
        a_refused_ingress_policy_is_rechecked_after_five_real_minutes(),
    );
}

async fn a_missing_cluster_role_is_rechecked_after_two_real_minutes() {
    let env = start(SimConfig::default(), real_rechecks(), false).await;
    env.console(
        "ops",
        json!({"image": IMAGE, "restoreDrills": {"enabled": true}}),
    )
    .await;
    // ClusterRoles are not watched: the two-minute recheck is what finds them.
    quiet_until_the_recheck(
        &env,
        "ConsoleRoleMissing",
        Duration::from_secs(120),
        async || env.install_roles().await,
    )
    .await;
}

async fn a_refused_ingress_policy_is_rechecked_after_five_real_minutes() {
    let env = super::console_support::routed_with_a_refused_ingress_policy(real_rechecks()).await;
    // An admission policy is not watched either: the five-minute recheck applies the policy.
    quiet_until_the_recheck(
        &env,
        "ExposurePolicyInvalid",
        Duration::from_secs(300),
        async || env.sim.admin().clear_faults(),
    )
    .await;
}
