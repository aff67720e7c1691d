//! The PgAccessRequest kind on the shared runtime: its reconciler, reading the operator's
//! caches (its RoleBindings, which Clusters exist).

mod reconciler;

pub use crate::children::REQUEST_LABEL;
pub use reconciler::{AccessRequestReconciler, KIND};
