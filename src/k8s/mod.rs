//! Thin I/O helpers shared by every kind.

mod status;
mod write_budget;

pub use status::patch_status;
pub use write_budget::{WriteBudget, WriteBudgetClosed};
