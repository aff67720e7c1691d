//! A [`Decision`] in the conditions engine's terms: aspect verdicts, Events, status fields.

use serde_json::{Map, Value};

use super::decide::{BindingVerdict, ConfigVerdict, Decision, Deletion, RequestEvent};
use crate::conditions::reasons::{access_request as r, common};
use crate::conditions::{ConditionType, EventDecision, FactsError, PassFacts, Verdict};

/// Adds this pass's aspects to `facts` (which carries kind, generation and pause).
pub fn pass_facts(facts: PassFacts, decision: &Decision) -> Result<PassFacts, FactsError> {
    // An aspect this pass does not say is kept as stored by the conditions engine.
    let facts = match config(&decision.config) {
        Some(verdict) => facts.with_aspect(ConditionType::ConfigurationValid, verdict)?,
        None => facts,
    };
    facts
        .with_aspect(
            ConditionType::RoleBindingSynced,
            binding(decision.binding, &decision.binding_message),
        )
        .map(|f| f.with_children_converged(decision.converged()))
}

/// The ConfigurationValid verdict; `None` when this pass cannot tell (the stored one stands).
fn config(verdict: &ConfigVerdict) -> Option<Verdict> {
    Some(match verdict {
        ConfigVerdict::Valid { message } => Verdict::holds(common::AS_EXPECTED, message),
        // A request never stalls (its table says so): expiry and revocation keep working.
        ConfigVerdict::ClusterNotFound { message } => {
            Verdict::fails(common::CLUSTER_NOT_FOUND, message)
        }
        ConfigVerdict::ClusterRoleNotFound { message } => {
            Verdict::fails(r::CLUSTER_ROLE_NOT_FOUND, message)
        }
        ConfigVerdict::Invalid { message } => {
            Verdict::fails(common::CONFIGURATION_INVALID, message)
        }
        ConfigVerdict::Unknown => return None,
    })
}

fn binding(verdict: BindingVerdict, message: &str) -> Verdict {
    use BindingVerdict as B;
    match verdict {
        B::AwaitingDecision => Verdict::holds(r::AWAITING_DECISION, message),
        B::AccessGranted => Verdict::holds(r::ACCESS_GRANTED, message),
        B::AccessDenied => Verdict::holds(r::ACCESS_DENIED, message),
        B::AccessExpired => Verdict::holds(r::ACCESS_EXPIRED, message),
        B::AccessRevoked => Verdict::holds(r::ACCESS_REVOKED, message),
        B::RoleBindingOrphaned => Verdict::holds(r::ROLE_BINDING_ORPHANED, message),
        B::SelfApprovalRefused => Verdict::holds(r::SELF_APPROVAL_REFUSED, message),
        B::RoleBindingMissing => Verdict::fails(r::ROLE_BINDING_MISSING, message),
        B::RoleBindingDrifted => Verdict::fails(r::ROLE_BINDING_DRIFTED, message),
        B::NotEvaluated => Verdict::unknown(common::INITIALIZING, message),
    }
}

/// The kind's own status fields this pass writes: only a phase the operator moved.
pub fn status_fields(decision: &Decision) -> Map<String, Value> {
    let mut fields = Map::new();
    if let Some(phase) = &decision.new_phase {
        fields.insert("phase".into(), Value::from(phase.as_str()));
    }
    fields
}

/// The Events of the request's own decisions (the engine adds the transition Events).
pub fn request_events(decision: &Decision) -> Vec<EventDecision> {
    decision
        .events
        .iter()
        .map(|event| match event {
            RequestEvent::AccessExpired => EventDecision::normal(
                r::ACCESS_EXPIRED,
                "the request reached spec.expiresAt; its access is withdrawn",
            ),
            RequestEvent::SelfApprovalRefused { approver } => EventDecision::warning(
                r::SELF_APPROVAL_REFUSED,
                &format!(
                    "{approver:?} approved its own request; the approval is revoked (four eyes)"
                ),
            ),
        })
        .collect()
}

