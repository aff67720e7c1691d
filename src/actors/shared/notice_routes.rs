//! The one wake-up route: a changed child, a changed reference (from a cache's index or the
//! secret router) wakes the actor of one object of any kind, live or hibernated; and the
//! handle object actors use to tell the secret router what they read.

use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::mpsc::UnboundedSender;

use crate::actors::Registry;
use crate::actors::secret_router::SecretSubscriber;
use crate::children::{ReferenceIndex, Track, secrets_resource};
use crate::messages::{KindKey, ObjectKey, ObjectMsg};

type Deliver = Box<dyn Fn(&ObjectKey) -> bool + Send + Sync>;

/// What goes to a kind supervisor for an object without a live actor (a hibernated one
/// wakes): one of its children or references changed.
pub type Wakeup = ObjectKey;

/// The live-actor registries of every kind, behind one type-erased lookup, and the way to
/// their supervisors for the objects whose actor hibernates.
#[derive(Default)]
pub struct NoticeRoutes {
    kinds: DashMap<String, Deliver>,
}

impl std::fmt::Debug for NoticeRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<String> = self.kinds.iter().map(|e| e.key().clone()).collect();
        f.debug_struct("NoticeRoutes")
            .field("kinds", &kinds)
            .finish()
    }
}

impl NoticeRoutes {
    /// Makes the objects of `kind` reachable: their live actors through `registry`, the others
    /// through `asleep`, read by the kind's supervisor.
    pub fn add_kind<K>(&self, kind: &str, registry: Registry<K>, asleep: UnboundedSender<Wakeup>)
    where
        K: Send + Sync + 'static,
    {
        let deliver: Deliver = Box::new(move |key| {
            // Sent while the registry's shard guard is held: the supervisor takes an actor out
            // of the registry before it hibernates, so this message either reaches the actor
            // before that or goes to the supervisor after it.
            if let Some(actor) = registry.get(key)
                && actor.send_message(ObjectMsg::ChildChanged).is_ok()
            {
                return true;
            }
            asleep.send(key.clone()).is_ok()
        });
        self.kinds.insert(kind.to_owned(), deliver);
    }

    /// Wakes the owner of a changed child (or the user of a changed reference), hibernated or
    /// not: its actor, or its supervisor when it has none right now. Unknown, or a restart
    /// pending: dropped, its next pass reads the caches anyway. False when the kind is not
    /// running.
    pub fn wake(&self, owner: &KindKey) -> bool {
        self.kinds
            .get(owner.kind.as_str())
            .is_some_and(|deliver| deliver(&owner.object_key()))
    }
}

impl SecretSubscriber for NoticeRoutes {
    /// The same wake-up as a cache's: the pass reads the Secret's version from the index, so
    /// which Secret changed need not travel.
    fn secret_changed(&self, object: &KindKey, secret: &ObjectKey) {
        if !self.wake(object) {
            tracing::debug!(%object, %secret, "no kind running for a secret change");
        }
    }
}

/// The Secret reference index the secret router feeds: object actors register there which
/// Secrets they use (each user woken on every new version). Without a router (unit tests of a
/// kind) the index is simply never fed.
#[derive(Clone)]
pub struct SecretRoutes {
    index: Arc<ReferenceIndex>,
    /// Whether a router watches Secrets into `index`.
    routed: bool,
}

impl Default for SecretRoutes {
    fn default() -> Self {
        Self {
            index: ReferenceIndex::new("Secrets", secrets_resource()),
            routed: false,
        }
    }
}

impl std::fmt::Debug for SecretRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretRoutes")
            .field("routed", &self.routed)
            .finish()
    }
}

impl SecretRoutes {
    /// The index a running secret router feeds.
    pub fn routed(index: Arc<ReferenceIndex>) -> Self {
        Self {
            index,
            routed: true,
        }
    }

    /// The index, when a router feeds it (the caches then share it instead of watching again).
    pub fn routed_index(&self) -> Option<&Arc<ReferenceIndex>> {
        self.routed.then_some(&self.index)
    }

    /// After each pass: every Secret the object uses now (replaces what it registered before).
    pub fn register(&self, kind: &str, key: &ObjectKey, secrets: Vec<ObjectKey>) {
        let user = KindKey::new(kind, &key.namespace, &key.name);
        self.index.register(&user, secrets, Track::Version);
    }

    /// The object is gone: its references go with it.
    pub fn forget(&self, kind: &str, key: &ObjectKey) {
        self.index
            .forget(&KindKey::new(kind, &key.namespace, &key.name));
    }
}
