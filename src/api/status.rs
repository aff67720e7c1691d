//! Glue between the kinds and the conditions engine.

use kube::ResourceExt;

use super::{CommonStatus, EvidenceAgent, PgAccessRequest, PgAdmin, PgToolBoxConsole};
use crate::conditions::{ConditionStatus, ConditionType, Kind, PassFacts, Reason, StoredStatus};

/// What an object's stored status says, as the object gauges count it. Reasons are the
/// registry's names (or `Other` for one the registry does not hold), so the label values stay
/// a bounded set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// The Ready condition's status (`True`, `False`, `Unknown`) and reason; `None` before the
    /// first status is written.
    pub ready: Option<(&'static str, &'static str)>,
    /// The reason of a `Stalled=True` condition.
    pub stalled: Option<&'static str>,
    /// The `notAfter` (Unix seconds) of a certificate the operator issued for the object.
    pub certificate_not_after: Option<i64>,
}

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

    /// Whether the stored status says a pass left the object converged at its current spec:
    /// `Ready=True` with the status observed at the object's generation. Its next pass is
    /// expected to write nothing.
    fn settled(&self) -> bool {
        let stored = self.stored_status();
        let ready = stored
            .conditions
            .iter()
            .find(|c| c.type_ == ConditionType::Ready.as_str());
        ready.is_some_and(|c| ConditionStatus::parse(&c.status) == ConditionStatus::True)
            && stored.observed_generation.is_some()
            && stored.observed_generation == self.meta().generation
    }

    /// What the stored status reports for the object gauges: Ready's status and reason, and
    /// the reason of a `Stalled=True`.
    fn reported(&self) -> Reported {
        let conditions = self.stored_status().conditions;
        let find = |type_: ConditionType| conditions.iter().find(|c| c.type_ == type_.as_str());
        let ready = find(ConditionType::Ready).map(|c| {
            (
                ConditionStatus::parse(&c.status).as_str(),
                reason_label(&c.reason),
            )
        });
        let stalled = find(ConditionType::Stalled)
            .filter(|c| ConditionStatus::parse(&c.status) == ConditionStatus::True)
            .map(|c| reason_label(&c.reason));
        Reported {
            ready,
            stalled,
            certificate_not_after: None,
        }
    }
}

/// A stored reason as a label value: its registered name, or `Other` for one the registry does
/// not hold (written by someone else), so the values stay a bounded set.
fn reason_label(reason: &str) -> &'static str {
    Reason::parse(reason).map_or("Other", Reason::as_str)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::actors::Reconciler;
    use crate::actors::evidence_agent::EvidenceAgentReconciler;

    fn agent(status: serde_json::Value) -> EvidenceAgent {
        serde_json::from_value(json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
            "kind": "EvidenceAgent",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"cluster": {"name": "orders"}},
            "status": status,
        }))
        .unwrap()
    }

    fn condition(type_: &str, status: &str, reason: &str) -> serde_json::Value {
        json!({"type": type_, "status": status, "reason": reason, "message": "m",
               "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1})
    }

    #[test]
    fn the_stored_conditions_and_certificate_are_reported() {
        let stalled = agent(json!({
            "conditions": [
                condition("Ready", "False", "ObjectStoreNotFound"),
                condition("Stalled", "True", "ObjectStoreNotFound"),
            ],
            "certificate": {"secret": "a-tls", "notAfter": "2027-01-01T00:00:00Z"},
        }));
        let reported = EvidenceAgentReconciler::reported(&stalled);
        assert_eq!(reported.ready, Some(("False", "ObjectStoreNotFound")));
        assert_eq!(reported.stalled, Some("ObjectStoreNotFound"));
        assert_eq!(reported.certificate_not_after, Some(1_798_761_600));

        // Stalled=False is no stall; a reason nobody registered is `Other`; no status, nothing.
        let other = agent(json!({
            "conditions": [
                condition("Ready", "Unknown", "SomeoneElses"),
                condition("Stalled", "False", "AsExpected"),
            ],
        }));
        let reported = other.reported();
        assert_eq!(reported.ready, Some(("Unknown", "Other")));
        assert_eq!(reported.stalled, None);
        assert_eq!(
            EvidenceAgentReconciler::reported(&other).certificate_not_after,
            None
        );
        assert_eq!(agent(json!(null)).reported(), Reported::default());
    }

    #[test]
    fn settled_is_ready_true_observed_at_the_current_generation() {
        let at = |generation: i64, observed: i64, ready: &str| {
            let mut object = agent(json!({
                "observedGeneration": observed,
                "conditions": [condition("Ready", ready, "AsExpected")],
            }));
            object.metadata.generation = Some(generation);
            EvidenceAgentReconciler::settled(&object)
        };
        assert!(at(3, 3, "True"));
        assert!(!at(4, 3, "True"), "the spec changed since");
        assert!(!at(3, 3, "False"));
        assert!(!at(3, 3, "Unknown"));
        assert!(!EvidenceAgentReconciler::settled(&agent(json!(null))));
    }
}
