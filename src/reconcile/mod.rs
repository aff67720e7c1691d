//! Pure decisions: observed world in, desired state and facts out. No I/O.
pub mod namespace_permissions;
pub mod optional_api;
pub mod secret_index;
