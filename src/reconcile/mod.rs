//! Pure per-kind decisions: observed world in, children and condition facts out.
pub mod pgaccessrequest;
