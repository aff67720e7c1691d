//! Three members of a dynamic ring (`--shards auto`) against the embedded API server: they
//! split the objects, each object judged by exactly one of them; one is killed (its Lease left
//! to expire) and the two others take its objects. With a namespace the members may not watch,
//! each of its objects is told so once, by its owner.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use pgtoolbox_operator::testing::actors::refusals::{TrackerArgs, start_refusal_tracker};
use pgtoolbox_operator::testing::k8s::EventSink;
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::WatchScope;
use pgtoolbox_operator::testing::supervisor::leader::LeaderConfig;
use pgtoolbox_operator::testing::supervisor::members::{MEMBER_LABEL, Membership, member_config};
use pgtoolbox_operator::testing::supervisor::shard::{Ownership, Ring, object_key};
use pgtoolbox_operator::testing::supervisor::{Operator, Registry, Resharder};
use serde_json::json;
use tokio::time::Instant;

use pgtoolbox_sim::Sim;

use crate::runtime_support::{Mirror, create, seen};
use crate::shared_support::{
    create_namespaces, create_pgadmin, pgadmins, ready_condition, sim_with_crds, warnings_in,
};
use crate::sim_support::start;
use crate::wait_support::{DEADLINE, eventually};

const OBJECTS: usize = 30;

struct Member {
    mirror: Mirror,
    registry: Registry<ConfigMap>,
    operator: Operator,
    membership: Membership,
}

impl Member {
    async fn kill(self) {
        kill(self.operator, self.membership).await;
    }
}

/// A member killed outright: its renewals stop (its Lease is left to expire) and its actors
/// with it.
pub(crate) async fn kill(operator: Operator, membership: Membership) {
    drop(membership);
    operator.shutdown(Duration::from_millis(100)).await;
}

pub(crate) fn config(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1300),
        renew_every: Duration::from_millis(300),
        retry_every: Duration::from_millis(100),
        ..member_config("default", identity)
    }
}

async fn join(client: &kube::Client, identity: &str) -> Member {
    join_with(client, identity, |resharder| resharder).await
}

/// A member whose ring also runs what `also` adds to its resharder.
async fn join_with(
    client: &kube::Client,
    identity: &str,
    also: impl FnOnce(Resharder) -> Resharder,
) -> Member {
    join_configured(client, config(identity), also).await
}

async fn join_configured(
    client: &kube::Client,
    lease: LeaderConfig,
    also: impl FnOnce(Resharder) -> Resharder,
) -> Member {
    let mirror = Mirror::default();
    // A member starts with nothing and is handed its share by the ring.
    let (operator, registry) = crate::runtime_support::start_member(client, &mirror).await;
    let resharder = also(operator.resharder());
    let membership = Membership::join(client.clone(), lease, resharder);
    Member {
        mirror,
        registry,
        operator,
        membership,
    }
}

fn names() -> Vec<String> {
    (0..OBJECTS).map(|i| format!("obj-{i}")).collect()
}

/// Each of our objects has a live actor in exactly one member.
fn one_owner_each(members: &[&Member]) -> bool {
    names().iter().all(|name| {
        let key = ObjectKey::new("default", name.as_str());
        members
            .iter()
            .filter(|m| m.registry.contains_key(&key))
            .count()
            == 1
    })
}

fn owned(member: &Member) -> BTreeSet<String> {
    member
        .registry
        .iter()
        .map(|e| e.key().name.clone())
        .filter(|n| n.starts_with("obj-"))
        .collect()
}

/// The embedded server holding the objects (ConfigMaps in `default`), before any member.
async fn seeded() -> (Sim, kube::Client, Api<ConfigMap>) {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in names() {
        create(&api, &name, "1").await;
    }
    (sim, client, api)
}

