//! One pass over a PgAccessRequest: read the caches, decide (pure), delete what must go, write
//! the status once, record the Events, and ask for a timer at expiry or at the end of a grace.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};

use crate::actors::{ObjectContext, Outcome, PassEnv, ReconcileError, StatusPass, user_of};
use crate::api::{PgAccessRequest, PgAccessRequestStatus, ReportsConditions};
use crate::children::{OperatorCaches, REQUEST_LABEL, Track, wait_synced};
use crate::conditions::reasons::pgaccessrequest;
use crate::conditions::{ConditionType, PassFacts, find_condition};
use crate::k8s::{EventSink, Pinned, add_owner_pinned, delete_pinned};
use crate::messages::{ObjectKey, TimerPurpose};
use crate::reconcile::pgaccessrequest::{
    BindingVerdict, Decision, RequestFacts, decide, deletion_event, pass_facts, request_events,
    status_fields,
};
use crate::status::{Extras, StatusWriter};

/// How long a pass waits for the first lists of RoleBindings and Clusters.
const CACHE_WAIT: Duration = Duration::from_secs(30);

/// Timers fire this much after the instant they aim at, so the pass they start sees it passed.
const TIMER_SLACK: Duration = Duration::from_millis(20);

/// The kind the request's RoleBindings and Cluster references are filed under.
pub const KIND: &str = "PgAccessRequest";

pub struct AccessRequestReconciler {
    caches: OperatorCaches,
    status: StatusWriter<PgAccessRequest>,
}

impl AccessRequestReconciler {
    pub fn new(caches: OperatorCaches, events: EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
        }
    }

    async fn pass(
        &self,
        obj: &PgAccessRequest,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        let clusters = self.caches.clusters.index();
        let bindings = &self.caches.access_bindings;
        wait_synced(CACHE_WAIT, &[bindings.synced(), clusters.synced()])
            .await
            .map_err(ReconcileError::other)?;
        let now = cx.shared.settings.clock.now();
        let facts = obj.pass_facts();
        if facts.paused {
            self.write_status(obj, facts, Extras::default(), cx).await?;
            return Ok(Outcome::done());
        }

        // Registered before the Cluster is looked up, so a Cluster that appears meanwhile
        // still wakes this request.
        let owner = user_of::<PgAccessRequest>(&cx.key);
        let cluster = obj
            .spec
            .cluster
            .as_deref()
            .map(|name| ObjectKey::new(cx.key.namespace.as_str(), name));
        clusters.register(&owner, cluster.iter().cloned().collect(), Track::Existence);
        let bindings = bindings.children_of(&owner);
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
            cluster: obj
                .spec
                .cluster
                .as_deref()
                .zip(cluster.as_ref())
                .map(|(name, key)| (name, clusters.exists(key))),
            orphan_grace: cx.shared.settings.access_request_orphan_grace,
            previous_binding_reason: find_condition(
                &status.common.conditions,
                ConditionType::RoleBindingSynced,
            )
            .map(|c| c.reason.as_str()),
        };
        let mut decision = decide(&request, &binding_refs, now);
        // The console writes the RoleBinding, then the approval: their watch events may arrive
        // the other way round. Before stating that an approved request has no RoleBinding (a
        // Warning), the API is asked rather than the cache.
        let live;
        if decision.binding == BindingVerdict::RoleBindingMissing
            && request.previous_binding_reason
                != Some(pgaccessrequest::ROLE_BINDING_MISSING.as_str())
        {
            live = self.live_bindings(cx).await?;
            if !live.is_empty() {
                let refs: Vec<&RoleBinding> = live.iter().collect();
                decision = decide(&request, &refs, now);
            }
        }
        // A refused write fails the pass so that it is retried (an adoption left undone would
        // leave the grant to outlive its request's deletion if the operator were down then),
        // but the instants the decision waits for are known already: their timers are kept
        // whatever fails, or a new, earlier `expiresAt` would wait for the retry backoff.
        let decided = schedule(&decision, now);
        let keep = |err: ReconcileError| err.keeping(&decided);
        self.delete_bindings(obj, &decision, cx)
            .await
            .map_err(keep)?;
        self.adopt_bindings(obj, &decision, cx)
            .await
            .map_err(keep)?;
        let facts = pass_facts(facts, &decision).map_err(ReconcileError::other)?;
        let extras = Extras {
            fields: status_fields(&decision),
            events: request_events(&decision),
            guarded: decision.new_phase.is_some(),
        };
        let written = self
            .write_status(obj, facts, extras, cx)
            .await
            .map_err(keep)?;
        Ok(decided.with_status(written))
    }

    /// The request's RoleBindings as the API server has them now (not being deleted).
    async fn live_bindings(&self, cx: &ObjectContext) -> Result<Vec<RoleBinding>, ReconcileError> {
        let api: Api<RoleBinding> = Api::namespaced(cx.client.clone(), &cx.key.namespace);
        let selector = format!("{REQUEST_LABEL}={}", cx.key.name);
        let list = api.list(&ListParams::default().labels(&selector)).await?;
        Ok(list
            .items
            .into_iter()
            .filter(|rb| rb.metadata.deletion_timestamp.is_none())
            .collect())
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
                self.caches.access_bindings.deleted(
                    &ObjectKey::new(cx.key.namespace.as_str(), deletion.name.as_str()),
                    deletion.uid.clone(),
                );
            }
            if outcome == Pinned::Done {
                self.status
                    .events()
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
        extras: Extras,
        cx: &ObjectContext,
    ) -> Result<crate::status::Written, ReconcileError> {
        Ok(self.status.write(obj, &facts, extras, cx.target()).await?)
    }
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

