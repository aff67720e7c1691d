//! The engine: from a pass's facts and the stored conditions, the whole new status.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{Timestamp, TimestampRound, Unit};

use super::event::EventDecision;
use super::events::{decide_events, reported_errors};
use super::facts::{Hostname, PassFacts, Stall};
use super::kinds::recheck_purpose;
use super::message::{bound_message, is_digest, message_matches};
use super::reasons::{Reason, common};
use super::types::{ConditionStatus, ConditionType, find_condition};
use crate::messages::TimerPurpose;

/// metav1 allows any number of conditions; we promise at most this many.
pub const MAX_CONDITIONS: usize = 16;

/// The status the pass ends with, and what to do about it.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusUpdate {
    /// The whole new `status.conditions`.
    pub conditions: Vec<Condition>,
    /// The new `status.observedGeneration`.
    pub observed_generation: i64,
    /// The kind's status fields as this pass wants them (`null` removes one); written with
    /// the conditions by [`status_patch`](super::status_patch).
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// False when the stored status already says all this (conditions, observed generation
    /// and status fields): write nothing.
    pub changed: bool,
    /// The change is in condition messages alone (every type, status, reason, generation and
    /// transition time as stored, the status fields too): a progress report that the next
    /// change of a burst replaces, which the writer may hold back for a moment.
    pub messages_only: bool,
    /// Events to record once the status write has succeeded (never before, never on failure);
    /// when nothing changed there is no write, and they are recorded at once (only the kind's
    /// own Events can be there then).
    pub events: Vec<EventDecision>,
    /// The stall of this pass: do not retry with backoff, wait for a watched change...
    pub stall: Option<Stall>,
    /// ...or, for a stall on an input that is not watched, look again after this long.
    pub recheck_after: Option<std::time::Duration>,
    /// Every timer of the pass: the stall recheck and the kind's own (renewal, expiry, a kept
    /// policy's wait). The runtime's `Outcome` is built from this and `stall`, in one place.
    pub timers: Vec<(TimerPurpose, Duration)>,
}

impl StatusUpdate {
    /// The earliest timer of the pass: when to look again without a watched change.
    pub fn next_wake_up(&self) -> Option<Duration> {
        self.timers.iter().map(|(_, d)| *d).min()
    }
}

/// The stored status as read with the object.
#[derive(Clone, Copy, Debug, Default)]
pub struct StoredStatus<'a> {
    pub conditions: &'a [Condition],
    pub observed_generation: Option<i64>,
}

/// Whether `new` and `stored` differ in messages alone.
fn same_but_messages(new: &[Condition], stored: &[Condition]) -> bool {
    new.len() == stored.len()
        && new.iter().zip(stored).all(|(n, s)| {
            n.type_ == s.type_
                && n.status == s.status
                && n.reason == s.reason
                && n.observed_generation == s.observed_generation
                && n.last_transition_time == s.last_transition_time
        })
}

/// Whether the stored conditions already say `new`, messages compared through their digests
/// when the stored copy keeps only those (a hibernated object's copy).
pub fn same_conditions(new: &[Condition], stored: &[Condition]) -> bool {
    new.len() == stored.len()
        && new.iter().zip(stored).all(|(n, s)| {
            n.type_ == s.type_
                && n.status == s.status
                && n.reason == s.reason
                && n.observed_generation == s.observed_generation
                && n.last_transition_time == s.last_transition_time
                && message_matches(&s.message, &n.message)
        })
}

impl StatusUpdate {
    /// Whether this status cannot be judged or written from a copy whose messages are digests
    /// (`stored`): it would write a stored message it only knows the digest of (a condition
    /// carried over, a kept stall), or the pass failed and the error's Ready message builds
    /// on the stored one. The writer reads the object's text again then; a quiet pass never.
    pub fn needs_stored_text(&self, stored: StoredStatus<'_>, failed: bool, writes: bool) -> bool {
        let digested = |m: &str| is_digest(m);
        if !stored.conditions.iter().any(|c| digested(&c.message)) {
            return false;
        }
        failed
            || self.events.iter().any(|e| digested(&e.note))
            || ((self.changed || writes) && self.conditions.iter().any(|c| digested(&c.message)))
    }
}

