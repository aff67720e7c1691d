//! One pass over an EvidenceAgent as a pipeline: observe (the caches, the Cluster's and
//! ObjectStore's contents when their resourceVersion moved, the `operator` provider's
//! certificate planned with the operator's CA), `plan` (pure), apply the children through the
//! applier, read them back from the caches, `conclude` (pure), and write the status once. The
//! rules that combine the verdicts live in `reconcile::evidence_agent::pass`.

use super::ca::CaStore;
use crate::actors::{ObjectContext, Outcome, ReconcileError, StatusPass, user_of};
use crate::api::{EvidenceAgent, ReportsConditions};
use crate::children::{
    ApplyReport, ChildOwner, ChildSet, ChildVerdict, Component, OperatorCaches, Synced, Track,
};
use crate::conditions::PassFacts;
use crate::k8s::EventSink;
use crate::messages::ObjectKey;
use crate::reconcile::evidence_agent::{
    AgentChildren, AgentFacts, Applied, ApplyPlan, ChildNames, Conclusion, Observed, Plan,
    conclude, decide, needs_certificate, plan, watched_secrets,
};
use crate::reconcile::images::ImageAllowList;
use crate::status::{Extras, StatusWriter, Written};

/// The kind the agent's children and references are filed under.

#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("the operator cannot read Clusters in namespace {0}")]
    ClustersUnreadable(String),
    #[error("EvidenceAgent {0} has no uid yet: its children cannot be owned")]
    NoUid(String),
    #[error("the serving certificate of EvidenceAgent {0} cannot be issued: {1}")]
    Certificate(
        String,
        #[source] crate::reconcile::evidence_agent::pki::PkiError,
    ),
}

pub struct EvidenceAgentReconciler {
    pub(super) caches: OperatorCaches,
    status: StatusWriter<EvidenceAgent>,
    /// The operator's CA (`operator` provider), read or created once.
    pub(super) ca: CaStore,
}

