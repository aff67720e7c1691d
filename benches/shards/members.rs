//! The members of a run (`common::members`) as this bench starts them, and which of them owns
//! which request, from their Leases.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use pgtoolbox_operator::api::PgAccessRequest;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_operator::testing::supervisor::leader::LeaderConfig;
use pgtoolbox_operator::testing::supervisor::members::{MEMBER_LABEL, member_config};
use pgtoolbox_operator::testing::supervisor::shard::{Ownership, Placement, Ring};
use pgtoolbox_sim::Sim;

pub use super::common::members::Member;
use super::common::{measure, members};
use super::seed;

/// The operator's namespace, where the members keep their Leases.
pub fn operator_namespace() -> String {
    OperatorSettings::default().operator_namespace
}

/// The Lease timings every member runs with (the CLI does not change them).
pub fn lease_config() -> LeaderConfig {
    member_config(&operator_namespace(), "bench")
}

/// `SHARDS_OPERATOR_LOG=<prefix>` keeps member i's log in `<prefix>.<i>`.
fn log_of(i: usize) -> Option<PathBuf> {
    std::env::var("SHARDS_OPERATOR_LOG")
        .ok()
        .map(|prefix| PathBuf::from(format!("{prefix}.{i}")))
}

/// `SHARDS_PLACEMENT=namespace`: the members place requests by namespace and watch the seeded
/// namespaces (`--shard-placement namespace`, `WATCH_NAMESPACES`), on an API server with the
/// `ShardedListAndWatch` gate on; otherwise as shipped (placed by object, every namespace).
pub fn placement() -> Placement {
    match std::env::var("SHARDS_PLACEMENT").as_deref() {
        Ok("namespace") => Placement::Namespace,
        _ => Placement::Object,
    }
}

/// Whether the members watch the seeded namespaces one by one (`WATCH_NAMESPACES`): always
/// when placed by namespace, else with `SHARDS_WATCH_NAMESPACES=1`.
fn watch_namespaces() -> bool {
    placement() == Placement::Namespace
        || std::env::var("SHARDS_WATCH_NAMESPACES").is_ok_and(|v| v == "1")
}

/// Whether the embedded server offers KEP-5866's shardSelector: placed by namespace, unless
/// `SHARDS_GATE=off` (the same members, filtering their share themselves).
pub fn server_sharding() -> bool {
    placement() == Placement::Namespace && !std::env::var("SHARDS_GATE").is_ok_and(|v| v == "off")
}

/// The run's placement as the report names it, e.g. `namespace (server-side)`.
pub fn describe() -> String {
    let watches = if watch_namespaces() {
        "per-namespace watches"
    } else {
        "cluster-wide watches"
    };
    let filtering = if server_sharding() {
        "server-side"
    } else {
        "client-side"
    };
    format!("{:?}, {watches}, {filtering}", placement()).to_lowercase()
}

/// Starts `count` members: one alone runs as the single replica, more join a ring.
pub fn start(kubeconfig: &Path, count: usize) -> Vec<Member> {
    members::start(kubeconfig, count, log_of, |command| {
        if placement() == Placement::Namespace {
            command.args(["--shard-placement", "namespace"]);
        }
        if watch_namespaces() {
            // The single replica watches the same namespaces (the same watches) as members.
            command.env("WATCH_NAMESPACES", seed::namespace_names().join(","));
        }
    })
}

/// The RSS and the live heap of a single replica with nothing to reconcile, KiB: started on
/// the still empty server, measured once it watches the requests and its other lists settled,
/// then killed.
pub async fn idle_kb(sim: &Sim, kubeconfig: &Path) -> (u64, u64) {
    let mut idle = start(kubeconfig, 1);
    let watching = |stats: &pgtoolbox_sim::Stats| {
        stats
            .by_verb_resource
            .keys()
            .any(|key| key.starts_with("watch ") && key.ends_with("pgaccessrequests"))
    };
    while !watching(&sim.stats()) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss = measure::rss_kb_of(idle[0].pid());
    let heap = idle[0]
        .heap_kb()
        .await
        .map_or(0, |(allocated, _)| allocated);
    idle[0].kill();
    (rss, heap)
}

/// The identities of the members holding a Lease, in name order.
pub async fn identities(client: &kube::Client) -> Vec<String> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &operator_namespace());
    let leases = api
        .list(&ListParams::default().labels(MEMBER_LABEL))
        .await
        .expect("member Leases listed");
    let mut names: Vec<String> = leases
        .items
        .into_iter()
        .filter_map(|lease| lease.spec?.holder_identity)
        .collect();
    names.sort();
    names
}

/// Each member's view of the ring of `identities`, in the same order.
pub fn rings(identities: &[String]) -> Vec<Ring> {
    identities
        .iter()
        .map(|me| Ring::Members {
            me: me.clone(),
            members: identities.iter().cloned().collect(),
        })
        .collect()
}

/// The member (its place in `rings`) that owns request `index`, as every member computes it.
pub fn owner_of(rings: &[Ring], index: usize) -> Option<usize> {
    let kind = <PgAccessRequest as kube::Resource>::kind(&());
    let (namespace, name) = (seed::namespace(index), seed::name(index));
    rings.iter().position(|ring| {
        Ownership::placed(ring.clone(), placement()).owns_object(&kind, &namespace, &name)
    })
}
