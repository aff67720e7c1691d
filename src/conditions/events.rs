//! Which Events a status transition is worth. Recorded by the caller only after the status
//! write succeeded, so a failed write (retried) never reports twice.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::errors::ErrorClass;
use super::event::{EventDecision, EventType};
use super::facts::{Hostname, PassFacts, Stall};
use super::reasons::common;
use super::types::{ConditionStatus, ConditionType, find_condition};

fn status_of(conditions: &[Condition], type_: ConditionType) -> Option<&Condition> {
    find_condition(conditions, type_)
}

fn is(condition: Option<&Condition>, status: ConditionStatus) -> bool {
    condition.is_some_and(|c| c.status == status.as_str())
}

/// The Events of one pass, from the stored and the new conditions.
///
/// - Ready turning True: Normal, AsExpected.
/// - Stalled turning True: Warning with the stall's reason.
/// - An aspect turning False, or False with a new reason: Warning with its reason, unless the
///   reason is quiet for the kind (a child on its way).
/// - A refused hostname: one Warning, unless a stored condition already says so (a refusal is
///   one fact however many conditions and passes state it).
/// - An error whose class was not reported since the last successful pass: Warning with it.
/// - Then the kind's own Events of this pass.
///
/// Warnings are deduplicated by reason, so one fact stated by two conditions (a refused
/// hostname in ConfigurationValid and ExposureReady, and the stall it causes) is one Event.
pub(crate) fn decide_events(
    facts: &PassFacts,
    stored: &[Condition],
    new: &[Condition],
    stall: Option<&Stall>,
) -> Vec<EventDecision> {
    let mut events = Vec::new();
    let old_ready = status_of(stored, ConditionType::Ready);
    if is(status_of(new, ConditionType::Ready), ConditionStatus::True)
        && !is(old_ready, ConditionStatus::True)
    {
        events.push(EventDecision::normal(
            common::AS_EXPECTED,
            "ready: every aspect holds",
        ));
    }
    if let Some(stall) = stall
        && !is(
            status_of(stored, ConditionType::Stalled),
            ConditionStatus::True,
        )
    {
        events.push(EventDecision::warning(stall.reason, &stall.message));
    }
    for aspect in facts.kind.aspects() {
        let Some(verdict) = facts.aspect(*aspect) else {
            continue;
        };
        if verdict.status != ConditionStatus::False || facts.kind.is_quiet(verdict.reason) {
            continue;
        }
        let old = status_of(stored, *aspect);
        let already = is(old, ConditionStatus::False)
            && old.is_some_and(|c| c.reason == verdict.reason.as_str());
        if !already {
            events.push(EventDecision::warning(verdict.reason, &verdict.message));
        }
    }
    if let Some(Hostname::Refused { message }) = &facts.hostname {
        let on_record = stored
            .iter()
            .any(|c| c.reason == common::HOSTNAME_NOT_ALLOWED.as_str());
        if on_record {
            events.retain(|e| e.reason != common::HOSTNAME_NOT_ALLOWED);
        } else {
            // The hostname's own words first, ahead of the stall and aspect Warnings.
            events.insert(
                0,
                EventDecision::warning(common::HOSTNAME_NOT_ALLOWED, message),
            );
        }
    }
    if let Some(error) = &facts.error
        && !reported_errors(stored).contains(&error.class)
    {
        events.push(EventDecision::warning(error.class.reason(), &error.text));
    }
    let mut seen = Vec::new();
    events.retain(|e| {
        if e.type_ == EventType::Normal {
            return true;
        }
        if seen.contains(&e.reason) {
            return false;
        }
        seen.push(e.reason);
        true
    });
    events.extend(facts.events.iter().cloned());
    events
}

/// The error classes reported since the last successful pass, as the stored Ready records
/// them (a pass without error writes another Ready, which forgets them).
pub(crate) fn reported_errors(stored: &[Condition]) -> Vec<ErrorClass> {
    status_of(stored, ConditionType::Ready)
        .filter(|c| {
            c.status == ConditionStatus::False.as_str()
                && c.reason == common::RECONCILE_ERROR.as_str()
        })
        .map(|c| ErrorClass::reported_in(&c.message))
        .unwrap_or_default()
}
