//! Members placing objects by namespace against an embedded API server that offers KEP-5866's
//! `shardSelector` (gate ShardedListAndWatch on): each member's watches ask the server for its
//! share's namespace-hash ranges only; when a member is killed, the survivors ask for its ranges
//! too and take its objects. Without the gate the parameter is ignored and the members still
//! split the objects, each keeping its share itself.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::children::OperatorCaches;
use pgtoolbox_operator::testing::k8s::{ShardSelector, server_filters, sharded_client};
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_operator::testing::supervisor::members::Membership;
use pgtoolbox_operator::testing::supervisor::shard::{Ownership, Placement, Ring};
use pgtoolbox_operator::testing::supervisor::{
    Kind, Operator, OperatorBuilder, OperatorSettings, Registry,
};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::json;

use crate::runtime_shards::{config, kill};
use crate::runtime_support::{Mirror, create, options, seen};
use crate::sim_support::{namespace, start_with};
use crate::wait_support::{DEADLINE, eventually};

const NAMESPACES: usize = 12;
const PER_NAMESPACE: usize = 3;

struct Member {
    registry: Registry<ConfigMap>,
    operator: Operator,
    membership: Membership,
    /// What its watches ask the server for (`None`: the server does not filter).
    selector: Option<Arc<ShardSelector>>,
}

fn objects() -> Vec<(String, String)> {
    (0..NAMESPACES)
        .flat_map(|n| (0..PER_NAMESPACE).map(move |i| (format!("ns-{n}"), format!("obj-{i}"))))
        .collect()
}

async fn seeded(gate: bool) -> (Sim, kube::Client) {
    let (sim, client) = start_with(SimConfig {
        sharded_list_and_watch: gate,
        ..SimConfig::default()
    })
    .await;
    for n in 0..NAMESPACES {
        namespace(&client, &format!("ns-{n}")).await;
    }
    for (ns, name) in objects() {
        create(&Api::namespaced(client.clone(), &ns), &name, "1").await;
    }
    (sim, client)
}

/// A member of a dynamic ring placing objects by namespace, watching the test's namespaces,
/// with server-side sharded watches where the server offers them (as `run` decides).
async fn join(client: &kube::Client, identity: &str) -> Member {
    let kind = Kind::new(Mirror::default()).options(options());
    let registry = kind.registry();
    let filters = server_filters(client, "/api/v1/configmaps")
        .await
        .expect("the probe list answers");
    let watched: Vec<String> = (0..NAMESPACES).map(|n| format!("ns-{n}")).collect();
    let selector = filters.then(|| Arc::new(ShardSelector::new(watched.clone())));
    let shared = Shared {
        settings: OperatorSettings {
            watch_namespaces: watched,
            ..OperatorSettings::default()
        },
        ..Shared::default()
    };
    // The operator's own cache set, as `run` registers it: which of its watches the server
    // filters is checked against the embedded server's counts.
    let caches = OperatorCaches::new();
    let mut builder = OperatorBuilder::new(client.clone(), Arc::new(shared))
        .ownership(Ownership::placed(Ring::Nothing, Placement::Namespace))
        .register(kind)
        .sharded_cache(Arc::new(caches.clone()));
    for start in caches.watches() {
        builder = builder.cache(start);
    }
    if let Some(selector) = &selector {
        builder = builder.server_shard(selector.clone());
    }
    let operator = builder.start().await.expect("operator starts");
    let membership = Membership::join(client.clone(), config(identity), operator.resharder());
    Member {
        registry,
        operator,
        membership,
        selector,
    }
}

/// The owner of each object, `None` where not exactly one member holds its actor.
fn owners(members: &[&Member]) -> BTreeMap<(String, String), Option<usize>> {
    objects()
        .into_iter()
        .map(|(ns, name)| {
            let key = ObjectKey::new(ns.as_str(), name.as_str());
            let holding: Vec<usize> = (0..members.len())
                .filter(|i| members[*i].registry.contains_key(&key))
                .collect();
            let owner = (holding.len() == 1).then(|| holding[0]);
            ((ns, name), owner)
        })
        .collect()
}

/// Every object has one owner, every namespace's objects the same one, every member some.
fn split_by_namespace(members: &[&Member]) -> bool {
    let owners = owners(members);
    let mut by_namespace: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    for ((ns, _), owner) in &owners {
        let Some(owner) = owner else { return false };
        by_namespace.entry(ns).or_default().insert(*owner);
    }
    let used: BTreeSet<usize> = owners.values().flatten().copied().collect();
    by_namespace.values().all(|o| o.len() == 1) && used.len() == members.len()
}

