//! Actors: the per-object actors and the shared ones.
pub mod not_watched;
pub mod prober;
pub mod refusals;
pub mod runtime_refusals;
pub mod secret_router;
