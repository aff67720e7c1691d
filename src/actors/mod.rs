//! Actors: the object runtime every kind shares (`object/`), the shared actors (`shared/`:
//! optional-API prober, namespace-refusal tracker, CNPG secret router), one folder per kind.

pub mod access_request;
pub mod console;
pub mod evidence_agent;
mod object;
pub mod pgadmin;
pub mod shared;

pub(crate) use object::not_watched;
pub use object::{
    Listed, ObjectActor, ObjectArgs, ObjectContext, Outcome, PassEnv, PassFailure, ReconcileError,
    Reconciler, Shared, StatusPass, user_of,
};
pub use shared::notice_routes::SecretRoutes;
pub(crate) use shared::{notice_routes, past_exposure, router_supervisor, runtime_refusals};
pub use shared::{prober, refusals, secret_router};

/// Live object actors of one kind, by object key. Readable from outside (tests, the sim table).
pub type Registry<K> = std::sync::Arc<
    dashmap::DashMap<crate::messages::ObjectKey, ractor::ActorRef<crate::messages::ObjectMsg<K>>>,
>;
