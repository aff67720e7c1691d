//! The embedded Kubernetes API server.
pub mod selector;
