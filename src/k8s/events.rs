//! Recording the Events the conditions engine and the reconcilers decide.
//!
//! Our own recorder rather than kube-runtime's: kube's keys a series on type, action, reason,
//! reporter and the objects, but not on the note, so a second `RolloutStarted` ("was <old
//! hash>") within its cache's lifetime was folded into the first Event and its note lost.
//! client-go's events/v1 recorder keys on the note too (kubernetes/kubernetes#112365); so does
//! this one. It also keeps a few words per series instead of a whole Event, and sweeps expired
//! series twice a minute instead of on every publish (kube's sweep was quadratic at 100,000
//! objects, see BENCHMARKS.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::time::Instant;

use super::WriteBudget;
use crate::conditions::{EventDecision, EventType, Reason};

/// The reporting controller named on every Event.
pub const REPORTER: &str = "pgtoolbox-operator";

/// The `action` of every Event: what the operator was doing when it decided it.
const ACTION: &str = "Reconcile";

/// A repeat within this long of a series' last occurrence joins the series (client-go's and
/// kube's figure); a later one starts a new Event.
const SERIES_TTL: Duration = Duration::from_secs(6 * 60);

/// How often expired series are dropped from the cache.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// What makes two Events one series: everything but their times.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SeriesKey {
    type_: EventType,
    reason: Reason,
    note: String,
    namespace: Option<String>,
    kind: Option<String>,
    name: Option<String>,
    uid: Option<String>,
}

/// The Event a series lives in, and how often it has happened.
#[derive(Clone, Debug)]
struct Series {
    namespace: String,
    name: String,
    count: i32,
    last_seen: Instant,
}

impl Series {
    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.last_seen) >= SERIES_TTL
    }
}

/// What one publish writes.
enum Write {
    Create(Box<Event>),
    Repeat {
        namespace: String,
        name: String,
        count: i32,
    },
}

/// Publishes Events under the write budget. Clones share one cache of series, so one sink per
/// process folds every repeat.
#[derive(Clone)]
pub struct EventSink {
    client: Client,
    instance: String,
    series: Arc<DashMap<SeriesKey, Series>>,
    /// When the sink was made, and the last sweep as milliseconds since then: every publish
    /// reads it, so it is an atomic rather than a lock all the actors would queue on.
    born: Instant,
    last_sweep_ms: Arc<AtomicU64>,
}

impl EventSink {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| REPORTER.to_string()),
            series: Arc::default(),
            born: Instant::now(),
            last_sweep_ms: Arc::default(),
        }
    }

    /// Reports as `instance` (`reportingInstance`) instead of the pod's name: tells apart the
    /// members of a ring that share a process in tests.
    pub fn reporting_as(mut self, instance: impl Into<String>) -> Self {
        self.instance = instance.into();
        self
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
            let result = match budget.acquire().await {
                Ok(_permit) => self.record(regarding, decision).await,
                Err(closed) => Err(kube::Error::Service(Box::new(closed))),
            };
            if let Err(err) = result {
                tracing::warn!(reason = %decision.reason.as_str(), error = %err, "event not recorded");
            }
        }
    }

    async fn record(
        &self,
        regarding: &ObjectReference,
        decision: &EventDecision,
    ) -> Result<(), kube::Error> {
        self.sweep();
        let key = SeriesKey {
            type_: decision.type_,
            reason: decision.reason,
            note: decision.note.clone(),
            namespace: regarding.namespace.clone(),
            kind: regarding.kind.clone(),
            name: regarding.name.clone(),
            uid: regarding.uid.clone(),
        };
        match self.next_write(&key, regarding, decision) {
            Write::Create(event) => self.create(&key, &event).await,
            Write::Repeat {
                namespace,
                name,
                count,
            } => {
                let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
                let patch = serde_json::json!({
                    "series": EventSeries { count, last_observed_time: MicroTime(Timestamp::now()) },
                });
                match events
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    // The Event is gone (its TTL on the server, or deleted by hand): a new one.
                    Err(kube::Error::Api(status)) if status.code == 404 => {
                        let event = self.new_event(regarding, decision);
                        self.series.insert(key.clone(), self.series_of(&event));
                        self.create(&key, &event).await
                    }
                    other => other.map(drop),
                }
            }
        }
    }

    /// Decides, under the series' lock, whether this occurrence starts an Event or repeats one;
    /// a new series is entered before its Event is written, so a concurrent repeat joins it.
    fn next_write(
        &self,
        key: &SeriesKey,
        regarding: &ObjectReference,
        decision: &EventDecision,
    ) -> Write {
        let now = Instant::now();
        match self.series.entry(key.clone()) {
            Entry::Occupied(mut entry) if !entry.get().expired(now) => {
                let series = entry.get_mut();
                series.count = series.count.saturating_add(1);
                series.last_seen = now;
                Write::Repeat {
                    namespace: series.namespace.clone(),
                    name: series.name.clone(),
                    count: series.count,
                }
            }
            entry => {
                let event = self.new_event(regarding, decision);
                let series = self.series_of(&event);
                match entry {
                    Entry::Occupied(mut expired) => {
                        expired.insert(series);
                    }
                    Entry::Vacant(vacant) => {
                        vacant.insert(series);
                    }
                }
                Write::Create(Box::new(event))
            }
        }
    }

    async fn create(&self, key: &SeriesKey, event: &Event) -> Result<(), kube::Error> {
        let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
        let events: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let created = events.create(&PostParams::default(), event).await;
        if created.is_err() {
            // Not written: the next occurrence must create it rather than patch a ghost.
            self.series.remove_if(key, |_, series| {
                Some(&series.name) == event.metadata.name.as_ref()
            });
        }
        created.map(drop)
    }

    fn series_of(&self, event: &Event) -> Series {
        Series {
            namespace: event.metadata.namespace.clone().unwrap_or_default(),
            name: event.metadata.name.clone().unwrap_or_default(),
            count: 1,
            last_seen: Instant::now(),
        }
    }

    fn new_event(&self, regarding: &ObjectReference, decision: &EventDecision) -> Event {
        let now = Timestamp::now();
        Event {
            metadata: ObjectMeta {
                namespace: Some(
                    regarding
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".to_string()),
                ),
                // The series' name: the object's and the time, as client-go and kube name them.
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(REPORTER),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            action: Some(ACTION.to_string()),
            reason: Some(decision.reason.as_str().to_string()),
            note: Some(decision.note.clone()),
            type_: Some(decision.type_.as_str().to_string()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(REPORTER.to_string()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        }
    }

    /// Drops the series no repeat can join any more, at most once per [`SWEEP_EVERY`].
    fn sweep(&self) {
        let now = Instant::now();
        let now_ms = u64::try_from(now.duration_since(self.born).as_millis()).unwrap_or(u64::MAX);
        let last = self.last_sweep_ms.load(Ordering::Relaxed);
        let due = now_ms.saturating_sub(last) >= SWEEP_EVERY.as_millis() as u64;
        // One publisher sweeps; the others, seeing the new mark, go on.
        if due
            && self
                .last_sweep_ms
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.series.retain(|_, series| !series.expired(now));
        }
    }

    /// Series held now (tests and the memory figures).
    pub fn series_held(&self) -> usize {
        self.series.len()
    }
}
