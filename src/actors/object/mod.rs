//! The object runtime every kind shares: one actor per managed object ([`ObjectActor`]), the
//! seam to a kind ([`Reconciler`]), what a pass runs with, how it fails, and what every kind
//! does the same around its pass.

mod actor;
mod context;
mod listed;
pub(crate) mod not_watched;
mod pass_error;
mod reconciler;
mod state;
mod status_pass;
mod timers;

pub use actor::ObjectActor;
pub use context::{ObjectContext, PassEnv, Shared};
pub use listed::Listed;
pub use pass_error::{PassFailure, ReconcileError};
pub use reconciler::{Outcome, Reconciler};
pub use state::ObjectArgs;
pub use status_pass::{StatusPass, user_of};
pub use timers::Timers;
