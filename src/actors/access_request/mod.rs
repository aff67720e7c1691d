//! The PgAccessRequest kind on the shared runtime: its reconciler and its caches.

mod cache;
mod reconciler;

pub use cache::{AccessCaches, REQUEST_LABEL};
pub use reconciler::AccessRequestReconciler;
