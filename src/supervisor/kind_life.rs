//! The life of one object's actor under its kind supervisor: spawn, wake, hibernate, restart,
//! remove.
//!
//! Hibernation keeps every guarantee of a live actor. An idle actor reports `Idle`; once its
//! linger elapsed the supervisor takes it out of the registry *before* asking it to hibernate,
//! so from then on everything for the object comes to the supervisor (the notice routes send
//! under the registry's shard lock, so a notice is either queued at the actor before that
//! removal or routed here after it). The actor stops only if the pass it reported is still its
//! last and nothing is queued; otherwise it answers `Awake` and is put back, with the latest
//! object if anything arrived meanwhile. Whatever arrives while it stops sets `wake`, and the
//! object is respawned as soon as its actor is gone.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorId, ActorRef};
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

use super::kind::{IdleSince, KindState, KindSupervisor, Life, Tracked, kind_of, owns};
use crate::actors::{ObjectActor, ObjectArgs, ObjectContext, PassFailure, Reconciler};
use crate::api::Reported;
use crate::messages::{KindMsg, ObjectKey, ObjectMsg};

impl<R: Reconciler> KindSupervisor<R> {
    /// Something for `key` arrived: hand it to its live actor, or respawn a hibernated one
    /// (whose first pass covers it). Nothing for an unknown object or a pending restart (the
    /// restart's pass reads everything afresh).
    pub(super) async fn wake(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: &ObjectKey,
        message: ObjectMsg<R::Object>,
    ) {
        let Some(tracked) = state.objects.get_mut(key) else {
            // Something of an object that does not exist changed (a child labelled for it);
            // another member's objects are not ours to judge, nor the orphans of its keys.
            if state.complete() && owns::<R>(&state.ownership, key) {
                self.orphaned(state, key);
            }
            return;
        };
        match &mut tracked.life {
            Life::Live(_) => {
                if let Some(actor) = state.registry.get(key) {
                    // A failed send means the actor is ending: its supervision event follows.
                    let _ = actor.send_message(message);
                }
            }
            Life::Hibernating { wake, .. } => *wake = true,
            // An owed object's first pass comes early; its place in the queue is skipped.
            Life::Hibernated | Life::Owed => self.respawn(myself, state, key.clone()).await,
            Life::Restarting => {}
        }
    }

    /// Gives free first-pass slots to the objects waiting for one, in order.
    pub(super) async fn admit(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
    ) {
        while let Some(key) = state.owed.front().cloned() {
            // Woken meanwhile, or deleted: its first pass is no longer owed.
            let owed = state
                .objects
                .get(&key)
                .is_some_and(|t| t.life == Life::Owed);
            if owed && !state.take_slot(&key) {
                return;
            }
            state.owed.pop_front();
            if owed {
                self.respawn(myself, state, key).await;
            }
        }
    }

    /// Spawns an actor for a known object from the supervisor's copy, with no delay.
    pub(super) async fn respawn(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: ObjectKey,
    ) {
        let Some(tracked) = state.objects.get_mut(&key) else {
            return;
        };
        match tracked.latest.decoded() {
            Ok(object) => {
                self.spawn_actor(myself, state, key, object, Duration::ZERO)
                    .await
            }
            // Our own JSON of a type that decoded from the API: not expected. Retried like a
            // failed actor, so the object is not left asleep for good.
            Err(err) => self.schedule_restart(myself, state, key, err.to_string()),
        }
    }

    pub(super) async fn spawn_actor(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: ObjectKey,
        object: Arc<R::Object>,
        first_pass_delay: Duration,
    ) {
        let restarts = state.restarts.get(&key).copied().unwrap_or(0);
        let report_first_pass = state.starting.contains(&key);
        let args = ObjectArgs {
            object,
            cx: ObjectContext::new(key.clone(), state.env.clone(), restarts),
            first_pass_delay,
            retry: state.options.retry,
            supervisor: Some(myself.clone()),
            wheel: state.wheel.clone(),
            hibernate: state.options.hibernate_after.is_some(),
            report_first_pass,
        };
        // Unnamed: ractor's global name registry plays no part, so a key is always reusable.
        let spawned = Actor::spawn_linked(
            None,
            ObjectActor::new(self.reconciler.clone()),
            args,
            myself.get_cell(),
        )
        .await;
        match spawned {
            Ok((actor, _)) => {
                state.actor_keys.insert(actor.get_id(), key.clone());
                state.set_life(&key, Life::Live(actor.get_id()));
                state.registry.insert(key, actor);
                state.count_actors();
            }
            Err(err) => {
                tracing::error!(object = %key, error = %err, "object actor did not start");
                self.schedule_restart(myself, state, key, err.to_string());
            }
        }
    }

