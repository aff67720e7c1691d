use kube::runtime::watcher;

use super::ObjectKey;

/// Messages of a per-kind supervisor.
#[derive(Debug)]
pub enum KindMsg<K> {
    /// An event of the managed kind's watch number `source` (one watch per watched namespace).
    Watch {
        source: usize,
        event: watcher::Event<K>,
    },
    /// An owned child changed; route to the owner's actor (children watched by the kind
    /// itself; the shared caches wake owners directly).
    ChildChanged(ObjectKey),
    /// The restart backoff of a failed object actor elapsed: spawn it again.
    Respawn(ObjectKey),
    /// A restarted object actor completed a pass: forget its restart count.
    Recovered(ObjectKey),
}

/// Messages of the root supervisor. It only supervises; it has nothing to be told but to stop.
#[derive(Debug)]
pub enum RootMsg {
    Shutdown,
}
