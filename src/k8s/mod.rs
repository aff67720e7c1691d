//! Thin I/O helpers shared by every kind.

mod manifests;
mod status;
mod write_budget;

pub use manifests::{ManifestError, apply_manifests};
pub use status::patch_status;
pub use write_budget::{WriteBudget, WriteBudgetClosed};
