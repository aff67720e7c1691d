//! The per-kind supervisor: owns the watches, the registry, the timer wheel and the lifecycle
//! of object actors, hibernation included (see `kind_life.rs`).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::watcher;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

use super::BackoffPolicy;
use super::packed::Latest;
use super::spare_room::GiveBackRoom;
use super::watch::EventSource;
use crate::actors::notice_routes::Wakeup;
use crate::actors::{PassEnv, Reconciler, Registry, Shared};
use crate::api::Reported;
use crate::children::Relist;
use crate::k8s::{Lenient, Restarts, WriteBudget};
use crate::messages::{KindMsg, ObjectKey, ObjectMsg};
use crate::ring::Ownership;
use crate::runtime::TimerWheel;

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
    /// An actor idle this long (its last pass succeeded, nothing queued, no retry) is stopped;
    /// the supervisor keeps its key and latest object and respawns it on the next delta, child
    /// change, notice or timer. `None`: actors live as long as their object.
    pub hibernate_after: Option<Duration>,
    /// At most this many new objects have their first pass owed at once; the others wait
    /// without an actor (a delta, notice or timer still wakes one at once) and are admitted
    /// as first passes end. Bounds live actors during a cold start: with all of them live at
    /// once, the memory they free on hibernating stays fragmented. `None`: no bound.
    pub first_passes_at_once: Option<usize>,
}

impl Default for KindOptions {
    fn default() -> Self {
        Self {
            startup_jitter: Duration::from_secs(2),
            retry: BackoffPolicy::RETRY,
            restart: BackoffPolicy::RESTART,
            shutdown_grace: Duration::from_secs(20),
            // Long enough that the delta of a pass's own write finds the actor still live.
            hibernate_after: Some(Duration::from_secs(1)),
            first_passes_at_once: Some(crate::runtime::FIRST_PASSES_AT_ONCE),
        }
    }
}

pub struct KindSupervisor<R: Reconciler> {
    pub(super) reconciler: Arc<R>,
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
    pub options: KindOptions,
    pub registry: Registry<R::Object>,
    /// Notices and wake-ups for objects that had no live actor when they were sent.
    pub wakeups: mpsc::UnboundedReceiver<Wakeup>,
    /// The objects this member looks after at start (all of them with one replica).
    pub ownership: Arc<Ownership>,
    /// Lists the kind again (the sources follow it): how a member gets the objects it gains.
    pub relists: Restarts,
}

/// Where an object's actor is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Life {
    /// An actor runs and is in the registry.
    Live(ActorId),
    /// Out of the registry and asked to hibernate; `wake`: something for it arrived meanwhile.
    Hibernating { actor: ActorId, wake: bool },
    /// No actor: the next delta, child change, notice or timer spawns one.
    Hibernated,
    /// New and no actor yet: waits in the cold-start queue for a first-pass slot (or, like a
    /// hibernated object, for anything that wakes it first).
    Owed,
    /// Its actor failed: a restart is pending (after a backoff).
    Restarting,
}

/// What the supervisor knows about one object. A hibernated object costs only this entry
/// (its copy packed).
pub(super) struct Tracked<K> {
    pub(super) latest: Latest<K>,
    /// Index of the watch that reported it (one watch per namespace).
    pub(super) source: usize,
    pub(super) life: Life,
    /// What its latest copy's status reports, as counted in the object gauges.
    pub(super) reported: Reported,
}

/// An idle report waiting for the linger to elapse.
pub(super) struct IdleSince {
    pub(super) hibernate_at: Instant,
    pub(super) key: ObjectKey,
    pub(super) actor: ActorId,
    pub(super) epoch: u64,
}

