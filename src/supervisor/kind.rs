//! The per-kind supervisor: owns the watches, the registry and the lifecycle of object actors.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::watcher;
use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio_util::task::AbortOnDropHandle;

use super::BackoffPolicy;
use super::watch::{EventSource, OwnerSource};
use crate::actors::{
    ObjectActor, ObjectArgs, ObjectContext, PassEnv, PassFailure, Reconciler, Registry, Shared,
};
use crate::children::Relist;
use crate::k8s::WriteBudget;
use crate::messages::{KindMsg, ObjectKey, ObjectMsg};

/// Tuning of one kind's supervision.
#[derive(Clone, Copy, Debug)]
pub struct KindOptions {
    /// First passes of objects found by a (re)list are spread over `[0, startup_jitter)`.
    pub startup_jitter: Duration,
    /// Backoff between retries of a failing pass.
    pub retry: BackoffPolicy,
    /// Backoff between restarts of an actor whose pass panicked.
    pub restart: BackoffPolicy,
    /// How long in-flight passes may take to finish on shutdown.
    pub shutdown_grace: Duration,
}

impl Default for KindOptions {
    fn default() -> Self {
        Self {
            startup_jitter: Duration::from_secs(2),
            retry: BackoffPolicy::RETRY,
            restart: BackoffPolicy::RESTART,
            shutdown_grace: Duration::from_secs(20),
        }
    }
}

pub struct KindSupervisor<R: Reconciler> {
    reconciler: Arc<R>,
}

impl<R: Reconciler> KindSupervisor<R> {
    pub fn new(reconciler: Arc<R>) -> Self {
        Self { reconciler }
    }
}

pub struct KindArgs<R: Reconciler> {
    pub client: kube::Client,
    pub writes: WriteBudget,
    pub shared: Arc<Shared>,
    pub sources: Vec<EventSource<R::Object>>,
    pub children: Vec<OwnerSource>,
    pub options: KindOptions,
    pub registry: Registry<R::Object>,
}

/// What the supervisor knows about one object.
struct Tracked<K> {
    latest: Arc<K>,
    /// Index of the watch that reported it (one watch per namespace).
    source: usize,
}

pub struct KindState<R: Reconciler> {
    /// Shared by every actor of the kind.
    env: Arc<PassEnv>,
    options: KindOptions,
    registry: Registry<R::Object>,
    /// Latest copy of every existing object; the actors share these `Arc`s (no second copy).
    objects: HashMap<ObjectKey, Tracked<R::Object>>,
    /// The relist of each watch (between `Init` and `InitDone`).
    relisting: HashMap<usize, Relist<ObjectKey>>,
    actor_keys: HashMap<ActorId, ObjectKey>,
    restarts: HashMap<ObjectKey, u32>,
    /// Restart backoffs in progress; dropping one cancels the restart.
    pending_restarts: HashMap<ObjectKey, AbortOnDropHandle<()>>,
    /// Tasks that forward the watch streams to this actor; dropping them stops the watches.
    watches: Vec<AbortOnDropHandle<()>>,
}

impl<R: Reconciler> KindState<R> {
    fn count_actors(&self) {
        self.env
            .shared
            .runtime
            .set_actors(&kind_of::<R>(), self.registry.len());
    }
}

fn kind_of<R: Reconciler>() -> std::borrow::Cow<'static, str> {
    <R::Object as kube::Resource>::kind(&())
}

/// Names one watch of the kind for `/readyz` (each reports its first complete list).
fn list_id<R: Reconciler>(source: usize) -> String {
    format!("{}/{source}", kind_of::<R>())
}

