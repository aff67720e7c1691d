//! Actors: the generic object actor every kind shares, and the shared actors (optional-API
//! prober, namespace-refusal tracker, CNPG secret router).

pub mod access_request;
pub mod console;
pub mod evidence_agent;
mod object;
mod object_reconciler;
mod object_timers;
pub mod pgadmin;
mod status_pass;

pub(crate) mod not_watched;
pub(crate) mod notice_routes;
pub mod prober;
pub mod refusals;
pub(crate) mod router_supervisor;
pub(crate) mod runtime_refusals;
pub mod secret_router;
pub mod shared;

pub use notice_routes::SecretRoutes;
pub use object::{ObjectActor, ObjectArgs, ObjectState};
pub use object_reconciler::{
    ObjectContext, Outcome, PassEnv, PassFailure, ReconcileError, Reconciler, Shared,
};
pub use object_timers::Timers;
pub use status_pass::{StatusPass, user_of};

/// Live object actors of one kind, by object key. Readable from outside (tests, the sim table).
pub type Registry<K> = std::sync::Arc<
    dashmap::DashMap<crate::messages::ObjectKey, ractor::ActorRef<crate::messages::ObjectMsg<K>>>,
>;
