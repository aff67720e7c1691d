//! The PgAccessRequest kind on the shared runtime: its reconciler, reading the operator's
//! caches (its RoleBindings, which Clusters exist).

mod observe;
mod reconciler;
mod writes;

pub use crate::children::REQUEST_LABEL;
pub use reconciler::AccessRequestReconciler;