impl<R: Reconciler> Actor for KindSupervisor<R> {
    type Msg = KindMsg<R::Object>;
    type State = KindState<R>;
    type Arguments = KindArgs<R>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut watches = Vec::new();
        for (source, mut events) in args.sources.into_iter().enumerate() {
            args.shared.readiness.expect_list(&list_id::<R>(source));
            let me = myself.clone();
            watches.push(AbortOnDropHandle::new(tokio::spawn(async move {
                while let Some(event) = events.next().await {
                    if me.send_message(KindMsg::Watch { source, event }).is_err() {
                        break;
                    }
                }
            })));
        }
        for mut owners in args.children {
            let me = myself.clone();
            watches.push(AbortOnDropHandle::new(tokio::spawn(async move {
                while let Some(owner) = owners.next().await {
                    if me.send_message(KindMsg::ChildChanged(owner)).is_err() {
                        break;
                    }
                }
            })));
        }
        Ok(KindState {
            env: Arc::new(PassEnv {
                client: args.client,
                writes: args.writes,
                shared: args.shared,
            }),
            options: args.options,
            registry: args.registry,
            objects: HashMap::new(),
            relisting: HashMap::new(),
            actor_keys: HashMap::new(),
            restarts: HashMap::new(),
            pending_restarts: HashMap::new(),
            watches,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            KindMsg::Watch { source, event } => self.on_watch(&myself, state, source, event).await,
            KindMsg::ChildChanged(owner) => {
                // No actor (unknown owner, or restart pending): nothing to keep. The owner's
                // next pass reads its children anyway, so the change is not lost.
                if let Some(actor) = state.registry.get(&owner) {
                    let _ = actor.send_message(ObjectMsg::ChildChanged);
                }
            }
            KindMsg::Respawn(key) => {
                state.pending_restarts.remove(&key);
                if let Some(tracked) = state.objects.get(&key)
                    && !state.registry.contains_key(&key)
                {
                    let object = tracked.latest.clone();
                    self.spawn_actor(&myself, state, key, object, Duration::ZERO)
                        .await;
                }
            }
            KindMsg::Recovered(key) => {
                state.restarts.remove(&key);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Never stop because a child ended (ractor's default): only this kind's bookkeeping.
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                self.on_child_ended(&myself, state, &cell, Some(err.to_string()));
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                self.on_child_ended(&myself, state, &cell, None);
            }
            _ => {}
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Stop the watches first so nothing new arrives, then let in-flight passes finish.
        state.watches.clear();
        state.pending_restarts.clear();
        myself
            .stop_children_and_wait(Some("shutdown".into()), Some(state.options.shutdown_grace))
            .await;
        state.registry.clear();
        Ok(())
    }
}

impl<R: Reconciler> KindSupervisor<R> {
    async fn on_watch(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        source: usize,
        event: watcher::Event<R::Object>,
    ) {
        match event {
            watcher::Event::Init => {
                state.relisting.entry(source).or_default().start();
            }
            watcher::Event::InitApply(obj) => {
                if let Some(key) = ObjectKey::of(&obj) {
                    state
                        .relisting
                        .entry(source)
                        .or_default()
                        .listed(key.clone());
                    let jitter = jitter(state.options.startup_jitter);
                    self.upsert(myself, state, source, key, obj, jitter).await;
                }
            }
            watcher::Event::InitDone => {
                state
                    .env
                    .shared
                    .readiness
                    .list_synced(&list_id::<R>(source));
                // Objects this watch reported before but not in the new list were deleted while
                // the watch was down.
                let known = state
                    .objects
                    .iter()
                    .filter(|(_, t)| t.source == source)
                    .map(|(key, _)| key);
                let gone = state.relisting.entry(source).or_default().finish(known);
                for key in gone {
                    self.remove(state, &key);
                }
            }
            watcher::Event::Apply(obj) => {
                if let Some(key) = ObjectKey::of(&obj) {
                    self.upsert(myself, state, source, key, obj, Duration::ZERO)
                        .await;
                }
            }
            watcher::Event::Delete(obj) => {
                if let Some(key) = ObjectKey::of(&obj) {
                    self.remove(state, &key);
                }
            }
        }
    }

    async fn upsert(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        source: usize,
        key: ObjectKey,
        obj: R::Object,
        first_pass_delay: Duration,
    ) {
        // A relist repeats unchanged objects: do not wake their actors for nothing.
        let unchanged = state.objects.get(&key).is_some_and(|t| {
            t.latest.resource_version().is_some()
                && t.latest.resource_version() == obj.resource_version()
        });
        let latest = Arc::new(obj);
        state.objects.insert(
            key.clone(),
            Tracked {
                latest: latest.clone(),
                source,
            },
        );
        if unchanged {
            return;
        }
        let actor = state.registry.get(&key).map(|a| a.value().clone());
        match actor {
            Some(actor) => {
                let _ = actor.send_message(ObjectMsg::Delta(latest));
            }
            // A restart is pending: it will start from the latest copy.
            None if state.pending_restarts.contains_key(&key) => {}
            None => {
                self.spawn_actor(myself, state, key, latest, first_pass_delay)
                    .await
            }
        }
    }

    /// The object is gone: forget it and stop its actor (its timers die with its state).
    fn remove(&self, state: &mut KindState<R>, key: &ObjectKey) {
        state.objects.remove(key);
        state.restarts.remove(key);
        state.pending_restarts.remove(key);
        if let Some((_, actor)) = state.registry.remove(key) {
            actor.stop(Some("deleted".into()));
        }
        // Its Secret references go with it, so a later change of those wakes nobody.
        state.env.shared.secrets.forget(&kind_of::<R>(), key);
        state.count_actors();
    }

    async fn spawn_actor(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: ObjectKey,
        object: Arc<R::Object>,
        first_pass_delay: Duration,
    ) {
        let restarts = state.restarts.get(&key).copied().unwrap_or(0);
        let args = ObjectArgs {
            object,
            cx: ObjectContext::new(key.clone(), state.env.clone(), restarts),
            first_pass_delay,
            retry: state.options.retry,
            supervisor: Some(myself.clone()),
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
                state.registry.insert(key, actor);
                state.count_actors();
            }
            Err(err) => {
                tracing::error!(object = %key, error = %err, "object actor did not start");
                self.schedule_restart(myself, state, key, err.to_string());
            }
        }
    }

    fn on_child_ended(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        cell: &ActorCell,
        failure: Option<String>,
    ) {
        let Some(key) = state.actor_keys.remove(&cell.get_id()) else {
            return;
        };
        // Only the current actor of the key is removed: a replacement may already run.
        let current = state
            .registry
            .remove_if(&key, |_, actor| actor.get_id() == cell.get_id())
            .is_some();
        state.count_actors();
        if !current || !state.objects.contains_key(&key) {
            return;
        }
        let reason = failure.unwrap_or_else(|| "stopped unexpectedly".into());
        self.schedule_restart(myself, state, key, reason);
    }

    /// Restart after a per-object backoff (jittered, capped), reporting the failure first.
    fn schedule_restart(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        key: ObjectKey,
        reason: String,
    ) {
        let restarts = state.restarts.entry(key.clone()).or_insert(0);
        *restarts = restarts.saturating_add(1);
        state.env.shared.runtime.restart(&kind_of::<R>());
        let delay = state.options.restart.delay(*restarts);
        tracing::warn!(object = %key, restarts = *restarts, restart_in = ?delay, reason = %reason, "object actor failed");
        let report = state.objects.get(&key).map(|t| {
            let cx = ObjectContext::new(key.clone(), state.env.clone(), *restarts);
            (t.latest.clone(), cx)
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
}

fn jitter(max: Duration) -> Duration {
    if max.is_zero() {
        return Duration::ZERO;
    }
    let millis = u64::try_from(max.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(crate::runtime::random::below(millis))
}
