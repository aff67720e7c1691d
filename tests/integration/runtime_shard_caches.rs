//! Two members of a dynamic ring running every kind over PgAccessRequests: each keeps in its
//! caches the RoleBindings of its own share only; when one is killed, the survivor lists the
//! RoleBindings again and repairs a drift on a request it took over (it sees the binding it did
//! not keep before, rather than reporting it missing).

use std::collections::BTreeSet;
use std::time::Duration;

use pgtoolbox_operator::testing::children::OperatorCaches;
use pgtoolbox_operator::testing::supervisor::Operator;
use pgtoolbox_operator::testing::supervisor::members::Membership;
use pgtoolbox_operator::testing::supervisor::shard::{Ownership, Ring, object_key};

use crate::harness::Wiring;
use crate::pgar_support::{Env, start_without_operator};
use crate::runtime_shards::{config, kill};
use crate::wait_support::{DEADLINE, eventually};

const REQUESTS: usize = 12;

struct Member {
    caches: OperatorCaches,
    operator: Operator,
    membership: Membership,
}

/// A member of a sharded set: `register_all` over `caches`, on a bare shared state, starting
/// with nothing (the ring hands it its share).
pub fn member_wiring(env: &Env, caches: OperatorCaches) -> Wiring {
    Wiring::with(env.settings.clone())
        .bare()
        .caches(caches)
        .ownership(Ownership::single(Ring::Nothing))
}

async fn join(env: &Env, identity: &str) -> Member {
    let caches = OperatorCaches::new();
    let operator = member_wiring(env, caches.clone())
        .start(&env.client)
        .await
        .operator;
    let membership = Membership::join(env.client.clone(), config(identity), operator.resharder());
    Member {
        caches,
        operator,
        membership,
    }
}

/// The requests whose RoleBinding `member` keeps.
fn kept(member: &Member) -> BTreeSet<String> {
    member
        .caches
        .access_bindings
        .owners()
        .into_iter()
        .map(|owner| owner.name)
        .collect()
}

fn names() -> Vec<String> {
    (0..REQUESTS).map(|i| format!("req-{i}")).collect()
}

#[tokio::test]
async fn each_member_keeps_its_shares_children_and_a_survivor_lists_what_it_takes_over() {
    let env = start_without_operator().await;
    for name in names() {
        env.request(&name, 3600).await;
        env.approve(&name, "bob").await;
    }
    env.sim.admin().reset_stats();
    let a = join(&env, "member-a").await;
    let b = join(&env, "member-b").await;
    for name in names() {
        env.wait_reason(&name, "RoleBindingSynced", "AccessGranted")
            .await;
    }
    let all: BTreeSet<String> = names().into_iter().collect();
    let members: BTreeSet<String> = ["member-a", "member-b"].map(String::from).into();
    let share_of = |me: &str| -> BTreeSet<String> {
        let ring = Ring::Members {
            me: me.into(),
            members: members.clone(),
        };
        all.iter()
            .filter(|n| ring.owns(object_key("PgAccessRequest", crate::pgar_support::NS, n)))
            .cloned()
            .collect()
    };
    let (share_a, share_b) = (share_of("member-a"), share_of("member-b"));
    assert!(
        !share_a.is_empty() && !share_b.is_empty(),
        "both have a share"
    );
    eventually(
        DEADLINE,
        "each member keeps its share's RoleBindings only",
        || async { kept(&a) == share_a && kept(&b) == share_b },
    )
    .await;
    // Each member listed the requests and their RoleBindings once, when its first share was
    // agreed: none before (it owned nothing), none when the other joined (a join only takes
    // objects away). Two stores keep RoleBindings (the requests' and the workloads').
    let stats = env.sim.admin().stats();
    for (resource, lists) in [
        ("rbac.authorization.k8s.io/rolebindings", 2 * 2),
        ("pgtoolbox.fyannk.dev/pgaccessrequests", 2),
    ] {
        assert_eq!(
            stats.by_verb_resource.get(&format!("list {resource}")),
            Some(&lists),
            "{:#?}",
            stats.by_verb_resource
        );
    }

    // b is killed: its Lease is left to expire, then a takes its requests and lists again.
    kill(b.operator, b.membership).await;
    eventually(DEADLINE, "the survivor keeps every RoleBinding", || async {
        kept(&a) == all
    })
    .await;

    // A drift on a request the survivor took over: it judges the binding it now keeps.
    let taken = share_b.iter().next().expect("b had a request").clone();
    let binding = format!("pgar-{taken}");
    env.drift(&taken).await;
    env.wait_binding_gone(&binding).await;
    env.wait_reason(&taken, "RoleBindingSynced", "RoleBindingDrifted")
        .await;
    a.operator.shutdown(Duration::from_secs(5)).await;
    drop(a.membership);
}
