//! The CNPG secret router against the embedded API server: 5,000 objects and 5,000 Secrets, and
//! a Secret change wakes exactly the objects that use it.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use pgtoolbox_operator::testing::actors::secret_router::{
    RouterArgs, SecretRouter, SecretSubscriber,
};
use pgtoolbox_operator::testing::children::{ReferenceIndex, Track, secrets_resource};
use pgtoolbox_operator::testing::messages::shared::{RouterStats, SecretRouterMsg};
use pgtoolbox_operator::testing::messages::{KindKey, ObjectKey};
use pgtoolbox_operator::testing::supervisor::WatchScope;
use ractor::{Actor, ActorRef};
use serde_json::json;

use crate::shared_support::{create_namespaces, eventually, sim_with, touch};

const NS: &str = "tenants";
const COUNT: usize = 5_000;
const LIMIT: Duration = Duration::from_secs(60);

/// Counts wake-ups per object, as the object actors' reconcile counters would.
#[derive(Default)]
struct Wakeups(DashMap<KindKey, u64>);

impl SecretSubscriber for Wakeups {
    fn secret_changed(&self, object: &KindKey, _secret: &ObjectKey) {
        *self.0.entry(object.clone()).or_default() += 1;
    }
}

impl Wakeups {
    fn total(&self) -> u64 {
        self.0.iter().map(|e| *e.value()).sum()
    }
    fn of(&self, name: &str) -> u64 {
        self.0.get(&object(name)).map_or(0, |v| *v)
    }
}

/// A router watching the Secrets of `scope`, waking [`Wakeups`] for the objects of its index.
async fn start_router(
    client: &kube::Client,
    scope: WatchScope,
) -> (
    Arc<Wakeups>,
    Arc<ReferenceIndex>,
    ActorRef<SecretRouterMsg>,
    ractor::concurrency::JoinHandle<()>,
) {
    let wakeups = Arc::new(Wakeups::default());
    let index = ReferenceIndex::new("Secrets", secrets_resource());
    let (router, task) = Actor::spawn(
        None,
        SecretRouter,
        RouterArgs {
            subscriber: wakeups.clone(),
            index: index.clone(),
            watch: Some((client.clone(), scope)),
        },
    )
    .await
    .expect("router starts");
    (wakeups, index, router, task)
}

fn object(name: &str) -> KindKey {
    KindKey::new("PgAdmin", NS, name)
}

fn secret(name: &str) -> ObjectKey {
    ObjectKey::new(NS, name)
}

async fn stats(router: &ActorRef<SecretRouterMsg>) -> RouterStats {
    ractor::call!(router, SecretRouterMsg::Stats).expect("router answers")
}

/// Waits until the router has seen `more` events beyond `seen`.
async fn seen_more(router: &ActorRef<SecretRouterMsg>, seen: u64, more: u64) -> u64 {
    let target = seen + more;
    eventually(LIMIT, "the router to see the change", || async {
        stats(router).await.events_seen >= target
    })
    .await;
    stats(router).await.events_seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_change_wakes_exactly_its_users() {
    let sim = sim_with(&[], &[]).await;
    let client = sim.client();
    create_namespaces(&client, &[NS]).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);

    // 4,999 numbered Secrets plus "shared"; s-4998 is used by nobody.
    let mut names: Vec<String> = (0..COUNT - 1).map(|i| format!("s-{i}")).collect();
    names.push("shared".to_owned());
    crate::shared_support::create_secrets(&secrets, &names).await;

    let (wakeups, index, router, _task) =
        start_router(&client, WatchScope::Namespaces(vec![NS.to_owned()])).await;

    // o-i uses s-i (i < 4998); o-7, o-4998 and o-4999 use "shared".
    for i in 0..COUNT {
        let mut uses = Vec::new();
        if i < COUNT - 2 {
            uses.push(secret(&format!("s-{i}")));
        }
        if i == 7 || i >= COUNT - 2 {
            uses.push(secret("shared"));
        }
        index.register(&object(&format!("o-{i}")), uses, Track::Version);
    }
    eventually(LIMIT, "the first Secret list", || async {
        stats(&router).await.synced_scopes == 1
    })
    .await;
    let initial = stats(&router).await;
    assert_eq!(initial.objects, COUNT);
    assert_eq!(initial.secrets, COUNT - 1, "s-4998 is used by nobody");
    assert_eq!(wakeups.total(), 0, "the first list wakes nobody");
    let mut seen = initial.events_seen;

    touch(&secrets, "shared", "1").await;
    seen = seen_more(&router, seen, 1).await;
    assert_eq!(wakeups.total(), 3);
    for user in ["o-7", "o-4998", "o-4999"] {
        assert_eq!(wakeups.of(user), 1, "{user}");
    }

    touch(&secrets, "s-4998", "1").await;
    seen = seen_more(&router, seen, 1).await;
    assert_eq!(wakeups.total(), 3, "an unused Secret wakes nobody");

    // o-7 is deleted: its references go with it.
    index.forget(&object("o-7"));
    touch(&secrets, "s-7", "1").await;
    seen = seen_more(&router, seen, 1).await;
    touch(&secrets, "shared", "2").await;
    seen_more(&router, seen, 1).await;
    assert_eq!(
        wakeups.of("o-7"),
        1,
        "a forgotten object is not woken again"
    );
    assert_eq!(wakeups.of("o-4998"), 2);
    assert_eq!(wakeups.of("o-4999"), 2);
    assert_eq!(wakeups.total(), 5);
    assert_eq!(stats(&router).await.objects, COUNT - 1);
    router.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_wakes_nobody_and_a_deleted_secret_wakes_its_users() {
    const SMALL: usize = 50;
    let sim = sim_with(&[], &[]).await;
    let client = sim.client();
    create_namespaces(&client, &[NS]).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    for i in 0..SMALL {
        let s: Secret = serde_json::from_value(json!({
            "metadata": {"name": format!("s-{i}")}, "stringData": {"password": "initial"},
        }))
        .expect("secret");
        secrets
            .create(&PostParams::default(), &s)
            .await
            .expect("secret created");
    }
    let (wakeups, index, router, _task) = start_router(&client, WatchScope::All).await;
    for i in 0..SMALL {
        index.register(
            &object(&format!("o-{i}")),
            vec![secret(&format!("s-{i}"))],
            Track::Version,
        );
    }
    eventually(LIMIT, "the first Secret list", || async {
        stats(&router).await.synced_scopes == 1
    })
    .await;
    // Registrations race the first list: a Secret listed before its user registered is first
    // seen (so may wake its user) at the next relist. One relist settles every version.
    relist(&sim, &router, SMALL).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let settled = wakeups.total();

    // A 410 forces a full relist: every Secret is listed again, unchanged.
    relist(&sim, &router, SMALL).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(wakeups.total(), settled, "an unchanged relist wakes nobody");

    let before = wakeups.of("o-3");
    secrets
        .delete("s-3", &Default::default())
        .await
        .expect("deleted");
    eventually(LIMIT, "the deletion to wake its user", || async {
        wakeups.of("o-3") == before + 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(wakeups.total(), settled + 1);
    router.stop(None);
}

/// Forces a 410 relist of the router's watch and waits until it re-read `count` Secrets.
async fn relist(sim: &pgtoolbox_sim::Sim, router: &ActorRef<SecretRouterMsg>, count: usize) {
    let seen = stats(router).await.events_seen;
    sim.admin().force_gone_next_watch();
    sim.admin().drop_watches();
    eventually(LIMIT, "the relist", || async {
        stats(router).await.events_seen >= seen + count as u64
    })
    .await;
}
