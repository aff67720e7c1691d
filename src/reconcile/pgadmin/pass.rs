//! The combining rules of one PgAdmin pass, pure: the images, [`Gates`] (whether the pass may
//! write its children), which WorkloadReady verdict wins, what it announces, whether the pass
//! converged and which status fields it states. `plan.rs`, `children.rs` and `conclude.rs`
//! sequence them.

use k8s_openapi::api::apps::v1::Deployment;

use super::offered::Offered;
use super::upgrade::{SKIP_UPGRADE_BACKUP_ANNOTATION, UpgradeGate};
use crate::api::{PgAdminSpec, PgAdminStatus, RegistrationStatus};
use crate::conditions::reasons::pgadmin;
use crate::conditions::{FactsError, PassFacts, Reason, StatusField, Verdict};
use crate::reconcile::exposure::ExposureDecision;
use crate::reconcile::images::{ImageRole, resolve_image};

/// Images used when neither the spec nor the operator's flags name one.
pub const BUILTIN_PGADMIN_IMAGE: &str = "docker.io/dpage/pgadmin4:9.10";
pub const BUILTIN_OAUTH2_PROXY_IMAGE: &str = "quay.io/oauth2-proxy/oauth2-proxy:v7.12.0";

/// The images a pass renders: pgAdmin's, and the OAuth2 proxy's when OAuth2 is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassImages {
    pub pgadmin: String,
    pub oauth2_proxy: Option<String>,
}

impl PassImages {
    /// The spec's images, else the operator's defaults, else the built-in ones.
    pub fn of(spec: &PgAdminSpec, pgadmin: Option<&str>, oauth2_proxy: Option<&str>) -> Self {
        let oauth2 = spec.authentication.as_ref().and_then(|a| a.oauth2.as_ref());
        Self {
            pgadmin: resolve_image(spec.image.as_deref(), pgadmin)
                .unwrap_or_else(|| BUILTIN_PGADMIN_IMAGE.to_owned()),
            oauth2_proxy: oauth2.map(|o| {
                resolve_image(o.proxy_image.as_deref(), oauth2_proxy)
                    .unwrap_or_else(|| BUILTIN_OAUTH2_PROXY_IMAGE.to_owned())
            }),
        }
    }

    /// Each image with its role, for the allow-list.
    pub fn by_role(&self) -> Vec<(ImageRole, &str)> {
        let mut images = vec![(ImageRole::PgAdmin, self.pgadmin.as_str())];
        if let Some(proxy) = &self.oauth2_proxy {
            images.push((ImageRole::OAuth2Proxy, proxy.as_str()));
        }
        images
    }
}

/// What stops a pass before it renders its children.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gates {
    /// The hostname is refused: the exposure is withdrawn and nothing else is applied.
    pub hostname_refused: bool,
    /// An image is not allowed (`ImageNotAllowed`).
    pub image_refused: bool,
    /// The settings database cannot be made (a `ConfigurationValid` stall).
    pub settings_problem: bool,
    /// The sign-in Secret (OAuth2 client, LDAP bind password) is missing.
    pub missing_sign_in_secret: bool,
}

impl Gates {
    /// A stall of the configuration: ConfigurationValid says why, nothing is rendered.
    pub fn stalled(&self) -> bool {
        self.image_refused || self.settings_problem || self.missing_sign_in_secret
    }

    /// Whether the settings database is ensured this pass (its problem is not yet known):
    /// only once the hostname is allowed and nothing else stalls, so a stalled PgAdmin writes
    /// no DatabaseRole.
    pub fn ensures_settings_db(&self) -> bool {
        !self.hostname_refused && !self.image_refused && !self.missing_sign_in_secret
    }

    /// Whether the children are rendered and applied: not while refused or stalled, nor when
    /// a name is taken by an object of someone else.
    pub fn renders(&self, foreign_child: bool) -> bool {
        !self.hostname_refused && !self.stalled() && !foreign_child
    }

    /// A refused or stalled pass states only the servers and the exposure, and keeps the
    /// registration and image as they were.
    pub fn keeps_status(&self) -> bool {
        self.hostname_refused || self.stalled()
    }
}

/// A name of a child taken by an object the PgAdmin does not own (`ResourceNotOwned`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignChild {
    pub kind: String,
    pub name: String,
}

/// Whether the Deployment is applied: no pgAdmin Pod until CloudNativePG applied the settings
/// database, but one already there is kept current.
pub fn applies_deployment(settings_pending: bool, deployment_exists: bool) -> bool {
    !settings_pending || deployment_exists
}

/// The `RegistrationStarted` note: only the registration Job's own creation starts a
/// registration (the backup Job of an image change is applied in the same call).
pub fn registration_started(
    existed: bool,
    created: bool,
    job_name: &str,
    servers: usize,
) -> Option<String> {
    (!existed && created)
        .then(|| format!("Job {job_name} registers the offered set ({servers} servers)"))
}

