//! The children of a PgAdmin rendered and applied in one pass (login and servers Secrets,
//! ServiceAccount, data volume, Deployment, Service, exposure, egress policy, Jobs), and the
//! aspects judged from the caches afterwards.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;

use super::secrets::{ServersOutcome, ensure_login_secret};
use crate::actors::{ObjectContext, ReconcileError};
use crate::api::PgAdmin;
use crate::children::{Applier, ApplyReport, ChildOwner, ChildVerdict, Component};
use crate::conditions::reasons::pgadmin;
use crate::conditions::{ConditionStatus, ConditionType, PassFacts, Verdict, find_condition};
use crate::messages::ObjectKey;
use crate::reconcile::pgadmin::{
    ChildNames, Decided, ForeignChild, JobState, Offered, RegistrationFacts, RenderInput, Settled,
    UpgradeGate, applies_deployment, children_converged, data_claim, deployment, egress_clusters,
    egress_confined, egress_policy, egress_rules, job_state, job_wanted, pgadmin_image,
    pgadmin_pod_ready, registration_job, registration_job_name, registration_started,
    servers_registered_event, servers_synced, service, service_account, target_image,
    upgrade_backup_job, upgrade_event, workload_ready,
};
use crate::reconcile::workload::{SecretDigest, rollout_started, workload_verdict};

use super::reconciler::{PgAdminError, PgAdminReconciler, desired};
use crate::actors::user_of;

/// What besides the rollout decides WorkloadReady: the settings database and the upgrade gate.
pub(super) struct WorkloadGate<'a> {
    pub(super) upgrade: &'a UpgradeGate,
    /// `status.image`: the backup Job runs the image that made the settings.
    pub(super) running: Option<&'a str>,
    /// `ConfigDatabaseNotReady` while CloudNativePG has not applied the settings database.
    pub(super) pending: Option<Verdict>,
}

/// What rendering and applying the children left for the status write.
pub(super) struct Rendered {
    /// The facts with the aspects judged from the caches.
    pub(super) facts: PassFacts,
    /// Everything was already in place.
    pub(super) converged: bool,
    /// A name taken by an object of someone else.
    pub(super) foreign: Option<ForeignChild>,
}

impl Rendered {
    fn foreign(facts: PassFacts, kind: &str, name: &str) -> Self {
        Self {
            facts,
            converged: false,
            foreign: Some(ForeignChild {
                kind: kind.to_owned(),
                name: name.to_owned(),
            }),
        }
    }
}

