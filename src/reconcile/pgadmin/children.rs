//! The children one rendered PgAdmin pass applies, pure: rendered once the servers Secret holds
//! the offered set (its hash names the registration Job, its credential files roll the Pod),
//! with the Events the rendering announces.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;

use super::egress::{EgressRule, SignInPeer, egress_policy, egress_rules};
use super::pass::{applies_deployment, egress_clusters, pgadmin_image, upgrade_event};
use super::plan::Plan;
use super::registration::{
    JobState, RegistrationFacts, job_wanted, registration_job_name, servers_synced, with_block,
};
use super::render::{
    RenderError, RenderInput, data_claim, deployment, registration_job, service, service_account,
    upgrade_backup_job,
};
use crate::api::PgAdminSpec;
use crate::conditions::Reason;
use crate::conditions::Verdict;
use crate::conditions::reasons::pgadmin;
use crate::reconcile::children::Component;
use crate::reconcile::workload::{SecretDigest, rollout_started};

/// What the children are rendered from besides the plan.
pub struct ChildrenFacts<'a> {
    pub spec: &'a PgAdminSpec,
    pub plan: &'a Plan,
    pub input: &'a RenderInput<'a>,
    /// The offered set's hash and the credential files' hash the servers Secret holds.
    pub servers_hash: &'a str,
    pub credentials_hash: &'a str,
    /// The Deployment as the cache holds it before the apply.
    pub current: Option<&'a Deployment>,
    /// A pgAdmin Pod is Ready (a registration is due).
    pub pod_ready: bool,
    /// A Job of the namespace as the cache shows it.
    pub job: &'a dyn Fn(&str) -> Option<JobState>,
}

/// The registration this pass: its Job of the current hash and whether it is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    pub job_name: String,
    pub servers: usize,
    pub pod_ready: bool,
    /// The Job as the cache showed it before the apply.
    pub job: Option<JobState>,
    pub wanted: bool,
}

impl Registration {
    fn facts(&self) -> RegistrationFacts<'_> {
        RegistrationFacts {
            job_name: &self.job_name,
            servers: self.servers,
            pod_ready: self.pod_ready,
            job: self.job.clone(),
        }
    }

    /// ServersSynced from the Job as the cache showed it.
    pub fn synced(&self) -> Verdict {
        servers_synced(&self.facts())
    }
}

/// The objects a rendered pass applies, in the order applied.
pub struct ChildObjects {
    pub service_account: ServiceAccount,
    pub data_claim: PersistentVolumeClaim,
    /// `None` while the settings database is pending and no Deployment exists yet.
    pub deployment: Option<Deployment>,
    pub service: Service,
    pub egress_policy: NetworkPolicy,
    /// The registration Job and the upgrade's backup Job, in one apply of the owner's Jobs.
    pub jobs: Vec<(Component, Job)>,
    /// The completed backup Job kept as it is in that apply (its logs stay readable).
    pub kept_jobs: Vec<String>,
}

/// Every child a rendered pass applies, and what the conclusion judges of them.
pub struct PgAdminChildren {
    /// Moved out to the applier.
    pub objects: ChildObjects,
    pub judged: ChildrenJudged,
}

/// What the conclusion judges of the applied children.
pub struct ChildrenJudged {
    pub egress_rules: Vec<EgressRule>,
    pub registration: Registration,
    /// `RolloutStarted` and the upgrade's Event, announced when the Deployment is applied.
    pub events: Vec<(Reason, String)>,
}

/// The children of a rendered pass.
pub fn children(f: &ChildrenFacts<'_>) -> Result<PgAdminChildren, RenderError> {
    let input = f.input;
    let names = input.names;
    // pgAdmin copies the credential files when its Pod starts: new files roll it.
    let consumed: Vec<SecretDigest> = input
        .consumed
        .iter()
        .cloned()
        .chain([SecretDigest::of_written(
            &names.servers_secret,
            f.credentials_hash,
        )])
        .collect();
    let with_servers = RenderInput {
        consumed: &consumed,
        ..input.clone()
    };
    let (workload, workload_hash) = deployment(&with_servers)?;
    let mut events = Vec::new();
    let deployment = if applies_deployment(f.plan.pending.is_some(), f.current.is_some()) {
        if let Some(note) = rollout_started(f.current, &workload_hash) {
            events.push((pgadmin::ROLLOUT_STARTED, note));
        }
        if let Some((reason, note)) =
            upgrade_event(&f.plan.upgrade, f.current.and_then(pgadmin_image))
        {
            events.push((reason, note.to_owned()));
        }
        Some(workload)
    } else {
        None
    };
    let extra = f
        .spec
        .egress
        .as_ref()
        .map(|e| e.extra_rules.clone())
        .unwrap_or_default();
    let settings_cluster = f.spec.config_database.as_ref().map(|c| c.cluster.as_str());
    let offered = &f.plan.decision.offered;
    let clusters = egress_clusters(offered, input.namespace, settings_cluster);
    let sign_in = match (input.oauth2, input.ldap) {
        (Some(_), _) => Some(SignInPeer::OAuth2Issuer),
        (None, Some(ldap)) => Some(SignInPeer::LdapDirectory(super::ldap::port(ldap))),
        (None, None) => None,
    };
    let rules = egress_rules(&clusters, &offered.poolers, sign_in, &extra)?;
    let policy = egress_policy(input.owner, &names.egress_policy, &rules)?;

    let job_name =
        registration_job_name(input.owner, &with_block(f.servers_hash, input.pod_template));
    let mut registration = Registration {
        job: (f.job)(&job_name),
        job_name,
        servers: offered.servers.len(),
        pod_ready: f.pod_ready,
        wanted: false,
    };
    registration.wanted = job_wanted(&registration.facts());
    let mut jobs = Vec::new();
    if registration.wanted {
        jobs.push((
            Component::PgAdminRegistration,
            registration_job(input, &registration.job_name)?,
        ));
    }
    if let Some(backup) = f.plan.upgrade.job()
        && let Some(job) = upgrade_backup_job(
            input,
            backup,
            f.plan.running.as_deref().unwrap_or(input.image),
        )?
    {
        jobs.push((Component::PgAdminUpgradeBackup, job));
    }
    Ok(PgAdminChildren {
        objects: ChildObjects {
            service_account: service_account(input)?,
            data_claim: data_claim(input)?,
            deployment,
            service: service(input)?,
            egress_policy: policy,
            jobs,
            kept_jobs: f
                .plan
                .upgrade
                .kept_job()
                .map(str::to_owned)
                .into_iter()
                .collect(),
        },
        judged: ChildrenJudged {
            egress_rules: rules,
            registration,
            events,
        },
    })
}
