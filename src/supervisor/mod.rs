//! The supervision tree: a root that cannot fail, one supervisor per managed kind (watches,
//! registry, restarts), one actor per object below it.

mod backoff;
mod kind;
mod kinds;
pub mod leader;
mod metrics;
mod operator;
mod root;
mod settings;
mod watch;

pub use backoff::BackoffPolicy;
pub use kind::{KindArgs, KindOptions, KindState, KindSupervisor, Registry};
pub use kinds::register_all;
pub use metrics::{PassResult, RuntimeMetrics};
pub use operator::{Kind, Operator, OperatorBuilder};
pub use root::RootSupervisor;
pub use settings::{DefaultImages, OperatorSettings};
pub use watch::{
    ChildWatch, EventSource, OwnerSource, WatchScope, owner_from_controller, owner_from_label,
    watch_events,
};

#[cfg(test)]
mod tests;
