//! Assembling and running the actor tree: register kinds, start, shut down.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use kube::Client;
use kube::runtime::watcher;
use ractor::{Actor, ActorCell, ActorRef, SpawnErr};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::task::AbortOnDropHandle;

use super::kind::{KindArgs, KindOptions, KindSupervisor};
use super::root::RootSupervisor;
use super::watch::{EventSource, WatchScope};
use crate::actors::Registry;
use crate::actors::notice_routes::Wakeup;
use crate::actors::{Reconciler, Shared};
use crate::children::{CacheStart, FollowsShare, Wakeups};
use crate::k8s::{
    EventSink, FirstList, Lenient, Restarts, ShardSelector, UndecodableReport, WatchClients,
    WriteBudget, sharded_client, watch_each_object,
};
use crate::messages::{KindCensus, KindMsg, RootMsg};
use crate::ring::{Ownership, Placement};

/// One kind to run: its reconciler and its watch (children wake it through the shared caches).
pub struct Kind<R: Reconciler> {
    reconciler: Arc<R>,
    watch_config: watcher::Config,
    sources: Option<Vec<EventSource<R::Object>>>,
    options: KindOptions,
    registry: Registry<R::Object>,
    /// Asks the kind's watches to list again (a member's share grew).
    relists: Restarts,
    /// Notices for objects without a live actor, to the kind supervisor.
    wakeups: (
        mpsc::UnboundedSender<Wakeup>,
        mpsc::UnboundedReceiver<Wakeup>,
    ),
}

impl<R: Reconciler> Kind<R> {
    pub fn new(reconciler: R) -> Self {
        Self {
            reconciler: Arc::new(reconciler),
            watch_config: watcher::Config::default(),
            sources: None,
            options: KindOptions::default(),
            registry: Registry::default(),
            relists: Restarts::default(),
            wakeups: mpsc::unbounded_channel(),
        }
    }

    /// Narrow the managed kind's watch (labels, fields).
    pub fn watch_config(mut self, config: watcher::Config) -> Self {
        self.watch_config = config;
        self
    }

    /// Feed the kind from these streams instead of watching the API (tests, replays).
    pub fn sources(mut self, sources: Vec<EventSource<R::Object>>) -> Self {
        self.sources = Some(sources);
        self
    }

    pub fn options(mut self, options: KindOptions) -> Self {
        self.options = options;
        self
    }

    /// The relists the kind supervisor asks for: a test feeding its own `sources` lists again
    /// when this changes, as the API watches do.
    pub fn relists(&self) -> tokio::sync::watch::Receiver<crate::k8s::Generation> {
        self.relists.subscribe()
    }

    /// The live actors of this kind (shared; stays valid after `start`). Hibernated objects
    /// have no entry: count them with `RuntimeMetrics::objects`.
    pub fn registry(&self) -> Registry<R::Object> {
        self.registry.clone()
    }
}

/// What every kind needs from the operator when it starts.
struct Env {
    client: Client,
    /// The clients of the watches (`share`: server-side sharded where that is on).
    watch_clients: WatchClients,
    scope: WatchScope,
    writes: WriteBudget,
    shared: Arc<Shared>,
    root: ActorCell,
    ownership: Arc<Ownership>,
}

/// Asks a kind supervisor for its census (`None`: it did not answer).
type AskCensus = Box<dyn Fn() -> BoxFuture<'static, Option<KindCensus>> + Send + Sync>;

/// Hands a kind supervisor a new share and waits until it drained: whether it has objects to
/// adopt (`None`: it did not answer).
type AskDrain = Arc<dyn Fn(Arc<Ownership>) -> BoxFuture<'static, Option<bool>> + Send + Sync>;

/// Asks a kind supervisor to adopt what its share gained (`false`: it did not answer).
type AskAdopt = Arc<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;

/// A step run with every new share of the objects (`false`: it failed for good).
type ShareStep = Arc<dyn Fn(Arc<Ownership>) -> BoxFuture<'static, bool> + Send + Sync>;

/// How a kind follows a new share: drain, then adopt.
#[derive(Clone)]
struct KindReshard {
    drain: AskDrain,
    adopt: AskAdopt,
}

/// What starting a kind gives back.
type Started = (ActorCell, JoinHandle<()>, AskCensus, KindReshard);

