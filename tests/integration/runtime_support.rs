//! A test kind for the runtime: ConfigMaps whose reconciler copies `data.v` into an
//! annotation (one write through the write budget, skipped when already equal).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use pgtoolbox_operator::testing::actors::{
    ObjectContext, Outcome, ReconcileError, Reconciler, Shared,
};
use pgtoolbox_operator::testing::children::{ChildStore, Wakeups, owner_label};
use pgtoolbox_operator::testing::k8s::WatchClients;
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_operator::testing::supervisor::shard::{Ownership, Ring};
use pgtoolbox_operator::testing::supervisor::{
    BackoffPolicy, Kind, KindOptions, Operator, OperatorSettings, Registry, WatchScope,
};
use serde_json::json;
use tokio::time::Instant;

use super::harness::Wiring;

pub const SEEN: &str = "runtime.test/seen";

#[derive(Clone, Default)]
pub struct Mirror {
    /// Names whose passes panic while set.
    pub panic_for: Arc<Mutex<Option<String>>>,
    pub panicking: Arc<AtomicBool>,
    pub passes: Arc<Mutex<Vec<(ObjectKey, Instant)>>>,
}

impl Mirror {
    pub fn passes_of(&self, name: &str) -> Vec<Instant> {
        self.passes
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.name == name)
            .map(|(_, at)| *at)
            .collect()
    }
}

impl Reconciler for Mirror {
    type Object = ConfigMap;

    async fn reconcile(
        &self,
        obj: Arc<ConfigMap>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.passes
            .lock()
            .unwrap()
            .push((cx.key.clone(), Instant::now()));
        let doomed = self.panicking.load(Ordering::SeqCst)
            && self.panic_for.lock().unwrap().as_deref() == Some(cx.key.name.as_str());
        if doomed {
            panic!("test panic for {}", cx.key);
        }
        let value = obj
            .data
            .as_ref()
            .and_then(|d| d.get("v").cloned())
            .unwrap_or_default();
        let seen = obj.metadata.annotations.as_ref().and_then(|a| a.get(SEEN));
        if seen != Some(&value) {
            let api: Api<ConfigMap> = Api::namespaced(cx.client.clone(), &cx.key.namespace);
            let patch = json!({"metadata": {"annotations": {SEEN: value}}});
            let _permit = cx.writes.acquire().await.map_err(ReconcileError::other)?;
            api.patch(&cx.key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Ok(Outcome::done())
    }
}

/// No jitter, quick restarts, no hibernation (these tests look at live actors; see
/// `runtime_hibernate.rs` for hibernation).
pub fn options() -> KindOptions {
    KindOptions {
        startup_jitter: Duration::ZERO,
        hibernate_after: None,
        restart: BackoffPolicy {
            min_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
        },
        ..KindOptions::default()
    }
}

pub async fn start_operator(
    client: &kube::Client,
    mirror: &Mirror,
) -> (Operator, Registry<ConfigMap>) {
    start_registered(bare(), client, mirror).await
}

/// As [`start_operator`], a member of a sharded set: it starts with nothing and is handed
/// its share by the ring.
pub async fn start_member(
    client: &kube::Client,
    mirror: &Mirror,
) -> (Operator, Registry<ConfigMap>) {
    let wiring = bare().ownership(Ownership::single(Ring::Nothing));
    start_registered(wiring, client, mirror).await
}

async fn start_registered(
    wiring: Wiring,
    client: &kube::Client,
    mirror: &Mirror,
) -> (Operator, Registry<ConfigMap>) {
    let slot: Arc<Mutex<Option<Registry<ConfigMap>>>> = Arc::default();
    let (registered, mirror) = (slot.clone(), mirror.clone());
    let running = wiring
        .register(move |builder, _, _| {
            let kind = Kind::new(mirror.clone()).options(options());
            *registered.lock().expect("slot") = Some(kind.registry());
            builder.register(kind)
        })
        .start(client)
        .await;
    let registry = slot.lock().expect("slot").take().expect("kind registered");
    (running.operator, registry)
}

/// The runtime alone: default settings, no shared actors, the test's kind registered.
fn bare() -> Wiring {
    Wiring::with(OperatorSettings::default()).bare()
}

/// The label that files a test Secret under the Mirror object it names.
pub const OWNER_LABEL: &str = "runtime.test/owner";

/// Secrets labelled [`OWNER_LABEL`], held in a shared child store: a change to one wakes the
/// object it names, as the operator's own caches wake the owners of changed children.
pub fn labelled_secrets() -> impl FnOnce(&WatchClients, &WatchScope) -> Vec<Wakeups> + Send + 'static
{
    let store = ChildStore::<Secret>::new("test Secrets", owner_label("ConfigMap", OWNER_LABEL));
    move |clients, scope| {
        store.watch(
            &clients.share,
            scope,
            watcher::Config::default().labels(OWNER_LABEL),
        )
    }
}

/// The operator with idle actors hibernating after `linger`, optionally waking objects on
/// changes to their [`labelled_secrets`].
pub async fn start_hibernating(
    client: &kube::Client,
    mirror: &Mirror,
    linger: Duration,
    with_secrets: bool,
) -> (Operator, Arc<Shared>) {
    start_mirror(client, mirror, Some(linger), with_secrets).await
}

/// The operator running `mirror` (its actors hibernating after `hibernate_after` when given),
/// optionally waking objects on changes to their [`labelled_secrets`].
pub async fn start_mirror(
    client: &kube::Client,
    mirror: &Mirror,
    hibernate_after: Option<Duration>,
    with_secrets: bool,
) -> (Operator, Arc<Shared>) {
    let mirror = mirror.clone();
    let running = bare()
        .register(move |mut builder, _, _| {
            if with_secrets {
                builder = builder.cache(labelled_secrets());
            }
            let kind = Kind::new(mirror.clone()).options(KindOptions {
                hibernate_after,
                ..options()
            });
            builder.register(kind)
        })
        .start(client)
        .await;
    (running.operator, running.shared)
}

pub fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("v".to_string(), value.to_string())])),
        ..Default::default()
    }
}

pub async fn create(api: &Api<ConfigMap>, name: &str, value: &str) {
    api.create(&PostParams::default(), &config_map(name, value))
        .await
        .expect("config map created");
}

pub use super::wait_support::eventually;

/// The value the operator mirrored into the annotation, if any.
pub async fn seen(api: &Api<ConfigMap>, name: &str) -> Option<String> {
    let cm = api.get_opt(name).await.ok()??;
    cm.metadata.annotations?.get(SEEN).cloned()
}
