//! PgAccessRequest decisions: pure, unit-tested, no I/O.
mod decide;
mod identity;

pub use decide::{
    BindingVerdict, ConfigVerdict, Decision, Deletion, DeletionCause, ORPHAN_GRACE, Phase,
    RequestEvent, RequestFacts, decide,
};
pub use identity::{Subject, SubjectKind, binds_exactly};

#[cfg(test)]
mod tests;