type KindStart = Box<dyn FnOnce(&Env) -> BoxFuture<'static, Result<Started, SpawnErr>> + Send>;

/// Collects the kinds, then starts the actor tree.
pub struct OperatorBuilder {
    client: Client,
    shared: Arc<Shared>,
    kinds: Vec<(String, KindStart)>,
    caches: Vec<CacheStart>,
    /// The caches that keep only this member's share.
    sharded: Vec<Arc<dyn FollowsShare>>,
    ownership: Ownership,
    /// Where the API server filters watches by share: the ranges they ask for.
    server_shard: Option<Arc<ShardSelector>>,
}

impl OperatorBuilder {
    pub fn new(client: Client, shared: Arc<Shared>) -> Self {
        Self {
            client,
            shared,
            kinds: Vec::new(),
            caches: Vec::new(),
            sharded: Vec::new(),
            ownership: Ownership::default(),
            server_shard: None,
        }
    }

    /// The share of the objects this member looks after from the start (all of them unless
    /// set: one replica). A member of a dynamic ring starts with none and is handed its share
    /// through [`Operator::resharder`].
    pub fn ownership(mut self, ownership: Ownership) -> Self {
        self.ownership = ownership;
        self
    }

    /// Lets the API server filter the watches of what is kept by share (the kinds', the
    /// children in their owners' namespaces) by the share's namespace-hash ranges: only where it
    /// offers KEP-5866's `shardSelector` (`k8s::server_filters`) and objects are placed by
    /// namespace. The caches and kinds still keep only their share themselves.
    pub fn server_shard(mut self, selector: Arc<ShardSelector>) -> Self {
        self.server_shard = Some(selector);
        self
    }

    /// Watch a shared cache once for the whole operator: each owner (or user) it reports
    /// changed is woken, whatever its kind.
    pub fn cache<F>(mut self, start: F) -> Self
    where
        F: FnOnce(&WatchClients, &WatchScope) -> Vec<Wakeups> + Send + 'static,
    {
        self.caches.push(Box::new(start));
        self
    }

    /// A cache (already given to `cache`) that keeps only this member's share: it is handed
    /// the share at start and each new one between the kinds' drain and their adoption.
    pub fn sharded_cache(mut self, cache: Arc<dyn FollowsShare>) -> Self {
        self.sharded.push(cache);
        self
    }

    /// The client every kind talks through (for reconcilers that keep one, e.g. for Events).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Process-wide state the kinds share.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Register a kind: `builder.register(Kind::new(MyReconciler::new()))`.
    pub fn register<R: Reconciler>(mut self, kind: Kind<R>) -> Self {
        let name = <R::Object as kube::Resource>::kind(&()).to_string();
        // Shared actors (the secret router) reach this kind's actors through the registry.
        let (asleep, wakeups) = kind.wakeups;
        self.shared
            .notices
            .add_kind(&name, kind.registry.clone(), asleep);
        let kind_name = name.clone();
        let start: KindStart = Box::new(move |env: &Env| {
            // A member that owns nothing yet lists the kind once its share is agreed (the
            // adoption that follows asks the watches to list), not before: that list would
            // keep nothing.
            let first = FirstList::for_share(&env.ownership);
            let sources = kind.sources.unwrap_or_else(|| {
                // Each object decoded on its own: one the type cannot read is reported, and
                // never stops the others.
                let report = UndecodableReport {
                    client: env.client.clone(),
                    gauge: env.shared.metrics.undecodable_objects(&kind_name),
                    events: EventSink::new(env.client.clone()),
                    writes: env.writes.clone(),
                    consequence: R::UNDECODABLE,
                };
                env.scope
                    .apis::<Lenient<R::Object>>(&env.watch_clients.share)
                    .into_iter()
                    .map(|api| {
                        let restarts = kind.relists.subscribe();
                        let config = kind.watch_config.clone();
                        watch_each_object(api, config, restarts, first, report.clone())
                    })
                    .collect()
            });
            let args = KindArgs::<R> {
                client: env.client.clone(),
                writes: env.writes.clone(),
                shared: env.shared.clone(),
                sources,
                options: kind.options,
                registry: kind.registry,
                wakeups,
                ownership: env.ownership.clone(),
                relists: kind.relists,
            };
            let root = env.root.clone();
            let supervisor = KindSupervisor::new(kind.reconciler);
            Box::pin(async move {
                let (actor, handle) = Actor::spawn_linked(None, supervisor, args, root).await?;
                let typed = actor.clone();
                let census: AskCensus = Box::new(move || {
                    let actor = typed.clone();
                    Box::pin(async move {
                        match actor.call(KindMsg::Census, None).await {
                            Ok(ractor::rpc::CallResult::Success(census)) => Some(census),
                            _ => None,
                        }
                    })
                });
                let typed = actor.clone();
                let drain: AskDrain = Arc::new(move |ownership| {
                    let actor = typed.clone();
                    Box::pin(async move {
                        let asked = actor.call(|reply| KindMsg::Drain(ownership, reply), None);
                        match asked.await {
                            Ok(ractor::rpc::CallResult::Success(gains)) => Some(gains),
                            _ => None,
                        }
                    })
                });
                let typed = actor.clone();
                let adopt: AskAdopt = Arc::new(move || {
                    let actor = typed.clone();
                    Box::pin(async move {
                        let asked = actor.call(KindMsg::Adopt, None);
                        matches!(asked.await, Ok(ractor::rpc::CallResult::Success(())))
                    })
                });
                Ok((
                    actor.get_cell(),
                    handle,
                    census,
                    KindReshard { drain, adopt },
                ))
            })
        });
        self.kinds.push((name, start));
        self
    }

