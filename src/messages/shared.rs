//! Messages of the CNPG secret router. (The prober and the refusal tracker answer one
//! start-up call each with their own result types; those messages live beside them.)

use ractor::RpcReplyPort;

use super::{KindKey, ObjectKey};

/// Counters of the secret router, for tests and the benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouterStats {
    pub objects: usize,
    pub secrets: usize,
    /// Watch scopes whose first list is done (one per namespace, or one for all).
    pub synced_scopes: usize,
    pub events_seen: u64,
    pub events_admitted: u64,
    pub wakeups: u64,
}

pub enum SecretRouterMsg {
    /// Replace every Secret reference of `object` (after each reconcile).
    Register {
        object: KindKey,
        secrets: Vec<ObjectKey>,
    },
    /// The object is gone: drop its references.
    Forget {
        object: KindKey,
    },
    /// A Secret was added or changed.
    Applied(SecretMeta),
    /// A Secret was deleted.
    Deleted(SecretMeta),
    /// The watch of `scope` (a namespace, `None` = all) re-lists: what follows until
    /// `RelistDone` is its full current set.
    RelistStarted {
        scope: Option<String>,
    },
    RelistDone {
        scope: Option<String>,
    },
    Stats(RpcReplyPort<RouterStats>),
}

/// A change to one Secret as the metadata watch saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretMeta {
    pub key: ObjectKey,
    pub resource_version: Option<String>,
    /// The controller owner when it is one of our kinds.
    pub owner: Option<KindKey>,
    pub reload_label: bool,
}
