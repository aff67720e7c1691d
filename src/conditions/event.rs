//! One Event the status engine decides to record: its type, reason and bounded note.

use super::message::bound_message;
use super::reasons::Reason;

/// `events.k8s.io/v1` Event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub const fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One Event to record on the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDecision {
    pub type_: EventType,
    pub reason: Reason,
    /// Bounded like every message.
    pub note: String,
}

impl EventDecision {
    pub fn normal(reason: Reason, note: &str) -> Self {
        Self::of(EventType::Normal, reason, note)
    }

    pub fn warning(reason: Reason, note: &str) -> Self {
        Self::of(EventType::Warning, reason, note)
    }

    pub fn of(type_: EventType, reason: Reason, note: &str) -> Self {
        EventDecision {
            type_,
            reason,
            note: bound_message(note),
        }
    }
}
