//! Each watched object decoded on its own: a list (or a watch event) with one object the
//! operator's types cannot read (a time past the time library's range, a field of an unknown
//! shape) would otherwise fail the whole kind's list, at every start, and no object of the kind
//! would be reconciled again. The object that cannot be decoded is counted in
//! `pgtoolbox_undecodable_objects{kind}` and reported by a Warning Event on itself; the kind
//! supervisor leaves it out of its store, listed or seen on a watch alike (what only it kept,
//! such as a request's RoleBindings, is removed as for a missing object), and the rest of the
//! kind goes on.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Debug;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Client, Resource};
use prometheus_client::metrics::gauge::Gauge;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Map;

use super::status::merge_status;
use super::{EventSink, WriteBudget};
use crate::conditions::reasons::common;
use crate::conditions::{EventDecision, StoredStatus, status_patch, undecodable_status};
use crate::messages::ObjectKey;

/// The longest decoding error quoted in an Event.
const ERROR_BOUND: usize = 300;

/// One watched object: decoded, or kept as its metadata and why it could not be decoded.
#[derive(Clone, Debug)]
pub enum Lenient<K> {
    Decoded(K),
    /// Boxed: rare, and the decoded variant is the one every list holds.
    Undecodable(Box<Undecodable>),
}

/// An object the operator's type for its kind cannot decode.
#[derive(Clone, Debug)]
pub struct Undecodable {
    pub metadata: ObjectMeta,
    /// The decoder's error, bounded.
    pub error: String,
    /// Its stored conditions and observed generation, as far as they can be read.
    pub conditions: Vec<Condition>,
    pub observed_generation: Option<i64>,
}

impl<K: Resource<DynamicType = ()>> Resource for Lenient<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        match self {
            Lenient::Decoded(obj) => obj.meta(),
            Lenient::Undecodable(u) => &u.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Lenient::Decoded(obj) => obj.meta_mut(),
            Lenient::Undecodable(u) => &mut u.metadata,
        }
    }
}

/// `event` of objects decoded already (sources fed by tests and benchmarks).
pub fn decoded_event<K>(event: watcher::Event<K>) -> watcher::Event<Lenient<K>> {
    match event {
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(obj) => watcher::Event::InitApply(Lenient::Decoded(obj)),
        watcher::Event::InitDone => watcher::Event::InitDone,
        watcher::Event::Apply(obj) => watcher::Event::Apply(Lenient::Decoded(obj)),
        watcher::Event::Delete(obj) => watcher::Event::Delete(Lenient::Decoded(obj)),
    }
}

#[derive(Deserialize)]
struct MetadataOnly {
    #[serde(default)]
    metadata: ObjectMeta,
}

/// The stored conditions of an object that cannot be decoded: those that can be read.
fn stored_conditions(value: &serde_json::Value) -> (Vec<Condition>, Option<i64>) {
    let status = value.get("status");
    let conditions = status
        .and_then(|s| s.get("conditions"))
        .and_then(serde_json::Value::as_array)
        .map(|all| {
            all.iter()
                .filter_map(|c| Condition::deserialize(c).ok())
                .collect()
        })
        .unwrap_or_default();
    let observed = status
        .and_then(|s| s.get("observedGeneration"))
        .and_then(serde_json::Value::as_i64);
    (conditions, observed)
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Lenient<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        match K::deserialize(&value) {
            Ok(obj) => Ok(Lenient::Decoded(obj)),
            Err(error) => {
                // Metadata the API server wrote itself; without it the object is skipped (no
                // key), as one without a name would be.
                let metadata = MetadataOnly::deserialize(&value)
                    .map(|m| m.metadata)
                    .unwrap_or_default();
                let (conditions, observed_generation) = stored_conditions(&value);
                Ok(Lenient::Undecodable(Box::new(Undecodable {
                    metadata,
                    error: bounded(&error.to_string()),
                    conditions,
                    observed_generation,
                })))
            }
        }
    }
}