impl StatusPass for AccessRequestReconciler {
    type Object = PgAccessRequest;

    fn status(&self) -> &StatusWriter<PgAccessRequest> {
        &self.status
    }

    fn caches(&self) -> &OperatorCaches {
        &self.caches
    }

    async fn run(
        &self,
        obj: &PgAccessRequest,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        // The runtime already opened this pass's span.
        self.pass(obj, cx).await
    }

    /// RoleBindings labelled for a request that does not exist grant what nobody approved:
    /// deleted (pinned), whether the request was deleted before it adopted them or never was.
    async fn on_orphan(&self, key: &ObjectKey, cx: &ObjectContext) {
        let bindings = &self.caches.access_bindings;
        if bindings.wait_synced(CACHE_WAIT).await.is_err() {
            return;
        }
        let orphans = bindings.children_of(&user_of::<PgAccessRequest>(key));
        if orphans.is_empty() {
            return;
        }
        // The request's watch and the bindings' watch are not ordered: a binding may be seen
        // before the request it was made for. Only the API says the request does not exist.
        let requests: Api<PgAccessRequest> = Api::namespaced(cx.client.clone(), &key.namespace);
        match requests.get_opt(&key.name).await {
            Ok(None) => {}
            Ok(Some(_)) => return,
            Err(error) => {
                tracing::warn!(request = %key, %error, "cannot tell whether the request exists; its RoleBindings are left for its next change or list");
                return;
            }
        }
        let api: Api<RoleBinding> = Api::namespaced(cx.client.clone(), &key.namespace);
        for binding in orphans {
            let name = binding.name_any();
            let uid = binding.uid();
            let pinned = delete_pinned(
                &api,
                &cx.writes,
                &name,
                uid.clone(),
                binding.resource_version(),
            );
            match pinned.await {
                Ok(Pinned::Changed) => {}
                Ok(outcome) => {
                    tracing::info!(rolebinding = %name, request = %key, ?outcome, "RoleBinding of a request that does not exist deleted");
                    bindings.deleted(&ObjectKey::new(key.namespace.as_str(), name.as_str()), uid);
                }
                Err(error) => {
                    tracing::warn!(rolebinding = %name, request = %key, %error, "RoleBinding of a request that does not exist not deleted; retried on its next change or list");
                }
            }
        }
    }

    async fn on_listed(&self, known: &HashSet<ObjectKey>, env: &Arc<PassEnv>) {
        if self
            .caches
            .access_bindings
            .wait_synced(CACHE_WAIT)
            .await
            .is_err()
        {
            return;
        }
        for owner in self.caches.access_bindings.owners() {
            let key = owner.object_key();
            if owner.kind == KIND && !known.contains(&key) {
                let cx = ObjectContext::new(key.clone(), env.clone(), 0);
                self.on_orphan(&key, &cx).await;
            }
        }
    }
}
