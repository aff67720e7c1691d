//! The record of which stored RBAC rules allowed requests, per user (least-privilege
//! audits). Plain data the server holds; the authorizer fills it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// One rule of a stored role, as granted through one binding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RuleRef {
    /// `ClusterRole/NAME` or `Role/NS/NAME`: the role the rule is written in (for an aggregated
    /// ClusterRole, the aggregated one it came from).
    pub role: String,
    /// Its index in that role's `rules`.
    pub index: usize,
    /// What it allowed: the verb, and `GROUP/RESOURCE[/SUB]` (`/RESOURCE` for the core group)
    /// or the non-resource path (empty when the rule is only listed, not exercised).
    pub verb: String,
    pub resource: String,
}

/// Which stored rules allowed a request, per user (`/_sim/rbac/exercised`).
#[derive(Default)]
pub struct Audit {
    exercised: std::sync::Mutex<BTreeMap<String, BTreeSet<RuleRef>>>,
}

impl Audit {
    pub(crate) fn record(&self, user: &str, at: RuleRef) {
        let mut m = self.exercised.lock().unwrap_or_else(|p| p.into_inner());
        m.entry(user.to_string()).or_default().insert(at);
    }

    pub fn exercised(&self) -> BTreeMap<String, BTreeSet<RuleRef>> {
        self.exercised
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn clear(&self) {
        self.exercised
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}
