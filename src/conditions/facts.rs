//! The input of the engine: what one reconciliation pass found out.

use std::borrow::Cow;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::errors::ClassifiedError;
use super::event::EventDecision;
use super::fields::{FieldWrite, StatusField};
use super::kinds::Kind;
use super::message::bound_message;
use super::reasons::{Reason, common};
use super::types::{ConditionStatus, ConditionType};
use crate::messages::TimerPurpose;

pub use super::verdict::{Subject, Verdict};

/// The exposure hostname against the operator's allowed suffixes. It is checked first, on
/// every pass (paused or failing ones too), and the engine applies it to `ConfigurationValid`
/// and `ExposureReady` itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hostname {
    Allowed,
    /// The message names the hostname and the allowed suffixes.
    Refused {
        message: String,
    },
}

impl Hostname {
    pub fn refused(message: impl AsRef<str>) -> Self {
        Hostname::Refused {
            message: bound_message(message.as_ref()),
        }
    }
}

/// A stall: no progress is possible until an input changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    pub reason: Reason,
    pub message: String,
}

/// A misuse of the facts builder.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FactsError {
    #[error("{condition} is not an aspect of {kind:?}")]
    NotAnAspect {
        kind: Kind,
        condition: ConditionType,
    },
    #[error("{condition} is not an advisory condition of {kind:?}")]
    NotAnAdvisory {
        kind: Kind,
        condition: ConditionType,
    },
    #[error("{condition} was reported twice in one pass")]
    ReportedTwice { condition: ConditionType },
    #[error("{reason} belongs to another kind than {kind:?}")]
    ForeignReason { kind: Kind, reason: Reason },
    #[error("{kind:?} publishes nothing: it has no exposure hostname")]
    NoExposure { kind: Kind },
    #[error("the hostname was stated twice in one pass")]
    HostnameTwice,
    #[error("{condition}: HostnameNotAllowed is stated with PassFacts::with_hostname")]
    HostnameIsAFact { condition: ConditionType },
    #[error("{kind:?} has no reason whose stall depends on what it is about")]
    NoSubjects { kind: Kind },
    #[error("{field} is not a status field of {kind:?}")]
    NotAStatusField { kind: Kind, field: StatusField },
    #[error("status field {field} was stated twice in one pass")]
    FieldTwice { field: StatusField },
    #[error("status field {field} cannot be serialised: {message}")]
    Unserialisable { field: StatusField, message: String },
    #[error("{reason} is not an Event of {kind:?}")]
    NotAnEventOfKind { kind: Kind, reason: Reason },
    #[error("{purpose:?} timers are the engine's or the runtime's, not a kind's")]
    NotAKindTimer { purpose: TimerPurpose },
}

/// What one pass found out. Build it with [`PassFacts::new`] and the `with_*` methods.
///
/// An aspect not reported keeps its stored condition (or is Unknown/Initializing if there is
/// none); an advisory not reported keeps its stored condition (Unknown/Initializing on first
/// touch); [`PassFacts::without_advisory`] removes one (e.g. ExposureConfined once nothing is
/// published).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassFacts {
    pub kind: Kind,
    /// `metadata.generation` of the object this pass read.
    pub generation: i64,
    pub(crate) aspects: Vec<(ConditionType, Verdict)>,
    pub(crate) advisories: Vec<(ConditionType, Option<Verdict>)>,
    /// The error that ended the pass, classified.
    pub error: Option<ClassifiedError>,
    /// Every child the pass applied is at its desired state (rollout done, nothing pending).
    pub children_converged: bool,
    /// The `pgtoolbox.fyannk.dev/reconcile: skip` annotation is set.
    pub paused: bool,
    /// What the pause still holds and what it does not, for a kind whose pause is partial
    /// (appended to the paused message).
    pub(crate) pause_note: Option<&'static str>,
    pub(crate) hostname: Option<Hostname>,
    pub(crate) fields: Vec<FieldWrite>,
    pub(crate) events: Vec<EventDecision>,
    pub(crate) timers: Vec<(TimerPurpose, Duration)>,
}