impl PgAdminReconciler {
    /// Renders and applies every child, then judges the aspects from the caches.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn render(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        names: &ChildNames,
        input: &RenderInput<'_>,
        offered: &Offered,
        gate: &WorkloadGate<'_>,
        decided: &mut Decided,
        facts: PassFacts,
    ) -> Result<Rendered, ReconcileError> {
        let ns = cx.key.namespace.as_str();
        let key = user_of::<PgAdmin>(&cx.key);
        let applier = Applier {
            client: &cx.client,
            writes: &cx.writes,
        };
        let mut facts = facts;
        let login_created =
            ensure_login_secret(&cx.client, &cx.writes, &self.caches.secrets, owner, names).await?;
        let (hash, credentials, wrote) = match self
            .servers
            .ensure(
                &cx.client,
                &cx.writes,
                &self.caches.secrets,
                owner,
                names,
                &offered.servers,
            )
            .await?
        {
            ServersOutcome::Current {
                hash,
                credentials,
                wrote,
            } => (hash, credentials, wrote),
            ServersOutcome::NotOwned => {
                return Ok(Rendered::foreign(facts, "Secret", &names.servers_secret));
            }
        };
        let mut report = ApplyReport::default();
        let pg = Component::PgAdmin;
        report.merge(
            applier
                .apply(
                    &self.caches.service_accounts,
                    owner,
                    vec![desired(
                        pg,
                        service_account(input).map_err(PgAdminError::from)?,
                    )],
                )
                .await
                .map_err(PgAdminError::from)?,
        );
        report.merge(
            applier
                .apply(
                    &self.caches.persistent_volume_claims,
                    owner,
                    vec![desired(pg, data_claim(input).map_err(PgAdminError::from)?)],
                )
                .await
                .map_err(PgAdminError::from)?,
        );
        // pgAdmin copies the credential files when its Pod starts: new files roll it.
        let consumed: Vec<SecretDigest> = input
            .consumed
            .iter()
            .cloned()
            .chain([SecretDigest::of_written(
                &names.servers_secret,
                &credentials,
            )])
            .collect();
        let with_servers = RenderInput {
            consumed: &consumed,
            ..input.clone()
        };
        let (workload, workload_hash) = deployment(&with_servers).map_err(PgAdminError::from)?;
        let current = self
            .caches
            .deployments
            .get(&ObjectKey::new(ns, names.workload.as_str()));
        if applies_deployment(gate.pending.is_some(), current.is_some()) {
            if let Some(note) = rollout_started(current.as_deref(), &workload_hash) {
                facts = facts
                    .with_event(pgadmin::ROLLOUT_STARTED, &note)
                    .map_err(PgAdminError::from)?;
            }
            if let Some((reason, note)) =
                upgrade_event(gate.upgrade, current.as_deref().and_then(pgadmin_image))
            {
                facts = facts.with_event(reason, note).map_err(PgAdminError::from)?;
            }
            report.merge(
                applier
                    .apply(&self.caches.deployments, owner, vec![desired(pg, workload)])
                    .await
                    .map_err(PgAdminError::from)?,
            );
        }
        report.merge(
            applier
                .apply(
                    &self.caches.services,
                    owner,
                    vec![desired(pg, service(input).map_err(PgAdminError::from)?)],
                )
                .await
                .map_err(PgAdminError::from)?,
        );
        report.merge(
            self.apply_exposure(obj, cx, owner, names, &decided.exposure)
                .await?,
        );
        let extra = obj
            .spec
            .egress
            .as_ref()
            .map(|e| e.extra_rules.clone())
            .unwrap_or_default();
        let settings_cluster = obj
            .spec
            .config_database
            .as_ref()
            .map(|c| c.cluster.as_str());
        let clusters = egress_clusters(offered, ns, settings_cluster);
        let rules = egress_rules(&clusters, &offered.poolers, input.oauth2.is_some(), &extra)
            .map_err(PgAdminError::from)?;
        let policy =
            egress_policy(input.owner, &names.egress_policy, &rules).map_err(PgAdminError::from)?;
        report.merge(
            applier
                .apply(
                    &self.caches.network_policies,
                    owner,
                    vec![desired(pg, policy)],
                )
                .await
                .map_err(PgAdminError::from)?,
        );

        // The registration Job of the current hash, once a pgAdmin Pod is Ready.
        let pods: Vec<Pod> = self
            .caches
            .pods
            .children_of(&key)
            .iter()
            .map(|p| p.as_ref().clone())
            .collect();
        let pod_ready = pgadmin_pod_ready(&pods);
        let job_name = registration_job_name(input.owner, &hash);
        let job_key = ObjectKey::new(ns, job_name.as_str());
        let existing = self.caches.jobs.get(&job_key);
        let registration = RegistrationFacts {
            job_name: &job_name,
            servers: offered.servers.len(),
            pod_ready,
            job: existing.as_deref().map(job_state),
        };
        let wanted = job_wanted(&registration);
        let mut jobs = Vec::new();
        if wanted {
            jobs.push(desired(
                Component::PgAdminRegistration,
                registration_job(input, &job_name).map_err(PgAdminError::from)?,
            ));
        }
        // One apply for every Job of the owner: the backup Job of an image change too.
        if let Some(backup) = gate.upgrade.job()
            && let Some(job) =
                upgrade_backup_job(input, backup, gate.running.unwrap_or(input.image))
                    .map_err(PgAdminError::from)?
        {
            jobs.push(desired(Component::PgAdminUpgradeBackup, job));
        }
        let job_report = applier
            .apply(&self.caches.jobs, owner, jobs)
            .await
            .map_err(PgAdminError::from)?;
        let created = job_report
            .verdicts
            .iter()
            .any(|v| matches!(v, ChildVerdict::Applied { name } if *name == job_name));
        if let Some(note) = registration_started(
            existing.is_some(),
            created,
            &job_name,
            offered.servers.len(),
        ) {
            facts = facts
                .with_event(pgadmin::REGISTRATION_STARTED, &note)
                .map_err(PgAdminError::from)?;
        }
        report.merge(job_report);

        if let Some(ChildVerdict::NotOwned { kind, name }) = report.not_owned() {
            return Ok(Rendered::foreign(facts, kind, name));
        }

        // Verdicts from the caches.
        let replica_sets: Vec<ReplicaSet> = self
            .caches
            .replica_sets
            .children_of(&key)
            .iter()
            .map(|r| r.as_ref().clone())
            .collect();
        let deployment = self
            .caches
            .deployments
            .get(&ObjectKey::new(ns, names.workload.as_str()));
        // A refused child ends the pass as an error of its class (AdmissionDenied, ...).
        if let Some(refusal) = report.refusal() {
            return Err(refusal.into());
        }
        let target = target_image(obj.spec.image.as_deref(), input.image);
        let workload = workload_ready(
            gate.pending.as_ref(),
            gate.upgrade,
            target,
            input.image,
            || workload_verdict(&names.workload, deployment.as_deref(), &replica_sets, &pods),
        );
        let running = workload.status == ConditionStatus::True;
        let synced = servers_synced(&registration);
        let stored = obj
            .status
            .as_ref()
            .and_then(|s| find_condition(&s.common.conditions, ConditionType::ServersSynced))
            .map(|c| (ConditionStatus::parse(&c.status), c.message.as_str()));
        if let Some(note) = servers_registered_event(&synced, stored) {
            facts = facts
                .with_event(pgadmin::SERVERS_REGISTERED, &note)
                .map_err(PgAdminError::from)?;
        }
        let egress = egress_confined(&rules, pod_ready, &names.egress_policy);
        facts = facts
            .with_aspect(ConditionType::WorkloadReady, workload)
            .and_then(|f| {
                f.with_aspect(
                    ConditionType::ExposureReady,
                    decided.exposure.verdict.clone(),
                )
            })
            .and_then(|f| f.with_aspect(ConditionType::ServersSynced, synced))
            .and_then(|f| f.with_advisory(ConditionType::PgAdminEgressConfined, egress))
            .map_err(PgAdminError::from)?;
        decided.hash = Some(hash);
        let done = matches!(registration.job, Some(JobState::Complete));
        decided.job = wanted.then(|| job_name.clone());
        decided.image = running.then(|| input.image.to_owned());
        let converged = children_converged(&Settled {
            applied_converged: report.converged(),
            wrote_servers: wrote,
            created_login: login_created,
            registration_done: done,
            pod_ready,
        });
        Ok(Rendered {
            facts,
            converged,
            foreign: None,
        })
    }
}
