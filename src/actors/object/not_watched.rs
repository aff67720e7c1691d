//! Tells the objects of a namespace dropped at start why they are no longer looked after:
//! Ready=Unknown NamespaceNotWatched and one Warning Event, written once (a restart that finds
//! the status already saying so writes and records nothing).
//!
//! With several members (issue 30) each object is marked by the member that owns it, as its
//! passes would be: at start with the share it starts with, and again after every change of
//! its share (inside the hand-off, so a member lets go only once its marking ended). A share
//! taken over finds the objects the previous owner marked unchanged, and marks those it did not.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::Map;
use tracing::{info, warn};

use crate::api::VERSION;
use crate::children::Applier;
use crate::conditions::{StoredStatus, namespace_not_watched, status_patch};
use crate::k8s::{EventSink, WriteBudget};
use crate::reconcile::namespace_permissions::{
    DroppedNamespace, NOT_WATCHED_KINDS, OWN_GROUP, WatchPlan,
};
use crate::ring::Ownership;

/// Status writes and Events in flight at once while marking dropped namespaces.
const MARK_WRITES: usize = 4;

/// What marking one dropped namespace did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkReport {
    /// Objects whose status was written.
    pub written: usize,
    /// Objects that already said NamespaceNotWatched.
    pub unchanged: usize,
    /// Objects another member owns (left to it).
    pub others: usize,
    pub events: usize,
}

fn stored_conditions(object: &DynamicObject) -> (Vec<Condition>, Option<i64>) {
    let status = object.data.get("status");
    let conditions = status
        .and_then(|s| s.get("conditions"))
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let observed = status
        .and_then(|s| s.get("observedGeneration"))
        .and_then(serde_json::Value::as_i64);
    (conditions, observed)
}

fn reference_of(object: &DynamicObject, resource: &ApiResource) -> ObjectReference {
    ObjectReference {
        api_version: Some(resource.api_version.clone()),
        kind: Some(resource.kind.clone()),
        namespace: object.namespace(),
        name: Some(object.name_any()),
        uid: object.uid(),
        resource_version: object.resource_version(),
        ..ObjectReference::default()
    }
}

/// Marks every PgAdmin, PgToolBoxConsole and EvidenceAgent of `dropped` that `ownership` holds
/// and whose status the operator may still write, for the kinds it runs (`kinds`; only their
/// permissions were checked). A kind it may not list or patch there is skipped.
pub async fn mark_dropped_namespace<S: AsRef<str>>(
    client: &Client,
    events: &EventSink,
    writes: &WriteBudget,
    dropped: &DroppedNamespace,
    kinds: &[S],
    ownership: &Ownership,
) -> Result<MarkReport, kube::Error> {
    let message = dropped.message();
    let mut report = MarkReport::default();
    let running = NOT_WATCHED_KINDS
        .iter()
        .filter(|(kind, _)| kinds.iter().any(|k| k.as_ref() == *kind));
    for &(kind, plural) in running {
        if !dropped.may_write_status(plural) {
            info!(namespace = %dropped.namespace, kind, "may not write status there: left as is");
            continue;
        }
        let gvk = GroupVersionKind::gvk(OWN_GROUP, VERSION, kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &dropped.namespace, &resource);
        let objects = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(kube::Error::Api(status)) if status.code == 403 || status.code == 404 => {
                warn!(namespace = %dropped.namespace, kind, code = status.code, "cannot list: not marked");
                continue;
            }
            Err(error) => return Err(error),
        };
        for object in objects {
            if !ownership.owns_object(kind, &dropped.namespace, &object.name_any()) {
                report.others += 1;
                continue;
            }
            let (conditions, observed_generation) = stored_conditions(&object);
            let stored = StoredStatus {
                conditions: &conditions,
                observed_generation,
            };
            let generation = object.meta().generation.unwrap_or_default();
            let update = namespace_not_watched(generation, stored, &message, Timestamp::now());
            if !update.changed {
                report.unchanged += 1;
                continue;
            }
            let patch = status_patch(&update, Map::new(), object.resource_version().as_deref())
                .map_err(kube::Error::SerdeError)?;
            // The permit is held for the write only; the Events take their own.
            Applier { client, writes }
                .merge_status(&api, &object.name_any(), &patch)
                .await?;
            report.written += 1;
            let reference = reference_of(&object, &resource);
            events.publish(writes, &reference, &update.events).await;
            report.events += update.events.len();
        }
    }
    Ok(report)
}