impl PassFacts {
    pub fn new(kind: Kind, generation: i64) -> Self {
        PassFacts {
            kind,
            generation,
            aspects: Vec::new(),
            advisories: Vec::new(),
            error: None,
            children_converged: false,
            paused: false,
            pause_note: None,
            hostname: None,
            fields: Vec::new(),
            events: Vec::new(),
            timers: Vec::new(),
        }
    }

    /// Reports an aspect evaluated by this pass at `generation`.
    pub fn with_aspect(
        mut self,
        condition: ConditionType,
        verdict: Verdict,
    ) -> Result<Self, FactsError> {
        if !self.kind.aspects().contains(&condition) {
            return Err(FactsError::NotAnAspect {
                kind: self.kind,
                condition,
            });
        }
        if self.aspects.iter().any(|(c, _)| *c == condition) {
            return Err(FactsError::ReportedTwice { condition });
        }
        self.check_verdict(condition, &verdict)?;
        self.aspects.push((condition, verdict));
        Ok(self)
    }

    /// Reports an advisory condition evaluated by this pass.
    pub fn with_advisory(
        self,
        condition: ConditionType,
        verdict: Verdict,
    ) -> Result<Self, FactsError> {
        self.push_advisory(condition, Some(verdict))
    }

    /// Removes an advisory condition that is only present while it applies.
    pub fn without_advisory(self, condition: ConditionType) -> Result<Self, FactsError> {
        self.push_advisory(condition, None)
    }

    fn push_advisory(
        mut self,
        condition: ConditionType,
        verdict: Option<Verdict>,
    ) -> Result<Self, FactsError> {
        if !self.kind.advisories().contains(&condition) {
            return Err(FactsError::NotAnAdvisory {
                kind: self.kind,
                condition,
            });
        }
        if self.advisories.iter().any(|(c, _)| *c == condition) {
            return Err(FactsError::ReportedTwice { condition });
        }
        if let Some(v) = &verdict {
            self.check_verdict(condition, v)?;
        }
        self.advisories.push((condition, verdict));
        Ok(self)
    }

    fn check_verdict(&self, condition: ConditionType, verdict: &Verdict) -> Result<(), FactsError> {
        if !self.kind.may_use(verdict.reason) {
            return Err(FactsError::ForeignReason {
                kind: self.kind,
                reason: verdict.reason,
            });
        }
        // The hostname fact decides HostnameNotAllowed; the exposure's own verdict may carry it
        // once that fact is stated, for the sentences it appends (a Route that may remain).
        let refused = matches!(self.hostname, Some(Hostname::Refused { .. }));
        if verdict.reason == common::HOSTNAME_NOT_ALLOWED
            && !(refused && condition == ConditionType::ExposureReady)
        {
            return Err(FactsError::HostnameIsAFact { condition });
        }
        if verdict.subject.is_some() && !self.kind.has_subjects() {
            return Err(FactsError::NoSubjects { kind: self.kind });
        }
        Ok(())
    }

    /// States the exposure hostname fact (PgAdmin and PgToolBoxConsole). A refusal turns
    /// `ConfigurationValid` and `ExposureReady` False with `HostnameNotAllowed` whatever else the
    /// pass reported for them; an allowed hostname turns a stored refusal Unknown/Reconciling.
    pub fn with_hostname(mut self, hostname: Hostname) -> Result<Self, FactsError> {
        if !self.kind.aspects().contains(&ConditionType::ExposureReady) {
            return Err(FactsError::NoExposure { kind: self.kind });
        }
        if self.hostname.is_some() {
            return Err(FactsError::HostnameTwice);
        }
        self.hostname = Some(hostname);
        Ok(self)
    }

