//! Actors: the per-object actors and the shared ones.
pub mod prober;
pub mod secret_router;
