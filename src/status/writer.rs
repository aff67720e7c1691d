//! One status write per pass, shared by every kind.
//!
//! A pass hands its facts (and the kind's own status fields and Events); the writer derives the
//! conditions through the engine, patches `/status` only when something changed, remembers what
//! it wrote so the next pass does not judge a stale copy, records the Events after the write,
//! and answers the engine's stall and recheck verdicts for the pass's schedule.
//!
//! A change of condition messages alone (a rollout's "0 of 1 available" becoming "starting",
//! a Job's "starting" becoming "running") within [`SETTLE`] of the object's last write is held
//! back: a timer brings the pass back once the window has passed, and a change of a status or
//! reason meanwhile writes everything at once. A burst of child changes so costs one write, a
//! message lags by at most [`SETTLE`], and no transition, Event or error waits.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use tokio::time::Instant;

use k8s_openapi::jiff::Timestamp;
use kube::core::NamespaceResourceScope;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::ReportsConditions;
use crate::conditions::{
    ClassifiedError, EventDecision, PassFacts, StatusUpdate, derive_status, status_patch,
};
use crate::k8s::{EventSink, ReadYourWrites, WriteBudget, get_object, patch_status};
use crate::messages::{ObjectKey, TimerPurpose};

/// What a pass writes besides the conditions.
#[derive(Default)]
pub struct Extras {
    /// The kind's own status fields; a non-empty map is written even when no condition changed.
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// The kind's own Events, recorded after the write like the transition Events.
    pub events: Vec<EventDecision>,
    /// Write only over the version read (a phase move must not overwrite a concurrent decision).
    pub guarded: bool,
}

/// What the write decided for the pass's schedule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// The engine says the object waits for a change of its inputs: no backoff retry.
    pub stalled: bool,
    /// The engine's one schedule of the pass: the stall's recheck and the kind's own timers.
    pub timers: Vec<(TimerPurpose, Duration)>,
    /// Whether a write was made.
    pub wrote: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("status not rendered: {0}")]
    Render(#[from] serde_json::Error),
    #[error("kubernetes API: {}", crate::conditions::readable(.0))]
    Kube(#[from] kube::Error),
}

/// How long after an object's last status write a change of messages alone waits. Conditions
/// carry their times in whole seconds: a second is the finest step a reader can tell apart.
pub const SETTLE: Duration = Duration::from_secs(1);

/// The fewest remembered write times at which the writer forgets those older than [`SETTLE`].
const PRUNE_FLOOR: usize = 1024;

pub struct StatusWriter<K> {
    events: EventSink,
    written: ReadYourWrites<K>,
    /// When each object's status was last written; only the last [`SETTLE`] matters, older
    /// entries are pruned as the map grows (and an object's entry goes when it is forgotten).
    last_write: DashMap<ObjectKey, Instant>,
    prune_at: AtomicUsize,
}

impl<K> StatusWriter<K>
where
    K: ReportsConditions
        + Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize,
{
    pub fn new(events: EventSink) -> Self {
        Self {
            events,
            written: ReadYourWrites::default(),
            last_write: DashMap::new(),
            prune_at: AtomicUsize::new(PRUNE_FLOOR),
        }
    }

    /// The newer of the watched object and this writer's last write of it.
    pub fn freshest(&self, key: &ObjectKey, watched: Arc<K>) -> Arc<K> {
        self.written.freshest(key, watched)
    }

    /// The object is gone (or its actor stops): forget its write in flight.
    pub fn forget(&self, key: &ObjectKey) {
        self.written.forget(key);
        self.last_write.remove(key);
    }

    /// Events of the kind outside a status write (a child deleted).
    pub fn events(&self) -> &EventSink {
        &self.events
    }

    /// The pass's one status write, then its Events. A 409 (the object changed since it was
    /// read) is not an error: its new version is already on its way to the actor.
    pub async fn write(
        &self,
        obj: &K,
        facts: &PassFacts,
        extras: Extras,
        target: Target<'_>,
    ) -> Result<Written, StatusError> {
        let mut update = derive_status(facts, obj.stored_status(), target.now);
        let writes = !extras.fields.is_empty();
        if update.needs_stored_text(obj.stored_status(), facts.error.is_some(), writes) {
            // The copy keeps digests of the messages (hibernated): read the text once more.
            let reread = get_object::<K>(target.client, target.key).await?;
            update = derive_status(facts, reread.stored_status(), target.now);
        }
        let mut verdict = Written {
            stalled: update.stall.is_some(),
            timers: std::mem::take(&mut update.timers),
            wrote: false,
        };
        let plain = !writes && facts.error.is_none() && extras.events.is_empty();
        if let Some(wait) = self.held_back(target.key, &update, plain) {
            verdict.timers.push((TimerPurpose::Settle, wait));
            return Ok(verdict);
        }
        if !update.changed && !writes {
            // Nothing to write; the kind's own Events of this pass are recorded all the same.
            let mut events = update.events;
            events.extend(extras.events);
            if !events.is_empty() {
                self.events
                    .publish(target.writes, &obj.object_ref(&()), &events)
                    .await;
            }
            return Ok(verdict);
        }
        let precondition = extras.guarded.then(|| obj.resource_version()).flatten();
        let patch = status_patch(&update, extras.fields, precondition.as_deref())?;
        match patch_status::<K>(target.client, target.writes, target.key, &patch).await {
            Ok(written) => {
                self.written.wrote(target.key, written);
                self.note_write(target.key);
            }
            Err(kube::Error::Api(status)) if status.code == 409 => return Ok(verdict),
            Err(err) => return Err(err.into()),
        }
        verdict.wrote = true;
        let mut events = update.events;
        events.extend(extras.events);
        self.events
            .publish(target.writes, &obj.object_ref(&()), &events)
            .await;
        Ok(verdict)
    }

    /// How long a change of messages alone waits: the rest of [`SETTLE`] after the object's
    /// last write. `plain`: the pass has no field to write, no error and no Event of its own.
    fn held_back(&self, key: &ObjectKey, update: &StatusUpdate, plain: bool) -> Option<Duration> {
        if !(plain && update.messages_only && update.events.is_empty()) {
            return None;
        }
        let since = self.last_write.get(key)?.elapsed();
        SETTLE.checked_sub(since).filter(|wait| !wait.is_zero())
    }

    fn note_write(&self, key: &ObjectKey) {
        self.last_write.insert(key.clone(), Instant::now());
        if self.last_write.len() > self.prune_at.load(Ordering::Relaxed) {
            self.last_write.retain(|_, at| at.elapsed() < SETTLE);
            let next = (self.last_write.len() * 2).max(PRUNE_FLOOR);
            self.prune_at.store(next, Ordering::Relaxed);
        }
    }

    /// Shows a failed pass (`Ready=False` with the error's class) when that changes the status.
    /// Failures to write are logged: the pass is retried anyway.
    pub async fn report_error(&self, obj: Arc<K>, error: ClassifiedError, target: Target<'_>) {
        let obj = self.freshest(target.key, obj);
        let facts = obj.pass_facts().with_error(error);
        if let Err(err) = self.write(&obj, &facts, Extras::default(), target).await {
            tracing::warn!(error = %err, object = %target.key, "error status not written");
        }
    }
}

/// Where the write goes and under which budget.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub client: &'a Client,
    pub writes: &'a WriteBudget,
    pub key: &'a ObjectKey,
    /// The time of day of the write (`lastTransitionTime`), read through the operator's clock.
    pub now: Timestamp,
}
