//! One status write per pass, shared by every kind.
//!
//! A pass hands its facts (and the kind's own status fields and Events); the writer derives the
//! conditions through the engine, patches `/status` only when something changed, remembers what
//! it wrote so the next pass does not judge a stale copy, records the Events after the write,
//! and answers the engine's stall and recheck verdicts for the pass's schedule.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::core::NamespaceResourceScope;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::ReportsConditions;
use crate::conditions::{ClassifiedError, EventDecision, PassFacts, derive_status, status_patch};
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
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

pub struct StatusWriter<K> {
    events: EventSink,
    written: ReadYourWrites<K>,
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
        }
    }

    /// The newer of the watched object and this writer's last write of it.
    pub fn freshest(&self, key: &ObjectKey, watched: Arc<K>) -> Arc<K> {
        self.written.freshest(key, watched)
    }

    /// The object is gone (or its actor stops): forget its write in flight.
    pub fn forget(&self, key: &ObjectKey) {
        self.written.forget(key);
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
            Ok(written) => self.written.wrote(target.key, written),
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