    /// The object is gone: forget it, stop its actor, drop its timers.
    pub(super) async fn remove(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: &ObjectKey,
    ) {
        // Another member's object is not here: that member cleans up after it.
        if self.forget(myself, state, key, "deleted").await.is_none() {
            return;
        }
        self.orphaned(state, key);
    }

    /// An object of this kind that cannot be decoded now: nobody can tell what it asks, so it is
    /// looked after as one that does not exist, the same as a list without it would (its actor
    /// stops and what only it kept is removed, `on_orphan`: a request's RoleBindings, fail
    /// closed). A version that decodes brings it back as a new object.
    pub(super) async fn undecodable(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: &ObjectKey,
    ) {
        // Another member's object: that member judges it.
        if !owns::<R>(&state.ownership, key) {
            return;
        }
        self.forget(myself, state, key, "undecodable").await;
        self.orphaned(state, key);
    }

    /// Stops looking after `key` (deleted, or moved to another member): its entry, actor,
    /// timers, restart and first-pass slot go. Returns its entry and, when an actor ran, that
    /// actor, so a hand-off can wait for it to finish.
    pub(super) async fn forget(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: &ObjectKey,
        why: &str,
    ) -> Option<(Tracked<R::Object>, Option<ActorCell>)> {
        let life = state.objects.get(key).map(|t| t.life)?;
        // Out of the hibernated count and the object gauges before the entry goes.
        state.set_life(key, Life::Restarting);
        state.report(key, Reported::default());
        let tracked = state.objects.remove(key)?;
        state.restarts.remove(key);
        state.pending_restarts.remove(key);
        state.wheel.cancel_all(key);
        let mut stopping = None;
        match life {
            Life::Live(_) => {
                if let Some((_, actor)) = state.registry.remove(key) {
                    // Its `on_stop` runs in the actor.
                    actor.stop(Some(why.into()));
                    stopping = Some(actor.get_cell());
                }
            }
            // No actor runs `on_stop` for it (one answering `Awake` later is stopped then).
            Life::Hibernating { .. } | Life::Hibernated | Life::Owed => {
                if let Life::Hibernating { actor, .. } = life {
                    stopping = myself
                        .get_children()
                        .into_iter()
                        .find(|c| c.get_id() == actor);
                }
                let cx = ObjectContext::new(key.clone(), state.env.clone(), 0);
                Box::pin(self.reconciler.on_stop(key, &cx)).await;
            }
            Life::Restarting => {}
        }
        // Its Secret references go with it, so a later change of those wakes nobody.
        state.env.shared.secrets.forget(&kind_of::<R>(), key);
        state.count_actors();
        if state.starting.remove(key) {
            self.admit(myself, state).await;
        }
        Some((tracked, stopping))
    }

    /// Lets the reconciler remove what the gone object leaves behind, off the supervisor.
    pub(super) fn orphaned(&self, state: &KindState<R>, key: &ObjectKey) {
        let (reconciler, key) = (self.reconciler.clone(), key.clone());
        let cx = ObjectContext::new(key.clone(), state.env.clone(), 0);
        tokio::spawn(async move { reconciler.on_orphan(&key, &cx).await });
    }

    pub(super) async fn on_child_ended(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        cell: &ActorCell,
        failure: Option<String>,
    ) {
        let id = cell.get_id();
        let Some(key) = state.actor_keys.remove(&id) else {
            return;
        };
        // Ended before reporting its first pass (a panic): its slot goes on.
        if state.starting.remove(&key) {
            self.admit(myself, state).await;
        }
        // Only the current actor of the key is removed: a replacement may already run.
        state
            .registry
            .remove_if(&key, |_, actor| actor.get_id() == id);
        state.count_actors();
        let Some(life) = state.objects.get(&key).map(|t| t.life) else {
            return;
        };
        match (life, failure) {
            (Life::Hibernating { actor, wake }, None) if actor == id => {
                state.set_life(&key, Life::Hibernated);
                state.count_actors();
                if wake {
                    self.respawn(myself, state, key).await;
                } else if let Some(tracked) = state.objects.get_mut(&key) {
                    tracked.latest.pack();
                }
            }
            (Life::Live(actor) | Life::Hibernating { actor, .. }, failure) if actor == id => {
                let reason = failure.unwrap_or_else(|| "stopped unexpectedly".into());
                self.schedule_restart(myself, state, key, reason);
            }
            _ => {}
        }
    }

