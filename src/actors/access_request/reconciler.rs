//! One pass over a PgAccessRequest: read the caches, decide (pure), delete what must go, write
//! the status once, record the Events, and ask for a timer at expiry or at the end of a grace.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::{Resource, ResourceExt};

use super::cache::AccessCaches;
use crate::actors::{ObjectContext, Outcome, PassFailure, ReconcileError, Reconciler};
use crate::api::{PgAccessRequest, PgAccessRequestStatus, ReportsConditions};
use crate::conditions::{
    ClassifiedError, ConditionType, ErrorClass, PassFacts, derive_status, find_condition,
    status_patch,
};
use crate::k8s::{
    EventSink, Pinned, ReadYourWrites, add_owner_pinned, delete_pinned, patch_status,
};
use crate::messages::TimerPurpose;
use crate::reconcile::pgaccessrequest::{
    Decision, RequestFacts, decide, deletion_event, pass_facts, request_events, status_fields,
};

/// How long a pass waits for the first lists of RoleBindings and Clusters.
const CACHE_WAIT: Duration = Duration::from_secs(30);

/// Timers fire this much after the instant they aim at, so the pass they start sees it passed.
const TIMER_SLACK: Duration = Duration::from_millis(20);

pub struct AccessRequestReconciler {
    caches: Arc<AccessCaches>,
    events: EventSink,
    written: ReadYourWrites<PgAccessRequest>,
}

impl AccessRequestReconciler {
    pub fn new(caches: Arc<AccessCaches>, events: EventSink) -> Self {
        Self {
            caches,
            events,
            written: ReadYourWrites::default(),
        }
    }

    async fn pass(
        &self,
        obj: &PgAccessRequest,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.caches
            .wait_ready(CACHE_WAIT)
            .await
            .map_err(ReconcileError::other)?;
        let now = Timestamp::now();
        let facts = obj.pass_facts();
        if facts.paused {
            self.write_status(obj, facts, StatusExtras::default(), cx, now)
                .await?;
            return Ok(Outcome::done());
        }

        // Registered before the Cluster is looked up, so a Cluster that appears meanwhile
        // still wakes this request.
        self.caches
            .track_cluster_use(&cx.key, obj.spec.cluster.as_deref());
        let bindings = self.caches.bindings_of(&cx.key);
        let binding_refs: Vec<&RoleBinding> = bindings.iter().map(Arc::as_ref).collect();
        // Borrowed: a pass runs for every object, a clone of its status is not needed.
        let no_status = PgAccessRequestStatus::default();
        let status = obj.status.as_ref().unwrap_or(&no_status);
        let request = RequestFacts {
            name: &cx.key.name,
            uid: obj.metadata.uid.as_deref(),
            namespace: &cx.key.namespace,
            subject: &obj.spec.subject,
            cluster_role: &obj.spec.cluster_role,
            expires_at: obj.spec.expires_at.0,
            phase: status.phase.clone(),
            approver: status.approver.as_deref(),
            cluster: obj.spec.cluster.as_deref().map(|cluster| {
                (
                    cluster,
                    self.caches.cluster_exists(&cx.key.namespace, cluster),
                )
            }),
            orphan_grace: cx.shared.settings.access_request_orphan_grace,
            previous_binding_reason: find_condition(
                &status.common.conditions,
                ConditionType::RoleBindingSynced,
            )
            .map(|c| c.reason.as_str()),
        };
        let decision = decide(&request, &binding_refs, now);

        self.delete_bindings(obj, &decision, cx).await?;
        self.adopt_bindings(obj, &decision, cx).await?;
        let facts = pass_facts(facts, &decision).map_err(ReconcileError::other)?;
        let extras = StatusExtras {
            fields: status_fields(&decision),
            events: request_events(&decision),
            guarded: decision.new_phase.is_some(),
        };
        self.write_status(obj, facts, extras, cx, now).await?;
        Ok(schedule(&decision, now))
    }

    async fn delete_bindings(
        &self,
        obj: &PgAccessRequest,
        decision: &Decision,
        cx: &ObjectContext,
    ) -> Result<(), ReconcileError> {
        let api: Api<RoleBinding> = Api::namespaced(cx.client.clone(), &cx.key.namespace);
        for deletion in &decision.deletions {
            let outcome = delete_pinned(
                &api,
                &cx.writes,
                &deletion.name,
                deletion.uid.clone(),
                deletion.resource_version.clone(),
            )
            .await?;
            tracing::info!(rolebinding = %deletion.name, cause = ?deletion.cause, ?outcome, "deleting");
            if outcome != Pinned::Changed {
                self.caches
                    .binding_deleted(&cx.key.namespace, &deletion.name);
            }
            if outcome == Pinned::Done {
                self.events
                    .publish(
                        &cx.writes,
                        &obj.object_ref(&()),
                        &[deletion_event(deletion)],
                    )
                    .await;
            }
        }
        Ok(())
    }