impl EvidenceAgentReconciler {
    pub fn new(caches: OperatorCaches, events: EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
            ca: CaStore::default(),
        }
    }

    async fn pass(
        &self,
        obj: &EvidenceAgent,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        let facts = obj.pass_facts();
        if facts.paused {
            let written = self.write(obj, facts, cx).await?;
            return Ok(Outcome::done().with_status(written));
        }
        let ns = cx.key.namespace.as_str();
        let names = ChildNames::of(&cx.key.name);
        let provider = obj.spec.serving_certificate.provider;
        let refs = self.observe_references(obj, cx).await?;
        let allow = ImageAllowList::new(&cx.shared.settings.allowed_image_repositories);
        let agent = AgentFacts {
            namespace: ns,
            cluster_name: &obj.spec.cluster.name,
            cluster: refs.cluster.as_deref(),
            object_store_api: &refs.object_store_api,
            object_store: refs.object_store.as_deref(),
            image: obj.spec.image.as_deref(),
            default_image: cx.shared.settings.default_images.evidence_agent.as_deref(),
            allow_list: &allow,
            foreign_child: None,
        };
        // Registered before the certificate is planned and the children applied, so a change
        // meanwhile still wakes this agent.
        let outcome = decide(&agent);
        let secrets = watched_secrets(&outcome, &names);
        self.caches.secrets.register(
            &user_of::<EvidenceAgent>(&cx.key),
            secrets
                .iter()
                .map(|s| ObjectKey::new(ns, s.as_str()))
                .collect(),
            Track::Version,
        );
        let certificate = if needs_certificate(&outcome, provider) {
            Some(self.plan_certificate(obj, cx, &names).await?)
        } else {
            None
        };
        let secret_version = |name: &str| self.caches.secrets.version(&ObjectKey::new(ns, name));
        let plan = plan(Observed {
            agent: &cx.key.name,
            spec: &obj.spec,
            names: &names,
            facts: agent.clone(),
            outcome,
            certificate,
            secret_version: &secret_version,
            deployment_exists: self
                .caches
                .deployments
                .get(&ObjectKey::new(ns, names.workload.as_str()))
                .is_some(),
        });

        let secret_exists = |name: &str| self.caches.secrets.exists(&ObjectKey::new(ns, name));
        let (read, judged);
        let applied = match plan {
            Plan::Hold { outcome } => Applied::Held(outcome),
            Plan::Apply(apply) => {
                let ApplyPlan {
                    judged: j,
                    children,
                } = *apply;
                judged = j;
                let report = self.apply_children(obj, children, cx).await?;
                if let Some(ChildVerdict::NotOwned { kind, name }) = report.not_owned() {
                    Applied::NameTaken {
                        kind: kind.clone(),
                        name: name.clone(),
                    }
                } else if let Some(refusal) = report.refusal() {
                    // Ends the pass as an error of its class (AdmissionDenied, ...).
                    return Err(refusal.into());
                } else {
                    read = self.read_children(&cx.key, &names);
                    Applied::Children {
                        plan: &judged,
                        converged: report.converged(),
                        seen: read.seen(provider, &names, &secret_exists),
                    }
                }
            }
        };
        let facts = conclude(Conclusion {
            facts,
            agent: &agent,
            names: &names,
            provider,
            applied,
            stored: obj.status.as_ref(),
            now: cx.shared.settings.clock.now_jiff(),
        })
        .map_err(ReconcileError::other)?;
        let written = self.write(obj, facts, cx).await?;
        Ok(Outcome::done().with_status(written))
    }

    /// The plan's children through the applier, one kind at a time in the plan's order.
    async fn apply_children(
        &self,
        obj: &EvidenceAgent,
        children: AgentChildren,
        cx: &ObjectContext,
    ) -> Result<ApplyReport, ReconcileError> {
        let owner = ChildOwner::of(obj)
            .ok_or_else(|| ReconcileError::other(EvidenceError::NoUid(cx.key.name.clone())))?;
        let applier = cx.applier();
        let c = &self.caches;
        let mut set = ChildSet::new(applier, &owner, Component::EvidenceAgent);
        let applied = async {
            set.apply(&c.owned_secrets, children.certificate)
                .await?
                .apply(&c.service_accounts, [children.service_account])
                .await?
                .apply(&c.config_maps, children.ca_config_map)
                .await?
                .apply(&c.services, [children.service])
                .await?
                .apply(&c.network_policies, [children.network_policy])
                .await?
                .apply_as_account(&c.deployments, children.deployment)
                .await
                .map(|_| ())
        };
        applied.await.map_err(ReconcileError::other)?;
        Ok(set.report())
    }

    /// The one status write of the pass, then its Events.
    async fn write(
        &self,
        obj: &EvidenceAgent,
        facts: PassFacts,
        cx: &ObjectContext,
    ) -> Result<Written, ReconcileError> {
        // A failed write keeps the timers the facts decided (a certificate's renewal).
        self.status
            .write(obj, &facts, Extras::default(), cx.target())
            .await
            .map_err(|e| ReconcileError::from(e).keeping_timers(&facts.timers))
    }
}

impl StatusPass for EvidenceAgentReconciler {
    type Object = EvidenceAgent;

    fn status(&self) -> &StatusWriter<EvidenceAgent> {
        &self.status
    }

    fn caches(&self) -> &OperatorCaches {
        &self.caches
    }

    fn reads<'a>(&'a self, _cx: &ObjectContext) -> Vec<&'a Synced> {
        let c = &self.caches;
        vec![
            c.service_accounts.synced(),
            c.services.synced(),
            c.network_policies.synced(),
            c.deployments.synced(),
            c.config_maps.synced(),
            c.replica_sets.synced(),
            c.pods.synced(),
            c.owned_secrets.synced(),
            c.clusters.index().synced(),
            c.object_stores.index().synced(),
            c.secrets.synced(),
        ]
    }

    /// Besides the conditions, the `notAfter` of the serving certificate the operator issued
    /// (the status holds one only for the `operator` provider).
    fn reported(obj: &EvidenceAgent) -> crate::api::Reported {
        let not_after = obj
            .status
            .as_ref()
            .and_then(|s| s.certificate.as_ref())
            .and_then(|c| c.not_after.as_ref())
            .map(|t| t.0.as_second());
        crate::api::Reported {
            certificate_not_after: not_after,
            ..obj.reported()
        }
    }

    async fn run(
        &self,
        obj: &EvidenceAgent,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.pass(obj, cx).await
    }
}
