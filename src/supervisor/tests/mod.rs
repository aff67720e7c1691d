//! Runtime tests over in-memory watch events (no API server): a probe reconciler over
//! ConfigMaps records every pass; time-heavy tests run on tokio's paused clock.

mod cold_start;
mod gauges;
mod hibernation;
mod lifecycle;
mod passes;
mod shards;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashSet;
use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher::Event;
use tokio::time::Instant;

use super::{Kind, KindOptions, Operator, OperatorBuilder, Registry};
use crate::actors::{ObjectContext, Outcome, PassFailure, ReconcileError, Reconciler, Shared};
use crate::k8s::{Lenient, Undecodable, decoded_event};
use crate::messages::{KindKey, ObjectKey};

/// One recorded pass.
#[derive(Clone, Debug)]
pub struct Pass {
    pub key: ObjectKey,
    pub value: String,
    pub at: Instant,
    pub restarts: u32,
}

pub enum Act {
    Ok(Outcome),
    Fail,
    /// Fails after deciding `Outcome`'s timers.
    FailDeciding(Outcome),
    Panic,
}

type Decide = dyn Fn(&Pass, usize) -> Act + Send + Sync;

#[derive(Clone)]
pub struct Probe {
    pub passes: Arc<Mutex<Vec<Pass>>>,
    pub finished: Arc<Mutex<Vec<ObjectKey>>>,
    pub errors: Arc<Mutex<Vec<(ObjectKey, String)>>>,
    pub stopped: Arc<Mutex<Vec<ObjectKey>>>,
    /// Keys `on_orphan` was called for, then those of [`LEFTOVERS`] a sweep took as its own.
    pub orphans: Arc<Mutex<Vec<ObjectKey>>>,
    pub swept: Arc<Mutex<Vec<ObjectKey>>>,
    running: Arc<DashSet<ObjectKey>>,
    pub overlapped: Arc<AtomicBool>,
    pass_time: Duration,
    decide: Arc<Decide>,
}

impl Probe {
    /// `decide` gets the pass and its 1-based number for that object.
    pub fn new(
        pass_time: Duration,
        decide: impl Fn(&Pass, usize) -> Act + Send + Sync + 'static,
    ) -> Self {
        Self {
            passes: Arc::default(),
            finished: Arc::default(),
            errors: Arc::default(),
            stopped: Arc::default(),
            orphans: Arc::default(),
            swept: Arc::default(),
            running: Arc::default(),
            overlapped: Arc::default(),
            pass_time,
            decide: Arc::new(decide),
        }
    }

    pub fn passes_of(&self, name: &str) -> Vec<Pass> {
        lock(&self.passes)
            .iter()
            .filter(|p| p.key.name == name)
            .cloned()
            .collect()
    }
}

pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Reconciler for Probe {
    type Object = ConfigMap;

    /// A probe object states what it reports in its data: `ready` (`True`, `False`), `reason`
    /// and `stalled` (registered reasons), `notAfter` (Unix seconds).
    fn reported(obj: &ConfigMap) -> crate::api::Reported {
        let get = |k: &str| obj.data.as_ref().and_then(|d| d.get(k));
        let reason =
            |k: &str| get(k).and_then(|r| crate::conditions::Reason::parse(r).map(|r| r.as_str()));
        let ready = get("ready").map(|r| match r.as_str() {
            "True" => "True",
            "False" => "False",
            _ => "Unknown",
        });
        crate::api::Reported {
            ready: ready.zip(reason("reason")),
            stalled: reason("stalled"),
            certificate_not_after: get("notAfter").and_then(|v| v.parse().ok()),
        }
    }

    /// A probe object says it is settled with `settled: "true"` in its data.
    fn settled(obj: &ConfigMap) -> bool {
        obj.data
            .as_ref()
            .and_then(|d| d.get("settled"))
            .is_some_and(|v| v == "true")
    }

    async fn reconcile(
        &self,
        obj: Arc<ConfigMap>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        if !self.running.insert(cx.key.clone()) {
            self.overlapped.store(true, Ordering::SeqCst);
        }
        let pass = Pass {
            key: cx.key.clone(),
            value: value_of(&obj),
            at: Instant::now(),
            restarts: cx.restarts,
        };
        let nth = {
            let mut passes = lock(&self.passes);
            passes.push(pass.clone());
            passes.iter().filter(|p| p.key == cx.key).count()
        };
        tokio::time::sleep(self.pass_time).await;
        self.running.remove(&cx.key);
        lock(&self.finished).push(cx.key.clone());
        match (self.decide)(&pass, nth) {
            Act::Ok(outcome) => Ok(outcome),
            Act::Fail => Err(ReconcileError::other("probe failure")),
            Act::FailDeciding(decided) => {
                Err(ReconcileError::other("probe failure").keeping(&decided))
            }
            Act::Panic => panic!("probe panic for {}", cx.key),
        }
    }

    async fn on_stop(&self, key: &ObjectKey, _cx: &ObjectContext) {
        lock(&self.stopped).push(key.clone());
    }

    async fn on_orphan(&self, key: &ObjectKey, _cx: &ObjectContext) {
        lock(&self.orphans).push(key.clone());
    }

    async fn on_listed(&self, listed: &crate::actors::Listed, _env: &Arc<crate::actors::PassEnv>) {
        let mine = leftovers().filter(|k| listed.is_my_orphan(k));
        lock(&self.swept).extend(mine);
    }

    async fn report_error(
        &self,
        _obj: Arc<ConfigMap>,
        failure: PassFailure<'_>,
        cx: &ObjectContext,
    ) {
        lock(&self.errors).push((cx.key.clone(), failure.to_string()));
    }
}