/// Derives the new status of one object from what this pass found out.
///
/// `now` is only used as the lastTransitionTime of conditions whose status changes.
pub fn derive_status(facts: &PassFacts, stored: StoredStatus<'_>, now: Timestamp) -> StatusUpdate {
    let now = whole_seconds(now);
    let builder = Builder {
        stored: stored.conditions,
        generation: facts.generation,
        now,
    };
    let aspects = derive_aspects(facts, &builder);
    let evaluated_now = |c: &Condition| {
        c.observed_generation == Some(facts.generation) && c.reason != common::INITIALIZING.as_str()
    };
    let stall = derive_stall(facts, &aspects, stored.conditions)
        .filter(|s| !facts.paused || s.reason == common::HOSTNAME_NOT_ALLOWED);

    let ready = derive_ready(facts, &aspects, &evaluated_now, &builder);
    let all_aspects_hold = aspects
        .iter()
        .all(|c| evaluated_now(c) && c.status == ConditionStatus::True.as_str());
    let converged = facts.children_converged && facts.error.is_none() && all_aspects_hold;
    let paused = facts.paused.then(|| facts.paused_message());
    let progressing = derive_progressing(paused.as_deref(), stall.as_ref(), converged, &builder);
    let stalled = match &stall {
        Some(s) => builder.make(
            ConditionType::Stalled,
            ConditionStatus::True,
            s.reason,
            &s.message,
        ),
        None => builder.make(
            ConditionType::Stalled,
            ConditionStatus::False,
            common::AS_EXPECTED,
            "progress does not wait for a change of input",
        ),
    };

    let mut conditions = vec![ready, progressing, stalled];
    conditions.extend(aspects);
    conditions.extend(derive_advisories(facts, &builder));
    let ours = facts.kind.condition_types();
    conditions.extend(
        stored
            .conditions
            .iter()
            .filter(|c| !ConditionType::parse(&c.type_).is_some_and(|t| ours.contains(&t)))
            .cloned(),
    );
    conditions.truncate(MAX_CONDITIONS);

    let fields = facts
        .fields
        .iter()
        .map(|f| (f.field.as_str().to_owned(), f.value.clone()))
        .collect();
    let conditions_changed = !same_conditions(&conditions, stored.conditions);
    let rest_changed = stored.observed_generation != Some(facts.generation)
        || facts.fields.iter().any(|f| f.changed);
    let messages_only =
        conditions_changed && !rest_changed && same_but_messages(&conditions, stored.conditions);
    let events = decide_events(facts, stored.conditions, &conditions, stall.as_ref());
    let recheck_after = stall
        .as_ref()
        .and_then(|s| facts.kind.stall_recheck(s.reason));
    StatusUpdate {
        timers: schedule(facts, recheck_after),
        conditions,
        observed_generation: facts.generation,
        fields,
        changed: conditions_changed || rest_changed,
        messages_only,
        events,
        stall,
        recheck_after,
    }
}

/// The one schedule of the pass: the stall's recheck, then the kind's own timers.
fn schedule(facts: &PassFacts, recheck_after: Option<Duration>) -> Vec<(TimerPurpose, Duration)> {
    recheck_after
        .map(|d| (recheck_purpose(d), d))
        .into_iter()
        .chain(facts.timers.iter().copied())
        .collect()
}

