//! PgAccessRequest decisions: pure, unit-tested, no I/O.
mod decide;
mod identity;
mod pass;
mod status;

pub use decide::{
    Adoption, BindingVerdict, ConfigVerdict, Decision, Deletion, DeletionCause, ORPHAN_GRACE,
    RequestEvent, RequestFacts, decide,
};
pub use identity::{binds_exactly, describe, rbac_subject};
pub use pass::{TIMER_SLACK, needs_live_read, timers};
pub use status::{deletion_event, pass_facts, request_events, status_fields};

#[cfg(test)]
mod tests;
