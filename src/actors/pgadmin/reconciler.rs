//! One pass over a PgAdmin: check the hostname first, read the referenced objects from the
//! shared caches, decide the offered set and ConfigurationValid (pure), render and apply the
//! children unless a stall forbids it, start the registration Job once a pgAdmin Pod is
//! Ready, judge the workload, exposure, registration and egress from the caches, and write the
//! status once.

use super::children::WorkloadGate;
use super::inputs::{read_referenced, read_roles};
use super::secrets::{ConsumedDigests, ServersSecrets, credential_secrets};
use super::settings_db::{SettingsDb, SettingsDbInput, ensure_settings_db};
use crate::actors::{ObjectContext, Outcome, ReconcileError, StatusPass, user_of};
use crate::api::{PgAdmin, ReportsConditions};
use crate::children::{ApplyReport, ChildOwner, Component, Desired, OperatorCaches, Track};
use crate::conditions::{ConditionType, Hostname, PassFacts};
use crate::k8s::EventSink;
use crate::messages::ObjectKey;
use crate::reconcile::exposure::HostAllowList;
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::{Availability, OptionalApi};
use crate::reconcile::pgadmin::{
    ChildNames, ConfigFacts, Decided, ForeignChild, Gates, OfferedInputs, PassImages, RenderInput,
    SKIP_UPGRADE_BACKUP_ANNOTATION, UpgradeFacts, configuration_valid, exposure_fields, job_state,
    offered_set, status_fields, upgrade_backup_job_name, upgrade_gate,
};
use crate::status::{Extras, StatusWriter, Written};

/// The kind the children and references are filed under.
pub const KIND: &str = "PgAdmin";

