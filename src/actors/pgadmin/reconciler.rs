//! One pass over a PgAdmin as a pipeline: check the hostname; the exposure observed (its reads
//! past the cache), decided (pure) and its deletes past the cache applied (`exposure.rs`; one
//! the server refuses is for the next pass, asked for at once, to decide with); observe (the
//! caches, the referenced objects), `decide` (pure),
//! ensure the settings database, `plan` (pure), make the Secrets current and apply the children
//! through the applier, read them back from the caches, `conclude` (pure), and write the status
//! once. The rules live in `reconcile::pgadmin` (`plan.rs`, `children.rs`, `conclude.rs`).

use super::error::PgAdminError;
use super::secrets::{ConsumedDigests, ServersSecrets};
use crate::actors::past_exposure::PastExposure;
use crate::actors::{ObjectContext, Outcome, ReconcileError, StatusPass, user_of};
use crate::api::{PgAdmin, ReportsConditions};
use crate::children::{ChildOwner, OperatorCaches, Synced, Track};
use crate::conditions::{Hostname, PassFacts};
use crate::k8s::EventSink;
use crate::messages::ObjectKey;
use crate::reconcile::exposure::HostAllowList;
use crate::reconcile::pgadmin::{
    Applied, ChildNames, Conclusion, conclude, decide, plan, withdrawn,
};
use crate::status::{Extras, StatusWriter, Written};

pub struct PgAdminReconciler {
    pub(super) caches: OperatorCaches,
    pub(super) status: StatusWriter<PgAdmin>,
    pub(super) servers: ServersSecrets,
    pub(super) consumed: ConsumedDigests,
    pub(super) password_generation: tokio::sync::OnceCell<bool>,
    /// Routes and HTTPRoutes past the cache, and the deletes of them the server refused.
    pub(super) past_exposure: PastExposure,
}

impl PgAdminReconciler {
    pub fn new(caches: OperatorCaches, events: EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
            servers: ServersSecrets::default(),
            consumed: ConsumedDigests::default(),
            password_generation: tokio::sync::OnceCell::new(),
            past_exposure: PastExposure::default(),
        }
    }

    async fn pass(&self, obj: &PgAdmin, cx: &ObjectContext) -> Result<Outcome, ReconcileError> {
        let names = ChildNames::of(&cx.key.name);
        let owner = ChildOwner::of(obj).ok_or_else(|| PgAdminError::NoUid(cx.key.name.clone()))?;
        // The hostname first: a refusal withdraws the exposure whatever else holds.
        let hosts = HostAllowList::new(&cx.shared.settings.exposure_allowed_host_suffixes);
        let refusal = hosts.check(obj.spec.exposure.hostname.as_deref()).err();
        let hostname = match &refusal {
            Some(r) => Hostname::refused(r.message()),
            None => Hostname::Allowed,
        };
        let facts = obj.pass_facts().with_hostname(hostname);
        let mut facts = facts.map_err(PgAdminError::from)?;
        let paused = facts.paused;
        let refused = refusal.as_ref().map_or(Ok(()), Err);
        let seen = self.observe_exposure(obj, cx, &owner, &names).await?;
        // An earlier object holding the hostname keeps it (a paused PgAdmin changes nothing).
        let conflict = (refusal.is_none() && !paused)
            .then(|| (self.caches.host_claims).conflict_of(obj, &(&obj.spec.exposure).into()))
            .flatten();
        let exposure = seen.decide(obj, &cx.key.namespace, &names, refused, conflict.as_ref());
        let again = (self.withdraw_past_cache(obj, cx, &owner, &names, &exposure)).await?;
        let mut exposure_converged = true;
        if refusal.is_some() {
            let withdraw = self.withdraw_exposure(obj, cx, &owner, &names, &exposure);
            exposure_converged = withdraw.await?;
            facts = withdrawn(facts, &exposure, paused, obj.status.as_ref())
                .map_err(PgAdminError::from)?;
        }
        if paused {
            let written = self.write(obj, facts, cx).await?;
            return Ok(Outcome::done().with_status(written).again_if(again));
        }

        let observed = self.observe(obj, cx, refusal.is_some()).await?;
        let decision = decide(&observed);
        let settings = self.settings_db(obj, cx, &owner, &decision.gates).await?;
        let plan = plan(&observed, decision, settings);
        // Every Secret the pass reads or the Pod consumes wakes this PgAdmin (a rotated
        // credential, a rotated client secret).
        let user = user_of::<PgAdmin>(&cx.key);
        self.caches
            .secrets
            .register(&user, plan.watched.clone(), Track::Version);
        let applied = if plan.renders {
            let children = self.apply_children(obj, cx, &owner, &observed, &plan, &exposure);
            Some(children.await?)
        } else {
            None
        };
        let facts = conclude(Conclusion {
            facts,
            namespace: &cx.key.namespace,
            names: &names,
            spec_image: obj.spec.image.as_deref(),
            plan: &plan,
            exposure,
            exposure_converged,
            applied: applied.as_ref().map_or(Applied::Held, |a| a.applied()),
            stored: obj.status.as_ref(),
        })
        .map_err(PgAdminError::from)?;
        let written = self.write(obj, facts, cx).await?;
        Ok(Outcome::done().with_status(written).again_if(again))
    }

    async fn write(
        &self,
        obj: &PgAdmin,
        facts: PassFacts,
        cx: &ObjectContext,
    ) -> Result<Written, ReconcileError> {
        // A failed write keeps the timers the facts decided.
        self.status
            .write(obj, &facts, Extras::default(), cx.target())
            .await
            .map_err(|e| ReconcileError::other(e).keeping_timers(&facts.timers))
    }
}

impl StatusPass for PgAdminReconciler {
    type Object = PgAdmin;

    fn status(&self) -> &StatusWriter<PgAdmin> {
        &self.status
    }

    fn caches(&self) -> &OperatorCaches {
        &self.caches
    }

    fn reads<'a>(&'a self, cx: &ObjectContext) -> Vec<&'a Synced> {
        self.cache_reads(cx)
    }

    async fn run(&self, obj: &PgAdmin, cx: &ObjectContext) -> Result<Outcome, ReconcileError> {
        self.pass(obj, cx).await
    }

    fn forget(&self, key: &ObjectKey) {
        self.past_exposure.forget(key);
        self.servers
            .forget(&key.namespace, &ChildNames::of(&key.name));
    }
}