/// WorkloadReady: the settings database's wait first, then the upgrade gate, then the
/// rollout read from the caches. `target` is the image the spec asks for, `rendered` the one
/// the gate renders meanwhile.
pub fn workload_ready(
    pending: Option<&Verdict>,
    gate: &UpgradeGate,
    target: &str,
    rendered: &str,
    rollout: impl FnOnce() -> Verdict,
) -> Verdict {
    match (pending, gate) {
        (Some(pending), _) => pending.clone(),
        (None, UpgradeGate::BackingUp { job, .. }) => Verdict::fails(
            pgadmin::UPGRADE_BACKUP_RUNNING,
            format!(
                "Job {job} backs up the settings database before {target} replaces {rendered}; the old image keeps running"
            ),
        ),
        (None, UpgradeGate::Failed { job, fact, .. }) => Verdict::fails(
            pgadmin::UPGRADE_BACKUP_FAILED,
            format!(
                "Job {job} failed to back up the settings database ({fact}): {rendered} keeps running; fix it and delete the Job, or set {SKIP_UPGRADE_BACKUP_ANNOTATION}: {target}"
            ),
        ),
        (None, _) => rollout(),
    }
}

/// The image the spec asks for (the gate may render the running one meanwhile).
pub fn target_image<'a>(spec_image: Option<&'a str>, rendered: &'a str) -> &'a str {
    spec_image.unwrap_or(rendered)
}

/// The Event of an image change the gate releases this pass, unless the Deployment already
/// runs that image (the release was announced when it was applied).
pub fn upgrade_event<'a>(
    gate: &'a UpgradeGate,
    deployed_image: Option<&str>,
) -> Option<(Reason, &'a str)> {
    match gate {
        UpgradeGate::Roll {
            image,
            event: Some((reason, note)),
            ..
        } if deployed_image != Some(image.as_str()) => Some((*reason, note.as_str())),
        _ => None,
    }
}

/// The pgAdmin container's image of a Deployment.
pub fn pgadmin_image(deployment: &Deployment) -> Option<&str> {
    deployment
        .spec
        .template
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == "pgadmin")?
        .image
        .as_deref()
}

/// The Clusters the egress policy reaches: the registered ones and the settings database's.
pub fn egress_clusters(
    offered: &Offered,
    namespace: &str,
    settings_cluster: Option<&str>,
) -> Vec<(String, String)> {
    let mut clusters = offered.clusters.clone();
    if let Some(cluster) = settings_cluster {
        clusters.push((namespace.to_owned(), cluster.to_owned()));
        clusters.sort();
        clusters.dedup();
    }
    clusters
}

/// What a rendered pass found settled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Every applied child was already as desired.
    pub applied_converged: bool,
    /// The servers Secret was written this pass.
    pub wrote_servers: bool,
    /// The login Secret was created this pass.
    pub created_login: bool,
    /// The registration Job of the current hash completed.
    pub registration_done: bool,
    /// A pgAdmin Pod is Ready (so a registration is due).
    pub pod_ready: bool,
}

/// Converged: nothing written, and the registration done unless no Pod can run it yet.
pub fn children_converged(s: &Settled) -> bool {
    s.applied_converged
        && !s.wrote_servers
        && !s.created_login
        && (s.registration_done || !s.pod_ready)
}

/// Everything one pass decided, for the status write.
pub struct Decided {
    pub offered: Offered,
    pub exposure: ExposureDecision,
    /// The offered set's hash, once the servers Secret holds it.
    pub hash: Option<String>,
    /// The registration Job wanted this pass.
    pub job: Option<String>,
    /// The image running, once WorkloadReady holds.
    pub image: Option<String>,
}

/// `status.url` and `status.publishedExposureKinds` as the exposure decided them.
pub fn exposure_fields(
    facts: PassFacts,
    exposure: &ExposureDecision,
    stored: Option<&PgAdminStatus>,
) -> Result<PassFacts, FactsError> {
    let none = PgAdminStatus::default();
    let stored = stored.unwrap_or(&none);
    facts
        .with_status_field(StatusField::Url, &exposure.url, &stored.url)?
        .with_status_field(
            StatusField::PublishedExposureKinds,
            &exposure.published,
            &stored.published_exposure_kinds,
        )
}

/// The kind's status fields as this pass decided them. A stalled pass states only the servers
/// (what would be offered) and the exposure, and leaves the rest as it was.
pub fn status_fields(
    facts: PassFacts,
    decided: &Decided,
    stored: Option<&PgAdminStatus>,
    keeps_status: bool,
) -> Result<PassFacts, FactsError> {
    let none = PgAdminStatus::default();
    let stored_or_none = stored.unwrap_or(&none);
    let facts = facts.with_status_field(
        StatusField::Servers,
        &decided.offered.rows,
        &stored_or_none.servers,
    )?;
    let mut facts = exposure_fields(facts, &decided.exposure, stored)?;
    if keeps_status {
        return Ok(facts);
    }
    if let Some(hash) = &decided.hash {
        let registration = Some(RegistrationStatus {
            offered_hash: Some(hash.clone()),
            job: decided.job.clone(),
        });
        facts = facts.with_status_field(
            StatusField::Registration,
            &registration,
            &stored_or_none.registration,
        )?;
    }
    if decided.image.is_some() {
        facts =
            facts.with_status_field(StatusField::Image, &decided.image, &stored_or_none.image)?;
    }
    Ok(facts)
}

#[cfg(test)]
#[path = "pass_tests.rs"]
mod pass_tests;
