//! pgtoolbox-operator: CloudNativePG tools as declarative Kubernetes objects.
pub mod actors;
pub mod api;
pub mod children;
pub mod cli;
pub mod conditions;
pub mod explain;
pub mod health;
pub mod k8s;
pub mod messages;
pub mod metrics;
pub mod reconcile;
pub(crate) mod runtime;
pub mod status;
pub mod supervisor;
