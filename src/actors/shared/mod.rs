//! The shared actors, one per operator: the optional-API prober, the namespace-refusal tracker
//! (with the refusals met at run time), and the CNPG secret router with its supervisor and the
//! routes of its notices; started together before any watch ([`start_shared_actors`]).

pub(crate) mod notice_routes;
pub(crate) mod past_exposure;
pub mod prober;
pub mod refusals;
pub(crate) mod router_supervisor;
pub(crate) mod runtime_refusals;
pub mod secret_router;
mod start;

pub use start::{SharedActors, SharedStartError, start_shared_actors, start_shared_actors_owning};
