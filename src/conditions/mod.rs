//! The conditions engine (pure, no I/O): from what a reconciliation pass found out, the whole
//! new status of an object (conditions + observedGeneration), whether it needs writing, and
//! the Events to record once it is written. See `docs/conditions.md`.
//!
//! ```
//! use pgtoolbox_operator::api::{PgToolBoxConsole, ReportsConditions};
//! use pgtoolbox_operator::testing::conditions::{
//!     ClassifiedError, ConditionType, Hostname, StatusField, Timestamp, Verdict, derive_status,
//!     reasons::common, status_patch,
//! };
//!
//! fn finish_pass(obj: &PgToolBoxConsole, apply: Result<bool, kube::Error>, url: Option<String>)
//!     -> Result<(), pgtoolbox_operator::testing::conditions::FactsError>
//! {
//!     let stored_url = obj.status.as_ref().and_then(|s| s.url.clone());
//!     // Kind, generation and the pause annotation come from the object.
//!     let mut facts = obj
//!         .pass_facts()
//!         .with_hostname(Hostname::Allowed)?
//!         .with_aspect(ConditionType::ConfigurationValid, Verdict::holds(common::AS_EXPECTED, "all references resolve"))?
//!         .with_aspect(ConditionType::WorkloadReady, Verdict::fails(common::ROLLOUT_IN_PROGRESS, "1 of 2 replicas updated"))?
//!         .without_advisory(ConditionType::ExposureConfined)?
//!         .with_status_field(StatusField::Url, &url, &stored_url)?;
//!     match apply {
//!         Ok(converged) => facts = facts.with_children_converged(converged),
//!         Err(e) => facts = facts.with_error(ClassifiedError::from_kube(&e)),
//!     }
//!     let update = derive_status(&facts, obj.stored_status(), Timestamp::now());
//!     if update.changed {
//!         let body = status_patch(&update, serde_json::Map::new(), None);
//!         # let _ = body;
//!         // PATCH /status (merge patch) with `body`; only when it succeeded:
//!         // record update.events.
//!     } else {
//!         // Nothing to write: record update.events now (only the kind's own Events).
//!     }
//!     // update.stall: do not back off; update.timers: when to look again without a change.
//!     Ok(())
//! }
//! ```

mod engine;
mod errors;
mod event;
mod events;
mod facts;
mod fields;
mod kinds;
mod message;
mod patch;
mod readable;
pub mod reasons;
mod types;
mod verdict;

pub use engine::{
    StatusUpdate, StoredStatus, derive_status, namespace_not_watched, undecodable_status,
};
pub use errors::{ClassifiedError, ErrorClass, classify};
pub use event::{EventDecision, EventType};
pub use facts::{FactsError, Hostname, PassFacts, Subject, Verdict};
pub use fields::StatusField;
pub use kinds::{Kind, STALL_RECHECK, STALL_RECHECK_LONG};
pub use message::{MESSAGE_LIMIT_BYTES, digest_condition_messages, is_digest, message_matches};
pub use patch::status_patch;
pub use readable::readable;
pub use reasons::Reason;
pub use types::{ConditionStatus, ConditionType, find_condition};

/// The timestamp type `derive_status` takes (k8s-openapi's jiff, not the crate's own).
pub use k8s_openapi::jiff::Timestamp;

#[cfg(test)]
pub use engine::MAX_CONDITIONS;

#[cfg(test)]
mod tests;