/// The Event recorded after one RoleBinding was deleted.
pub fn deletion_event(deletion: &Deletion) -> EventDecision {
    EventDecision::normal(
        r::ROLE_BINDING_DELETED,
        &format!(
            "deleted RoleBinding {}: {}",
            deletion.name,
            deletion.cause.describe()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::{ConditionStatus, Kind, StoredStatus, derive_status, find_condition};
    use k8s_openapi::jiff::Timestamp;

    fn decision(config: ConfigVerdict, binding: BindingVerdict) -> Decision {
        Decision {
            deletions: vec![],
            adoptions: vec![],
            new_phase: None,
            config,
            binding,
            binding_message: "m".into(),
            events: vec![],
            expiry_at: None,
            grace_ends: None,
        }
    }

    fn ready_of(d: &Decision) -> (String, String) {
        let facts = pass_facts(PassFacts::new(Kind::PgAccessRequest, 1), d).unwrap();
        let update = derive_status(&facts, StoredStatus::default(), Timestamp::now());
        let ready = find_condition(&update.conditions, ConditionType::Ready).unwrap();
        let stalled = find_condition(&update.conditions, ConditionType::Stalled).unwrap();
        assert_eq!(
            stalled.status,
            ConditionStatus::False.as_str(),
            "never stalls"
        );
        (ready.status.clone(), ready.reason.clone())
    }

    #[test]
    fn ready_follows_the_request_aspects() {
        let valid = || ConfigVerdict::Valid {
            message: "ok".into(),
        };
        let cases = [
            (valid(), BindingVerdict::AccessGranted, "True", "AsExpected"),
            (valid(), BindingVerdict::AccessDenied, "True", "AsExpected"),
            (valid(), BindingVerdict::AccessExpired, "True", "AsExpected"),
            (
                valid(),
                BindingVerdict::RoleBindingMissing,
                "False",
                "RoleBindingMissing",
            ),
            (
                valid(),
                BindingVerdict::RoleBindingDrifted,
                "False",
                "RoleBindingDrifted",
            ),
            (
                ConfigVerdict::ClusterNotFound {
                    message: "x".into(),
                },
                BindingVerdict::AccessGranted,
                "False",
                "ClusterNotFound",
            ),
            (
                ConfigVerdict::ClusterRoleNotFound {
                    message: "x".into(),
                },
                BindingVerdict::AwaitingDecision,
                "False",
                "ClusterRoleNotFound",
            ),
            (
                ConfigVerdict::Invalid {
                    message: "x".into(),
                },
                BindingVerdict::NotEvaluated,
                "False",
                "ConfigurationInvalid",
            ),
        ];
        for (config, binding, status, reason) in cases {
            let d = decision(config, binding);
            assert_eq!(ready_of(&d), (status.into(), reason.into()), "{binding:?}");
        }
    }

    #[test]
    fn a_pass_that_could_not_read_the_cluster_role_keeps_the_stored_condition() {
        let now = Timestamp::now();
        let stored_after = |config: ConfigVerdict| {
            let d = decision(config, BindingVerdict::AwaitingDecision);
            let facts = pass_facts(PassFacts::new(Kind::PgAccessRequest, 1), &d).unwrap();
            derive_status(&facts, StoredStatus::default(), now).conditions
        };
        let unknown = decision(ConfigVerdict::Unknown, BindingVerdict::AwaitingDecision);
        let facts = pass_facts(PassFacts::new(Kind::PgAccessRequest, 1), &unknown).unwrap();
        for (before, reason) in [
            (
                ConfigVerdict::ClusterRoleNotFound {
                    message: "x".into(),
                },
                "ClusterRoleNotFound",
            ),
            (
                ConfigVerdict::Valid {
                    message: "ok".into(),
                },
                "AsExpected",
            ),
        ] {
            let stored = stored_after(before);
            let update = derive_status(
                &facts,
                StoredStatus {
                    conditions: &stored,
                    observed_generation: Some(1),
                },
                now,
            );
            let kept = find_condition(&update.conditions, ConditionType::ConfigurationValid);
            assert_eq!(kept.map(|c| c.reason.as_str()), Some(reason));
        }
        // Never read yet: not evaluated, rather than said valid or missing.
        let update = derive_status(&facts, StoredStatus::default(), now);
        let first = find_condition(&update.conditions, ConditionType::ConfigurationValid);
        assert_eq!(
            first.map(|c| (c.status.as_str(), c.reason.as_str())),
            Some(("Unknown", "Initializing"))
        );
    }

    #[test]
    fn phase_is_written_only_when_the_operator_moves_it() {
        let mut d = decision(
            ConfigVerdict::Valid {
                message: "ok".into(),
            },
            BindingVerdict::AccessExpired,
        );
        assert!(status_fields(&d).is_empty());
        d.new_phase = Some(crate::api::AccessPhase::Expired);
        assert_eq!(
            status_fields(&d).get("phase"),
            Some(&Value::from("Expired"))
        );
    }
}
