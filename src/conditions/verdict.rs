//! One condition's result as a reconciler decided it.

use super::message::{bound_message, bound_message_with_suffix};
use super::reasons::Reason;
use super::types::ConditionStatus;

/// What a verdict is about, when the kind's stall table cannot tell from the reason alone.
/// Only a PgAdmin has such reasons: a missing Secret stalls it only when it is its sign-in
/// Secret, and `ConfigurationInvalid` / `DatabaseRoleAPIUnavailable` only when they concern the
/// settings database (`spec.configDatabase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    /// The sign-in Secret (OAuth2 client secret, LDAP bind password), without which pgAdmin
    /// cannot start.
    SignInSecret,
    /// The settings database (`spec.configDatabase`).
    SettingsDatabase,
}

/// One condition's result: status, registered reason, bounded message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub status: ConditionStatus,
    pub reason: Reason,
    /// Bounded; ends with `suffix` when there is one.
    pub message: String,
    /// What the verdict is about; the kind's table decides whether it is a stall.
    pub subject: Option<Subject>,
    /// A sentence the message must end with, whatever else it says (kept through truncation and
    /// when the engine rewrites the message, e.g. for a refused hostname). Set only by
    /// [`Verdict::with_suffix`], so it is always at the end of `message`.
    pub(crate) suffix: Option<String>,
}

impl Verdict {
    pub fn new(status: ConditionStatus, reason: Reason, message: impl AsRef<str>) -> Self {
        Verdict {
            status,
            reason,
            message: bound_message(message.as_ref()),
            subject: None,
            suffix: None,
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

    /// Says what this result is about, for the kind's stall table (see [`Subject`]).
    pub fn about(mut self, subject: Subject) -> Self {
        self.subject = Some(subject);
        self
    }

    /// Appends a sentence that survives any truncation of the message.
    pub fn with_suffix(mut self, suffix: impl Into<String>) -> Self {
        let suffix = suffix.into();
        self.message = bound_message_with_suffix(&self.message, &suffix);
        self.suffix = Some(suffix);
        self
    }

    /// The sentence the message must end with, if any.
    pub fn suffix(&self) -> Option<&str> {
        self.suffix.as_deref()
    }

    /// The same verdict with another message, keeping the required suffix.
    pub(crate) fn restated(&self, reason: Reason, body: &str) -> Verdict {
        let message = match &self.suffix {
            Some(suffix) => bound_message_with_suffix(body, suffix),
            None => bound_message(body),
        };
        Verdict {
            status: ConditionStatus::False,
            reason,
            message,
            subject: None,
            suffix: self.suffix.clone(),
        }
    }
}
