//! One pass over a PgToolBoxConsole as a pipeline: observe (`observe.rs`: the caches and every
//! read past them, a delete refused by an earlier pass included), `plan` (pure, once), apply
//! (`apply.rs`: the withdrawal past the cache, then the children through the applier, Pods
//! before policy), `settle` and `conclude_pass` (pure), and one status write whose stall
//! rechecks become the actor's timers. A delete refused now is for the next pass to decide
//! with: the pass asks for it at once. The rules live in `reconcile::console::plan`.

use std::time::Duration;

use dashmap::DashMap;
use tokio::time::Instant;

use super::children::{ExposureApis, Target};
use super::error::ConsoleError;
use super::reads::PastCache;
use crate::actors::past_exposure::PastExposure;
use crate::actors::{ObjectContext, Outcome, ReconcileError, StatusPass};
use crate::api::{PgToolBoxConsole, ReportsConditions};
use crate::children::{ChildOwner, OperatorCaches, Synced};
use crate::conditions::PassFacts;
use crate::k8s::EventSink;
use crate::messages::{ObjectKey, TimerPurpose};
use crate::reconcile::console::{PolicyRefusal, conclude_pass, plan, settle};
use crate::status::{Extras, StatusWriter, Written};

pub struct ConsoleReconciler {
    pub(super) caches: OperatorCaches,
    status: StatusWriter<PgToolBoxConsole>,
    pub(super) past: PastCache,
    /// Routes and HTTPRoutes past the cache, and the deletes of them the server refused.
    pub(super) past_exposure: PastExposure,
    /// The ingress policy the server refused, per console: (generation, when, answer). Tried
    /// again after the long recheck or on a new generation.
    pub(super) refused: DashMap<ObjectKey, (i64, Instant, PolicyRefusal)>,
    /// The peers digest whose ipBlocks were verified against a console Pod's address.
    pub(super) verified: DashMap<ObjectKey, String>,
}

impl ConsoleReconciler {
    pub fn new(caches: OperatorCaches, events: EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
            past: PastCache::default(),
            past_exposure: PastExposure::default(),
            refused: DashMap::new(),
            verified: DashMap::new(),
        }
    }

    async fn pass(
        &self,
        obj: &PgToolBoxConsole,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        let apis = ExposureApis::of(cx);
        let readable = apis.readable();
        let owner = ChildOwner::of(obj)
            .ok_or_else(|| ReconcileError::other(ConsoleError::NoUid(cx.key.name.clone())))?;
        let to = Target {
            caches: &self.caches,
            client: &cx.client,
            writes: &cx.writes,
            owner: &owner,
            readable,
        };
        let facts = obj.pass_facts();
        if facts.paused {
            let facts = self.paused(obj, cx, to, facts).await?;
            return self.finish(obj, facts, cx).await;
        }
        let observed = self.observe(obj, cx, &owner, apis).await?;
        let plan = plan(&observed);
        // What the confinement verified is not verified again by the next passes.
        if let Some(v) = &plan.confinement.verified {
            self.verified.insert(cx.key.clone(), v.clone());
        } else {
            self.verified.remove(&cx.key);
        }
        // A refused delete leaves the object published: the next pass plans with it.
        let again = self
            .withdraw_past_cache(cx, &owner, &observed, &plan)
            .await?;
        let applied = self.apply(cx, to, &observed, &plan).await?;
        // A refused child ends the pass as an error of its class (AdmissionDenied, ...).
        let settled = settle(&observed, &plan, applied).map_err(ReconcileError::from)?;
        let workload = settled
            .judge_workload
            .then(|| self.workload(cx, &observed.pods));
        let facts = conclude_pass(facts, &observed, &plan, &settled, workload)
            .map_err(ReconcileError::other)?;
        Ok(self.finish(obj, facts, cx).await?.again_if(again))
    }

    /// The one status write, then the schedule: the engine's rechecks at the configured
    /// durations.
    async fn finish(
        &self,
        obj: &PgToolBoxConsole,
        facts: PassFacts,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        // A failed write keeps the timers the facts decided (a kept policy's wait).
        let written = self
            .status
            .write(obj, &facts, Extras::default(), cx.target())
            .await
            .map_err(|e| ReconcileError::from(e).keeping_timers(&facts.timers))?;
        let (short, long) = cx.shared.settings.stall_rechecks;
        Ok(Outcome::done().with_status(rescheduled(written, short, long)))
    }
}

fn rescheduled(mut written: Written, short: Duration, long: Duration) -> Written {
    for (purpose, delay) in &mut written.timers {
        match purpose {
            TimerPurpose::Recheck2m => *delay = short,
            TimerPurpose::Recheck5m => *delay = long,
            _ => {}
        }
    }
    written
}

impl StatusPass for ConsoleReconciler {
    type Object = PgToolBoxConsole;

    fn status(&self) -> &StatusWriter<PgToolBoxConsole> {
        &self.status
    }

    fn caches(&self) -> &OperatorCaches {
        &self.caches
    }

    fn reads<'a>(&'a self, cx: &ObjectContext) -> Vec<&'a Synced> {
        self.cache_reads(cx)
    }

    async fn run(
        &self,
        obj: &PgToolBoxConsole,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.pass(obj, cx).await
    }

    fn forget(&self, key: &ObjectKey) {
        self.refused.remove(key);
        self.verified.remove(key);
        self.past_exposure.forget(key);
    }
}
