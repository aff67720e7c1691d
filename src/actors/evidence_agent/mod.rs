//! The EvidenceAgent kind on the shared runtime: its reconciler, reading the operator's caches,
//! and the operator's CA for the `operator` certificate provider.

mod ca;
mod certificate;
mod observe;
mod reconciler;

pub use ca::CA_SECRET_NAME;
pub use reconciler::EvidenceAgentReconciler;
