//! Recording the Events the conditions engine and the reconcilers decide.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use super::WriteBudget;
use crate::conditions::{EventDecision, EventType as DecidedType};

/// The reporting controller named on every Event.
pub const REPORTER: &str = "pgtoolbox-operator";

/// Publishes Events under the write budget. One per process: kube's recorder keeps a small
/// cache that folds repeats of the same Event into a series.
#[derive(Clone)]
pub struct EventSink {
    recorder: Recorder,
}

impl EventSink {
    pub fn new(client: Client) -> Self {
        let reporter = Reporter {
            controller: REPORTER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Records each decision on `regarding`. A failed Event is logged, never fatal: the status
    /// already says what the Event would.
    pub async fn publish(
        &self,
        budget: &WriteBudget,
        regarding: &ObjectReference,
        decisions: &[EventDecision],
    ) {
        for decision in decisions {
            let event = Event {
                type_: match decision.type_ {
                    DecidedType::Normal => EventType::Normal,
                    DecidedType::Warning => EventType::Warning,
                },
                reason: decision.reason.as_str().into(),
                note: Some(decision.note.clone()),
                action: "Reconcile".into(),
                secondary: None,
            };
            let result = match budget.acquire().await {
                Ok(_permit) => self.recorder.publish(&event, regarding).await,
                Err(closed) => Err(kube::Error::Service(Box::new(closed))),
            };
            if let Err(err) = result {
                tracing::warn!(reason = %decision.reason.as_str(), error = %err, "event not recorded");
            }
        }
    }
}
