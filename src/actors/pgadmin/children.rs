//! The apply of a rendered PgAdmin pass: the login and servers Secrets first (the servers
//! Secret's hash names the registration Job), then the children the plan renders through one
//! [`ChildSet`] (ServiceAccount, data volume, Deployment, Service, exposure, egress policy, and
//! the owner's Jobs each with its own component), then the children read back from the caches.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

use super::error::PgAdminError;
use super::reconciler::PgAdminReconciler;
use super::secrets::{ServersOutcome, ensure_login_secret};
use crate::actors::{ObjectContext, ReconcileError, user_of};
use crate::api::PgAdmin;
use crate::children::{ChildOwner, ChildSet, ChildVerdict, Component};
use crate::messages::ObjectKey;
use crate::reconcile::exposure::ExposureDecision;
use crate::reconcile::pgadmin::{
    Applied, ChildNames, ChildObjects, ChildrenFacts, ChildrenJudged, ForeignChild, Observed, Plan,
    Seen, Writes, children, pgadmin_pod_ready,
};

/// What became of a rendered pass's children, owned for the span of its conclusion.
pub(super) enum ChildrenApplied {
    ServersNotOwned,
    NameTaken {
        judged: ChildrenJudged,
        writes: Writes,
        foreign: ForeignChild,
    },
    Children {
        judged: ChildrenJudged,
        writes: Writes,
        hash: String,
        read: ChildrenRead,
    },
}

/// The children a pass judges, as the caches hold them after its apply.
pub(super) struct ChildrenRead {
    deployment: Option<Arc<Deployment>>,
    replica_sets: Vec<ReplicaSet>,
    pods: Vec<Pod>,
}

impl ChildrenApplied {
    pub(super) fn applied(&self) -> Applied<'_> {
        match self {
            ChildrenApplied::ServersNotOwned => Applied::ServersNotOwned,
            ChildrenApplied::NameTaken {
                judged,
                writes,
                foreign,
            } => Applied::NameTaken {
                children: judged,
                writes: *writes,
                foreign: foreign.clone(),
            },
            ChildrenApplied::Children {
                judged,
                writes,
                hash,
                read,
            } => Applied::Children {
                children: judged,
                writes: *writes,
                hash: hash.clone(),
                seen: Seen {
                    deployment: read.deployment.as_deref(),
                    replica_sets: &read.replica_sets,
                    pods: &read.pods,
                },
            },
        }
    }
}

impl PgAdminReconciler {
    /// Makes the Secrets current, renders the children from the plan and applies them.
    pub(super) async fn apply_children(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        observed: &Observed<'_>,
        plan: &Plan,
        exposure: &ExposureDecision,
    ) -> Result<ChildrenApplied, ReconcileError> {
        let ns = cx.key.namespace.as_str();
        let key = user_of::<PgAdmin>(&cx.key);
        let c = &self.caches;
        let names = ChildNames::of(&cx.key.name);
        let consumed = self
            .consumed
            .digests(&cx.client, &c.secrets, &plan.consumed)
            .await?;
        let input = plan.render_input(observed, &names, &consumed);
        let created_login =
            ensure_login_secret(&cx.client, &cx.writes, &c.secrets, owner, &names).await?;
        let servers = &plan.decision.offered.servers;
        let outcome = self
            .servers
            .ensure(&cx.client, &cx.writes, &c.secrets, owner, &names, servers)
            .await?;
        let ServersOutcome::Current {
            hash,
            credentials,
            wrote,
        } = outcome
        else {
            return Ok(ChildrenApplied::ServersNotOwned);
        };
        let current = c
            .deployments
            .get(&ObjectKey::new(ns, names.workload.as_str()));
        let pods: Vec<Pod> = cloned(c.pods.children_of(&key));
        let rendered = children(&ChildrenFacts {
            spec: &obj.spec,
            plan,
            input: &input,
            servers_hash: &hash,
            credentials_hash: &credentials,
            current: current.as_deref(),
            pod_ready: pgadmin_pod_ready(&pods),
            job: &*observed.job,
        })
        .map_err(PgAdminError::from)?;
        let judged = rendered.judged;
        let ChildObjects {
            service_account,
            data_claim,
            deployment,
            service,
            egress_policy,
            jobs,
            kept_jobs,
        } = rendered.objects;
        let applier = cx.applier();
        let mut set = ChildSet::new(applier, owner, Component::PgAdmin);
        set.apply(&c.service_accounts, [service_account])
            .await
            .map_err(PgAdminError::from)?
            .apply(&c.persistent_volume_claims, [data_claim])
            .await
            .map_err(PgAdminError::from)?;
        // The egress policy before anything that holds credentials, and fail closed: while the
        // server refuses it, no pgAdmin Pod and no registration Job runs (the existing ones go),
        // since nothing would confine where they connect.
        let policy_name = egress_policy.metadata.name.clone().unwrap_or_default();
        set.apply(&c.network_policies, [egress_policy])
            .await
            .map_err(PgAdminError::from)?;
        let confined = !set.refused(&policy_name);
        // No Deployment until CloudNativePG applied the settings database; none (and no Job)
        // while a foreign ServiceAccount holds the name ours would have.
        let account_taken = set.account_taken();
        if account_taken || !confined || deployment.is_some() {
            set.apply_as_account(&c.deployments, deployment.filter(|_| confined))
                .await
                .map_err(PgAdminError::from)?;
        }
        set.apply(&c.services, [service])
            .await
            .map_err(PgAdminError::from)?;
        self.apply_exposure(obj, cx, &mut set, &names, exposure)
            .await?;
        // Every Job of the owner in one apply, each with its own component; the latest
        // completed backup Job is left as it is.
        let (jobs, kept_jobs) = if account_taken || !confined {
            (Vec::new(), Vec::new())
        } else {
            (jobs, kept_jobs)
        };
        set.apply_parts_keeping(&c.jobs, jobs, &kept_jobs)
            .await
            .map_err(PgAdminError::from)?;
        let report = set.report();
        let job_name = &judged.registration.job_name;
        let created_registration = report
            .verdicts
            .iter()
            .any(|v| matches!(v, ChildVerdict::Applied { name } if name == job_name));
        let writes = Writes {
            applied_converged: report.converged(),
            wrote_servers: wrote,
            created_login,
            created_registration,
        };
        if let Some(ChildVerdict::NotOwned { kind, name }) = report.not_owned() {
            let foreign = ForeignChild {
                kind: kind.clone(),
                name: name.clone(),
            };
            return Ok(ChildrenApplied::NameTaken {
                judged,
                writes,
                foreign,
            });
        }
        let replica_sets = cloned(c.replica_sets.children_of(&key));
        let deployment = c
            .deployments
            .get(&ObjectKey::new(ns, names.workload.as_str()));
        // A refused child ends the pass as an error of its class (AdmissionDenied, ...).
        if let Some(refusal) = report.refusal() {
            return Err(refusal.into());
        }
        let read = ChildrenRead {
            deployment,
            replica_sets,
            pods,
        };
        Ok(ChildrenApplied::Children {
            judged,
            writes,
            hash,
            read,
        })
    }
}

fn cloned<T: Clone>(objects: Vec<Arc<T>>) -> Vec<T> {
    objects.iter().map(|o| o.as_ref().clone()).collect()
}