#[derive(Debug, thiserror::Error)]
pub enum PgAdminError {
    #[error("PgAdmin {0} has no uid yet: its children cannot be owned")]
    NoUid(String),
    #[error(transparent)]
    Render(#[from] crate::reconcile::pgadmin::RenderError),
    #[error(transparent)]
    Facts(#[from] crate::conditions::FactsError),
    #[error(transparent)]
    Apply(#[from] crate::children::ApplyError),
}

impl From<PgAdminError> for ReconcileError {
    fn from(e: PgAdminError) -> Self {
        ReconcileError::other(e)
    }
}

pub struct PgAdminReconciler {
    pub(super) caches: OperatorCaches,
    pub(super) status: StatusWriter<PgAdmin>,
    pub(super) servers: ServersSecrets,
    pub(super) consumed: ConsumedDigests,
    pub(super) password_generation: tokio::sync::OnceCell<bool>,
}

pub(super) fn desired<C>(component: Component, object: C) -> Desired<C> {
    Desired { component, object }
}

impl PgAdminReconciler {
    pub fn new(caches: OperatorCaches, events: EventSink) -> Self {
        Self {
            caches,
            status: StatusWriter::new(events),
            servers: ServersSecrets::default(),
            consumed: ConsumedDigests::default(),
            password_generation: tokio::sync::OnceCell::new(),
        }
    }

    async fn pass(&self, obj: &PgAdmin, cx: &ObjectContext) -> Result<Outcome, ReconcileError> {
        self.wait_synced(cx).await?;
        let ns = cx.key.namespace.as_str();
        let name = cx.key.name.as_str();
        let key = user_of::<PgAdmin>(&cx.key);
        let names = ChildNames::of(name);
        let owner = ChildOwner::of(obj).ok_or_else(|| PgAdminError::NoUid(name.to_owned()))?;
        let settings = &cx.shared.settings;

        // The hostname first: a refusal withdraws the exposure whatever else holds.
        let hosts = HostAllowList::new(&settings.exposure_allowed_host_suffixes);
        let refusal = hosts.check(obj.spec.exposure.hostname.as_deref()).err();
        let mut facts = obj
            .pass_facts()
            .with_hostname(match &refusal {
                Some(r) => Hostname::refused(r.message()),
                None => Hostname::Allowed,
            })
            .map_err(PgAdminError::from)?;
        let exposure = self
            .exposure(
                obj,
                cx,
                &owner,
                &names,
                refusal.as_ref().map_or(Ok(()), Err),
            )
            .await?;
        let mut reports = Vec::new();
        if refusal.is_some() {
            reports.push(
                self.apply_exposure(obj, cx, &owner, &names, &exposure)
                    .await?,
            );
            // The exposure's verdict keeps what it appended (an exposure that may remain).
            facts = facts
                .with_aspect(ConditionType::ExposureReady, exposure.verdict.clone())
                .map_err(PgAdminError::from)?;
        }
        if facts.paused {
            if refusal.is_some() {
                // Withdrawn even while paused: the URL and the published kinds say so.
                facts = exposure_fields(facts, &exposure, obj.status.as_ref())
                    .map_err(PgAdminError::from)?;
            }
            let written = self.write(obj, facts, Extras::default(), cx).await?;
            return Ok(Outcome::done().with_status(written));
        }

        // Images and the OAuth2 client Secret.
        let defaults = &settings.default_images;
        let images = PassImages::of(
            &obj.spec,
            defaults.pgadmin.as_deref(),
            defaults.oauth2_proxy.as_deref(),
        );
        let allow = ImageAllowList::new(&settings.allowed_image_repositories);
        let image_refusal = allow.verdict(&images.by_role());
        let PassImages {
            pgadmin: image,
            oauth2_proxy: proxy_image,
        } = images;
        let oauth2 = obj
            .spec
            .authentication
            .as_ref()
            .and_then(|a| a.oauth2.as_ref());

        // The offered set, from the caches (registered as a user of each read).
        let apis = cx.shared.optional_apis.clone();
        let answer = |api: OptionalApi, n: &str| apis.availability(api, n);
        let referenced =
            read_referenced(&self.caches, &cx.client, &key, ns, &obj.spec, &apis).await?;
        let inputs = |roles| OfferedInputs {
            namespace: ns,
            name,
            spec: &obj.spec,
            clusters: &referenced.clusters,
            clusters_unreadable: &referenced.clusters_unreadable,
            grants: &referenced.grants,
            poolers: &referenced.poolers,
            roles,
            apis: &answer,
        };
        let without_roles = offered_set(&inputs(&[]));
        let roles = read_roles(
            &self.caches,
            &cx.client,
            &key,
            &without_roles.clusters,
            obj.spec.offer_database_roles,
            &apis,
        )
        .await?;
        let offered = offered_set(&inputs(&roles));

        let oauth2_secret = oauth2.map(|o| ObjectKey::new(ns, o.client_secret_ref.name.as_str()));
        let missing_oauth2 = oauth2_secret
            .as_ref()
            .filter(|k| self.caches.secrets.exists(k) == Some(false))
            .map(|k| k.name.as_str());
        // The settings database, once the hostname is allowed and nothing else stalls.
        let mut settings = None;
        let mut gates = Gates {
            hostname_refused: refusal.is_some(),
            image_refused: image_refusal.is_some(),
            settings_problem: false,
            missing_oauth2_secret: missing_oauth2.is_some(),
        };
        if gates.ensures_settings_db()
            && let Some(spec) = &obj.spec.config_database
        {
            let roles_on = apis.availability(OptionalApi::DatabaseRoles, ns) == Availability::On;
            let password_generation = !roles_on || self.password_generation(&cx.client).await?;
            settings = Some(
                ensure_settings_db(&SettingsDbInput {
                    caches: &self.caches,
                    client: &cx.client,
                    writes: &cx.writes,
                    owner: &owner,
                    spec,
                    apis: &apis,
                    password_generation,
                })
                .await?,
            );
        } else if obj.spec.config_database.is_none() {
            self.caches.databases.index().forget(&key);
        }
        let settings_problem = match &settings {
            Some(SettingsDb::Problem(v)) => Some(v.clone()),
            _ => None,
        };
        let mut config = ConfigFacts {
            image_refusal: image_refusal.clone(),
            settings_problem,
            missing_oauth2_secret: missing_oauth2,
            problems: &offered.problems,
            offered: offered.servers.len(),
            ..ConfigFacts::default()
        };
        gates.settings_problem = config.settings_problem.is_some();
        let mut foreign = match &settings {
            Some(SettingsDb::NotOwned { kind, name }) => Some(ForeignChild {
                kind: kind.clone(),
                name: name.clone(),
            }),
            _ => None,
        };
        let config_db = match &settings {
            Some(SettingsDb::Ready(connection)) => Some(connection),
            _ => None,
        };
        let pending = match &settings {
            Some(SettingsDb::Pending(v)) => Some(v.clone()),
            _ => None,
        };
        // Every Secret the pass reads or the Pod consumes, registered once: a new version wakes
        // this PgAdmin (a rotated credential, a rotated client secret).
        let consumed_keys: Vec<ObjectKey> = oauth2_secret
            .iter()
            .cloned()
            .chain(config_db.map(|c| ObjectKey::new(ns, c.password_secret.as_str())))
            .collect();
        let mut secret_refs = vec![
            ObjectKey::new(ns, names.servers_secret.as_str()),
            ObjectKey::new(ns, names.login_secret.as_str()),
        ];
        secret_refs.extend(consumed_keys.iter().cloned());
        secret_refs.extend(credential_secrets(&offered.servers));
        self.caches
            .secrets
            .register(&key, secret_refs, Track::Version);

        // The upgrade gate: with a settings database, an image change waits for its backup.
        let running = obj.status.as_ref().and_then(|s| s.image.clone());
        let backup_job = upgrade_backup_job_name(name, &image);
        let gate = upgrade_gate(
            name,
            &UpgradeFacts {
                running: running.as_deref(),
                target: &image,
                backup_required: config_db.is_some() && obj.spec.upgrade_backup.enabled,
                skip_annotation: obj
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(SKIP_UPGRADE_BACKUP_ANNOTATION))
                    .map(String::as_str),
                backup: self
                    .caches
                    .jobs
                    .get(&ObjectKey::new(ns, backup_job.as_str()))
                    .as_deref()
                    .map(job_state),
            },
        );

        let mut decided = Decided {
            offered: offered.clone(),
            exposure,
            hash: None,
            job: None,
            image: None,
        };
        let mut converged = true;
        if gates.renders(foreign.is_some()) {
            let consumed = self
                .consumed
                .digests(&cx.client, &self.caches.secrets, &consumed_keys)
                .await?;
            let input = RenderInput {
                owner: name,
                namespace: ns,
                image: gate.image(),
                resources: obj.spec.resources.as_ref(),
                storage: &obj.spec.storage,
                oauth2: oauth2.zip(proxy_image.as_deref()),
                config_db,
                consumed: &consumed,
                names: &names,
            };
            let workload = WorkloadGate {
                upgrade: &gate,
                running: running.as_deref(),
                pending: pending.clone(),
            };
            let rendered = self
                .render(
                    obj,
                    cx,
                    &owner,
                    &names,
                    &input,
                    &offered,
                    &workload,
                    &mut decided,
                    facts,
                )
                .await?;
            facts = rendered.facts;
            converged = rendered.converged;
            foreign = rendered.foreign;
        }
        config.foreign_child = foreign.as_ref().map(|f| (f.kind.as_str(), f.name.as_str()));
        let configuration = configuration_valid(&config, ns);
        facts = facts
            .with_aspect(ConditionType::ConfigurationValid, configuration)
            .map_err(PgAdminError::from)?
            .with_children_converged(converged && reports.iter().all(ApplyReport::converged));
        facts = status_fields(facts, &decided, obj.status.as_ref(), gates.keeps_status())
            .map_err(PgAdminError::from)?;
        let written = self.write(obj, facts, Extras::default(), cx).await?;
        Ok(Outcome::done().with_status(written))
    }

    async fn write(
        &self,
        obj: &PgAdmin,
        facts: PassFacts,
        extras: Extras,
        cx: &ObjectContext,
    ) -> Result<Written, ReconcileError> {
        // A failed write keeps the timers the facts decided.
        self.status
            .write(obj, &facts, extras, cx.target())
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

    async fn run(&self, obj: &PgAdmin, cx: &ObjectContext) -> Result<Outcome, ReconcileError> {
        self.pass(obj, cx).await
    }

    fn forget(&self, key: &ObjectKey) {
        self.servers
            .forget(&key.namespace, &ChildNames::of(&key.name));
    }
}
