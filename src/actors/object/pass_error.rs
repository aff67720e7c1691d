//! How a pass fails: [`ReconcileError`] (what a kind returns) and [`PassFailure`] (what the
//! runtime shows, classified for the conditions engine).

use std::time::Duration;

use super::Outcome;
use crate::conditions::{ClassifiedError, ErrorClass};
use crate::messages::TimerPurpose;

/// A failed pass. Kinds map their own typed errors into it.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("kubernetes API: {}", crate::conditions::readable(.0))]
    Kube(#[from] kube::Error),
    /// A child write the server refused: classified by its answer.
    #[error(transparent)]
    Refused(#[from] crate::children::ChildRefusal),
    #[error("{0}")]
    Other(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A pass that failed after it had decided: the timers of its decision (an expiry, the
    /// end of a grace) are armed anyway, beside the retry, so an instant it already knew is
    /// not pushed back to the retry backoff.
    #[error("{cause}")]
    Decided {
        cause: Box<ReconcileError>,
        timers: Vec<(TimerPurpose, Duration)>,
    },
}

impl ReconcileError {
    pub fn other(err: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        Self::Other(err.into())
    }

    /// This failure, keeping the timers `decided` asks for.
    pub fn keeping(self, decided: &Outcome) -> Self {
        self.keeping_timers(&decided.timers)
    }

    /// This failure, keeping `timers` (a pass's facts had decided them before it failed).
    pub fn keeping_timers(self, timers: &[(TimerPurpose, Duration)]) -> Self {
        Self::Decided {
            cause: Box::new(self.cause_owned()),
            timers: timers.to_vec(),
        }
    }

    fn cause_owned(self) -> Self {
        match self {
            Self::Decided { cause, .. } => cause.cause_owned(),
            other => other,
        }
    }

    /// The error itself, without the timers kept beside it.
    pub fn cause(&self) -> &Self {
        match self {
            Self::Decided { cause, .. } => cause.cause(),
            other => other,
        }
    }

    /// The timers the failed pass had decided, one (the earliest) per purpose.
    pub fn decided_timers(&self) -> [Option<Duration>; TimerPurpose::COUNT] {
        match self {
            Self::Decided { timers, .. } => Outcome {
                timers: timers.clone(),
                ..Outcome::default()
            }
            .earliest_per_purpose(),
            _ => [None; TimerPurpose::COUNT],
        }
    }
}

/// Why a pass did not complete.
#[derive(Clone, Copy, Debug)]
pub enum PassFailure<'a> {
    /// The pass returned an error; it is retried with backoff.
    Error(&'a ReconcileError),
    /// The pass panicked (the panic message); the actor is restarted with backoff.
    Panicked(&'a str),
}

impl PassFailure<'_> {
    /// The failure's error class, as the conditions engine shows it.
    pub fn classify(&self) -> ClassifiedError {
        match self {
            Self::Error(err) => match err.cause() {
                ReconcileError::Kube(err) => ClassifiedError::from_kube(err),
                ReconcileError::Refused(refusal) => {
                    ClassifiedError::new(refusal.class(), &refusal.to_string())
                }
                ReconcileError::Other(boxed) => classify_chain(boxed.as_ref()),
                other => ClassifiedError::new(ErrorClass::ReconciliationFailed, &other.to_string()),
            },
            Self::Panicked(_) => {
                ClassifiedError::new(ErrorClass::ReconciliationFailed, &self.to_string())
            }
        }
    }
}

/// A kind's own error classified by the first API answer in its chain of causes (a kind wraps
/// kube's errors and the applier's refusals), else ReconciliationFailed.
fn classify_chain(error: &(dyn std::error::Error + 'static)) -> ClassifiedError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        let class = if let Some(kube) = e.downcast_ref::<kube::Error>() {
            Some(ClassifiedError::from_kube(kube).class)
        } else {
            e.downcast_ref::<crate::children::ChildRefusal>()
                .map(crate::children::ChildRefusal::class)
        };
        if let Some(class) = class {
            return ClassifiedError::new(class, &error.to_string());
        }
        cause = e.source();
    }
    ClassifiedError::new(ErrorClass::ReconciliationFailed, &error.to_string())
}

impl From<crate::status::StatusError> for ReconcileError {
    fn from(err: crate::status::StatusError) -> Self {
        match err {
            crate::status::StatusError::Kube(err) => Self::Kube(err),
            other => Self::other(other),
        }
    }
}

impl std::fmt::Display for PassFailure<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Error(err) => write!(f, "{err}"),
            Self::Panicked(message) => write!(f, "reconcile panicked: {message}"),
        }
    }
}
