//! Messages of the shared actors: the optional-API prober, the namespace-refusal tracker and
//! the CNPG secret router.

use std::sync::Arc;

use ractor::RpcReplyPort;

use crate::actors::runtime_refusals::RuntimeRefusals;
use crate::reconcile::namespace_permissions::WatchPlan;
use crate::reconcile::optional_api::{Availability, OptionalApi, ProbeResult};
pub use crate::reconcile::secret_index::SecretMeta;
use crate::reconcile::secret_index::{KindKey, SecretKey};

pub enum ProberMsg {
    /// The whole answer, to share read-only.
    Result(RpcReplyPort<Arc<ProbeResult>>),
    Availability {
        api: OptionalApi,
        namespace: String,
        reply: RpcReplyPort<Availability>,
    },
}

pub enum RefusalMsg {
    /// The namespaces kept and dropped at start.
    Plan(RpcReplyPort<Arc<WatchPlan>>),
    /// The shared recorder of 403s met at run time.
    Runtime(RpcReplyPort<Arc<RuntimeRefusals>>),
}

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
        secrets: Vec<SecretKey>,
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