    /// States one of the kind's status fields as this pass wants it, with the value stored
    /// now: a difference makes the status worth writing, as a changed condition does. `None`
    /// (serialised as `null`) removes the field.
    pub fn with_status_field<T: Serialize + PartialEq + ?Sized>(
        mut self,
        field: StatusField,
        desired: &T,
        stored: &T,
    ) -> Result<Self, FactsError> {
        if !self.kind.status_fields().contains(&field) {
            return Err(FactsError::NotAStatusField {
                kind: self.kind,
                field,
            });
        }
        if self.fields.iter().any(|f| f.field == field) {
            return Err(FactsError::FieldTwice { field });
        }
        let json = |value: &T| {
            serde_json::to_value(value).map_err(|e| FactsError::Unserialisable {
                field,
                message: e.to_string(),
            })
        };
        let value = merge_patch_value(json(desired)?, &json(stored)?);
        self.fields.push(FieldWrite {
            field,
            value,
            changed: desired != stored,
        });
        Ok(self)
    }

    /// Records one of the kind's own Events (RolloutStarted, CertificateIssued, ...); its type
    /// comes from the kind's table. It is recorded after the status write, or at once when
    /// there is nothing to write.
    pub fn with_event(mut self, reason: Reason, note: &str) -> Result<Self, FactsError> {
        let Some(type_) = self.kind.event_type(reason) else {
            return Err(FactsError::NotAnEventOfKind {
                kind: self.kind,
                reason,
            });
        };
        self.events.push(EventDecision::of(type_, reason, note));
        Ok(self)
    }

    /// Asks for a pass after `delay` (a certificate's renewal, a kept policy's wait, an
    /// expiry). The engine merges it with its stall recheck into one schedule.
    pub fn with_timer(
        mut self,
        purpose: TimerPurpose,
        delay: Duration,
    ) -> Result<Self, FactsError> {
        if matches!(
            purpose,
            TimerPurpose::Retry | TimerPurpose::Recheck2m | TimerPurpose::Recheck5m
        ) {
            return Err(FactsError::NotAKindTimer { purpose });
        }
        self.timers.push((purpose, delay));
        Ok(self)
    }

    pub fn with_error(mut self, error: ClassifiedError) -> Self {
        self.error = Some(error);
        self
    }

    pub fn with_children_converged(mut self, converged: bool) -> Self {
        self.children_converged = converged;
        self
    }

    pub fn with_paused(mut self, paused: bool) -> Self {
        self.paused = paused;
        self
    }

    /// Says, in the paused message, what the pause still holds (a kind whose pause is partial).
    pub fn with_pause_note(mut self, note: &'static str) -> Self {
        self.pause_note = Some(note);
        self
    }

    /// The message of the conditions a pause sets.
    pub(crate) fn paused_message(&self) -> String {
        let base = "reconciliation is paused by the annotation pgtoolbox.fyannk.dev/reconcile=skip";
        match self.pause_note {
            Some(note) => format!("{base}; {note}"),
            None => base.to_string(),
        }
    }

    /// The hostname fact as stated, or as implied: a pass that evaluated ConfigurationValid
    /// without a refusal checked the hostname (it is checked first) and found it allowed.
    pub(crate) fn hostname(&self) -> Option<&Hostname> {
        const IMPLIED: Hostname = Hostname::Allowed;
        match &self.hostname {
            Some(h) => Some(h),
            None if self.kind.aspects().contains(&ConditionType::ExposureReady)
                && self.aspect_reported(ConditionType::ConfigurationValid) =>
            {
                Some(&IMPLIED)
            }
            None => None,
        }
    }

    fn aspect_reported(&self, condition: ConditionType) -> bool {
        self.aspects.iter().any(|(c, _)| *c == condition)
    }

