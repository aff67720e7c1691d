//! The seam between the generic runtime and one kind: the [`Reconciler`] trait.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use kube::core::NamespaceResourceScope;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::actors::notice_routes::{NoticeRoutes, SecretRoutes};
use crate::actors::runtime_refusals::RuntimeRefusals;
use crate::conditions::{ClassifiedError, ErrorClass};
use crate::health::Readiness;
use crate::k8s::WriteBudget;
use crate::messages::{ObjectKey, TimerPurpose};
use crate::metrics::OperatorMetrics;
use crate::reconcile::optional_api::ProbeResult;
use crate::runtime::{OperatorSettings, Reported, RuntimeMetrics};

/// One kind's behaviour. The object actor, the supervisor, the watches, the timers and the
/// restarts are shared; a kind only says how one pass goes.
pub trait Reconciler: Send + Sync + 'static {
    type Object: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static;

    /// One pass: read what is needed, decide (pure module), write, return what to schedule.
    /// Never runs twice at once for the same object.
    fn reconcile(
        &self,
        obj: Arc<Self::Object>,
        cx: &ObjectContext,
    ) -> impl Future<Output = Result<Outcome, ReconcileError>> + Send;

    /// What the object's stored status reports, read by the supervisor from each watched copy
    /// for the object gauges (`pgtoolbox_objects`, `pgtoolbox_stalled_objects`, the earliest
    /// certificate expiry). The default reports nothing.
    fn reported(_obj: &Self::Object) -> Reported {
        Reported::default()
    }

    /// The object's actor is stopping (the object was deleted, or the operator shuts down).
    fn on_stop(&self, _key: &ObjectKey, _cx: &ObjectContext) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// The object does not exist (it was just deleted, or a child or reference names one the
    /// complete list does not hold): remove what only it would have removed, such as children
    /// its deletion does not garbage-collect because they were never adopted.
    fn on_orphan(&self, _key: &ObjectKey, _cx: &ObjectContext) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// The kind's watches listed every object there is (`known`): sweep what belongs to objects
    /// outside it (children that outlived an object deleted while the operator was away).
    fn on_listed(
        &self,
        _known: &HashSet<ObjectKey>,
        _env: &Arc<PassEnv>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Extension point for failure reporting: called after a pass returned an error, and by the
    /// supervisor after a pass panicked (before the restart backoff). A kind plugs the
    /// conditions engine in here to show `Ready=False ReconcileError` (classify with
    /// `conditions::ClassifiedError::from_kube` for [`ReconcileError::Kube`]). The runtime
    /// already logs, counts and retries; the default adds nothing.
    fn report_error(
        &self,
        _obj: Arc<Self::Object>,
        _failure: PassFailure<'_>,
        _cx: &ObjectContext,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// What a successful pass asks the runtime to schedule. Each pass replaces the whole schedule:
/// purposes it does not name are cancelled; for a purpose named twice the earliest wins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub timers: Vec<(TimerPurpose, Duration)>,
    /// The object waits for a change of its inputs: it is not retried with backoff.
    pub stalled: bool,
}

impl Outcome {
    /// Converged: nothing scheduled.
    pub fn done() -> Self {
        Self::default()
    }

    /// Stalled until an input changes (or a recheck timer added with [`Outcome::after`]).
    pub fn stalled() -> Self {
        Self {
            stalled: true,
            ..Self::default()
        }
    }

    /// Also schedule a pass after `delay` for `purpose`.
    pub fn after(mut self, purpose: TimerPurpose, delay: Duration) -> Self {
        self.timers.push((purpose, delay));
        self
    }

    /// Adds what the status write decided: the engine's stall and its schedule.
    pub fn with_status(mut self, written: crate::status::Written) -> Self {
        self.stalled |= written.stalled;
        self.timers.extend(written.timers);
        self
    }

    /// The schedule with one (the earliest) delay per purpose.
    pub fn earliest_per_purpose(&self) -> [Option<Duration>; 5] {
        let mut slots = [None; 5];
        for (purpose, delay) in &self.timers {
            let slot: &mut Option<Duration> = &mut slots[purpose.index()];
            *slot = Some(slot.map_or(*delay, |d| d.min(*delay)));
        }
        slots
    }
}

/// A failed pass. Kinds map their own typed errors into it.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A child write the server refused: classified by its answer.
    #[error(transparent)]
    Refused(#[from] crate::children::ChildRefusal),
    #[error("{0}")]
    Other(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A pass that failed after it had decided: the timers of its decision (an expiry, the
    /// end of a grace) are armed anyway, beside the retry, so an instant it already knew is
    /// not pushed back to the retry backoff.
    #[error("{cause}")]
    Decided {
        cause: Box<ReconcileError>,
        timers: Vec<(TimerPurpose, Duration)>,
    },
}

impl ReconcileError {
    pub fn other(err: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        Self::Other(err.into())
    }

    /// This failure, keeping the timers `decided` asks for.
    pub fn keeping(self, decided: &Outcome) -> Self {
        self.keeping_timers(&decided.timers)
    }

    /// This failure, keeping `timers` (a pass's facts had decided them before it failed).
    pub fn keeping_timers(self, timers: &[(TimerPurpose, Duration)]) -> Self {
        Self::Decided {
            cause: Box::new(self.cause_owned()),
            timers: timers.to_vec(),
        }
    }

    fn cause_owned(self) -> Self {
        match self {
            Self::Decided { cause, .. } => cause.cause_owned(),
            other => other,
        }
    }

    /// The error itself, without the timers kept beside it.
    pub fn cause(&self) -> &Self {
        match self {
            Self::Decided { cause, .. } => cause.cause(),
            other => other,
        }
    }

    /// The timers the failed pass had decided, one (the earliest) per purpose.
    pub fn decided_timers(&self) -> [Option<Duration>; 5] {
        match self {
            Self::Decided { timers, .. } => Outcome {
                timers: timers.clone(),
                stalled: false,
            }
            .earliest_per_purpose(),
            _ => [None; 5],
        }
    }
}

/// Why a pass did not complete.
#[derive(Clone, Copy, Debug)]
pub enum PassFailure<'a> {
    /// The pass returned an error; it is retried with backoff.
    Error(&'a ReconcileError),
    /// The pass panicked (the panic message); the actor is restarted with backoff.
    Panicked(&'a str),
}

impl PassFailure<'_> {
    /// The failure's error class, as the conditions engine shows it.
    pub fn classify(&self) -> ClassifiedError {
        match self {
            Self::Error(err) => match err.cause() {
                ReconcileError::Kube(err) => ClassifiedError::from_kube(err),
                ReconcileError::Refused(refusal) => {
                    ClassifiedError::new(refusal.class(), &refusal.to_string())
                }
                ReconcileError::Other(boxed) => classify_chain(boxed.as_ref()),
                other => ClassifiedError::new(ErrorClass::ReconciliationFailed, &other.to_string()),
            },
            Self::Panicked(_) => {
                ClassifiedError::new(ErrorClass::ReconciliationFailed, &self.to_string())
            }
        }
    }
}

/// A kind's own error classified by the first API answer in its chain of causes (a kind wraps
/// kube's errors and the applier's refusals), else ReconciliationFailed.
fn classify_chain(error: &(dyn std::error::Error + 'static)) -> ClassifiedError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        let class = if let Some(kube) = e.downcast_ref::<kube::Error>() {
            Some(ClassifiedError::from_kube(kube).class)
        } else {
            e.downcast_ref::<crate::children::ChildRefusal>()
                .map(crate::children::ChildRefusal::class)
        };
        if let Some(class) = class {
            return ClassifiedError::new(class, &error.to_string());
        }
        cause = e.source();
    }
    ClassifiedError::new(ErrorClass::ReconciliationFailed, &error.to_string())
}

impl From<crate::status::StatusError> for ReconcileError {
    fn from(err: crate::status::StatusError) -> Self {
        match err {
            crate::status::StatusError::Kube(err) => Self::Kube(err),
            other => Self::other(other),
        }
    }
}

impl std::fmt::Display for PassFailure<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Error(err) => write!(f, "{err}"),
            Self::Panicked(message) => write!(f, "reconcile panicked: {message}"),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_delay_wins_per_purpose() {
        let outcome = Outcome::done()
            .after(TimerPurpose::Expiry, Duration::from_secs(30))
            .after(TimerPurpose::Expiry, Duration::from_secs(10))
            .after(TimerPurpose::Recheck5m, Duration::from_secs(300));
        let slots = outcome.earliest_per_purpose();
        assert_eq!(
            slots[TimerPurpose::Expiry.index()],
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            slots[TimerPurpose::Recheck5m.index()],
            Some(Duration::from_secs(300))
        );
        assert_eq!(slots[TimerPurpose::Grace.index()], None);
    }
}
