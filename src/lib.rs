//! pgtoolbox-operator: CloudNativePG tools as declarative Kubernetes objects.
pub(crate) mod actors;
pub mod api;
pub(crate) mod children;
pub mod cli;
pub(crate) mod conditions;
pub(crate) mod explain;
pub(crate) mod health;
pub(crate) mod k8s;
pub(crate) mod messages;
pub(crate) mod metrics;
pub(crate) mod reconcile;
pub(crate) mod ring;
pub(crate) mod runtime;
pub(crate) mod status;
pub(crate) mod supervisor;
#[doc(hidden)]
pub mod testing;

/// CIDR blocks as the console's ingress analysis reads them; the console program checks its
/// trusted proxies with the same type.
pub use reconcile::console::cidr::Cidr;
