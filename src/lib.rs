//! pgtoolbox-operator: CloudNativePG tools as declarative Kubernetes objects.
pub mod reconcile;
pub mod sim;
