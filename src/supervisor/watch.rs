//! The managed kind's watch streams. Children never get a watch of their own here: they wake
//! their owners through the shared caches (`OperatorBuilder::cache`).

pub use crate::k8s::{EventSource, WatchScope};
