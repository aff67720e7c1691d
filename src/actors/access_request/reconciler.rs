//! One pass over a PgAccessRequest as a pipeline: observe (the caches; the API for a missing
//! RoleBinding not yet said missing), `decide` (pure), delete and adopt what the decision names,
//! write the status once with its Events, and leave timers at expiry and at the end of a grace.
//! The rules live in `reconcile::access_request`.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;

use super::observe::{Observed, cluster_role_exists, live_bindings, observe};
use super::writes::{adopt_decided, delete_decided, delete_orphans};
use crate::actors::{Listed, ObjectContext, Outcome, PassEnv, ReconcileError, StatusPass, user_of};
use crate::api::{PgAccessRequest, ReportsConditions};
use crate::children::{CACHE_WAIT, OperatorCaches, RoleReads, Synced};
use crate::conditions::ClassifiedError;
use crate::k8s::get_confirmed;
use crate::messages::ObjectKey;
use crate::reconcile::access_request::{
    Decision, RequestFacts, TIMER_SLACK, decide, needs_live_read, pass_facts, request_events,
    status_fields, timers,
};
use crate::status::{Extras, StatusWriter};

/// What the pause of a request holds, and what it never holds (said in its paused conditions).
pub const PAUSE_HOLDS: &str = "for a PgAccessRequest the pause holds only the owner reference \
    the operator adds to the request's RoleBindings: expiry, revocation, the self-approval \
    refusal and the deletion of drifted or orphaned RoleBindings still apply";

pub struct AccessRequestReconciler {
    caches: OperatorCaches,
    status: StatusWriter<PgAccessRequest>,
    /// The requests' ClusterRoles, read past the caches.
    roles: RoleReads,
}

impl AccessRequestReconciler {
    pub fn new(caches: OperatorCaches, events: crate::k8s::EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
            roles: RoleReads::default(),
        }
    }

    async fn pass(
        &self,
        obj: &PgAccessRequest,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        let now = cx.shared.settings.clock.now();
        // The pause never stretches the time box: expiry, revocation, the self-approval
        // refusal and every deletion still apply; it holds only the adoption.
        let facts = obj.pass_facts().with_pause_note(PAUSE_HOLDS);
        let Observed {
            mut request,
            bindings,
        } = observe(&self.caches, obj, cx);
        // A failed read leaves ConfigurationValid as stored and fails the pass at its end, so
        // it is retried with backoff: never a stall, and never a guess.
        let role_read = cluster_role_exists(cx, &self.roles, &obj.spec.cluster_role).await;
        request.cluster_role_exists = role_read.as_ref().ok().copied();
        let cached: Vec<&RoleBinding> = bindings.iter().map(Arc::as_ref).collect();
        let mut decision = decide(&request, &cached, now);
        if needs_live_read(&decision, &request) {
            let live = live_bindings(cx).await?;
            if !live.is_empty() {
                decision = decide(&request, &live.iter().collect::<Vec<_>>(), now);
            }
        }
        if facts.paused {
            decision.adoptions.clear();
        }
        // A refused write fails the pass so that it is retried (an adoption left undone would
        // leave the grant to outlive its request's deletion if the operator were down then),
        // but the instants the decision waits for are known already: their timers are kept
        // whatever fails, or a new, earlier `expiresAt` would wait for the retry backoff.
        let decided = schedule(
            &decision,
            &request,
            now,
            cx.shared.settings.stall_rechecks.0,
        );
        let keep = |err: ReconcileError| err.keeping(&decided);
        let events = self.status.events();
        delete_decided(&self.caches.access_bindings, events, obj, &decision, cx)
            .await
            .map_err(keep)?;
        adopt_decided(obj, &decision, cx).await.map_err(keep)?;
        let facts = pass_facts(facts, &decision).map_err(ReconcileError::other)?;
        // The failed read is in this write already, as the failure report after the pass
        // writes it: the two agree, so the report writes nothing and its watch event does not
        // start a pass that would undo it.
        let facts = match &role_read {
            Ok(_) => facts,
            Err(error) => facts.with_error(ClassifiedError::from_kube(error)),
        };
        let extras = Extras {
            fields: status_fields(&decision),
            events: request_events(&decision),
            guarded: decision.new_phase.is_some(),
        };
        let written = self.status.write(obj, &facts, extras, cx.target()).await;
        let written = written.map_err(|e| keep(e.into()))?;
        let outcome = decided.with_status(written);
        match role_read {
            Ok(_) => Ok(outcome),
            Err(error) => Err(ReconcileError::from(error).keeping(&outcome)),
        }
    }
}

/// How many failed reads of a request an orphan check retries (2 s, 4 s, ... 32 s: about two
/// minutes) before it leaves the RoleBindings to the request's next change or list.
const ORPHAN_READ_TRIES: u32 = 8;

