//! The EvidenceAgent kind on the shared runtime: its reconciler, reading the operator's caches.

mod reconciler;

pub use reconciler::{EvidenceAgentReconciler, KIND};
