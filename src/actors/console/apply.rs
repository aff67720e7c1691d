//! The writes of a console pass, as its plan says: the paused pass's withdrawal under a refused
//! hostname, the pinned deletes of what is published past the cache (the shared
//! `actors::past_exposure`), and the children through the applier (`children.rs`), reduced to
//! the facts `reconcile::console::settle` judges.

use kube::ResourceExt;
use tokio::time::Instant;

use super::children::{Applied, ChildPlan, Target, apply_all, apply_exposure};
use super::reconciler::ConsoleReconciler;
use crate::actors::past_exposure::Exposed;
use crate::actors::{ObjectContext, ReconcileError, user_of};
use crate::api::PgToolBoxConsole;
use crate::children::{ChildOwner, ChildRefusal, ChildVerdict};
use crate::conditions::{PassFacts, Verdict};
use crate::reconcile::console::{
    ApplyFacts, ChildNames, Children, ChildrenApplied, ConsolePod, ForeignChild, Observed, Plan,
    PolicyRefusal, RenderInput, TRUST_ANNOTATION, conclude_paused, kept_under_refused_hostname,
    trusted_proxies,
};
use crate::reconcile::exposure::HostAllowList;

impl ConsoleReconciler {
    /// A paused console: only a refused hostname acts, withdrawing what was published.
    pub(super) async fn paused(
        &self,
        obj: &PgToolBoxConsole,
        cx: &ObjectContext,
        to: Target<'_>,
        facts: PassFacts,
    ) -> Result<PassFacts, ReconcileError> {
        let hosts = HostAllowList::new(&cx.shared.settings.exposure_allowed_host_suffixes);
        let refusal = hosts.check(obj.spec.exposure.hostname.as_deref()).err();
        let mut converged = true;
        let mut kept = None;
        if refusal.is_some() {
            let input = render_input(cx, obj, "", None);
            let report = apply_exposure(to, &input, None).await;
            converged = report.map_err(ReconcileError::other)?.converged();
            kept = self.kept_policy(cx);
        }
        let stored = obj.status.clone().unwrap_or_default();
        conclude_paused(facts, refusal.as_ref(), &stored, converged, kept)
            .map_err(ReconcileError::other)
    }

    /// ExposureConfined of a paused console stalled on a refused hostname, from the caches: its
    /// ingress policy and its workload stay as they were (ExposurePolicyKept while the policy
    /// exists, saying what the Pods do with X-Forwarded-For).
    fn kept_policy(&self, cx: &ObjectContext) -> Option<Verdict> {
        let owner = user_of::<PgToolBoxConsole>(&cx.key);
        let names = ChildNames::of(&cx.key.name);
        let c = &self.caches;
        let has_policy = c
            .network_policies
            .children_of(&owner)
            .iter()
            .any(|p| p.name_any() == names.network_policy);
        let pods: Vec<ConsolePod> = c
            .pods
            .children_of(&owner)
            .iter()
            .map(|p| ConsolePod::of(p))
            .collect();
        let template_grant = c
            .deployments
            .children_of(&owner)
            .into_iter()
            .find(|d| d.name_any() == names.workload)
            .and_then(|d| d.spec.template.metadata.clone())
            .and_then(|m| m.annotations)
            .and_then(|a| a.get(TRUST_ANNOTATION).cloned());
        kept_under_refused_hostname(has_policy, &pods, template_grant.as_deref())
    }

    /// Deletes, pinned, what the plan finds ours past the cache and unwanted; `true` when the
    /// server refused one (remembered for the next pass, which decides with it).
    pub(super) async fn withdraw_past_cache(
        &self,
        cx: &ObjectContext,
        owner: &ChildOwner,
        observed: &Observed<'_>,
        plan: &Plan,
    ) -> Result<bool, ReconcileError> {
        let deletes = &plan.exposure.delete_past_cache;
        if deletes.is_empty() {
            return Ok(false);
        }
        let name = ChildNames::of(&cx.key.name).workload;
        let of = Exposed {
            owner,
            name: &name,
            generation: observed.obj.metadata.generation.unwrap_or_default(),
        };
        let applier = cx.applier();
        Ok(self.past_exposure.withdraw(&applier, &of, deletes).await?)
    }

    /// The plan's children; a refused policy is remembered for the next passes.
    pub(super) async fn apply(
        &self,
        cx: &ObjectContext,
        to: Target<'_>,
        observed: &Observed<'_>,
        plan: &Plan,
    ) -> Result<ChildrenApplied<ChildRefusal>, ReconcileError> {
        let obj = observed.obj;
        let image = match &plan.children {
            Children::Hold => return Ok(ChildrenApplied::Held),
            Children::WithdrawExposure => {
                let input = render_input(cx, obj, "", None);
                let report = apply_exposure(to, &input, None).await;
                let converged = report.map_err(ReconcileError::other)?.converged();
                return Ok(ChildrenApplied::Withdrawn { converged });
            }
            Children::Apply { image } => image,
        };
        let mut input = render_input(cx, obj, image, plan.confinement.grant.as_deref());
        // The grant is given for the rendered policy's peers only (confined.rs).
        let trusted = match (&input.grant, &plan.rendered) {
            (Some(_), Some(rendered)) => trusted_proxies(&rendered.peers, &observed.nodes),
            _ => Vec::new(),
        };
        input.trusted_proxies = &trusted;
        input.secrets = &observed.digests;
        let children = ChildPlan {
            input,
            obj,
            bundle: observed.bundle.as_ref().map(|b| b.bundle.as_str()),
            policy: plan.confinement.policy,
            peers: plan.rendered.as_ref().map(|r| r.peers.as_slice()),
            exposure: plan.exposure.apply,
        };
        let applied = apply_all(to, &children)
            .await
            .map_err(ReconcileError::other)?;
        let policy_refusal = applied.policy.refusal().map(|refused| PolicyRefusal {
            name: refused.name,
            code: refused.code,
            message: refused.message,
        });
        if let Some(refusal) = &policy_refusal {
            let generation = obj.metadata.generation.unwrap_or_default();
            let entry = (generation, Instant::now(), refusal.clone());
            self.refused.insert(cx.key.clone(), entry);
        }
        Ok(ChildrenApplied::Children(ApplyFacts {
            converged: applied.converged(),
            bundle_foreign: applied.bundle.not_owned().is_some(),
            foreign: not_owned(&applied),
            policy_refusal,
            // The mirrored CA bundle refused is the pass's error too: the Pods mount it.
            refused: applied
                .workload
                .refusal()
                .or_else(|| applied.bundle.refusal())
                .or_else(|| applied.exposure.refusal()),
        }))
    }
}

fn render_input<'a>(
    cx: &'a ObjectContext,
    obj: &'a PgToolBoxConsole,
    image: &'a str,
    grant: Option<&'a str>,
) -> RenderInput<'a> {
    RenderInput {
        console: &cx.key.name,
        namespace: &cx.key.namespace,
        spec: &obj.spec,
        image,
        grant,
        trusted_proxies: &[],
        secrets: &[],
    }
}

/// A child name taken by a foreign object (the CA bundle's is its advisory's business).
fn not_owned(applied: &Applied) -> Option<ForeignChild> {
    [&applied.workload, &applied.policy, &applied.exposure]
        .iter()
        .find_map(|r| match r.not_owned() {
            Some(ChildVerdict::NotOwned { kind, name }) => Some(ForeignChild {
                kind: kind.clone(),
                name: name.clone(),
            }),
            _ => None,
        })
}