fn bounded(text: &str) -> String {
    match text.char_indices().nth(ERROR_BOUND) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Where the objects a watch cannot decode are reported: their gauge and Warning Events.
#[derive(Clone)]
pub struct UndecodableReport {
    /// Writes the status that says so (through `merge_status`, the one status write).
    pub client: Client,
    pub gauge: Gauge,
    pub events: EventSink,
    pub writes: WriteBudget,
    /// What the operator does about such an object of this kind, for the Event.
    pub consequence: &'static str,
}

/// The state of one watch: which of its objects are undecodable now.
pub struct UndecodableFilter {
    report: UndecodableReport,
    /// Undecodable objects of this watch, counted in the gauge.
    known: HashSet<ObjectKey>,
    /// Undecodable objects of the list in progress.
    listing: HashSet<ObjectKey>,
}

impl UndecodableFilter {
    pub fn new(report: UndecodableReport) -> Self {
        Self {
            report,
            known: HashSet::new(),
            listing: HashSet::new(),
        }
    }

    /// Counts and reports the objects of `event` that cannot be decoded; the event itself goes
    /// on to the kind, which leaves such an object out of its store (as a list without it
    /// would), so what only it kept is removed.
    pub fn observe<K>(&mut self, event: &watcher::Event<Lenient<K>>)
    where
        K: Resource<DynamicType = ()>,
    {
        match event {
            watcher::Event::Init => self.listing.clear(),
            watcher::Event::InitApply(Lenient::Decoded(_)) => {}
            watcher::Event::InitApply(Lenient::Undecodable(u)) => {
                if let Some(key) = ObjectKey::of_meta(&u.metadata) {
                    self.listing.insert(key.clone());
                    if !self.known.contains(&key) {
                        self.publish::<K>(u);
                    }
                }
            }
            watcher::Event::InitDone => {
                self.known = std::mem::take(&mut self.listing);
                self.report.gauge.set(count(self.known.len()));
            }
            watcher::Event::Apply(Lenient::Decoded(obj)) => self.forget(obj.meta()),
            watcher::Event::Apply(Lenient::Undecodable(u)) => {
                if let Some(key) = ObjectKey::of_meta(&u.metadata)
                    && self.known.insert(key)
                {
                    self.report.gauge.inc();
                    self.publish::<K>(u);
                }
            }
            watcher::Event::Delete(obj) => self.forget(obj.meta()),
        }
    }

    fn forget(&mut self, meta: &ObjectMeta) {
        if let Some(key) = ObjectKey::of_meta(meta)
            && self.known.remove(&key)
        {
            self.report.gauge.dec();
        }
    }

    fn publish<K: Resource<DynamicType = ()>>(&self, u: &Undecodable) {
        let kind = K::kind(&()).to_string();
        tracing::warn!(
            kind,
            namespace = u.metadata.namespace.as_deref().unwrap_or_default(),
            name = u.metadata.name.as_deref().unwrap_or_default(),
            error = %u.error,
            "an object of our kind cannot be decoded: left out of reconciliation"
        );
        let reference = ObjectReference {
            api_version: Some(K::api_version(&()).to_string()),
            kind: Some(kind.clone()),
            namespace: u.metadata.namespace.clone(),
            name: u.metadata.name.clone(),
            uid: u.metadata.uid.clone(),
            resource_version: u.metadata.resource_version.clone(),
            ..ObjectReference::default()
        };
        let note = format!(
            "the operator cannot decode this {kind} ({}); {}",
            u.error, self.report.consequence
        );
        let decision = EventDecision::warning(common::CONFIGURATION_INVALID, &note);
        let report = self.report.clone();
        let stored = (u.conditions.clone(), u.observed_generation);
        let generation = u.metadata.generation.unwrap_or_default();
        let api: Api<DynamicObject> = match &u.metadata.namespace {
            Some(ns) => {
                Api::namespaced_with(report.client.clone(), ns, &ApiResource::erase::<K>(&()))
            }
            None => return,
        };
        tokio::spawn(async move {
            // On itself first, as far as its status can be written.
            let stored = StoredStatus {
                conditions: &stored.0,
                observed_generation: stored.1,
            };
            let update = undecodable_status(generation, stored, &note, Timestamp::now());
            let name = reference.name.clone().unwrap_or_default();
            if update.changed {
                let written = match status_patch(
                    &update,
                    Map::new(),
                    reference.resource_version.as_deref(),
                ) {
                    Ok(patch) => merge_status(&report.writes, &api, &name, &patch)
                        .await
                        .map(drop),
                    Err(error) => Err(kube::Error::SerdeError(error)),
                };
                if let Err(error) = written {
                    tracing::warn!(%name, %error, "cannot report on the undecodable object's status");
                }
            }
            report
                .events
                .publish(&report.writes, &reference, &[decision])
                .await;
        });
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PgAccessRequest;

    fn request(expires_at: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
            "kind": "PgAccessRequest",
            "metadata": {"name": "r", "namespace": "team-a", "uid": "u1"},
            "spec": {
                "subject": {"kind": "User", "name": "alice"},
                "clusterRole": "view",
                "expiresAt": expires_at,
            },
        })
    }

    #[test]
    fn a_time_past_the_range_is_undecodable_with_its_metadata() {
        let lenient: Lenient<PgAccessRequest> =
            serde_json::from_value(request("9999-12-31T23:59:59Z")).unwrap();
        match lenient {
            Lenient::Undecodable(u) => {
                assert_eq!(u.metadata.name.as_deref(), Some("r"));
                assert_eq!(u.metadata.uid.as_deref(), Some("u1"));
                assert!(!u.error.is_empty());
            }
            Lenient::Decoded(_) => panic!("decoded a time past the range"),
        }
    }

    #[test]
    fn one_bad_item_leaves_the_others_of_a_list() {
        let list = serde_json::json!({
            "metadata": {},
            "items": [request("2030-01-01T00:00:00Z"), request("9999-12-31T23:59:59Z")],
        });
        let list: kube::core::ObjectList<Lenient<PgAccessRequest>> =
            serde_json::from_value(list).unwrap();
        assert!(matches!(list.items[0], Lenient::Decoded(_)));
        assert!(matches!(list.items[1], Lenient::Undecodable(_)));
    }

    #[test]
    fn the_status_of_an_undecodable_object_says_so_and_is_written_once() {
        use crate::conditions::{ConditionType, find_condition};
        let now = Timestamp::now();
        let update = undecodable_status(3, StoredStatus::default(), "cannot decode", now);
        assert!(update.changed);
        for condition in [ConditionType::Ready, ConditionType::ConfigurationValid] {
            let c = find_condition(&update.conditions, condition).expect("set");
            assert_eq!(
                (c.status.as_str(), c.reason.as_str()),
                ("False", "ConfigurationInvalid")
            );
            assert_eq!(c.message, "cannot decode");
        }
        let stored = StoredStatus {
            conditions: &update.conditions,
            observed_generation: Some(update.observed_generation),
        };
        assert!(!undecodable_status(3, stored, "cannot decode", now).changed);
    }

    #[test]
    fn errors_are_bounded() {
        let long = "x".repeat(ERROR_BOUND * 2);
        assert_eq!(bounded(&long).chars().count(), ERROR_BOUND + 1);
        assert_eq!(bounded("short"), "short");
    }
}
