//! Actors: the generic object actor every kind shares, and the shared actors (optional-API
//! prober, namespace-refusal tracker, CNPG secret router).

pub mod access_request;
pub mod console;
mod context;
pub mod evidence_agent;
mod listed;
mod object;
mod object_reconciler;
mod object_state;
mod object_timers;
mod pass_error;
pub mod pgadmin;
mod status_pass;

pub(crate) mod not_watched;
pub(crate) mod notice_routes;
pub(crate) mod past_exposure;
pub mod prober;
pub mod refusals;
pub(crate) mod router_supervisor;
pub(crate) mod runtime_refusals;
pub mod secret_router;
pub mod shared;

pub use context::{ObjectContext, PassEnv, Shared};
pub use listed::Listed;
pub use notice_routes::SecretRoutes;
pub use object::ObjectActor;
pub use object_reconciler::{Outcome, Reconciler};
pub use object_state::ObjectArgs;
pub use object_timers::Timers;
pub use pass_error::{PassFailure, ReconcileError};
pub use status_pass::{StatusPass, user_of};

/// Live object actors of one kind, by object key. Readable from outside (tests, the sim table).
pub type Registry<K> = std::sync::Arc<
    dashmap::DashMap<crate::messages::ObjectKey, ractor::ActorRef<crate::messages::ObjectMsg<K>>>,
>;