/// Marks the dropped namespaces of a start's plan, for the share of the objects a member holds.
pub struct NotWatchedMarker {
    client: Client,
    plan: Arc<WatchPlan>,
    kinds: Vec<String>,
    events: EventSink,
    writes: WriteBudget,
}

impl NotWatchedMarker {
    pub fn new(
        client: Client,
        plan: Arc<WatchPlan>,
        kinds: Vec<String>,
        events: EventSink,
    ) -> Self {
        Self {
            client,
            plan,
            kinds,
            events,
            writes: WriteBudget::new(MARK_WRITES),
        }
    }

    /// Marks the objects of each dropped namespace `ownership` holds; returns once done. A
    /// failure is logged, not fatal: the namespace stays dropped either way and the next start
    /// or change of share tries again.
    pub async fn mark(&self, ownership: &Ownership) {
        if ownership.holds_nothing() {
            return;
        }
        for dropped in &self.plan.dropped {
            let marked = mark_dropped_namespace(
                &self.client,
                &self.events,
                &self.writes,
                dropped,
                &self.kinds,
                ownership,
            )
            .await;
            match marked {
                Ok(report) => {
                    info!(namespace = %dropped.namespace, ?report, "marked NamespaceNotWatched")
                }
                Err(error) => {
                    warn!(namespace = %dropped.namespace, %error, "cannot mark NamespaceNotWatched")
                }
            }
        }
    }

    /// The step a member's `Resharder` runs with each new share of the objects.
    pub fn on_reshard(
        self: Arc<Self>,
    ) -> impl Fn(Arc<Ownership>) -> BoxFuture<'static, bool> + Send + Sync + 'static {
        move |ownership| {
            let marker = self.clone();
            Box::pin(async move {
                marker.mark(&ownership).await;
                true
            })
        }
    }
}

/// The PgAccessRequests of the dropped namespaces: nothing expires or revokes them, nor deletes
/// their RoleBindings, until the permission is restored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnreachableRequests {
    /// Each request found, as `namespace/name`.
    pub requests: Vec<String>,
    /// Dropped namespaces whose requests could not be listed (their count is unknown).
    pub unlisted: Vec<String>,
}

/// The names shown in the start-up warning; the count says how many more.
const NAMED: usize = 20;

impl UnreachableRequests {
    /// The requests by name, the first [`NAMED`] of them.
    pub fn named(&self) -> String {
        let mut shown = self
            .requests
            .iter()
            .take(NAMED)
            .cloned()
            .collect::<Vec<_>>();
        if self.requests.len() > NAMED {
            shown.push(format!("and {} more", self.requests.len() - NAMED));
        }
        shown.join(", ")
    }
}

/// Finds the PgAccessRequests of the dropped namespaces of `plan`, warns about them by name in
/// the log and with one Warning Event on each (those `ownership` holds, so each is told once
/// across members), and returns them to be counted.
pub async fn find_unreachable_requests(
    client: &Client,
    events: &EventSink,
    writes: &WriteBudget,
    plan: &WatchPlan,
    ownership: &Ownership,
) -> UnreachableRequests {
    let gvk = GroupVersionKind::gvk(OWN_GROUP, VERSION, "PgAccessRequest");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "pgaccessrequests");
    let mut found = UnreachableRequests::default();
    for dropped in &plan.dropped {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &dropped.namespace, &resource);
        let objects = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(error) => {
                warn!(namespace = %dropped.namespace, %error, "cannot list the PgAccessRequests of a namespace not watched: they may be unreachable");
                found.unlisted.push(dropped.namespace.clone());
                continue;
            }
        };
        let message = format!(
            "{}; this request cannot expire, be revoked or lose its RoleBindings until the \
             permission is restored",
            dropped.message()
        );
        for object in objects {
            let name = object.name_any();
            found.requests.push(format!("{}/{name}", dropped.namespace));
            if ownership.owns_object("PgAccessRequest", &dropped.namespace, &name) {
                let reference = reference_of(&object, &resource);
                let decision = crate::conditions::EventDecision::warning(
                    crate::conditions::reasons::common::NAMESPACE_NOT_WATCHED,
                    &message,
                );
                events.publish(writes, &reference, &[decision]).await;
            }
        }
    }
    if !found.requests.is_empty() {
        warn!(
            count = found.requests.len(),
            requests = %found.named(),
            "PgAccessRequests in namespaces not watched: they cannot expire until the operator's permissions there are restored"
        );
    }
    found
}