/// When the orphan grace of a RoleBinding ends (`None`: it has no creation time).
fn grace_ends(rb: &RoleBinding, grace: std::time::Duration) -> Option<Timestamp> {
    rb.metadata
        .creation_timestamp
        .as_ref()
        .and_then(|t| t.0.checked_add(grace).ok())
}

/// The decision's timers as the pass's outcome.
fn schedule(
    decision: &Decision,
    request: &RequestFacts<'_>,
    now: Timestamp,
    recheck: std::time::Duration,
) -> Outcome {
    timers(decision, request, now, recheck)
        .into_iter()
        .fold(Outcome::done(), |outcome, (purpose, delay)| {
            outcome.after(purpose, delay)
        })
}

impl StatusPass for AccessRequestReconciler {
    type Object = PgAccessRequest;
    /// Fail closed: nobody can tell what such a request grants, or until when.
    const UNDECODABLE: &'static str = "it is not reconciled until it can be decoded, and the \
        RoleBindings labelled for it are deleted (fail closed)";

    fn status(&self) -> &StatusWriter<PgAccessRequest> {
        &self.status
    }

    fn caches(&self) -> &OperatorCaches {
        &self.caches
    }

    fn reads<'a>(&'a self, _cx: &ObjectContext) -> Vec<&'a Synced> {
        vec![
            self.caches.access_bindings.synced(),
            self.caches.clusters.index().synced(),
        ]
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
    /// Only the API server's word that the request does not exist counts, and not before the
    /// orphan grace of a binding is over: a binding may be created before its request (one
    /// `kubectl apply -f` with the RoleBinding first), and the request's own watch event comes
    /// later still. A binding of a request that exists but cannot be decoded is deleted at once
    /// (fail closed).
    async fn on_orphan(&self, key: &ObjectKey, cx: &ObjectContext) {
        let bindings = &self.caches.access_bindings;
        if bindings.wait_synced(CACHE_WAIT).await.is_err() {
            return;
        }
        let requests: Api<PgAccessRequest> = Api::namespaced(cx.client.clone(), &key.namespace);
        let mut failed_reads = 0u32;
        loop {
            let orphans = bindings.children_of(&user_of::<PgAccessRequest>(key));
            if orphans.is_empty() {
                return;
            }
            // Only the server's word that the request is missing (a 404 naming it) counts.
            match get_confirmed(&requests, &key.name).await {
                Ok(None) => failed_reads = 0,
                Ok(Some(_)) => return,
                // It exists but cannot be decoded (its watch left it out): nobody can tell what
                // it grants or until when, so nothing stays bound (fail closed).
                Err(kube::Error::SerdeError(error)) => {
                    tracing::warn!(request = %key, %error, "the request cannot be decoded; its RoleBindings are deleted");
                    delete_orphans(bindings, &orphans, cx).await;
                    return;
                }
                // A passing refusal or outage must not leave the grant for ever: the read is
                // tried again, with doubling waits, before it is left to the next change or list.
                Err(error) if failed_reads < ORPHAN_READ_TRIES => {
                    failed_reads += 1;
                    tracing::debug!(request = %key, error = %crate::conditions::readable(&error), "whether the request exists is unknown; read again");
                    tokio::time::sleep(std::time::Duration::from_secs(1 << failed_reads.min(5)))
                        .await;
                    continue;
                }
                Err(error) => {
                    tracing::warn!(request = %key, error = %crate::conditions::readable(&error), "cannot tell whether the request exists; its RoleBindings are left for its next change or list");
                    return;
                }
            }
            let now = cx.shared.settings.clock.now();
            let grace = cx.shared.settings.access_request_orphan_grace;
            let (young, old): (Vec<_>, Vec<_>) = orphans
                .into_iter()
                .partition(|rb| grace_ends(rb, grace).is_some_and(|ends| ends > now));
            if !old.is_empty() {
                delete_orphans(bindings, &old, cx).await;
            }
            let Some(ends) = young.iter().filter_map(|rb| grace_ends(rb, grace)).min() else {
                return;
            };
            // Looked at again once the youngest grace is over (this runs in its own task).
            let wait = now.duration_until(ends).unsigned_abs() + TIMER_SLACK;
            tokio::time::sleep(wait).await;
        }
    }

    async fn on_listed(&self, listed: &Listed, env: &Arc<PassEnv>) {
        let bindings = &self.caches.access_bindings;
        if bindings.wait_synced(CACHE_WAIT).await.is_err() {
            return;
        }
        let mut sweeps = Vec::new();
        for owner in bindings.owners() {
            let key = owner.object_key();
            if owner.kind == <PgAccessRequest as kube::Resource>::kind(&())
                && listed.is_my_orphan(&key)
            {
                let cx = ObjectContext::new(key.clone(), env.clone(), 0);
                sweeps.push(async move { self.on_orphan(&key, &cx).await });
            }
        }
        // At once: one within its grace must not hold back the others.
        futures::future::join_all(sweeps).await;
    }
}
