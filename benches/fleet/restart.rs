//! The fleet's restart phase (after the healthy run's writes settled and its quiet phase): the
//! operator process is killed and a new one started over the same cluster, where every object
//! is Ready. Measured as convergence measures its restart (`common/restart.rs`): the time until
//! the new process has judged every object, told by its pass counters on `/metrics` (one pass
//! per object of each kind), its requests and writes until its writes settled (the goal: no
//! write), and a plain paged list of the fleet and of the children the operator caches.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams};
use pgtoolbox_operator::testing::children::{MANAGED_BY, MANAGED_BY_LABEL};
use pgtoolbox_sim::Sim;

use super::RunResult;
use super::ceiling::{CHILD_KINDS, resource};
use super::common::child::env_or;
use super::common::restart::{self, Restart, paged_list};
use super::common::scrape;
use super::world::{Fleet, FleetKind};

/// `FLEET_RESTART=0` skips the phase.
pub fn enabled() -> bool {
    env_or("FLEET_RESTART", 1) != 0
}

/// Kills `operator`, starts a new one over the same cluster and measures it until every object
/// was judged and its writes settled; then kills it and lists what it read.
pub async fn phase(
    sim: &Sim,
    client: &kube::Client,
    kubeconfig: &Path,
    operator: &mut Child,
    fleet: Fleet,
    bound: Duration,
) -> Restart {
    let _ = operator.kill();
    let _ = operator.wait();
    let port = scrape::free_port();
    let kinds = FleetKind::ALL.map(FleetKind::kind_name);
    sim.admin().reset_stats();
    let start = Instant::now();
    let mut restarted = super::start_operator(kubeconfig, port);
    scrape::passes_reached(port, &kinds, 1, bound).await;
    let first_pass_s = start.elapsed().as_secs_f64();
    let passes = scrape::passes_reached(port, &kinds, fleet.per_kind as u64, bound).await;
    let judged_s = start.elapsed().as_secs_f64();
    let judged = restart::settled(sim, start, [first_pass_s, judged_s], passes).await;
    let _ = restarted.kill();
    let _ = restarted.wait();
    let listing = Instant::now();
    let (objects, children) = plain_list(client).await;
    let list_s = listing.elapsed().as_secs_f64();
    judged.listed(
        list_s,
        &format!("{objects} fleet objects and {children} children"),
    )
}

/// One client reading, in pages, the three kinds and the children of the kinds the operator
/// caches for them (its managed label: the children it made, their ReplicaSets and Pods).
async fn plain_list(client: &kube::Client) -> (usize, usize) {
    let all = ListParams::default();
    let managed = ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"));
    let mut objects = 0;
    for kind in FleetKind::ALL {
        objects += paged_list(&kind.api(client), &all).await;
    }
    let mut children = 0;
    for i in 0..CHILD_KINDS.len() {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource(i));
        children += paged_list(&api, &managed).await;
    }
    children += paged_list(&Api::<ReplicaSet>::all(client.clone()), &managed).await;
    children += paged_list(&Api::<Pod>::all(client.clone()), &managed).await;
    (objects, children)
}

/// The report's line for the runs of one scenario that restarted.
pub fn report(scenario: &str, runs: &[&RunResult]) {
    let objects = runs.first().map_or(1, |r| r.objects.max(1)) as f64;
    if let Some(summary) = restart::summarise(runs.iter().filter_map(|r| r.restart.as_ref())) {
        println!(
            "{}",
            summary.line(
                &format!("{scenario}: the operator restarted over the Ready fleet"),
                "the fleet and the children the operator caches",
                objects
            )
        );
    }
}
