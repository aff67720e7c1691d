//! The PgToolBoxConsole kind on the shared runtime and caches.

mod apply;
mod bundle;
mod children;
mod error;
mod observe;
mod reads;
mod reconciler;
mod trust;

pub use reconciler::ConsoleReconciler;