    /// The kinds registered so far (their `kind` names).
    pub fn kind_names(&self) -> Vec<String> {
        self.kinds.iter().map(|(name, _)| name.clone()).collect()
    }

    /// Spawn the root supervisor and one supervisor per registered kind.
    pub async fn start(self) -> Result<Operator, SpawnErr> {
        let (root, root_handle) = Actor::spawn(None, RootSupervisor, ()).await?;
        let watch_clients = match &self.server_shard {
            Some(selector) => {
                // Before any watch starts: the first lists ask for the starting share.
                selector.set(&self.ownership);
                WatchClients {
                    all: self.client.clone(),
                    share: sharded_client(&self.client, selector.clone()),
                }
            }
            None => WatchClients::same(&self.client),
        };
        let placement = self.ownership.placement();
        let env = Env {
            watch_clients,
            client: self.client,
            scope: WatchScope::from_namespaces(&self.shared.settings.watch_namespaces),
            writes: WriteBudget::new(self.shared.settings.max_inflight_writes)
                .counted_in(&self.shared.metrics),
            shared: self.shared,
            root: root.get_cell(),
            ownership: Arc::new(self.ownership),
        };
        for cache in &self.sharded {
            // Not grown from everything (the default): resolves at once.
            cache.follow_share(env.ownership.clone()).await;
        }
        let mut caches = Vec::new();
        for start in self.caches {
            for mut wakeups in start(&env.watch_clients, &env.scope) {
                let shared = env.shared.clone();
                caches.push(AbortOnDropHandle::new(tokio::spawn(async move {
                    while let Some(owner) = wakeups.next().await {
                        shared.notices.wake(&owner);
                    }
                })));
            }
        }
        let mut kinds = Vec::new();
        for (name, start) in self.kinds {
            let (cell, handle, census, reshard) = start(&env).await?;
            tracing::info!(kind = %name, "kind supervisor started");
            kinds.push(KindHandle {
                name,
                cell,
                handle,
                census,
                reshard,
            });
        }
        Ok(Operator {
            root,
            root_handle,
            kinds,
            caches,
            sharded: self.sharded,
            server_shard: self.server_shard,
            placement,
        })
    }
}

struct KindHandle {
    name: String,
    cell: ActorCell,
    handle: JoinHandle<()>,
    census: AskCensus,
    reshard: KindReshard,
}

/// Hands every kind of a running operator a new share of the objects.
#[derive(Clone)]
pub struct Resharder {
    kinds: Vec<KindReshard>,
    caches: Vec<Arc<dyn FollowsShare>>,
    /// The steps added by [`Resharder::also`].
    steps: Vec<ShareStep>,
    server_shard: Option<Arc<ShardSelector>>,
    placement: Placement,
}

impl Resharder {
    /// Also runs `step` with every new share (beside the kinds; `apply` waits for it too):
    /// what a member writes for its share outside the kinds' actors.
    pub fn also<F, Fut>(mut self, step: F) -> Self
    where
        F: Fn(Arc<Ownership>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.steps
            .push(Arc::new(move |ownership| Box::pin(step(ownership))));
        self
    }

