//! Glue between the kinds and the conditions engine.

use kube::ResourceExt;

use super::{CommonStatus, EvidenceAgent, PgAccessRequest, PgAdmin, PgToolBoxConsole};
use crate::conditions::{Kind, PassFacts, StoredStatus};

impl<'a> From<&'a CommonStatus> for StoredStatus<'a> {
    fn from(status: &'a CommonStatus) -> Self {
        StoredStatus {
            conditions: &status.conditions,
            observed_generation: status.observed_generation,
        }
    }
}

/// A kind whose status the conditions engine computes.
pub trait ReportsConditions: ResourceExt {
    const KIND: Kind;

    /// The stored common status, if the object has a status at all.
    fn common_status(&self) -> Option<&CommonStatus>;

    /// The stored conditions and observed generation (empty on first touch).
    fn stored_status(&self) -> StoredStatus<'_> {
        self.common_status()
            .map(StoredStatus::from)
            .unwrap_or_default()
    }

    /// Empty facts for a pass over this object: its kind, generation and pause annotation.
    fn pass_facts(&self) -> PassFacts {
        PassFacts::new(Self::KIND, self.meta().generation.unwrap_or_default())
            .with_paused(super::is_paused(self.meta().annotations.as_ref()))
    }
}

impl ReportsConditions for PgAdmin {
    const KIND: Kind = Kind::PgAdmin;
    fn common_status(&self) -> Option<&CommonStatus> {
        self.status.as_ref().map(|s| &s.common)
    }
}

impl ReportsConditions for EvidenceAgent {
    const KIND: Kind = Kind::EvidenceAgent;
    fn common_status(&self) -> Option<&CommonStatus> {
        self.status.as_ref().map(|s| &s.common)
    }
}

impl ReportsConditions for PgToolBoxConsole {
    const KIND: Kind = Kind::PgToolBoxConsole;
    fn common_status(&self) -> Option<&CommonStatus> {
        self.status.as_ref().map(|s| &s.common)
    }
}

impl ReportsConditions for PgAccessRequest {
    const KIND: Kind = Kind::PgAccessRequest;
    fn common_status(&self) -> Option<&CommonStatus> {
        self.status.as_ref().map(|s| &s.common)
    }
}