/// The namespaces `member` holds actors in.
fn namespaces_of(member: &Member) -> BTreeSet<String> {
    member
        .registry
        .iter()
        .map(|e| e.key().namespace.clone())
        .collect()
}

/// The namespaces whose ConfigMaps a list through `selector` returns.
async fn listed_through(client: &kube::Client, selector: &Arc<ShardSelector>) -> BTreeSet<String> {
    let api: Api<ConfigMap> = Api::all(sharded_client(client, selector.clone()));
    api.list(&ListParams::default())
        .await
        .expect("sharded list")
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.namespace)
        .filter(|ns| ns.starts_with("ns-"))
        .collect()
}

async fn all_seen(client: &kube::Client, value: &str) -> bool {
    for (ns, name) in objects() {
        let api = Api::namespaced(client.clone(), &ns);
        if seen(&api, &name).await.as_deref() != Some(value) {
            return false;
        }
    }
    true
}

async fn set_all(client: &kube::Client, value: &str) {
    for (ns, name) in objects() {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
        let patch = json!({"data": {"v": value}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("config map patched");
    }
}

/// Waits until `members` split the namespaces and mirrored every object's first value.
async fn split_and_mirrored(client: &kube::Client, members: &[&Member]) {
    eventually(DEADLINE, "the members split the namespaces", || async {
        split_by_namespace(members)
    })
    .await;
    eventually(DEADLINE, "every object mirrored", || all_seen(client, "1")).await;
}

/// Lists and watches of `resource` (`group/plural`) the server filtered by a shard selector.
fn sharded_requests_of(sim: &Sim, resource: &str) -> u64 {
    let stats = sim.stats();
    ["list", "watch"]
        .iter()
        .map(|verb| {
            let key = format!("{verb} {resource}");
            stats.shard_selected.get(&key).copied().unwrap_or(0)
        })
        .sum()
}

/// Lists and watches of ConfigMaps (the kind's and the referenced ones) the server filtered.
fn sharded_requests(sim: &Sim) -> u64 {
    sharded_requests_of(sim, "configmaps")
}

#[tokio::test]
async fn members_ask_the_server_for_their_namespaces_and_survivors_for_a_killed_members() {
    let (sim, client) = seeded(true).await;
    let a = join(&client, "member-a").await;
    let b = join(&client, "member-b").await;
    let c = join(&client, "member-c").await;
    let all = [&a, &b, &c];
    assert!(
        all.iter().all(|m| m.selector.is_some()),
        "the server filters"
    );
    split_and_mirrored(&client, &all).await;
    assert!(
        sharded_requests(&sim) > 0,
        "the watches carried the selector"
    );
    // The children caches ask for the share; the reference caches read everything.
    for children in [
        "rbac.authorization.k8s.io/rolebindings",
        "apps/deployments",
        "secrets",
    ] {
        assert!(
            sharded_requests_of(&sim, children) > 0,
            "{children} by share"
        );
    }
    assert_eq!(sharded_requests_of(&sim, "postgresql.cnpg.io/clusters"), 0);
    // What each member's watches ask for is its namespaces, no more (once settled).
    for member in all {
        let selector = member.selector.as_ref().expect("filtered");
        let mine = namespaces_of(member);
        eventually(DEADLINE, "a member's selector settled on its share", || {
            let (client, mine) = (client.clone(), mine.clone());
            async move { listed_through(&client, selector).await == mine }
        })
        .await;
    }

    // Kill c: the survivors' watches ask for its ranges too, and they take its objects.
    let orphaned = namespaces_of(&c);
    kill(c.operator, c.membership).await;
    let survivors = [&a, &b];
    eventually(DEADLINE, "the survivors split every namespace", || async {
        split_by_namespace(&survivors)
    })
    .await;
    set_all(&client, "2").await;
    eventually(DEADLINE, "the change mirrored by the survivors", || {
        all_seen(&client, "2")
    })
    .await;
    let taken: BTreeSet<String> = survivors.iter().flat_map(|m| namespaces_of(m)).collect();
    assert!(orphaned.is_subset(&taken), "{orphaned:?} taken over");
    kill(a.operator, a.membership).await;
    kill(b.operator, b.membership).await;
}

#[tokio::test]
async fn without_the_gate_members_placed_by_namespace_filter_their_share_themselves() {
    let (sim, client) = seeded(false).await;
    let a = join(&client, "member-a").await;
    let b = join(&client, "member-b").await;
    let all = [&a, &b];
    assert!(
        all.iter().all(|m| m.selector.is_none()),
        "no shardInfo: not used"
    );
    split_and_mirrored(&client, &all).await;
    assert_eq!(sharded_requests(&sim), 0);
    kill(a.operator, a.membership).await;
    kill(b.operator, b.membership).await;
}
