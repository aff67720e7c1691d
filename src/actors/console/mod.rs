//! The PgToolBoxConsole kind on the shared runtime and caches.

mod bundle;
mod children;
mod past_exposure;
mod reads;
mod reconciler;
mod trust;

pub use reconciler::{ConsoleError, ConsoleReconciler, KIND};