    /// This pass's verdict for an aspect, with a refused hostname applied.
    pub(crate) fn aspect(&self, condition: ConditionType) -> Option<Cow<'_, Verdict>> {
        let reported = self
            .aspects
            .iter()
            .find(|(c, _)| *c == condition)
            .map(|(_, v)| v);
        let Some(Hostname::Refused { message }) = &self.hostname else {
            return reported.map(Cow::Borrowed);
        };
        let refusal = Verdict::fails(common::HOSTNAME_NOT_ALLOWED, message);
        let refused = match (condition, reported) {
            (ConditionType::ConfigurationValid, Some(other))
                if other.status == ConditionStatus::False =>
            {
                // Another refusal (an image) is named too.
                refusal.restated(
                    common::HOSTNAME_NOT_ALLOWED,
                    &format!("{message}; {}", other.message),
                )
            }
            (ConditionType::ConfigurationValid, _) => refusal,
            // The exposure's own refusal: the hostname's words and what it appended.
            (ConditionType::ExposureReady, Some(other))
                if other.reason == common::HOSTNAME_NOT_ALLOWED =>
            {
                other.clone()
            }
            (ConditionType::ExposureReady, Some(other)) => {
                other.restated(common::HOSTNAME_NOT_ALLOWED, message)
            }
            (ConditionType::ExposureReady, None) => refusal,
            _ => return reported.map(Cow::Borrowed),
        };
        Some(Cow::Owned(refused))
    }

    pub(crate) fn advisory(&self, condition: ConditionType) -> Option<&Option<Verdict>> {
        self.advisories
            .iter()
            .find(|(c, _)| *c == condition)
            .map(|(_, v)| v)
    }

    /// The first aspect of this pass, in the kind's order, whose result is a stall by the
    /// kind's table. (The engine also keeps a stored stall whose aspect this pass did not
    /// evaluate; see `derive_status`.)
    pub fn stall(&self) -> Option<Stall> {
        self.kind.aspects().iter().find_map(|aspect| {
            let verdict = self.aspect(*aspect)?;
            self.kind
                .stalls_on(*aspect, verdict.status, verdict.reason, verdict.subject)
                .then(|| Stall {
                    reason: verdict.reason,
                    message: verdict.message.clone(),
                })
        })
    }
}

/// The value a merge patch must carry to turn `stored` into `desired`: a key the stored value
/// has and the desired one drops (an ObjectStore's `destinationPath` no longer known, a
/// certificate's `notAfter` after a switch of provider) is stated `null` at every depth, since a
/// merge patch removes only what it names. Once written, desired and stored compare equal.
fn merge_patch_value(desired: Value, stored: &Value) -> Value {
    match (desired, stored) {
        (Value::Object(mut want), Value::Object(have)) => {
            for (key, old) in have {
                let new = match want.remove(key) {
                    Some(new) => merge_patch_value(new, old),
                    None => Value::Null,
                };
                want.insert(key.clone(), new);
            }
            Value::Object(want)
        }
        (desired, _) => desired,
    }
}

#[cfg(test)]
mod tests {
    use super::merge_patch_value;
    use serde_json::{Value, json};

    #[test]
    fn a_dropped_key_is_written_null_until_it_is_gone() {
        let store = |path: Option<&str>| match path {
            Some(p) => json!({"name": "orders-store", "destinationPath": p}),
            None => json!({"name": "orders-store"}),
        };
        // (desired, stored, value written)
        let cases = [
            (
                store(Some("s3://a")),
                store(Some("s3://a")),
                store(Some("s3://a")),
            ),
            (
                store(None),
                store(Some("s3://a")),
                json!({"name": "orders-store", "destinationPath": null}),
            ),
            (store(None), store(None), store(None)),
            (store(Some("s3://b")), store(None), store(Some("s3://b"))),
            (Value::Null, store(Some("s3://a")), Value::Null),
            (store(None), Value::Null, store(None)),
            (
                json!({"a": {"b": 1}}),
                json!({"a": {"b": 1, "c": 2}, "d": [1]}),
                json!({"a": {"b": 1, "c": null}, "d": null}),
            ),
        ];
        for (desired, stored, written) in cases {
            assert_eq!(
                merge_patch_value(desired.clone(), &stored),
                written,
                "{desired} over {stored}"
            );
        }
    }
}
