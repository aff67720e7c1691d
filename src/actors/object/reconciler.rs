//! The seam between the generic runtime and one kind: the [`Reconciler`] trait.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use kube::core::NamespaceResourceScope;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Listed, ObjectContext, PassEnv, PassFailure, ReconcileError};
use crate::api::Reported;
use crate::messages::{ObjectKey, TimerPurpose};
use crate::runtime::PassResult;

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

    /// What the operator does about an object of this kind it cannot decode, said in the
    /// Warning Event on it (the object is left out of the kind's passes).
    const UNDECODABLE: &'static str = "it is not reconciled until it can be decoded";

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

    /// Whether the object's stored status says it is converged at its current spec, so that its
    /// first pass after a list is expected to write nothing: such a pass is not spread over the
    /// start-up jitter (which spreads writes; a restart over a converged fleet has none). The
    /// default: not known, spread.
    fn settled(_obj: &Self::Object) -> bool {
        false
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

    /// The kind's watches listed every object there is: sweep what belongs to objects outside
    /// it (children that outlived an object deleted while the operator was away), those
    /// [`Listed::is_my_orphan`] gives this member. Also run after each change of its share.
    fn on_listed(&self, _listed: &Listed, _env: &Arc<PassEnv>) -> impl Future<Output = ()> + Send {
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
    /// Run one more pass right after this one: it wrote something whose answer (a refused
    /// delete) the next pass observes, rather than this one deciding again.
    pub again: bool,
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

    /// How the runtime counts this pass.
    pub fn result(&self) -> PassResult {
        if self.stalled {
            PassResult::Stalled
        } else {
            PassResult::Converged
        }
    }

    /// Also schedule a pass after `delay` for `purpose`.
    pub fn after(mut self, purpose: TimerPurpose, delay: Duration) -> Self {
        self.timers.push((purpose, delay));
        self
    }

    /// Also run the next pass at once when `again` (see [`Outcome::again`]).
    pub fn again_if(mut self, again: bool) -> Self {
        self.again |= again;
        self
    }

    /// Adds what the status write decided: the engine's stall and its schedule.
    pub fn with_status(mut self, written: crate::status::Written) -> Self {
        self.stalled |= written.stalled;
        self.timers.extend(written.timers);
        self
    }

    /// The schedule with one (the earliest) delay per purpose.
    pub fn earliest_per_purpose(&self) -> [Option<Duration>; TimerPurpose::COUNT] {
        let mut slots = [None; TimerPurpose::COUNT];
        for (purpose, delay) in &self.timers {
            let slot: &mut Option<Duration> = &mut slots[purpose.index()];
            *slot = Some(slot.map_or(*delay, |d| d.min(*delay)));
        }
        slots
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
