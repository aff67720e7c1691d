//! PgAccessRequest decisions: pure, unit-tested, no I/O.
mod decide;
mod identity;
mod pass;
mod status;

/// The label that makes a RoleBinding "a RoleBinding of the request" named by its value. The
/// approver creates these bindings (the kubectl plugin, the console as the signed-in user), so
/// they carry this label and not our managed-by label.
pub const REQUEST_LABEL: &str = "pgtoolbox.fyannk.dev/access-request";

pub use decide::{BindingVerdict, Decision, ORPHAN_GRACE, RequestFacts, decide};
#[cfg(test)]
pub use decide::{ConfigVerdict, DeletionCause, RequestEvent};
#[cfg(test)]
pub use identity::rbac_subject;
pub use identity::{binds_exactly, describe, keep_binding};
pub use pass::{TIMER_SLACK, needs_live_read, timers};
pub use status::{deletion_event, pass_facts, request_events, status_fields};

#[cfg(test)]
mod tests;
