//! The object actor: one per managed object, generic over the kind's [`Reconciler`].
//!
//! It keeps the latest object and whether a pass is queued, so a burst of deltas collapses into
//! one pass; it runs the pass inside its handler, so two passes of one object never overlap.
//! After a successful pass with nothing queued it tells the supervisor it is idle; asked to
//! hibernate later, it stops without `on_stop` if nothing happened meanwhile (its timers stay
//! in the kind's wheel, its references in the caches).

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use super::state::{ObjectArgs, ObjectState};
use super::{Outcome, PassFailure, ReconcileError, Reconciler, Timers};
use crate::messages::{KindMsg, ObjectMsg};
use crate::runtime::PassResult;

fn kind_of<R: Reconciler>() -> std::borrow::Cow<'static, str> {
    <R::Object as kube::Resource>::kind(&())
}

/// The actor behaviour; the kind's reconciler is shared by all its objects.
pub struct ObjectActor<R: Reconciler> {
    reconciler: Arc<R>,
}

impl<R: Reconciler> ObjectActor<R> {
    pub fn new(reconciler: Arc<R>) -> Self {
        Self { reconciler }
    }
}

impl<R: Reconciler> Actor for ObjectActor<R> {
    type Msg = ObjectMsg<R::Object>;
    type State = ObjectState<R>;
    type Arguments = ObjectArgs<R>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut state = ObjectState {
            latest: args.object,
            pass_queued: true,
            failures: 0,
            timers: Timers::default(),
            deferred_first_pass: None,
            cx: args.cx,
            retry: args.retry,
            supervisor: args.supervisor,
            wheel: args.wheel,
            hibernate: args.hibernate,
            epoch: 0,
            hibernating: false,
            report_first_pass: args.report_first_pass,
        };
        if args.first_pass_delay.is_zero() {
            myself.send_message(ObjectMsg::Reconcile)?;
        } else {
            let delay = args.first_pass_delay;
            let me = myself.clone();
            state.deferred_first_pass = Some(AbortOnDropHandle::new(tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = me.send_message(ObjectMsg::Reconcile);
            })));
        }
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ObjectMsg::Delta(obj) => {
                state.latest = obj;
                state.request_pass(&myself)?;
            }
            ObjectMsg::ChildChanged => state.request_pass(&myself)?,
            ObjectMsg::TimerFired {
                purpose,
                generation,
            } => {
                if state.timers.take_if_current(purpose, generation) {
                    state.request_pass(&myself)?;
                }
            }
            ObjectMsg::Reconcile => {
                state.pass_queued = false;
                state.deferred_first_pass = None;
                state.epoch += 1;
                self.run_pass(&myself, state).await;
            }
            ObjectMsg::Hibernate { epoch } => {
                if epoch == state.epoch && state.idle() {
                    // Nothing can reach this actor any more: the supervisor took it out of the
                    // registry before asking, so whatever arrives now goes to the supervisor.
                    state.hibernating = true;
                    myself.stop(Some("hibernated".into()));
                } else if let Some(supervisor) = &state.supervisor {
                    supervisor.send_message(KindMsg::Awake {
                        key: state.cx.key.clone(),
                        actor: myself.clone(),
                    })?;
                    // A later pass already reported idle while the supervisor waited for this
                    // answer (and ignored it): report again, now that it is live once more.
                    if state.idle() {
                        supervisor.send_message(KindMsg::Idle {
                            key: state.cx.key.clone(),
                            actor: myself.get_id(),
                            epoch: state.epoch,
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        state.deferred_first_pass = None;
        if !state.hibernating {
            // Boxed for the same reason as the pass.
            Box::pin(self.reconciler.on_stop(&state.cx.key, &state.cx)).await;
        }
        Ok(())
    }
}

impl<R: Reconciler> ObjectActor<R> {
    async fn run_pass(&self, myself: &ActorRef<ObjectMsg<R::Object>>, state: &mut ObjectState<R>) {
        let span = tracing::info_span!(
            "reconcile",
            kind = %kind_of::<R>(),
            namespace = %state.cx.key.namespace,
            name = %state.cx.key.name,
            restarts = state.cx.restarts,
            failures = state.failures,
            // Converged, Stalled or Failed, once the pass ends.
            result = tracing::field::Empty,
        );
        // Boxed: ractor keeps each actor's message loop (and so this handler's future) alive
        // for the actor's whole life, sized by its largest await. Inline, a kind's pass (HTTP
        // requests, Events) would make every idle actor carry its full size; boxed, that state
        // exists only while a pass runs.
        let started = tokio::time::Instant::now();
        let result = Box::pin(
            self.reconciler
                .reconcile(state.latest.clone(), &state.cx)
                .instrument(span.clone()),
        )
        .await;
        state
            .cx
            .shared
            .metrics
            .reconcile_took(&kind_of::<R>(), started.elapsed());
        let _entered = span.enter();
        let verdict = match &result {
            Ok(outcome) => outcome.result(),
            Err(_) => PassResult::Failed,
        };
        span.record("result", tracing::field::debug(&verdict));
        if std::mem::take(&mut state.report_first_pass)
            && let Some(supervisor) = &state.supervisor
        {
            let _ = supervisor.send_message(KindMsg::FirstPassDone(state.cx.key.clone()));
        }
        match result {
            Ok(outcome) => self.on_success(myself, state, outcome),
            Err(err) => self.on_failure(state, err).await,
        }
    }

    fn on_success(
        &self,
        myself: &ActorRef<ObjectMsg<R::Object>>,
        state: &mut ObjectState<R>,
        outcome: Outcome,
    ) {
        state.failures = 0;
        state
            .cx
            .shared
            .runtime
            .pass(&kind_of::<R>(), outcome.result());
        if state.cx.restarts > 0 {
            state.cx.restarts = 0;
            if let Some(supervisor) = &state.supervisor {
                let _ = supervisor.send_message(KindMsg::Recovered(state.cx.key.clone()));
            }
        }
        state
            .timers
            .schedule(&state.wheel, &state.cx.key, outcome.earliest_per_purpose());
        tracing::debug!(
            stalled = outcome.stalled,
            again = outcome.again,
            timers = state.timers.armed_count(),
            "pass done"
        );
        // Queued before the idle check below, so the object is not hibernated in between.
        if outcome.again {
            let _ = state.request_pass(myself);
        }
        if state.hibernate
            && state.idle()
            && let Some(supervisor) = &state.supervisor
        {
            let _ = supervisor.send_message(KindMsg::Idle {
                key: state.cx.key.clone(),
                actor: myself.get_id(),
                epoch: state.epoch,
            });
        }
    }

    async fn on_failure(&self, state: &mut ObjectState<R>, err: ReconcileError) {
        state.failures = state.failures.saturating_add(1);
        state
            .cx
            .shared
            .runtime
            .pass(&kind_of::<R>(), PassResult::Failed);
        let delay = state.retry.delay(state.failures);
        tracing::warn!(error = %err, retry_in = ?delay, "pass failed");
        // Boxed for the same reason as the pass.
        Box::pin(self.reconciler.report_error(
            state.latest.clone(),
            PassFailure::Error(&err),
            &state.cx,
        ))
        .await;
        state
            .timers
            .after_failure(&state.wheel, &state.cx.key, delay, err.decided_timers());
    }
}
