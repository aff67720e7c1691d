//! What passes read instead of the API: the owned-children store (our children, by owner),
//! the reference index (objects our objects name, and who names them), and the child applier.

mod applier;
mod caches;
mod child_set;
mod contents;
mod create;
mod external;
mod host_claims;
mod one_read;
mod references;
mod registrations;
mod relist;
mod role_reads;
mod store;
mod synced;
mod writes;

pub use crate::reconcile::children::{Component, MANAGED_BY, MANAGED_BY_LABEL};
pub use applier::{
    Applier, ApplyError, ApplyReport, ChildOwner, ChildRefusal, ChildVerdict, Desired, unchanged,
};
pub(crate) use applier::{applied_hash, carries_applied_hash, with_hash};
pub use caches::{CACHE_WAIT, CacheStart, OperatorCaches, REQUEST_LABEL, wait_synced};
pub use child_set::ChildSet;
pub use contents::Contents;
pub use create::FIELD_MANAGER;
pub use external::{HttpRoute, Route};
pub use one_read::OneRead;
pub use references::{Meta, Observations, Observed, ReferenceIndex, secrets_resource};
pub use registrations::Track;
pub use relist::Relist;
pub use role_reads::RoleReads;
pub use store::{ChildStore, FollowsShare, Ingest, OwnerOf, Wakeups, our_owner, owner_label};
pub use synced::{NotSynced, Synced};
pub use writes::budget_closed;

/// What the stores and the applier ask of a child kind: a namespaced Kubernetes object that can
/// be cloned, printed, (de)serialised and shared between tasks (every k8s-openapi kind is one).
pub trait ChildKind:
    kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + std::fmt::Debug
    + serde::Serialize
    + serde::de::DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<C> ChildKind for C where
    C: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static
{
}
