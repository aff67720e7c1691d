//! Three members of a dynamic ring (`--shards auto`) against the embedded API server: they
//! split the objects, each object judged by exactly one of them; one is killed (its Lease left
//! to expire) and the two others take its objects.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_operator::testing::supervisor::leader::LeaderConfig;
use pgtoolbox_operator::testing::supervisor::members::{MEMBER_LABEL, Membership, member_config};
use pgtoolbox_operator::testing::supervisor::shard::{Ownership, Ring};
use pgtoolbox_operator::testing::supervisor::{Kind, Operator, OperatorBuilder, Registry};
use serde_json::json;
use tokio::time::Instant;

use crate::runtime_support::{Mirror, create, options, seen};
use crate::sim_support::start;
use crate::wait_support::{DEADLINE, eventually};

const OBJECTS: usize = 30;

struct Member {
    mirror: Mirror,
    registry: Registry<ConfigMap>,
    operator: Operator,
    membership: Membership,
}

fn config(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1300),
        renew_every: Duration::from_millis(300),
        retry_every: Duration::from_millis(100),
        ..member_config("default", identity)
    }
}

async fn join(client: &kube::Client, identity: &str) -> Member {
    let mirror = Mirror::default();
    let kind = Kind::new(mirror.clone()).options(options());
    let registry = kind.registry();
    // A member starts with nothing and is handed its share by the ring.
    let operator = OperatorBuilder::new(client.clone(), std::sync::Arc::new(Shared::default()))
        .ownership(Ownership::single(Ring::Nothing))
        .register(kind)
        .start()
        .await
        .expect("operator starts");
    let membership = Membership::join(client.clone(), config(identity), operator.resharder());
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
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in names() {
        create(&api, &name, "1").await;
    }
    let a = join(&client, "member-a").await;
    let b = join(&client, "member-b").await;
    let c = join(&client, "member-c").await;
    let all = [&a, &b, &c];
    eventually(
        DEADLINE,
        "every object owned by exactly one member",
        || async { one_owner_each(&all) },
    )
    .await;
    for member in all {
        assert!(!owned(member).is_empty(), "each member has a share");
    }
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
    let Member {
        operator,
        membership,
        ..
    } = c;
    drop(membership);
    operator.shutdown(Duration::from_millis(100)).await;
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

/// A member's first Lease write slowed past the renewal deadline (a busy server while the
/// caches list at start) is waited for: the member owns nothing until it lands, then joins.
#[tokio::test]
async fn a_first_lease_write_slower_than_the_deadline_still_joins() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in names() {
        create(&api, &name, "1").await;
    }
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
