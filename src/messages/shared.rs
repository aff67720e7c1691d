//! Messages of the CNPG secret router. (The prober and the refusal tracker answer one
//! start-up call each with their own result types; those messages live beside them.)

use ractor::RpcReplyPort;

use crate::children::Observed;

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