pub struct KindState<R: Reconciler> {
    /// Shared by every actor of the kind.
    pub(super) env: Arc<PassEnv>,
    pub(super) options: KindOptions,
    pub(super) registry: Registry<R::Object>,
    /// Latest copy of every existing object; the actors share these `Arc`s (no second copy).
    pub(super) objects: HashMap<ObjectKey, Tracked<R::Object>>,
    /// The relist of each watch (between `Init` and `InitDone`).
    pub(super) relisting: HashMap<usize, Relist<ObjectKey>>,
    pub(super) actor_keys: HashMap<ActorId, ObjectKey>,
    pub(super) restarts: HashMap<ObjectKey, u32>,
    /// Restart backoffs in progress; dropping one cancels the restart.
    pub(super) pending_restarts: HashMap<ObjectKey, AbortOnDropHandle<()>>,
    /// Every armed timer of the kind.
    pub(super) wheel: TimerWheel,
    /// Idle reports in the order they arrived (so in the order of their deadlines).
    pub(super) idle: VecDeque<IdleSince>,
    /// The wake-up of the next sweep of `idle`, when one is scheduled.
    pub(super) sweep: Option<AbortOnDropHandle<()>>,
    pub(super) hibernated: usize,
    /// New objects waiting for a first-pass slot, in the order they were listed.
    pub(super) owed: VecDeque<ObjectKey>,
    /// Objects admitted with their first pass not yet done (each holds a slot).
    pub(super) starting: HashSet<ObjectKey>,
    /// Tasks that forward the watch streams to this actor and the wheel's task; dropping them
    /// stops the watches and the timers.
    pub(super) watches: Vec<AbortOnDropHandle<()>>,
    /// How many object watches there are, and which finished a list: once all did, an object
    /// missing from `objects` does not exist.
    pub(super) sources: usize,
    pub(super) listed: HashSet<usize>,
    /// The certificate expiries the objects report, earliest first.
    pub(super) expiries: BTreeSet<(i64, ObjectKey)>,
    /// The objects this member looks after; of the others it keeps nothing.
    pub(super) ownership: Arc<Ownership>,
    /// The share grew since the kind was last listed: objects of it may exist unseen.
    pub(super) gained: bool,
    pub(super) relists: Restarts,
}

impl<R: Reconciler> KindState<R> {
    /// Gives back the room the per-object collections grew into and no longer use (after the
    /// idle actors hibernated, or objects moved to another member).
    pub(super) fn give_back_room(&mut self) {
        self.objects.give_back_room();
        self.registry.give_back_room();
        self.actor_keys.give_back_room();
        self.restarts.give_back_room();
        self.pending_restarts.give_back_room();
        self.idle.give_back_room();
        self.owed.give_back_room();
        self.starting.give_back_room();
    }

    /// Whether every watch of the kind delivered its list.
    pub(super) fn complete(&self) -> bool {
        self.listed.len() >= self.sources
    }

    /// Takes a first-pass slot for `key` if one is free (always, without a bound).
    pub(super) fn take_slot(&mut self, key: &ObjectKey) -> bool {
        match self.options.first_passes_at_once {
            None => true,
            Some(at_once) if self.starting.len() < at_once => {
                self.starting.insert(key.clone());
                true
            }
            Some(_) => false,
        }
    }
}

impl<R: Reconciler> KindState<R> {
    pub(super) fn count_actors(&self) {
        let runtime = &self.env.shared.runtime;
        runtime.set_actors(&kind_of::<R>(), self.registry.len());
        runtime.set_hibernated(&kind_of::<R>(), self.hibernated);
    }

    /// `key` now reports `after` (`Reported::default()` when it goes): moves it between the
    /// series of the object gauges and republishes the earliest certificate expiry.
    pub(super) fn report(&mut self, key: &ObjectKey, after: Reported) {
        let Some(tracked) = self.objects.get_mut(key) else {
            return;
        };
        let before = std::mem::replace(&mut tracked.reported, after);
        if before == after {
            return;
        }
        let runtime = &self.env.shared.runtime;
        let kind = kind_of::<R>();
        runtime.reported(&kind, &before, &after);
        if before.certificate_not_after != after.certificate_not_after {
            if let Some(at) = before.certificate_not_after {
                self.expiries.remove(&(at, key.clone()));
            }
            if let Some(at) = after.certificate_not_after {
                self.expiries.insert((at, key.clone()));
            }
            let earliest = self.expiries.first().map(|(at, _)| *at);
            runtime.set_certificate_expiry(&kind, earliest);
        }
    }

    /// Moves `key` to `life`, keeping the hibernated count.
    pub(super) fn set_life(&mut self, key: &ObjectKey, life: Life) {
        if let Some(tracked) = self.objects.get_mut(key) {
            // Owed objects count as hibernated: no actor, their copy kept.
            let asleep = |life: Life| matches!(life, Life::Hibernated | Life::Owed);
            let was = std::mem::replace(&mut tracked.life, life);
            match (asleep(was), asleep(life)) {
                (true, false) => self.hibernated -= 1,
                (false, true) => self.hibernated += 1,
                _ => {}
            }
        }
    }
}

/// What the supervisor holds, by object.
async fn census<R: Reconciler>(state: &KindState<R>) -> crate::messages::KindCensus {
    let mut census = crate::messages::KindCensus {
        kind: kind_of::<R>().into_owned(),
        timers: state.wheel.armed().await,
        ..Default::default()
    };
    for (key, tracked) in &state.objects {
        census.copies.push(tracked.latest.text());
        let list = match tracked.life {
            Life::Live(_) | Life::Hibernating { .. } => &mut census.live,
            Life::Hibernated | Life::Owed => &mut census.hibernated,
            Life::Restarting => &mut census.restarting,
        };
        list.push(key.clone());
    }
    for list in [
        &mut census.live,
        &mut census.hibernated,
        &mut census.restarting,
    ] {
        list.sort();
    }
    census.copies.sort();
    census
}

