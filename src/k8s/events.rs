//! Recording the Events the conditions engine and the reconcilers decide.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use super::WriteBudget;
use crate::conditions::{EventDecision, EventType as DecidedType};

/// The reporting controller named on every Event.
pub const REPORTER: &str = "pgtoolbox-operator";

/// Recorders an [`EventSink`] spreads the objects over.
const SHARDS: usize = 64;

/// Publishes Events under the write budget. One per process: kube's recorder keeps a cache that
/// folds repeats of the same Event into a series.
///
/// That cache holds every Event for several minutes and each publish sweeps all of it, so one
/// recorder costs O(Events of the last minutes) per Event: quadratic when many objects start at
/// once (with 100,000 objects it bounded convergence; see BENCHMARKS.md). The objects are spread
/// over [`SHARDS`] recorders by their reference, so the repeats of one object still meet in one
/// cache and a sweep covers 1/64 of it.
#[derive(Clone)]
pub struct EventSink {
    recorders: Arc<[Recorder]>,
}

impl EventSink {
    pub fn new(client: Client) -> Self {
        let reporter = Reporter {
            controller: REPORTER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorders: (0..SHARDS)
                .map(|_| Recorder::new(client.clone(), reporter.clone()))
                .collect(),
        }
    }

    fn recorder_of(&self, regarding: &ObjectReference) -> &Recorder {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&regarding.namespace, &regarding.name, &regarding.uid).hash(&mut hasher);
        let shard = usize::try_from(hasher.finish() % SHARDS as u64).unwrap_or(0);
        &self.recorders[shard]
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
                Ok(_permit) => self.recorder_of(regarding).publish(&event, regarding).await,
                Err(closed) => Err(kube::Error::Service(Box::new(closed))),
            };
            if let Err(err) = result {
                tracing::warn!(reason = %decision.reason.as_str(), error = %err, "event not recorded");
            }
        }
    }
}
