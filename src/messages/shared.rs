//! Messages of the CNPG secret router. (The prober and the refusal tracker answer one
//! start-up call each with their own result types; those messages live beside them.)

use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use ractor::RpcReplyPort;

use super::{KindKey, ObjectKey};

/// Metadata of an object read without its contents.
pub type Meta = PartialObjectMeta<DynamicObject>;

/// One watch event of a referenced object, as its reference index judged it (the secret router
/// reads these to wake a Secret's owner too and to count what it saw).
#[derive(Clone, Debug)]
pub struct Observed {
    pub key: ObjectKey,
    /// The users to wake; `None` when nothing changed (a relist repeating a version) or while
    /// the scope's first list runs (no pass has read the index yet: nobody needs waking).
    pub changed: Option<Vec<KindKey>>,
    /// The object's metadata; `None` for one a relist found gone.
    pub meta: Option<Meta>,
}

/// Counters of the secret router, for tests and the benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouterStats {
    /// Objects that registered the Secrets they use.
    pub objects: usize,
    /// Secrets used by at least one object.
    pub secrets: usize,
    /// Watch scopes whose first list is done (one per namespace, or one for all).
    pub synced_scopes: usize,
    pub events_seen: u64,
    pub wakeups: u64,
}

pub enum SecretRouterMsg {
    /// One Secret watch event, judged by the Secret reference index.
    Observed(Box<Observed>),
    Stats(RpcReplyPort<RouterStats>),
}
