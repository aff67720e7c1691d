//! What the supervisors and the actors both use: the backoff policy, the operator settings and
//! the runtime metrics. (Watch streams are in `k8s`, the caches in `children`.)

mod backoff;
mod metrics;
mod settings;

pub use backoff::BackoffPolicy;
pub use metrics::{PassResult, RuntimeMetrics};
pub use settings::{DEFAULT_OPERATOR_NAMESPACE, DefaultImages, OperatorSettings};
