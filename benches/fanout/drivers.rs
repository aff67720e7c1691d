//! The two ways a Secret change reaches its users: our runtime (the secret router's one
//! metadata-only Secret watch, the shared reference index, notices to live or hibernated object
//! actors) and kube-runtime's `Controller` with `.watches()` on Secrets mapping a Secret to its
//! users through the reference index its passes fill. Both run the same reconciler.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use pgtoolbox_operator::testing::actors::shared::{SharedActors, start_shared_actors};
use pgtoolbox_operator::testing::actors::{
    ObjectContext, Outcome, PassEnv, ReconcileError, Reconciler, SecretRoutes, Shared,
};
use pgtoolbox_operator::testing::children::{ReferenceIndex, secrets_resource};
use pgtoolbox_operator::testing::health::Readiness;
use pgtoolbox_operator::testing::k8s::WriteBudget;
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::{
    Kind, KindOptions, Operator, OperatorBuilder, OperatorSettings,
};
use tokio_util::task::AbortOnDropHandle;

use super::common::drivers::{actors_settled, spawn_controller};
use super::world::{LABEL, Passes, pass};

const KIND: &str = "ConfigMap";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    Ours,
    Controller,
}

impl Driver {
    pub const ALL: [Driver; 2] = [Driver::Controller, Driver::Ours];

    pub fn name(self) -> &'static str {
        match self {
            Driver::Ours => "ours",
            Driver::Controller => "controller",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == value)
    }
}

pub enum Running {
    Ours(Operator, SharedActors),
    Controller(AbortOnDropHandle<()>),
}

impl Running {
    /// Ours: (live actors, hibernated objects) once no actor is live or `bound` passed.
    pub async fn actors_settled(&self, bound: Duration) -> Option<(i64, i64)> {
        let Running::Ours(_, actors) = self else {
            return None;
        };
        Some(actors_settled(&actors.shared, KIND, bound).await)
    }

    pub async fn stop(self) {
        match self {
            Running::Ours(operator, actors) => {
                operator.shutdown(Duration::from_secs(10)).await;
                actors.stop().await;
            }
            Running::Controller(task) => drop(task),
        }
    }

    /// Ours: Secret events the router saw and wake-ups it sent.
    pub async fn router_counts(&self) -> Option<(u64, u64)> {
        let Running::Ours(_, actors) = self else {
            return None;
        };
        let router = actors.router()?;
        let stats = ractor::call!(
            router,
            pgtoolbox_operator::testing::messages::shared::SecretRouterMsg::Stats
        )
        .ok()?;
        Some((stats.events_seen, stats.wakeups))
    }
}

pub async fn start(driver: Driver, client: &kube::Client, passes: Arc<Passes>) -> Running {
    match driver {
        Driver::Ours => ours(client, passes).await,
        Driver::Controller => Running::Controller(controller(client, passes)),
    }
}

/// The bench's kind, run by both drivers: its pass registers the Secrets it used with the shared
/// Secret routes, as PgAdmin, EvidenceAgent and the console do.
struct FanoutKind {
    passes: Arc<Passes>,
}

impl Reconciler for FanoutKind {
    type Object = ConfigMap;

    async fn reconcile(
        &self,
        obj: Arc<ConfigMap>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        pass(&obj, &self.passes, |uses| {
            cx.shared.secrets.register(KIND, &cx.key, uses);
        });
        Ok(Outcome::done())
    }
}

async fn ours(client: &kube::Client, passes: Arc<Passes>) -> Running {
    let settings = OperatorSettings {
        startup_jitter: Duration::ZERO,
        ..OperatorSettings::default()
    };
    let actors = start_shared_actors(
        client,
        &[KIND.to_owned()],
        settings,
        OperatorMetrics::new(),
        Readiness::new(),
    )
    .await
    .expect("shared actors start");
    let kind = Kind::new(FanoutKind { passes })
        .watch_config(watcher::Config::default().labels(LABEL))
        .options(KindOptions {
            startup_jitter: Duration::ZERO,
            ..KindOptions::default()
        });
    let operator = OperatorBuilder::new(client.clone(), actors.shared.clone())
        .register(kind)
        .start()
        .await
        .expect("operator starts");
    Running::Ours(operator, actors)
}

/// kube-runtime's Controller running the same reconciler; a Secret event maps to the users its
/// passes registered: the Controller's Secret watch plays the part of our secret router, reading
/// the index the passes fill (kube defaults otherwise: full objects cached, unbounded
/// concurrency).
fn controller(client: &kube::Client, passes: Arc<Passes>) -> AbortOnDropHandle<()> {
    let secrets = ReferenceIndex::new("Secrets", secrets_resource());
    let index = secrets.clone();
    let users_of = move |secret: Secret| {
        let key = ObjectKey::new(secret.namespace().unwrap_or_default(), secret.name_any());
        index
            .users_of(&key)
            .into_iter()
            .map(|user| ObjectRef::<ConfigMap>::new(&user.name).within(&user.namespace))
    };
    let mut shared = Shared::new(OperatorSettings::default());
    shared.secrets = SecretRoutes::routed(secrets);
    let env = Arc::new(PassEnv {
        client: client.clone(),
        writes: WriteBudget::new(shared.settings.max_inflight_writes),
        shared: Arc::new(shared),
    });
    let controller = Controller::new(
        Api::<ConfigMap>::all(client.clone()),
        watcher::Config::default().labels(LABEL),
    )
    .watches(
        Api::<Secret>::all(client.clone()),
        watcher::Config::default(),
        users_of,
    );
    spawn_controller(controller, FanoutKind { passes }, env)
}
