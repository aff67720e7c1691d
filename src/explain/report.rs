//! From what was read of one object (its conditions, its children's facts, its Events) to the
//! report `explain` prints (pure). Ready is explained the way the conditions engine derives
//! it: the first aspect of the kind's order that is not True at the current generation decides.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::Serialize;

use crate::conditions::reasons::common;
use crate::conditions::{ConditionType, Kind, Reason, find_condition};

/// The fact of one child, as its controller or the platform wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildFact {
    pub kind: String,
    pub name: String,
    /// A short state: a registered reason where one names it (`ImagePullFailed`), else the
    /// child's own word (`Complete`, `Admitted`, `Failed`).
    pub state: String,
    pub detail: String,
    /// Whether this child is as it should be.
    pub healthy: bool,
}

/// One Event about the object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventFact {
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
    /// When it was last seen (RFC 3339), when the Event says.
    pub last_seen: Option<String>,
}

/// Everything read about one object.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub generation: Option<i64>,
    pub conditions: Vec<Condition>,
    pub children: Vec<ChildFact>,
    /// Oldest first.
    pub events: Vec<EventFact>,
    /// What could not be read (a kind not served, a list refused), said rather than hidden.
    pub unread: Vec<String>,
}

/// What a condition is to the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    Summary,
    Aspect,
    Advisory,
    /// A condition of a type the kind does not write (another controller's).
    Foreign,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionReport {
    #[serde(rename = "type")]
    pub type_: String,
    pub role: Role,
    pub status: String,
    pub reason: String,
    pub message: String,
    /// Evaluated at an older generation than the object's.
    pub stale: bool,
    /// The reason registry's texts; absent for a reason that is not ours.
    pub meaning: Option<&'static str>,
    pub action: Option<&'static str>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub ready: bool,
    /// The aspect that decides Ready when it is not True.
    pub decided_by: Option<String>,
    /// One sentence: why Ready is what it is.
    pub summary: String,
    pub conditions: Vec<ConditionReport>,
    pub children: Vec<ChildFact>,
    pub events: Vec<EventFact>,
    pub unread: Vec<String>,
}

/// The first aspect, in the kind's order, that is absent, not True, or evaluated at another
/// generation than `generation`.
fn deciding_aspect(
    kind: Kind,
    conditions: &[Condition],
    generation: Option<i64>,
) -> Option<ConditionType> {
    kind.aspects()
        .iter()
        .copied()
        .find(|aspect| match find_condition(conditions, *aspect) {
            None => true,
            Some(c) => c.status != "True" || stale(c, generation),
        })
}

fn stale(c: &Condition, generation: Option<i64>) -> bool {
    matches!((c.observed_generation, generation), (Some(seen), Some(now)) if seen < now)
}

fn role(kind: Kind, type_: &str) -> Role {
    let is = |types: &[ConditionType]| types.iter().any(|t| t.as_str() == type_);
    if is(&[
        ConditionType::Ready,
        ConditionType::Progressing,
        ConditionType::Stalled,
    ]) {
        Role::Summary
    } else if is(kind.aspects()) {
        Role::Aspect
    } else if is(kind.advisories()) {
        Role::Advisory
    } else {
        Role::Foreign
    }
}

/// The kind's condition order (Ready, Progressing, Stalled, aspects, advisories), then others.
fn order(kind: Kind, type_: &str) -> usize {
    let types = kind.condition_types();
    types
        .iter()
        .position(|t| t.as_str() == type_)
        .unwrap_or(types.len())
}

fn summary(observed: &Observed, decided_by: Option<ConditionType>) -> String {
    let kind = observed.kind;
    let Some(ready) = find_condition(&observed.conditions, ConditionType::Ready) else {
        return "Ready is not reported yet: the operator has not written this object's status (is it running and watching this namespace?)".to_owned();
    };
    let reason = ready.reason.as_str();
    if ready.status == "True" {
        let aspects: Vec<&str> = kind.aspects().iter().map(|a| a.as_str()).collect();
        return format!("Ready is True: every aspect holds ({})", aspects.join(", "));
    }
    if reason == common::RECONCILE_ERROR.as_str() {
        return format!(
            "Ready is {}: the last reconciliation pass failed",
            ready.status
        );
    }
    if reason == common::RECONCILIATION_PAUSED.as_str() {
        return format!("Ready is {}: reconciliation is paused", ready.status);
    }
    if reason == common::NAMESPACE_NOT_WATCHED.as_str() {
        return format!(
            "Ready is {}: the operator does not watch this namespace",
            ready.status
        );
    }
    match decided_by {
        Some(aspect) => {
            let aspects = kind.aspects();
            let place = aspects
                .iter()
                .position(|a| *a == aspect)
                .map_or(0, |p| p + 1);
            let state = match find_condition(&observed.conditions, aspect) {
                None => "not reported yet".to_owned(),
                Some(c) if stale(c, observed.generation) => {
                    format!("{} {} at an older generation", c.status, c.reason)
                }
                Some(c) => format!("{} {}", c.status, c.reason),
            };
            format!(
                "Ready is {} ({}): decided by {aspect}, aspect {place} of {} ({state})",
                ready.status,
                ready.reason,
                aspects.len()
            )
        }
        None => format!("Ready is {} ({})", ready.status, ready.reason),
    }
}