    /// Makes the request an owner of its kept RoleBindings, so deleting the request deletes them
    /// (the API server's garbage collector does it, even while the operator is down).
    async fn adopt_bindings(
        &self,
        obj: &PgAccessRequest,
        decision: &Decision,
        cx: &ObjectContext,
    ) -> Result<(), ReconcileError> {
        // A non-controller owner: the RoleBinding stays the console's.
        let Some(owner) = obj.owner_ref(&()) else {
            return Ok(());
        };
        let api: Api<RoleBinding> = Api::namespaced(cx.client.clone(), &cx.key.namespace);
        for adoption in &decision.adoptions {
            let outcome = add_owner_pinned(
                &api,
                &cx.writes,
                &adoption.name,
                adoption.resource_version.as_deref(),
                &owner,
            )
            .await?;
            tracing::debug!(rolebinding = %adoption.name, ?outcome, "adopting");
        }
        Ok(())
    }

    /// The one status write of the pass, then its Events.
    async fn write_status(
        &self,
        obj: &PgAccessRequest,
        facts: PassFacts,
        extras: StatusExtras,
        cx: &ObjectContext,
        now: Timestamp,
    ) -> Result<(), ReconcileError> {
        let update = derive_status(&facts, obj.stored_status(), now);
        if !update.changed && extras.fields.is_empty() {
            return Ok(());
        }
        let precondition = extras.guarded.then(|| obj.resource_version()).flatten();
        let patch = status_patch(&update, extras.fields, precondition.as_deref())
            .map_err(ReconcileError::other)?;
        match patch_status::<PgAccessRequest>(&cx.client, &cx.writes, &cx.key, &patch).await {
            Ok(written) => self.written.wrote(&cx.key, written),
            // The request changed since it was read: its new version is already on its way.
            Err(kube::Error::Api(status)) if status.code == 409 => return Ok(()),
            Err(err) => return Err(err.into()),
        }
        let mut events = update.events;
        events.extend(extras.events);
        self.events
            .publish(&cx.writes, &obj.object_ref(&()), &events)
            .await;
        Ok(())
    }
}

/// What a pass writes besides the conditions.
#[derive(Default)]
struct StatusExtras {
    /// The kind's own status fields (a phase the operator moved).
    fields: serde_json::Map<String, serde_json::Value>,
    /// The request's own Events, recorded after the write like the transition Events.
    events: Vec<crate::conditions::EventDecision>,
    /// Write only over the version read: moving the phase must not overwrite a decision a
    /// console recorded meanwhile.
    guarded: bool,
}

/// Timers for the instants the decision waits for.
fn schedule(decision: &Decision, now: Timestamp) -> Outcome {
    let delay = |at: Timestamp| {
        Duration::try_from(at.duration_since(now))
            .unwrap_or(Duration::ZERO)
            .saturating_add(TIMER_SLACK)
    };
    let mut outcome = Outcome::done();
    if let Some(at) = decision.expiry_at {
        outcome = outcome.after(TimerPurpose::Expiry, delay(at));
    }
    if let Some(at) = decision.grace_ends {
        outcome = outcome.after(TimerPurpose::Grace, delay(at));
    }
    outcome
}

impl Reconciler for AccessRequestReconciler {
    type Object = PgAccessRequest;

    async fn reconcile(
        &self,
        obj: Arc<PgAccessRequest>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        // The runtime already opened this pass's span.
        let obj = self.written.freshest(&cx.key, obj);
        self.pass(&obj, cx).await
    }

    async fn on_stop(&self, key: &crate::messages::ObjectKey, _cx: &ObjectContext) {
        self.caches.forget_cluster_use(key);
        self.written.forget(key);
    }

    async fn report_error(
        &self,
        obj: Arc<PgAccessRequest>,
        failure: PassFailure<'_>,
        cx: &ObjectContext,
    ) {
        let error = match failure {
            PassFailure::Error(ReconcileError::Kube(err)) => ClassifiedError::from_kube(err),
            other => ClassifiedError::new(ErrorClass::ReconciliationFailed, &other.to_string()),
        };
        let obj = self.written.freshest(&cx.key, obj);
        let facts = obj.pass_facts().with_error(error);
        let update = derive_status(&facts, obj.stored_status(), Timestamp::now());
        if !update.changed {
            return;
        }
        let written = match status_patch(&update, Default::default(), None) {
            Ok(patch) => {
                patch_status::<PgAccessRequest>(&cx.client, &cx.writes, &cx.key, &patch).await
            }
            Err(err) => {
                tracing::warn!(error = %err, "error status not rendered");
                return;
            }
        };
        match written {
            Ok(written) => {
                self.written.wrote(&cx.key, written);
                self.events
                    .publish(&cx.writes, &obj.object_ref(&()), &update.events)
                    .await;
            }
            Err(err) => {
                tracing::warn!(error = %err, name = %obj.name_any(), "error status not written")
            }
        }
    }
}
