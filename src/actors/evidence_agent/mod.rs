//! The EvidenceAgent kind on the shared runtime: its reconciler and the caches it reads.

mod ca;
mod caches;
mod reconciler;

pub use ca::{CA_SECRET_NAME, CaError, CaStore};
pub use caches::{CacheStart, EvidenceCaches, KIND, object_stores};
pub use reconciler::EvidenceAgentReconciler;