async fn set_all(api: &Api<ConfigMap>, value: &str) {
    for name in names() {
        let patch = json!({"data": {"v": value}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("config map patched");
    }
}

async fn all_seen(api: &Api<ConfigMap>, value: &str) -> bool {
    for name in names() {
        if seen(api, &name).await.as_deref() != Some(value) {
            return false;
        }
    }
    true
}

/// The members that passed `name` since `since`.
fn passed_by(members: &[&Member], name: &str, since: Instant) -> usize {
    members
        .iter()
        .filter(|m| m.mirror.passes_of(name).iter().any(|at| *at >= since))
        .count()
}

#[tokio::test]
async fn three_members_share_the_objects_and_survivors_take_a_killed_members_share() {
    let (_sim, client, api) = seeded().await;
    let a = join(&client, "member-a").await;
    let b = join(&client, "member-b").await;
    let c = join(&client, "member-c").await;
    let all = [&a, &b, &c];
    // Both at once: while the third member's Lease is not seen yet, the other two own every
    // object between them (one owner each, the third none), which is not the agreed ring.
    eventually(
        DEADLINE,
        "every object owned by exactly one member, and each member owning some",
        || async { one_owner_each(&all) && all.iter().all(|m| !owned(m).is_empty()) },
    )
    .await;
    eventually(DEADLINE, "every object mirrored", || all_seen(&api, "1")).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let members = leases
        .list(&ListParams::default().labels(MEMBER_LABEL))
        .await
        .unwrap();
    assert_eq!(members.items.len(), 3, "one Lease per member");

    // A change of every object is judged by its one owner only.
    let since = Instant::now();
    set_all(&api, "2").await;
    eventually(DEADLINE, "the change mirrored", || all_seen(&api, "2")).await;
    for name in names() {
        assert_eq!(
            passed_by(&all, &name, since),
            1,
            "{name} passed by one member"
        );
    }

    // Kill c: its renewals stop (its Lease is left to expire) and its actors with it.
    let orphaned = owned(&c);
    c.kill().await;
    let survivors = [&a, &b];
    eventually(DEADLINE, "the survivors own every object", || async {
        one_owner_each(&survivors)
    })
    .await;
    let since = Instant::now();
    set_all(&api, "3").await;
    eventually(DEADLINE, "the change mirrored by the survivors", || {
        all_seen(&api, "3")
    })
    .await;
    for name in &orphaned {
        assert_eq!(
            passed_by(&survivors, name, since),
            1,
            "{name} of the killed member taken by one survivor"
        );
    }
}

/// A member that also marks namespace team-b (refused, so dropped) for its share, reporting
/// its Events as itself.
async fn join_marking(client: &kube::Client, identity: &str) -> Member {
    let tracking = start_refusal_tracker(TrackerArgs {
        client: client.clone(),
        scope: WatchScope::Namespaces(vec!["team-a".into(), "team-b".into()]),
        metrics: OperatorMetrics::new(),
        kinds: vec!["PgAdmin".to_owned()],
        // As `run` starts a member: it holds nothing until the ring hands it a share.
        ownership: Ownership::single(Ring::Nothing),
        events: EventSink::new(client.clone()).reporting_as(identity),
    })
    .await
    .expect("tracker starts");
    assert_eq!(tracking.plan.dropped.len(), 1, "team-b dropped");
    tracking.actor.stop(None);
    let marking = tracking.marker.clone().on_reshard();
    join_with(client, identity, |resharder| resharder.also(marking)).await
}

/// Whether every named PgAdmin of team-b says NamespaceNotWatched.
async fn all_marked(client: &kube::Client, names: &[String]) -> bool {
    for name in names {
        let Ok(object) = pgadmins(client, "team-b").get(name).await else {
            return false;
        };
        if ready_condition(&object)["reason"] != "NamespaceNotWatched" {
            return false;
        }
    }
    true
}

/// The NamespaceNotWatched Events of team-b by the PgAdmin they regard: (count, reporters).
async fn events_by_object(client: &kube::Client) -> BTreeMap<String, (usize, Vec<String>)> {
    let mut by_object: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    for event in warnings_in(client, "team-b").await {
        let name = event.regarding.and_then(|r| r.name).unwrap_or_default();
        let entry = by_object.entry(name).or_default();
        entry.0 += 1;
        entry.1.extend(event.reporting_instance);
    }
    by_object
}

/// Status writes of PgAdmins the server received (conflicting ones included).
fn status_patches(sim: &Sim) -> u64 {
    let stats = sim.stats();
    stats
        .by_verb_resource
        .get("patch pgtoolbox.fyannk.dev/pgadmins/status")
        .copied()
        .unwrap_or(0)
}

/// The member of `members` the ring gives PgAdmin team-b/`name`.
fn ring_owner(members: &[&str], name: &str) -> String {
    let all: BTreeSet<String> = members.iter().map(|m| m.to_string()).collect();
    let key = object_key("PgAdmin", "team-b", name);
    members
        .iter()
        .find(|me| {
            Ring::Members {
                me: me.to_string(),
                members: all.clone(),
            }
            .owns(key)
        })
        .map(|me| me.to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_dropped_namespace_is_marked_once_per_object_by_its_owner_member() {
    let sim = sim_with_crds(&["create:secrets:team-b"]).await;
    let client = sim.client();
    create_namespaces(&client, &["team-a", "team-b"]).await;
    let early: Vec<String> = (0..12).map(|i| format!("early-{i}")).collect();
    for name in &early {
        create_pgadmin(&client, "team-b", name).await;
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in names() {
        create(&api, &name, "1").await;
    }
    // The three start together: each marks what the ring gives it, at every change of share.
    let (a, b, c) = tokio::join!(
        join_marking(&client, "member-a"),
        join_marking(&client, "member-b"),
        join_marking(&client, "member-c"),
    );
    let all = [&a, &b, &c];
    eventually(DEADLINE, "the ring settled on three members", || async {
        one_owner_each(&all) && all.iter().all(|m| !owned(m).is_empty())
    })
    .await;
    eventually(DEADLINE, "every early PgAdmin marked", || {
        all_marked(&client, &early)
    })
    .await;
    let events = events_by_object(&client).await;
    assert_eq!(events.len(), early.len(), "{events:?}");
    for (name, (count, _)) in &events {
        assert_eq!(*count, 1, "{name}: one NamespaceNotWatched Event");
    }
    assert_eq!(
        status_patches(&sim),
        early.len() as u64,
        "one status write per object, none repeated by another member"
    );

    // PgAdmins nobody marked yet (as those of a member that crashed before marking) are
    // marked at the next hand-off by their new owner: kill member-c.
    let late: Vec<String> = (0..12).map(|i| format!("late-{i}")).collect();
    for name in &late {
        create_pgadmin(&client, "team-b", name).await;
    }
    c.kill().await;
    eventually(DEADLINE, "every late PgAdmin marked", || {
        all_marked(&client, &late)
    })
    .await;
    let events = events_by_object(&client).await;
    assert_eq!(events.len(), early.len() + late.len(), "{events:?}");
    let survivors = ["member-a", "member-b"];
    for name in &late {
        let (count, reporters) = &events[name];
        assert_eq!(*count, 1, "{name}: one NamespaceNotWatched Event");
        assert_eq!(
            reporters,
            &vec![ring_owner(&survivors, name)],
            "{name} marked by its owner"
        );
    }
    assert_eq!(
        status_patches(&sim),
        (early.len() + late.len()) as u64,
        "one status write per object"
    );
    assert!(
        late.iter()
            .any(|name| ring_owner(&["member-a", "member-b", "member-c"], name) == "member-c"),
        "some late PgAdmins moved with member-c's share"
    );
    drop((a, b));
}

/// A member's first Lease write slowed past the renewal deadline (a busy server while the
/// caches list at start) is waited for: the member owns nothing until it lands, then joins.
#[tokio::test]
async fn a_first_lease_write_slower_than_the_deadline_still_joins() {
    let (sim, client, api) = seeded().await;
    // Longer than the test members' renewal deadline (1.3 s).
    sim.admin()
        .inject_latency(
            "create:coordination.k8s.io/leases:default",
            Duration::from_millis(2500),
            Some(1),
        )
        .expect("latency injected");
    let a = join(&client, "member-a").await;
    eventually(DEADLINE, "the member owns every object", || async {
        one_owner_each(&[&a])
    })
    .await;
    eventually(DEADLINE, "every object mirrored", || all_seen(&api, "1")).await;
}

/// One failed renewal is retried at the retry period, not at the next renewal: with renewals
/// every half of the deadline (as the defaults, 5 s of 10 s), waiting a full period after a
/// failure would reach the deadline and stop a member whose Lease a single error cost.
#[tokio::test]
async fn a_member_survives_one_failed_renewal() {
    let (sim, client) = start().await;
    // Renewals every half of the deadline, as the defaults' (5 s of 10 s).
    let lease = LeaderConfig {
        renew_deadline: Duration::from_millis(1600),
        renew_every: Duration::from_millis(800),
        retry_every: Duration::from_millis(200),
        ..config("member-a")
    };
    let member = join_configured(&client, lease.clone(), |r| r).await;
    eventually(DEADLINE, "the member's Lease written", || async {
        let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
        leases
            .list(&ListParams::default().labels(MEMBER_LABEL))
            .await
            .is_ok_and(|l| l.items.len() == 1)
    })
    .await;
    let Member {
        operator,
        mut membership,
        ..
    } = member;
    // Renewals are replaces of the member's Lease: the next one fails.
    sim.admin()
        .inject_errors("update:coordination.k8s.io/leases:default", 500, 1)
        .expect("pattern");
    let quiet = lease.renew_every * 2 + lease.renew_deadline * 2;
    let lost = tokio::time::timeout(quiet, membership.lost()).await;
    assert!(lost.is_err(), "the member stopped after one failed renewal");
    kill(operator, membership).await;
}

#[tokio::test]
async fn a_member_lists_its_kind_once_its_share_is_agreed_and_not_before() {
    let (sim, client, _) = seeded().await;
    sim.admin().reset_stats();
    let a = join(&client, "member-a").await;
    eventually(DEADLINE, "the lone member owns every object", || async {
        owned(&a).len() == OBJECTS
    })
    .await;
    // Owning nothing before the ring agreed, a list would have kept nothing: the one list is
    // the one its share asked for.
    let stats = sim.admin().stats();
    assert_eq!(
        stats.by_verb_resource.get("list configmaps"),
        Some(&1),
        "{:#?}",
        stats.by_verb_resource
    );
    a.kill().await;
}
