//! What the supervisors and the actors both use: the backoff policy, the operator settings and
//! the runtime metrics. (Watch streams are in `k8s`, the caches in `children`.)

mod backoff;
mod clock;
mod metrics;
pub mod random;
mod settings;
mod timer_wheel;

pub use backoff::BackoffPolicy;
pub use clock::Clock;
pub use metrics::{PassResult, RuntimeMetrics};
pub use settings::{
    DEFAULT_OPERATOR_NAMESPACE, DefaultImages, FIRST_PASSES_AT_ONCE, OperatorSettings,
};
pub use timer_wheel::TimerWheel;
