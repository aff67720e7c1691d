//! Actors: the per-object actors and the shared ones.
pub mod prober;
pub mod refusals;
pub mod runtime_refusals;
pub mod secret_router;