    /// Restart after a per-object backoff (jittered, capped), reporting the failure first.
    /// The failed actor's timers go with it: the restart's first pass arms them afresh.
    pub(super) fn schedule_restart(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: ObjectKey,
        reason: String,
    ) {
        state.set_life(&key, Life::Restarting);
        state.wheel.cancel_all(&key);
        // Its actor never started (it holds no slot as a restart): the slot goes on.
        if state.starting.remove(&key) {
            let _ = myself.send_message(KindMsg::Admit);
        }
        let restarts = state.restarts.entry(key.clone()).or_insert(0);
        *restarts = restarts.saturating_add(1);
        state.env.shared.runtime.restart(&kind_of::<R>());
        let delay = state.options.restart.delay(*restarts);
        tracing::warn!(object = %key, restarts = *restarts, restart_in = ?delay, reason = %reason, "object actor failed");
        let restarts = *restarts;
        let report = state.objects.get_mut(&key).and_then(|t| {
            let cx = ObjectContext::new(key.clone(), state.env.clone(), restarts);
            t.latest.decoded().ok().map(|obj| (obj, cx))
        });
        let reconciler = self.reconciler.clone();
        let me = myself.clone();
        let task_key = key.clone();
        let task = tokio::spawn(async move {
            if let Some((obj, cx)) = report {
                reconciler
                    .report_error(obj, PassFailure::Panicked(&reason), &cx)
                    .await;
            }
            tokio::time::sleep(delay).await;
            let _ = me.send_message(KindMsg::Respawn(task_key));
        });
        state
            .pending_restarts
            .insert(key, AbortOnDropHandle::new(task));
    }

    /// An actor finished a pass with nothing left to do: hibernate it after the linger.
    pub(super) fn on_idle(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: ObjectKey,
        actor: ActorId,
        epoch: u64,
    ) {
        let Some(linger) = state.options.hibernate_after else {
            return;
        };
        if linger.is_zero() {
            self.hibernate(state, &key, actor, epoch);
            return;
        }
        state.idle.push_back(IdleSince {
            hibernate_at: Instant::now() + linger,
            key,
            actor,
            epoch,
        });
        if state.sweep.is_none() {
            schedule_sweep(myself, state, linger);
        }
    }

    /// Hibernates every actor whose linger elapsed (those busy meanwhile refuse).
    pub(super) fn sweep(&self, myself: &ActorRef<KindMsg<R::Object>>, state: &mut KindState<R>) {
        state.sweep = None;
        let now = Instant::now();
        while let Some(idle) = state.idle.front() {
            if idle.hibernate_at > now {
                let wait = idle.hibernate_at - now;
                schedule_sweep(myself, state, wait);
                return;
            }
            if let Some(idle) = state.idle.pop_front() {
                self.hibernate(state, &idle.key, idle.actor, idle.epoch);
            }
        }
        // Every idle actor hibernated: what a burst of live actors grew is not needed now.
        state.give_back_room();
    }

    fn hibernate(&self, state: &mut KindState<R>, key: &ObjectKey, actor: ActorId, epoch: u64) {
        let live = state
            .objects
            .get(key)
            .is_some_and(|t| t.life == Life::Live(actor));
        if !live {
            return;
        }
        let Some((_, actor_ref)) = state
            .registry
            .remove_if(key, |_, current| current.get_id() == actor)
        else {
            return;
        };
        state.set_life(key, Life::Hibernating { actor, wake: false });
        state.count_actors();
        // A failed send means the actor is ending: its supervision event settles the object.
        let _ = actor_ref.send_message(ObjectMsg::Hibernate { epoch });
    }

    /// The actor had work queued when asked to hibernate: it stays live.
    pub(super) fn on_awake(
        &self,
        state: &mut KindState<R>,
        key: ObjectKey,
        actor: ActorRef<ObjectMsg<R::Object>>,
    ) {
        let id = actor.get_id();
        let Some(tracked) = state.objects.get(&key) else {
            // Deleted meanwhile (its `on_stop` ran already; running it twice is harmless).
            actor.stop(Some("deleted".into()));
            return;
        };
        let Life::Hibernating { actor: asked, wake } = tracked.life else {
            return;
        };
        if asked != id {
            return;
        }
        state.set_life(&key, Life::Live(id));
        if wake
            && let Some(latest) = state
                .objects
                .get_mut(&key)
                .and_then(|t| t.latest.decoded().ok())
        {
            let _ = actor.send_message(ObjectMsg::Delta(latest));
        }
        state.registry.insert(key, actor);
        state.count_actors();
    }
}

fn schedule_sweep<R: Reconciler>(
    myself: &ActorRef<KindMsg<R::Object>>,
    state: &mut KindState<R>,
    after: Duration,
) {
    let me = myself.clone();
    state.sweep = Some(AbortOnDropHandle::new(tokio::spawn(async move {
        tokio::time::sleep(after).await;
        let _ = me.send_message(KindMsg::Sweep);
    })));
}