pub(super) fn kind_of<R: Reconciler>() -> std::borrow::Cow<'static, str> {
    <R::Object as kube::Resource>::kind(&())
}

/// Whether `ownership` holds `key` of kind `R`.
pub(super) fn owns<R: Reconciler>(ownership: &Ownership, key: &ObjectKey) -> bool {
    ownership.owns_object(&kind_of::<R>(), &key.namespace, &key.name)
}

/// Names one watch of the kind for `/readyz` (each reports its first complete list).
fn list_id<R: Reconciler>(source: usize) -> String {
    format!("{}/{source}", kind_of::<R>())
}

/// Forwards a stream into the supervisor until either ends.
fn forward<T, S>(
    me: &ActorRef<KindMsg<T>>,
    mut stream: S,
    wrap: impl Fn(S::Item) -> KindMsg<T> + Send + 'static,
) -> AbortOnDropHandle<()>
where
    T: Send + Sync + std::fmt::Debug + 'static,
    S: futures::Stream + Unpin + Send + 'static,
    S::Item: Send,
{
    let me = me.clone();
    AbortOnDropHandle::new(tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            if me.send_message(wrap(item)).is_err() {
                break;
            }
        }
    }))
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
        let sources = args.sources.len();
        for (source, events) in args.sources.into_iter().enumerate() {
            args.shared.readiness.expect_list(&list_id::<R>(source));
            let messages = events
                .filter_map(move |event| std::future::ready(watched(source, event)))
                .boxed();
            watches.push(forward(&myself, messages, |message| message));
        }
        let wakeups = tokio_stream_of(args.wakeups);
        watches.push(forward(&myself, wakeups, KindMsg::Wake));
        let me = myself.clone();
        let shared = args.shared.clone();
        let (wheel, wheel_task) = TimerWheel::start(
            move |key, purpose, generation| {
                me.send_message(KindMsg::TimerFired {
                    key,
                    purpose,
                    generation,
                })
                .is_ok()
            },
            move |armed| shared.runtime.set_timers(&kind_of::<R>(), armed),
        );
        watches.push(wheel_task);
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
            wheel,
            idle: VecDeque::new(),
            sweep: None,
            hibernated: 0,
            owed: VecDeque::new(),
            starting: HashSet::new(),
            watches,
            sources,
            listed: HashSet::new(),
            expiries: BTreeSet::new(),
            ownership: args.ownership,
            gained: false,
            relists: args.relists,
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
            KindMsg::Undecodable(key) => self.undecodable(&myself, state, &key).await,
            // Unknown owner: nothing to keep. A restart pending: its pass reads the children.
            KindMsg::Wake(owner) => {
                self.wake(&myself, state, &owner, ObjectMsg::ChildChanged)
                    .await;
            }
            KindMsg::TimerFired {
                key,
                purpose,
                generation,
            } => {
                let fired = ObjectMsg::TimerFired {
                    purpose,
                    generation,
                };
                self.wake(&myself, state, &key, fired).await;
            }
            KindMsg::Respawn(key) => {
                state.pending_restarts.remove(&key);
                if let Some(tracked) = state.objects.get(&key)
                    && tracked.life == Life::Restarting
                {
                    self.respawn(&myself, state, key).await;
                }
            }
            KindMsg::Recovered(key) => {
                state.restarts.remove(&key);
            }
            KindMsg::Idle { key, actor, epoch } => self.on_idle(&myself, state, key, actor, epoch),
            KindMsg::Sweep => self.sweep(&myself, state),
            KindMsg::FirstPassDone(key) => {
                if state.starting.remove(&key) {
                    self.admit(&myself, state).await;
                }
            }
            KindMsg::Admit => self.admit(&myself, state).await,
            KindMsg::Awake { key, actor } => self.on_awake(state, key, actor),
            KindMsg::Census(reply) => {
                let _ = reply.send(census::<R>(state).await);
            }
            KindMsg::Drain(ownership, reply) => {
                let gains = self.drain(&myself, state, ownership).await;
                let _ = reply.send(gains);
            }
            KindMsg::Adopt(reply) => {
                self.adopt(state);
                let _ = reply.send(());
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
                self.on_child_ended(&myself, state, &cell, Some(err.to_string()))
                    .await;
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                self.on_child_ended(&myself, state, &cell, None).await;
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
        state.sweep = None;
        myself
            .stop_children_and_wait(Some("shutdown".into()), Some(state.options.shutdown_grace))
            .await;
        state.registry.clear();
        Ok(())
    }
}

