//! Delivery of shared actors' notices (a changed Secret) to the actor of one object of any
//! kind, and the handle object actors use to tell the secret router what they read.

use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::mpsc::UnboundedSender;

use crate::actors::Registry;
use crate::actors::router_supervisor::RouterSlot;
use crate::actors::secret_router::SecretSubscriber;
use crate::messages::shared::SecretRouterMsg;
use crate::messages::{KindKey, Notice, ObjectKey, ObjectMsg};

/// `None`: one of the object's children or references changed.
type Deliver = Box<dyn Fn(&ObjectKey, Option<Notice>) -> bool + Send + Sync>;

/// Wakes every object of a kind.
type WakeAll = Box<dyn Fn() + Send + Sync>;

/// What goes to a kind supervisor for objects without a live actor (hibernated ones wake).
#[derive(Debug)]
pub enum Wakeup {
    /// `None`: one of the object's children or references changed.
    One(ObjectKey, Option<Notice>),
    All,
}

/// The live-actor registries of every kind, behind one type-erased lookup, and the way to
/// their supervisors for the objects whose actor hibernates.
#[derive(Default)]
pub struct NoticeRoutes {
    kinds: DashMap<String, Deliver>,
    every: DashMap<String, WakeAll>,
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
        let all = asleep.clone();
        let wake_all: WakeAll = Box::new(move || {
            let _ = all.send(Wakeup::All);
        });
        self.every.insert(kind.to_owned(), wake_all);
        let deliver: Deliver = Box::new(move |key, notice| {
            // Sent while the registry's shard guard is held: the supervisor takes an actor out
            // of the registry before it hibernates, so this message either reaches the actor
            // before that or goes to the supervisor after it.
            if let Some(actor) = registry.get(key) {
                let message = match notice.clone() {
                    Some(notice) => ObjectMsg::Notice(notice),
                    None => ObjectMsg::ChildChanged,
                };
                if actor.send_message(message).is_ok() {
                    return true;
                }
            }
            asleep.send(Wakeup::One(key.clone(), notice)).is_ok()
        });
        self.kinds.insert(kind.to_owned(), deliver);
    }

    /// Sends `notice` to the object's actor, or to its supervisor when it has none right now
    /// (a hibernated object is woken; for a pending restart or a gone object it is dropped:
    /// the next pass reads everything afresh anyway). False when the kind is not running.
    pub fn deliver(&self, kind: &str, key: &ObjectKey, notice: Notice) -> bool {
        self.kinds
            .get(kind)
            .is_some_and(|deliver| deliver(key, Some(notice)))
    }

    /// Wakes every object of every kind, hibernated ones included (after a shared index was
    /// lost and rebuilt).
    pub fn wake_all(&self) {
        for wake in self.every.iter() {
            wake();
        }
    }

    /// Wakes the owner of a changed child (or the user of a changed reference), hibernated or
    /// not. Unknown, or a restart pending: dropped, its next pass reads the caches anyway.
    pub fn wake(&self, owner: &KindKey) -> bool {
        self.kinds
            .get(owner.kind.as_str())
            .is_some_and(|deliver| deliver(&owner.object_key(), None))
    }
}

impl SecretSubscriber for NoticeRoutes {
    fn secret_changed(&self, object: &KindKey, secret: &ObjectKey) {
        let key = ObjectKey::new(object.namespace.as_str(), object.name.as_str());
        let notice = Notice::SecretChanged {
            name: secret.name.clone(),
        };
        if !self.deliver(&object.kind, &key, notice) {
            tracing::debug!(%object, %secret, "no kind running for a secret change");
        }
    }
}

/// How object actors keep the secret router's index current. Without a router (unit tests of a
/// kind) every call is a no-op.
#[derive(Clone, Debug, Default)]
pub struct SecretRoutes {
    router: Option<Arc<RouterSlot>>,
}

impl SecretRoutes {
    /// Routes to whichever router the supervisor runs now.
    pub fn new(router: Arc<RouterSlot>) -> Self {
        Self {
            router: Some(router),
        }
    }

    /// After each pass: every Secret the object uses now (replaces what it registered before).
    pub fn register(&self, kind: &str, key: &ObjectKey, secrets: Vec<ObjectKey>) {
        self.send(SecretRouterMsg::Register {
            object: KindKey::new(kind, &key.namespace, &key.name),
            secrets,
        });
    }

    /// The object is gone: its references go with it.
    pub fn forget(&self, kind: &str, key: &ObjectKey) {
        self.send(SecretRouterMsg::Forget {
            object: KindKey::new(kind, &key.namespace, &key.name),
        });
    }

    fn send(&self, message: SecretRouterMsg) {
        let Some(slot) = &self.router else {
            return;
        };
        // While a restart is pending the update is lost; the restarted router wakes every
        // object, whose next pass registers again.
        if slot
            .current()
            .is_none_or(|router| router.cast(message).is_err())
        {
            tracing::warn!("the secret router is restarting; a reference update is lost");
        }
    }
}
