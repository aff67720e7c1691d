//! The PgAccessRequest kind on the shared runtime: its reconciler and the caches it reads.

mod caches;
mod reconciler;

pub use caches::{AccessCaches, KIND, REQUEST_LABEL};
pub use reconciler::AccessRequestReconciler;
