//! Actors: the generic object actor every kind shares (later: one file per kind and the
//! shared actors).

pub mod access_request;
mod object;
mod object_reconciler;
mod object_timers;

pub use object::{ObjectActor, ObjectArgs, ObjectState};
pub use object_reconciler::{
    ObjectContext, Outcome, PassFailure, ReconcileError, Reconciler, Shared,
};
pub use object_timers::Timers;
