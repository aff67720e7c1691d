//! The CNPG secret router: one metadata-only Secret watch feeding an index of which managed
//! objects use which Secrets, so a Secret change wakes exactly the objects that use it.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::api::GROUP as OWN_GROUP;
use crate::k8s::WatchScope;
use crate::messages::shared::{RouterStats, SecretMeta, SecretRouterMsg};
use crate::reconcile::secret_index::{KindKey, ObjectKey, RELOAD_LABEL, SecretIndex};

/// Where a routed Secret change goes: the runtime plugs its object registry in here.
pub trait SecretSubscriber: Send + Sync + 'static {
    fn secret_changed(&self, object: &KindKey, secret: &ObjectKey);
}

/// Reduces a Secret's metadata to what routing needs.
pub fn secret_meta(secret: &PartialObjectMeta<Secret>) -> SecretMeta {
    let namespace = secret.namespace().unwrap_or_default();
    let owner = secret
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.api_version.split('/').next() == Some(OWN_GROUP))
        .map(|o| KindKey::new(&o.kind, &namespace, &o.name));
    SecretMeta {
        key: ObjectKey::new(&namespace, secret.name_any()),
        resource_version: secret.resource_version(),
        owner,
        reload_label: secret.labels().contains_key(RELOAD_LABEL),
    }
}

pub struct SecretRouter;

#[derive(Clone)]
pub struct RouterArgs {
    pub subscriber: Arc<dyn SecretSubscriber>,
    /// `None`: no watch (tests feed `Applied`/`Deleted` themselves).
    pub watch: Option<(Client, WatchScope)>,
}

pub struct RouterState {
    index: SecretIndex,
    subscriber: Arc<dyn SecretSubscriber>,
    stats: RouterStats,
    watch: Option<JoinHandle<()>>,
}

impl RouterState {
    fn wake(&mut self, objects: &[KindKey], secret: &ObjectKey) {
        for object in objects {
            debug!(%object, %secret, "secret change routed");
            self.subscriber.secret_changed(object, secret);
        }
        self.stats.wakeups += objects.len() as u64;
    }
}

impl Actor for SecretRouter {
    type Msg = SecretRouterMsg;
    type State = RouterState;
    type Arguments = RouterArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: RouterArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let watch = args
            .watch
            .map(|(client, scope)| tokio::spawn(forward_secret_events(client, scope, myself)));
        Ok(RouterState {
            index: SecretIndex::new(),
            subscriber: args.subscriber,
            stats: RouterStats::default(),
            watch,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(watch) = state.watch.take() {
            watch.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: SecretRouterMsg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SecretRouterMsg::Register { object, secrets } => state.index.register(&object, secrets),
            SecretRouterMsg::Forget { object } => state.index.forget(&object),
            SecretRouterMsg::Applied(meta) => {
                state.stats.events_seen += 1;
                if let Some(objects) = state.index.applied(&meta) {
                    state.stats.events_admitted += 1;
                    state.wake(&objects, &meta.key);
                }
            }
            SecretRouterMsg::Deleted(meta) => {
                state.stats.events_seen += 1;
                if let Some(objects) = state.index.deleted(&meta) {
                    state.stats.events_admitted += 1;
                    state.wake(&objects, &meta.key);
                }
            }
            SecretRouterMsg::RelistStarted { scope } => state.index.relist_started(&scope),
            SecretRouterMsg::RelistDone { scope } => {
                // Secrets deleted while the watch was down: their users re-read and see it.
                for (secret, objects) in state.index.relist_done(&scope) {
                    state.wake(&objects, &secret);
                }
            }
            SecretRouterMsg::Stats(reply) => {
                let mut stats = state.stats;
                stats.objects = state.index.object_count();
                stats.secrets = state.index.secret_count();
                stats.synced_scopes = state.index.synced_scopes();
                let _ = reply.send(stats);
            }
        }
        Ok(())
    }
}

/// Metadata-only: `Api<PartialObjectMeta<Secret>>` never fetches Secret data.
fn secret_watches(
    client: Client,
    scope: &WatchScope,
) -> Vec<(Option<String>, Api<PartialObjectMeta<Secret>>)> {
    match scope {
        WatchScope::All => vec![(None, Api::all(client))],
        WatchScope::Namespaces(names) => names
            .iter()
            .map(|ns| (Some(ns.clone()), Api::namespaced(client.clone(), ns)))
            .collect(),
    }
}

fn watch_one(
    scope: Option<String>,
    api: Api<PartialObjectMeta<Secret>>,
) -> impl Stream<Item = SecretRouterMsg> + Send {
    watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .filter_map(move |event| {
            let scope = scope.clone();
            async move {
                match event {
                    Ok(Event::Apply(s) | Event::InitApply(s)) => {
                        Some(SecretRouterMsg::Applied(secret_meta(&s)))
                    }
                    Ok(Event::Delete(s)) => Some(SecretRouterMsg::Deleted(secret_meta(&s))),
                    Ok(Event::Init) => Some(SecretRouterMsg::RelistStarted { scope }),
                    Ok(Event::InitDone) => Some(SecretRouterMsg::RelistDone { scope }),
                    Err(error) => {
                        warn!(%error, "secret metadata watch failed; retrying with backoff");
                        None
                    }
                }
            }
        })
}

/// Streams every watched namespace's Secret metadata to the router until it stops.
async fn forward_secret_events(
    client: Client,
    scope: WatchScope,
    router: ActorRef<SecretRouterMsg>,
) {
    let streams = secret_watches(client, &scope)
        .into_iter()
        .map(|(scope, api)| watch_one(scope, api).boxed());
    let mut events = futures::stream::select_all(streams);
    while let Some(message) = events.next().await {
        if router.cast(message).is_err() {
            return;
        }
    }
}
