//! The PgToolBoxConsole kind on the shared runtime and caches.

mod children;
mod past_exposure;
mod reads;
mod reconciler;

pub use reconciler::{ConsoleError, ConsoleReconciler, KIND};