/// The stall of the pass: the first aspect, in the kind's order, that stalls by the kind's
/// table; or, for an aspect this pass did not evaluate (an error pass, a pass that stopped
/// early), the stored stall it caused, which an error does not lift.
fn derive_stall(facts: &PassFacts, aspects: &[Condition], stored: &[Condition]) -> Option<Stall> {
    let stored_stall = find_condition(stored, ConditionType::Stalled)
        .filter(|c| c.status == ConditionStatus::True.as_str());
    facts
        .kind
        .aspects()
        .iter()
        .zip(aspects)
        .find_map(|(aspect, condition)| {
            if let Some(verdict) = facts.aspect(*aspect) {
                return facts
                    .kind
                    .stalls_on(*aspect, verdict.status, verdict.reason, verdict.subject)
                    .then(|| Stall {
                        reason: verdict.reason,
                        message: verdict.message.clone(),
                    });
            }
            let kept = condition.status == ConditionStatus::False.as_str();
            let stalled = stored_stall.filter(|s| kept && s.reason == condition.reason)?;
            // Registered by construction: the stall was written by this engine.
            Some(Stall {
                reason: Reason::parse(&stalled.reason)?,
                message: stalled.message.clone(),
            })
        })
}
/// Status for an object in a namespace dropped at start for missing permissions: Ready turns
/// Unknown (NamespaceNotWatched) with a Warning; everything else is left as stored.
pub fn namespace_not_watched(
    generation: i64,
    stored: StoredStatus<'_>,
    message: &str,
    now: Timestamp,
) -> StatusUpdate {
    let builder = Builder {
        stored: stored.conditions,
        generation,
        now: whole_seconds(now),
    };
    let ready = builder.make(
        ConditionType::Ready,
        ConditionStatus::Unknown,
        common::NAMESPACE_NOT_WATCHED,
        message,
    );
    let mut conditions = vec![ready];
    conditions.extend(
        stored
            .conditions
            .iter()
            .filter(|c| c.type_ != ConditionType::Ready.as_str())
            .cloned(),
    );
    conditions.truncate(MAX_CONDITIONS);
    let already = find_condition(stored.conditions, ConditionType::Ready)
        .is_some_and(|c| c.reason == common::NAMESPACE_NOT_WATCHED.as_str());
    let events = if already {
        Vec::new()
    } else {
        vec![EventDecision::warning(
            common::NAMESPACE_NOT_WATCHED,
            message,
        )]
    };
    StatusUpdate {
        changed: !same_conditions(&conditions, stored.conditions),
        messages_only: false,
        conditions,
        observed_generation: stored.observed_generation.unwrap_or(generation),
        fields: serde_json::Map::new(),
        events,
        stall: None,
        recheck_after: None,
        timers: Vec::new(),
    }
}

/// Status for an object the operator cannot decode (it is left out of its kind's passes):
/// `ConfigurationValid` and `Ready` turn False, reason `ConfigurationInvalid`, with `message`;
/// everything else is left as stored. The Warning Event is the caller's.
pub fn undecodable_status(
    generation: i64,
    stored: StoredStatus<'_>,
    message: &str,
    now: Timestamp,
) -> StatusUpdate {
    let builder = Builder {
        stored: stored.conditions,
        generation,
        now: whole_seconds(now),
    };
    let make = |condition| {
        builder.make(
            condition,
            ConditionStatus::False,
            common::CONFIGURATION_INVALID,
            message,
        )
    };
    let replaced = [ConditionType::Ready, ConditionType::ConfigurationValid];
    let mut conditions: Vec<Condition> = replaced.iter().map(|c| make(*c)).collect();
    conditions.extend(
        stored
            .conditions
            .iter()
            .filter(|c| !replaced.iter().any(|r| c.type_ == r.as_str()))
            .cloned(),
    );
    conditions.truncate(MAX_CONDITIONS);
    StatusUpdate {
        changed: !same_conditions(&conditions, stored.conditions),
        messages_only: false,
        conditions,
        observed_generation: stored.observed_generation.unwrap_or(generation),
        fields: serde_json::Map::new(),
        events: Vec::new(),
        stall: None,
        recheck_after: None,
        timers: Vec::new(),
    }
}

/// metav1.Time is written with whole seconds; truncating keeps what we compare equal to what
/// we read back.
fn whole_seconds(now: Timestamp) -> Timestamp {
    now.round(
        TimestampRound::new()
            .smallest(Unit::Second)
            .mode(k8s_openapi::jiff::RoundMode::Trunc),
    )
    .unwrap_or(now)
}

struct Builder<'a> {
    stored: &'a [Condition],
    generation: i64,
    now: Timestamp,
}

impl Builder<'_> {
    /// A condition evaluated now. lastTransitionTime moves only when the status changes.
    fn make(
        &self,
        type_: ConditionType,
        status: ConditionStatus,
        reason: Reason,
        message: &str,
    ) -> Condition {
        let last_transition_time = match find_condition(self.stored, type_) {
            Some(old) if old.status == status.as_str() => old.last_transition_time.clone(),
            _ => Time(self.now),
        };
        Condition {
            type_: type_.as_str().to_owned(),
            status: status.as_str().to_owned(),
            reason: reason.as_str().to_owned(),
            message: bound_message(message),
            observed_generation: Some(self.generation),
            last_transition_time,
        }
    }
}

