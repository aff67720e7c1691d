//! What one object actor starts with ([`ObjectArgs`]) and keeps between messages
//! ([`ObjectState`]).

use std::sync::Arc;
use std::time::Duration;

use ractor::{ActorProcessingErr, ActorRef};
use tokio_util::task::AbortOnDropHandle;

use super::{ObjectContext, Reconciler, Timers};
use crate::messages::{KindMsg, ObjectMsg};
use crate::runtime::{BackoffPolicy, TimerWheel};

/// Start-up arguments of one object actor.
pub struct ObjectArgs<R: Reconciler> {
    pub object: Arc<R::Object>,
    pub cx: ObjectContext,
    /// Delay of the first pass (start-up jitter, so a restart with many objects does not herd).
    pub first_pass_delay: Duration,
    /// Backoff of retries after failed passes.
    pub retry: BackoffPolicy,
    /// Told when a restarted actor completes a pass, so its restart count resets, and when
    /// the actor is idle (it may hibernate).
    pub supervisor: Option<ActorRef<KindMsg<R::Object>>>,
    /// The kind's timer wheel.
    pub wheel: TimerWheel,
    /// Report idleness to the supervisor (the kind hibernates idle actors).
    pub hibernate: bool,
    /// Tell the supervisor when the first pass ends (it holds a cold-start slot).
    pub report_first_pass: bool,
}

pub struct ObjectState<R: Reconciler> {
    pub(super) latest: Arc<R::Object>,
    /// A `Reconcile` message is queued (or the first pass is deferred): do not queue another.
    pub(super) pass_queued: bool,
    pub(super) failures: u32,
    pub(super) timers: Timers,
    pub(super) deferred_first_pass: Option<AbortOnDropHandle<()>>,
    pub(super) cx: ObjectContext,
    pub(super) retry: BackoffPolicy,
    pub(super) supervisor: Option<ActorRef<KindMsg<R::Object>>>,
    pub(super) wheel: TimerWheel,
    pub(super) hibernate: bool,
    /// Number of passes started; names the pass an `Idle` report is about.
    pub(super) epoch: u64,
    /// Stopping to hibernate: the object lives on, `on_stop` is not for this stop.
    pub(super) hibernating: bool,
    /// The first pass holds a cold-start slot until it ends.
    pub(super) report_first_pass: bool,
}

impl<R: Reconciler> ObjectState<R> {
    pub(super) fn request_pass(
        &mut self,
        myself: &ActorRef<ObjectMsg<R::Object>>,
    ) -> Result<(), ActorProcessingErr> {
        if !self.pass_queued {
            self.pass_queued = true;
            myself.send_message(ObjectMsg::Reconcile)?;
        }
        Ok(())
    }

    /// Nothing left to do until something changes: no pass queued or deferred, no retry.
    pub(super) fn idle(&self) -> bool {
        !self.pass_queued
            && self.deferred_first_pass.is_none()
            && self.failures == 0
            && !self.timers.retrying()
    }
}