/// A watch event as the supervisor's message. An object that cannot be decoded never reaches
/// the store: left out of a list (whose end then finds a known one gone), and, changed or
/// deleted as such, reported to be left out ([`KindMsg::Undecodable`]). Either way it is looked
/// after as a missing object until a version that decodes brings it back.
fn watched<K>(source: usize, event: watcher::Event<Lenient<K>>) -> Option<KindMsg<K>>
where
    K: kube::Resource<DynamicType = ()>,
{
    use watcher::Event;
    let event = match event {
        Event::Init => Event::Init,
        Event::InitApply(Lenient::Decoded(obj)) => Event::InitApply(obj),
        Event::InitApply(Lenient::Undecodable(_)) => return None,
        Event::InitDone => Event::InitDone,
        Event::Apply(Lenient::Decoded(obj)) => Event::Apply(obj),
        Event::Delete(Lenient::Decoded(obj)) => Event::Delete(obj),
        Event::Apply(Lenient::Undecodable(u)) | Event::Delete(Lenient::Undecodable(u)) => {
            return ObjectKey::of_meta(&u.metadata).map(KindMsg::Undecodable);
        }
    };
    Some(KindMsg::Watch { source, event })
}

/// A tokio receiver as a stream.
fn tokio_stream_of<T: Send + 'static>(
    mut receiver: mpsc::UnboundedReceiver<T>,
) -> futures::stream::BoxStream<'static, T> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)).boxed()
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
                // Another member's object: not even its key is kept (a relist after the share
                // grew brings what this member gains), so it cannot be found gone either.
                if let Some(key) = ObjectKey::of(&obj).filter(|k| owns::<R>(&state.ownership, k)) {
                    state
                        .relisting
                        .entry(source)
                        .or_default()
                        .listed(key.clone());
                    let delay = first_pass_delay::<R>(&obj, state.options.startup_jitter);
                    self.upsert(myself, state, source, key, obj, delay).await;
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
                    .filter(|(_, tracked)| tracked.source == source)
                    .map(|(key, _)| key);
                let gone = state.relisting.entry(source).or_default().finish(known);
                for key in gone {
                    self.remove(myself, state, &key).await;
                }
                state.listed.insert(source);
                self.sweep_orphans(state);
            }
            watcher::Event::Apply(obj) => {
                if let Some(key) = ObjectKey::of(&obj).filter(|k| owns::<R>(&state.ownership, k)) {
                    self.upsert(myself, state, source, key, obj, Duration::ZERO)
                        .await;
                }
            }
            watcher::Event::Delete(obj) => {
                if let Some(key) = ObjectKey::of(&obj) {
                    self.remove(myself, state, &key).await;
                }
            }
        }
    }

    /// An object of this member's share (the caller checked) arrived or changed.
    pub(super) async fn upsert(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        source: usize,
        key: ObjectKey,
        obj: R::Object,
        first_pass_delay: Duration,
    ) {
        let latest = Arc::new(obj);
        let reported = R::reported(&latest);
        let Some(tracked) = state.objects.get_mut(&key) else {
            state.objects.insert(
                key.clone(),
                Tracked {
                    latest: Latest::Decoded(latest.clone()),
                    source,
                    life: Life::Restarting,
                    reported: Reported::default(),
                },
            );
            state.report(&key, reported);
            if state.take_slot(&key) {
                self.spawn_actor(myself, state, key, latest, first_pass_delay)
                    .await;
            } else {
                state.set_life(&key, Life::Owed);
                state.owed.push_back(key);
                state.count_actors();
            }
            return;
        };
        // A relist repeats unchanged objects: do not wake their actors for nothing.
        let stored = tracked.latest.resource_version();
        let unchanged = stored.is_some() && stored == latest.resource_version();
        tracked.latest = Latest::Decoded(latest.clone());
        tracked.source = source;
        state.report(&key, reported);
        if !unchanged {
            self.wake(myself, state, &key, ObjectMsg::Delta(latest))
                .await;
        }
    }
}

/// The delay of the first pass of an object found by a (re)list: spread over `[0, max)` so that
/// the writes of many first passes do not all come at once, except for an object whose status
/// says it is settled (its pass is expected to write nothing: spreading it only delays the
/// restart; 2 s of a restart over 150 converged objects that took 2.2 s).
pub(super) fn first_pass_delay<R: Reconciler>(obj: &R::Object, max: Duration) -> Duration {
    if R::settled(obj) {
        Duration::ZERO
    } else {
        jitter(max)
    }
}

fn jitter(max: Duration) -> Duration {
    if max.is_zero() {
        return Duration::ZERO;
    }
    let millis = u64::try_from(max.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(crate::runtime::random::below(millis))
}
