//! The PgAdmin kind on the shared runtime: its reconciler, what it reads from the shared caches
//! and the two Secrets no child store caches.

mod children;
mod error;
mod exposure;
mod inputs;
mod observe;
mod reconciler;
mod secrets;
mod settings_db;

pub use crate::reconcile::pgadmin::BUILTIN_OAUTH2_PROXY_IMAGE;
pub use reconciler::PgAdminReconciler;