    /// Every kind drains what `ownership` excludes; once all did, the sharded caches follow
    /// the share (listing again where it grew) and the kinds adopt what it adds. Returns once
    /// all that and the added steps ended (`false`: a kind did not answer, it is gone and the
    /// process ends anyway).
    pub async fn apply(&self, ownership: Ownership) -> bool {
        let ownership = Arc::new(ownership);
        // Watches starting again meanwhile (to list the new share, or after a drop) ask for
        // both shares while either is held somewhere; the new one alone once all hold it.
        if let Some(selector) = &self.server_shard {
            selector.include(&ownership);
        }
        let kinds = async {
            let drains = self.kinds.iter().map(|k| (k.drain)(ownership.clone()));
            let drained = futures::future::join_all(drains).await;
            if drained.iter().any(Option::is_none) {
                return false;
            }
            let follows = self
                .caches
                .iter()
                .map(|c| c.follow_share(ownership.clone()));
            futures::future::join_all(follows).await;
            let adopts = self.kinds.iter().map(|k| (k.adopt)());
            futures::future::join_all(adopts)
                .await
                .into_iter()
                .all(|ok| ok)
        };
        let steps = futures::future::join_all(self.steps.iter().map(|s| s(ownership.clone())));
        let (kinds, steps) = futures::join!(kinds, steps);
        if let Some(selector) = &self.server_shard {
            selector.set(&ownership);
        }
        kinds && steps.into_iter().all(|ok| ok)
    }

    /// How the operator places objects (the ring's members must agree on it).
    pub fn placement(&self) -> Placement {
        self.placement
    }
}

/// The running actor tree.
pub struct Operator {
    root: ActorRef<RootMsg>,
    root_handle: JoinHandle<()>,
    kinds: Vec<KindHandle>,
    /// The shared caches' forwarding tasks; dropping them stops the cache watches.
    caches: Vec<AbortOnDropHandle<()>>,
    sharded: Vec<Arc<dyn FollowsShare>>,
    server_shard: Option<Arc<ShardSelector>>,
    placement: Placement,
}

impl Operator {
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.kinds.iter().map(|k| k.name.as_str())
    }

    /// The handle a membership loop changes this member's share through.
    pub fn resharder(&self) -> Resharder {
        Resharder {
            kinds: self.kinds.iter().map(|k| k.reshard.clone()).collect(),
            caches: self.sharded.clone(),
            steps: Vec::new(),
            server_shard: self.server_shard.clone(),
            placement: self.placement,
        }
    }

    /// Resolves when a kind supervisor ended on its own (it failed): the operator no longer
    /// manages that kind, so the process should exit and be restarted.
    pub async fn failed(&mut self) -> String {
        if self.kinds.is_empty() {
            return std::future::pending().await;
        }
        let (_, index, _) =
            futures::future::select_all(self.kinds.iter_mut().map(|k| &mut k.handle)).await;
        // Its handle is spent: `shutdown` must not await it again.
        self.kinds.remove(index).name
    }

    /// What each kind supervisor holds per object: live and hibernated actors, restarts,
    /// armed timers (a kind that does not answer is left out).
    pub async fn census(&self) -> Vec<KindCensus> {
        let mut out = Vec::new();
        for kind in &self.kinds {
            out.extend((kind.census)().await);
        }
        out
    }

    /// Stop the watches, let in-flight passes finish (each kind bounds this by its
    /// `shutdown_grace`), then stop the root. `bound` caps the whole shutdown.
    pub async fn shutdown(self, bound: Duration) {
        let Self {
            root,
            root_handle,
            kinds,
            caches,
            ..
        } = self;
        drop(caches);
        let all = async {
            for kind in &kinds {
                kind.cell.stop(Some("shutdown".into()));
            }
            for kind in kinds {
                if let Err(err) = kind.handle.await {
                    tracing::warn!(kind = %kind.name, error = %err, "kind supervisor ended badly");
                }
            }
            let _ = root.send_message(RootMsg::Shutdown);
            let _ = root_handle.await;
        };
        if tokio::time::timeout(bound, all).await.is_err() {
            tracing::warn!(?bound, "shutdown did not finish in time");
        }
    }
}
