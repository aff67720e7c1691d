//! The EvidenceAgent kind on the shared runtime: its reconciler and the caches it reads.

mod caches;
mod reconciler;

pub use caches::{CacheStart, EvidenceCaches, KIND, object_stores};
pub use reconciler::EvidenceAgentReconciler;