/// The report of one object.
pub fn report(observed: &Observed) -> Report {
    let kind = observed.kind;
    let ready = find_condition(&observed.conditions, ConditionType::Ready)
        .is_some_and(|c| c.status == "True");
    let decided_by = (!ready)
        .then(|| deciding_aspect(kind, &observed.conditions, observed.generation))
        .flatten();
    let mut conditions: Vec<ConditionReport> = observed
        .conditions
        .iter()
        .map(|c| {
            let registered = Reason::parse(&c.reason);
            ConditionReport {
                type_: c.type_.clone(),
                role: role(kind, &c.type_),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
                stale: stale(c, observed.generation),
                meaning: registered.map(Reason::meaning),
                action: registered.map(Reason::action),
            }
        })
        .collect();
    conditions.sort_by_key(|c| order(kind, &c.type_));
    Report {
        kind: kind.as_str(),
        namespace: observed.namespace.clone(),
        name: observed.name.clone(),
        ready,
        decided_by: decided_by.map(|a| a.as_str().to_owned()),
        summary: summary(observed, decided_by),
        conditions,
        children: observed.children.clone(),
        events: observed.events.clone(),
        unread: observed.unread.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(type_: &str, status: &str, reason: &str, generation: i64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: format!("{type_} says {reason}"),
            observed_generation: Some(generation),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        }
    }

    fn observed(conditions: Vec<Condition>) -> Observed {
        Observed {
            kind: Kind::PgAdmin,
            namespace: "team-a".into(),
            name: "x".into(),
            generation: Some(2),
            conditions,
            children: Vec::new(),
            events: Vec::new(),
            unread: Vec::new(),
        }
    }

    #[test]
    fn the_first_aspect_not_true_decides_in_the_kinds_order() {
        let r = report(&observed(vec![
            condition("ServersSynced", "Unknown", "PgAdminNotRunning", 2),
            condition("Ready", "False", "ImagePullFailed", 2),
            condition("WorkloadReady", "False", "ImagePullFailed", 2),
            condition("ConfigurationValid", "True", "AsExpected", 2),
            condition("ExposureReady", "True", "NotRequested", 2),
        ]));
        assert!(!r.ready);
        assert_eq!(r.decided_by.as_deref(), Some("WorkloadReady"));
        assert!(r.summary.contains("aspect 2 of 4"), "{}", r.summary);
        let types: Vec<&str> = r.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            types,
            [
                "Ready",
                "ConfigurationValid",
                "WorkloadReady",
                "ExposureReady",
                "ServersSynced"
            ]
        );
        let pull = &r.conditions[2];
        assert_eq!(pull.role, Role::Aspect);
        assert_eq!(pull.meaning, Some(common::IMAGE_PULL_FAILED.meaning()));
        assert_eq!(pull.action, Some(common::IMAGE_PULL_FAILED.action()));
    }

    #[test]
    fn a_stale_aspect_decides_even_when_true() {
        let r = report(&observed(vec![
            condition("Ready", "Unknown", "Reconciling", 2),
            condition("ConfigurationValid", "True", "AsExpected", 1),
        ]));
        assert_eq!(r.decided_by.as_deref(), Some("ConfigurationValid"));
        assert!(r.summary.contains("older generation"), "{}", r.summary);
        assert!(r.conditions[1].stale);
    }

    #[test]
    fn ready_names_no_aspect_and_errors_and_pauses_say_so() {
        let all_true: Vec<Condition> = std::iter::once(condition("Ready", "True", "AsExpected", 2))
            .chain(
                Kind::PgAdmin
                    .aspects()
                    .iter()
                    .map(|a| condition(a.as_str(), "True", "AsExpected", 2)),
            )
            .collect();
        let r = report(&observed(all_true));
        assert!(r.ready);
        assert_eq!(r.decided_by, None);
        assert!(r.summary.starts_with("Ready is True"), "{}", r.summary);

        let r = report(&observed(vec![condition(
            "Ready",
            "False",
            "ReconcileError",
            2,
        )]));
        assert!(r.summary.contains("pass failed"), "{}", r.summary);
        let r = report(&observed(vec![condition(
            "Ready",
            "Unknown",
            "ReconciliationPaused",
            2,
        )]));
        assert!(r.summary.contains("paused"), "{}", r.summary);
        let r = report(&observed(Vec::new()));
        assert!(!r.ready);
        assert!(r.summary.contains("not reported"), "{}", r.summary);
    }

    #[test]
    fn foreign_conditions_and_reasons_carry_no_texts() {
        let r = report(&observed(vec![condition("Backup", "True", "Done", 2)]));
        assert_eq!(r.conditions[0].role, Role::Foreign);
        assert_eq!(r.conditions[0].meaning, None);
    }
}
