//! What a pass runs with: the process-wide [`Shared`] state, the per-actor [`PassEnv`] and the
//! per-object [`ObjectContext`].

use std::sync::Arc;

use kube::Client;

use crate::actors::notice_routes::{NoticeRoutes, SecretRoutes};
use crate::actors::runtime_refusals::RuntimeRefusals;
use crate::health::Readiness;
use crate::k8s::WriteBudget;
use crate::messages::ObjectKey;
use crate::metrics::OperatorMetrics;
use crate::reconcile::optional_api::ProbeResult;
use crate::runtime::{OperatorSettings, RuntimeMetrics};

/// Process-wide state every kind may read. Grows as shared actors land (prober, refusal
/// tracker, secret router): add fields here, not parameters to the trait.
#[derive(Debug)]
pub struct Shared {
    pub settings: OperatorSettings,
    /// Served on `/metrics`; kinds add their own series with `metrics.register_more`.
    pub metrics: OperatorMetrics,
    /// The runtime's own metrics (registered in `metrics`).
    pub runtime: RuntimeMetrics,
    /// What the start-up probe found: `optional_apis.availability(api, namespace)`.
    pub optional_apis: Arc<ProbeResult>,
    /// 403s met at run time, per namespace and API, for condition messages.
    pub refusals: Arc<RuntimeRefusals>,
    /// Register the Secrets a pass used: `secrets.register(kind, key, secrets)`.
    pub secrets: SecretRoutes,
    /// The kinds' actor registries, for notices from shared actors.
    pub notices: Arc<NoticeRoutes>,
    /// `/readyz`: the watches report their first complete list here.
    pub readiness: Readiness,
}

impl Shared {
    pub fn new(settings: OperatorSettings) -> Self {
        Self::with_metrics(settings, OperatorMetrics::new())
    }

    /// Without shared actors: every optional API counts as served, no router is told anything.
    pub fn with_metrics(settings: OperatorSettings, metrics: OperatorMetrics) -> Self {
        let runtime = metrics.register_more(RuntimeMetrics::register);
        Self {
            settings,
            runtime,
            metrics,
            optional_apis: Arc::default(),
            refusals: Arc::default(),
            secrets: SecretRoutes::default(),
            notices: Arc::default(),
            readiness: Readiness::default(),
        }
    }
}

impl Default for Shared {
    fn default() -> Self {
        Self::new(OperatorSettings::default())
    }
}

/// What every pass of a kind shares: one `Arc` per actor, not three handles.
pub struct PassEnv {
    pub client: Client,
    /// Hold a permit for every write ([`crate::k8s::patch_status`] does).
    pub writes: WriteBudget,
    pub shared: Arc<Shared>,
}

impl PassEnv {
    /// The one door for the pass's writes of children (every create, patch and delete).
    pub fn applier(&self) -> crate::children::Applier<'_> {
        crate::children::Applier {
            client: &self.client,
            writes: &self.writes,
        }
    }
}

/// What a pass gets besides the object. Reads through to [`PassEnv`]: `cx.client`,
/// `cx.writes`, `cx.shared`.
#[derive(Clone)]
pub struct ObjectContext {
    pub key: ObjectKey,
    /// How many times this object's actor was restarted after a failure (0 on first start).
    pub restarts: u32,
    env: Arc<PassEnv>,
}

impl std::ops::Deref for ObjectContext {
    type Target = PassEnv;
    fn deref(&self) -> &PassEnv {
        &self.env
    }
}

impl ObjectContext {
    pub fn new(key: ObjectKey, env: Arc<PassEnv>, restarts: u32) -> Self {
        Self { key, restarts, env }
    }

    /// Where this object's status write goes.
    pub fn target(&self) -> crate::status::Target<'_> {
        crate::status::Target {
            client: &self.client,
            writes: &self.writes,
            key: &self.key,
            now: self.shared.settings.clock.now(),
        }
    }
}