fn derive_aspects(facts: &PassFacts, builder: &Builder<'_>) -> Vec<Condition> {
    let hostname_allowed = matches!(facts.hostname(), Some(Hostname::Allowed));
    facts
        .kind
        .aspects()
        .iter()
        .map(|aspect| {
            if let Some(v) = facts.aspect(*aspect) {
                return builder.make(*aspect, v.status, v.reason, &v.message);
            }
            match find_condition(builder.stored, *aspect) {
                // The hostname is allowed now, but this pass did not say what holds: never
                // leave the old refusal on show.
                Some(old)
                    if hostname_allowed && old.reason == common::HOSTNAME_NOT_ALLOWED.as_str() =>
                {
                    builder.make(
                        *aspect,
                        ConditionStatus::Unknown,
                        common::RECONCILING,
                        "the hostname is allowed now; this condition is being evaluated again",
                    )
                }
                Some(old) => old.clone(),
                None => builder.make(
                    *aspect,
                    ConditionStatus::Unknown,
                    common::INITIALIZING,
                    "not evaluated yet",
                ),
            }
        })
        .collect()
}

fn derive_ready(
    facts: &PassFacts,
    aspects: &[Condition],
    evaluated_now: &dyn Fn(&Condition) -> bool,
    builder: &Builder<'_>,
) -> Condition {
    let make =
        |status, reason, message: &str| builder.make(ConditionType::Ready, status, reason, message);
    if let Some(error) = &facts.error {
        let reported = reported_errors(builder.stored);
        return make(
            ConditionStatus::False,
            common::RECONCILE_ERROR,
            &error.ready_message_after(&reported),
        );
    }
    if facts.paused {
        return make(
            ConditionStatus::Unknown,
            common::RECONCILIATION_PAUSED,
            &facts.paused_message(),
        );
    }
    if aspects
        .iter()
        .all(|c| c.reason == common::INITIALIZING.as_str())
    {
        return make(
            ConditionStatus::Unknown,
            common::INITIALIZING,
            "not evaluated yet",
        );
    }
    for aspect in aspects {
        if !evaluated_now(aspect) {
            let message = format!(
                "{} is not evaluated at generation {} yet",
                aspect.type_, facts.generation
            );
            return make(ConditionStatus::Unknown, common::RECONCILING, &message);
        }
        if aspect.status != ConditionStatus::True.as_str() {
            // Registered by construction: the aspect was written by this engine.
            let reason = Reason::parse(&aspect.reason).unwrap_or(common::RECONCILING);
            return make(
                ConditionStatus::parse(&aspect.status),
                reason,
                &aspect.message,
            );
        }
    }
    make(
        ConditionStatus::True,
        common::AS_EXPECTED,
        "every aspect holds at the current generation",
    )
}

fn derive_progressing(
    paused: Option<&str>,
    stall: Option<&Stall>,
    converged: bool,
    builder: &Builder<'_>,
) -> Condition {
    let (status, reason, message) = match (stall, paused, converged) {
        (Some(s), _, _) => (ConditionStatus::False, s.reason, s.message.as_str()),
        (None, Some(message), _) => (
            ConditionStatus::False,
            common::RECONCILIATION_PAUSED,
            message,
        ),
        (None, None, true) => (
            ConditionStatus::False,
            common::AS_EXPECTED,
            "every child is at its desired state",
        ),
        (None, None, false) => (
            ConditionStatus::True,
            common::RECONCILING,
            "children are converging",
        ),
    };
    builder.make(ConditionType::Progressing, status, reason, message)
}

fn derive_advisories(facts: &PassFacts, builder: &Builder<'_>) -> Vec<Condition> {
    facts
        .kind
        .advisories()
        .iter()
        .filter_map(|advisory| match facts.advisory(*advisory) {
            Some(Some(v)) => Some(builder.make(*advisory, v.status, v.reason, &v.message)),
            Some(None) => None,
            None => match find_condition(builder.stored, *advisory) {
                Some(old) => Some(old.clone()),
                // First touch: not evaluated yet, like every other condition.
                None if find_condition(builder.stored, ConditionType::Ready).is_none() => {
                    Some(builder.make(
                        *advisory,
                        ConditionStatus::Unknown,
                        common::INITIALIZING,
                        "not evaluated yet",
                    ))
                }
                None => None,
            },
        })
        .collect()
}
