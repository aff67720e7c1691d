//! Watch streams and the namespaces they cover: resilient (kube's watcher relists with backoff),
//! `managedFields` dropped.

use std::fmt::Debug;

use futures::stream::{BoxStream, StreamExt};
use kube::core::NamespaceResourceScope;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::lenient::{Lenient, UndecodableFilter, UndecodableReport};
use super::watch_restart::{FirstList, Generation, restartable};

/// Events of one watch of the managed kind, each object decoded on its own (one that cannot be
/// decoded comes as [`Lenient::Undecodable`]).
pub type EventSource<K> = BoxStream<'static, watcher::Event<Lenient<K>>>;

/// The clients the operator's watches go through.
#[derive(Clone)]
pub struct WatchClients {
    /// Every watch of what is not kept by share: the reference indexes (any member's object
    /// may name what they hold).
    pub all: Client,
    /// The watches of what a member keeps by its share placed by namespace (its kinds, their
    /// children in the owner's namespace): server-side sharded where that is on
    /// (`k8s::sharded_client`), else `all`.
    pub share: Client,
}

impl WatchClients {
    /// One client for every watch.
    pub fn same(client: &Client) -> Self {
        Self {
            all: client.clone(),
            share: client.clone(),
        }
    }
}

/// Which namespaces the operator watches (`WATCH_NAMESPACES`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchScope {
    All,
    Namespaces(Vec<String>),
}

impl WatchScope {
    pub fn from_namespaces(namespaces: &[String]) -> Self {
        if namespaces.is_empty() {
            Self::All
        } else {
            Self::Namespaces(namespaces.to_vec())
        }
    }

    /// The namespace of each watch, in the order of [`WatchScope::apis`]; `None` is cluster-wide.
    pub fn namespaces(&self) -> Vec<Option<String>> {
        match self {
            Self::All => vec![None],
            Self::Namespaces(list) => list.iter().cloned().map(Some).collect(),
        }
    }

    /// One API handle per watch: a single cluster-wide one, or one per namespace.
    pub fn apis<K>(&self, client: &Client) -> Vec<Api<K>>
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
    {
        match self {
            Self::All => vec![Api::all(client.clone())],
            Self::Namespaces(list) => list
                .iter()
                .map(|ns| Api::namespaced(client.clone(), ns))
                .collect(),
        }
    }
}

/// A resilient watch: kube's watcher relists after drops and `410 Gone` (with backoff that
/// only progress resets, `backoff_until_progress`);
/// errors are logged here and never end the stream. `managedFields` are dropped to keep the
/// cached copy small. It lists again whenever `restarts` changes (a member's share grew), and
/// first when `first` says.
pub fn watch_events<K>(
    api: Api<K>,
    config: watcher::Config,
    restarts: watch::Receiver<Generation>,
    first: FirstList,
) -> BoxStream<'static, watcher::Event<K>>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    restartable(
        move || raw_events(api.clone(), config.clone()),
        restarts,
        first,
    )
    .filter_map(|(_, result)| async move { log_watch_error::<K, _>(result) })
    .boxed()
}

/// [`watch_events`] of one of our kinds, each object decoded on its own: one the kind's type
/// cannot decode is reported through `report` and handed on as such (the kind leaves it out of
/// its store), the others go on.
pub fn watch_each_object<K>(
    api: Api<Lenient<K>>,
    config: watcher::Config,
    restarts: watch::Receiver<Generation>,
    first: FirstList,
    report: UndecodableReport,
) -> EventSource<K>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let mut filter = UndecodableFilter::new(report);
    watch_events(api, config, restarts, first)
        .inspect(move |event| filter.observe(event))
        .boxed()
}

/// The watcher's events with the backoff and without `managedFields`, errors included.
pub fn raw_events<K>(
    api: Api<K>,
    config: watcher::Config,
) -> BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    super::backoff_until_progress(watcher(api, config))
        .modify(|obj: &mut K| obj.managed_fields_mut().clear())
        .boxed()
}

/// Watch errors are logged; the watcher itself relists and resumes with backoff.
fn log_watch_error<K: Resource<DynamicType = ()>, E>(
    result: Result<E, watcher::Error>,
) -> Option<E> {
    match result {
        Ok(event) => Some(event),
        Err(err) => {
            tracing::warn!(kind = %K::kind(&()), error = %err, "watch error, resuming");
            None
        }
    }
}