/// Keys of objects that do not exist but left something behind, for the sweeps.
pub fn leftovers() -> impl Iterator<Item = ObjectKey> {
    (0..20).map(|i| key(&format!("gone-{i}")))
}

pub fn value_of(cm: &ConfigMap) -> String {
    cm.data
        .as_ref()
        .and_then(|d| d.get("v").cloned())
        .unwrap_or_default()
}

pub fn cm(name: &str, value: &str, rv: u64) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            resource_version: Some(rv.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("v".to_string(), value.to_string())])),
        ..ConfigMap::default()
    }
}

pub fn key(name: &str) -> ObjectKey {
    ObjectKey::new("default", name)
}

/// A kube client that is never reached: these tests feed events from memory.
fn offline_client() -> kube::Client {
    let url = "http://127.0.0.1:9".parse().unwrap();
    kube::Client::try_from(kube::Config::new(url)).unwrap()
}

/// No jitter, no hibernation: these tests look at one actor's life.
pub fn quick_options() -> KindOptions {
    KindOptions {
        startup_jitter: Duration::ZERO,
        hibernate_after: None,
        ..KindOptions::default()
    }
}

/// No jitter; idle actors hibernate after `linger`.
pub fn hibernating(linger: Duration) -> KindOptions {
    KindOptions {
        hibernate_after: Some(linger),
        ..quick_options()
    }
}

pub struct Harness {
    watches: Vec<mpsc::UnboundedSender<Event<Lenient<ConfigMap>>>>,
    pub children: mpsc::UnboundedSender<ObjectKey>,
    pub registry: Registry<ConfigMap>,
    pub operator: Operator,
    pub shared: Arc<Shared>,
    /// The relists the kind asked for (a watch would list again).
    pub relists: tokio::sync::watch::Receiver<crate::k8s::Generation>,
}

impl Harness {
    pub async fn start(probe: &Probe, options: KindOptions, watches: usize) -> Self {
        let (senders, sources): (Vec<_>, Vec<_>) = (0..watches)
            .map(|_| {
                let (tx, rx) = mpsc::unbounded();
                (tx, rx.boxed())
            })
            .unzip();
        let (children, child_rx) = mpsc::unbounded();
        let kind = Kind::new(probe.clone()).sources(sources).options(options);
        let registry = kind.registry();
        let relists = kind.relists();
        let shared = Arc::new(Shared::default());
        // Child changes reach the kind as a shared cache's wakeups do.
        let wakeups = child_rx
            .map(|key: ObjectKey| KindKey::new("ConfigMap", &key.namespace, &key.name))
            .boxed();
        let operator = OperatorBuilder::new(offline_client(), shared.clone())
            .cache(move |_, _| vec![wakeups])
            .register(kind)
            .start()
            .await
            .unwrap();
        Self {
            watches: senders,
            children,
            registry,
            operator,
            shared,
            relists,
        }
    }

    /// The `/metrics` text.
    pub fn metrics(&self) -> String {
        self.shared.metrics.encode().unwrap()
    }

    /// Live and hibernated objects.
    pub fn objects(&self) -> (i64, i64) {
        self.shared.runtime.objects("ConfigMap")
    }

    /// Timers armed in the kind's wheel.
    pub fn armed_timers(&self) -> i64 {
        let metrics = self.metrics();
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(r#"pgtoolbox_armed_timers{kind="ConfigMap"} "#))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    pub fn send(&self, event: Event<ConfigMap>) {
        self.send_to(0, event);
    }

    /// An event of watch number `watch`, its object decoded.
    pub fn send_to(&self, watch: usize, event: Event<ConfigMap>) {
        self.watches[watch]
            .unbounded_send(decoded_event(event))
            .unwrap();
    }

    /// Watch 0 sees `name` changed into a version that cannot be decoded.
    pub fn send_undecodable(&self, name: &str, rv: u64) {
        let undecodable = Undecodable {
            metadata: cm(name, "", rv).metadata,
            error: "cannot decode".into(),
            conditions: Vec::new(),
            observed_generation: None,
        };
        let event = Event::Apply(Lenient::Undecodable(Box::new(undecodable)));
        self.watches[0].unbounded_send(event).unwrap();
    }

    /// Initial list of the given objects on watch 0.
    pub fn list(&self, objects: Vec<ConfigMap>) {
        self.send(Event::Init);
        for obj in objects {
            self.send(Event::InitApply(obj));
        }
        self.send(Event::InitDone);
    }
}

/// Let every ready task run (on the paused clock this also advances time by `d`).
pub async fn run_for(d: Duration) {
    tokio::time::sleep(d).await;
}
