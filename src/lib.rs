//! pgtoolbox-operator: CloudNativePG tools as declarative Kubernetes objects.
pub mod conditions;
pub mod sim;
