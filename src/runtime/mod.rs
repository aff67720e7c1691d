//! What the supervisors and the actors both use: the backoff policy, the operator settings and
//! the runtime metrics. (Watch streams are in `k8s`, the caches in `children`.)

mod backoff;
mod metrics;
mod settings;
mod timer_wheel;

pub use backoff::BackoffPolicy;
pub use metrics::{PassResult, RuntimeMetrics};
pub use settings::{DefaultImages, OperatorSettings};
pub use timer_wheel::TimerWheel;
