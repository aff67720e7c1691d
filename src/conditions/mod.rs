//! The conditions engine (pure, no I/O): from what a reconciliation pass found out, the whole
//! new status of an object (conditions + observedGeneration), whether it needs writing, and
//! the Events to record once it is written. See `docs/conditions.md`.

mod engine;
mod errors;
mod events;
mod facts;
mod kinds;
mod message;
mod patch;
pub mod reasons;
mod types;

pub use engine::{
    MAX_CONDITIONS, StatusUpdate, StoredStatus, derive_status, find_condition,
    namespace_not_watched,
};
pub use errors::{ClassifiedError, ErrorClass, classify};
pub use events::{EventDecision, EventType};
pub use facts::{FactsError, PassFacts, Stall, Verdict};
pub use kinds::Kind;
pub use message::{MESSAGE_LIMIT_BYTES, bound_message};
pub use patch::status_patch;
pub use reasons::{Owner, Reason};
pub use types::{ConditionStatus, ConditionType};

#[cfg(test)]
mod tests;
