//! The input of the engine: what one reconciliation pass found out.

use super::errors::ClassifiedError;
use super::kinds::Kind;
use super::message::bound_message;
use super::reasons::Reason;
use super::types::{ConditionStatus, ConditionType};

/// One condition's result as a reconciler decided it: status, registered reason, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub status: ConditionStatus,
    pub reason: Reason,
    pub message: String,
    /// `None`: the kind's table decides whether this result is a stall; `Some` overrides it
    /// (e.g. a PgAdmin's ConfigurationInvalid about its settings database does stall).
    pub stalls: Option<bool>,
}

impl Verdict {
    pub fn new(status: ConditionStatus, reason: Reason, message: impl AsRef<str>) -> Self {
        Verdict {
            status,
            reason,
            message: bound_message(message.as_ref()),
            stalls: None,
        }
    }

    pub fn holds(reason: Reason, message: impl AsRef<str>) -> Self {
        Self::new(ConditionStatus::True, reason, message)
    }

    pub fn fails(reason: Reason, message: impl AsRef<str>) -> Self {
        Self::new(ConditionStatus::False, reason, message)
    }

    pub fn unknown(reason: Reason, message: impl AsRef<str>) -> Self {
        Self::new(ConditionStatus::Unknown, reason, message)
    }

    /// Overrides the kind's stall table for this result.
    pub fn stalling(mut self, stalls: bool) -> Self {
        self.stalls = Some(stalls);
        self
    }
}

/// A stall: no progress is possible until an input changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    pub reason: Reason,
    pub message: String,
}

/// A misuse of the facts builder: a condition that the kind does not have.
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
}

/// What one pass found out. Build it with [`PassFacts::new`] and the `with_*` methods.
///
/// An aspect not reported keeps its stored condition (or is Unknown/Initializing if there is
/// none); an advisory not reported keeps its stored condition; [`PassFacts::without_advisory`]
/// removes one (e.g. ExposureConfined once nothing is published).
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
        self.check_reason(verdict.reason)?;
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
            self.check_reason(v.reason)?;
        }
        self.advisories.push((condition, verdict));
        Ok(self)
    }

    fn check_reason(&self, reason: Reason) -> Result<(), FactsError> {
        if self.kind.may_use(reason) {
            Ok(())
        } else {
            Err(FactsError::ForeignReason {
                kind: self.kind,
                reason,
            })
        }
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

    pub(crate) fn aspect(&self, condition: ConditionType) -> Option<&Verdict> {
        self.aspects
            .iter()
            .find(|(c, _)| *c == condition)
            .map(|(_, v)| v)
    }

    pub(crate) fn advisory(&self, condition: ConditionType) -> Option<&Option<Verdict>> {
        self.advisories
            .iter()
            .find(|(c, _)| *c == condition)
            .map(|(_, v)| v)
    }

    /// The first aspect of this pass, in the kind's order, whose result is a stall.
    pub fn stall(&self) -> Option<Stall> {
        self.kind.aspects().iter().find_map(|aspect| {
            let verdict = self.aspect(*aspect)?;
            let stalls = verdict
                .stalls
                .unwrap_or_else(|| self.kind.stalls_on(*aspect, verdict.status, verdict.reason));
            (stalls && verdict.status == ConditionStatus::False).then(|| Stall {
                reason: verdict.reason,
                message: verdict.message.clone(),
            })
        })
    }
}
