//! pgtoolbox-operator: CloudNativePG tools as declarative Kubernetes objects.
pub mod api;
pub mod conditions;
pub mod sim;
