//! One pass over a PgAdmin: check the hostname first, read the referenced objects from the
//! shared caches, decide the offered set and ConfigurationValid (pure), render and apply the
//! children unless a stall forbids it, start the registration Job once a pgAdmin Pod is
//! Ready, judge the workload, exposure, registration and egress from the caches, and write the
//! status once.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;

use super::inputs::{read_referenced, read_roles};
use super::past_cache::{delete_past_cache, read_past_cache};
use super::secrets::{
    ConsumedDigests, ServersOutcome, ServersSecrets, credential_secrets, ensure_login_secret,
};
use super::settings_db::{SettingsDb, SettingsDbInput, ensure_settings_db};
use crate::actors::{ObjectContext, Outcome, PassFailure, ReconcileError, Reconciler};
use crate::api::{PgAdmin, PgAdminStatus, RegistrationStatus, ReportsConditions};
use crate::children::{
    Applier, ApplyReport, ChildOwner, ChildVerdict, Component, Desired, HttpRoute, OperatorCaches,
    Route, Track, wait_synced,
};
use crate::conditions::reasons::{common, pgadmin};
use crate::conditions::{
    ConditionStatus, ConditionType, Hostname, PassFacts, StatusField, Verdict, find_condition,
};
use crate::k8s::EventSink;
use crate::messages::{KindKey, ObjectKey};
use crate::reconcile::exposure::{
    BackendPort, ExposureDecision, ExposureInputs, ExposureView, HostAllowList, ObservedExposure,
    PastCacheCheck, decide_exposure, desired_http_route, desired_ingress, desired_route,
    past_cache_reads,
};
use crate::reconcile::images::{ImageAllowList, ImageRole, resolve_image};
use crate::reconcile::optional_api::{Availability, OptionalApi};
use crate::reconcile::pgadmin::{
    ChildNames, ConfigFacts, HTTP_PORT_NAME, JobState, Offered, OfferedInputs, RegistrationFacts,
    RenderInput, SERVICE_PORT, SKIP_UPGRADE_BACKUP_ANNOTATION, UpgradeFacts, UpgradeGate,
    configuration_valid, data_claim, deployment, egress_confined, egress_policy, egress_rules,
    job_state, job_wanted, offered_set, password_generation_served, pgadmin_pod_ready,
    registration_job, registration_job_name, servers_registered_event, servers_synced, service,
    service_account, upgrade_backup_job, upgrade_backup_job_name, upgrade_gate,
};
use crate::reconcile::workload::{rollout_started, workload_verdict};
use crate::status::{Extras, StatusWriter, Written};

/// The CRD whose schema says whether CloudNativePG generates role passwords.
const DATABASE_ROLE_CRD: &str = "databaseroles.postgresql.cnpg.io";

/// How long a pass waits for the first lists of its caches.
const CACHE_WAIT: Duration = Duration::from_secs(30);

/// The kind the children and references are filed under.
pub const KIND: &str = "PgAdmin";

/// Images used when neither the spec nor the operator's flags name one.
pub const BUILTIN_PGADMIN_IMAGE: &str = "docker.io/dpage/pgadmin4:9.10";
pub const BUILTIN_OAUTH2_PROXY_IMAGE: &str = "quay.io/oauth2-proxy/oauth2-proxy:v7.12.0";

const PORT: BackendPort<'static> = BackendPort {
    name: HTTP_PORT_NAME,
    number: SERVICE_PORT,
};

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
    caches: OperatorCaches,
    status: StatusWriter<PgAdmin>,
    servers: ServersSecrets,
    consumed: ConsumedDigests,
    password_generation: tokio::sync::OnceCell<bool>,
}

fn owner_key(key: &ObjectKey) -> KindKey {
    KindKey::new(KIND, &key.namespace, &key.name)
}

fn desired<C>(component: Component, object: C) -> Desired<C> {
    Desired { component, object }
}

/// Everything one pass decided, for the status write.
struct Decided {
    offered: Offered,
    exposure: ExposureDecision,
    hash: Option<String>,
    job: Option<String>,
    image: Option<String>,
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

    /// Waits for the first lists of the caches a pass reads. The Route and HTTPRoute stores only
    /// where their API is readable in the namespace: elsewhere they hold nothing of it (and a
    /// refused watch never lists), and the pass reads past the cache instead.
    /// Whether the served DatabaseRole CRD can generate passwords: read once per operator
    /// start, like the optional-API probe (a CRD upgrade is seen by the next start).
    async fn password_generation(&self, client: &kube::Client) -> Result<bool, kube::Error> {
        self.password_generation
            .get_or_try_init(|| async {
                let api: Api<CustomResourceDefinition> = Api::all(client.clone());
                match api.get_opt(DATABASE_ROLE_CRD).await {
                    Ok(Some(crd)) => Ok(password_generation_served(&crd)),
                    Ok(None) => Ok(false),
                    // The CRD may not be read: assume it, CloudNativePG's answer will tell.
                    Err(kube::Error::Api(status)) if status.code == 403 => Ok(true),
                    Err(err) => Err(err),
                }
            })
            .await
            .copied()
    }

    async fn wait_synced(&self, cx: &ObjectContext) -> Result<(), ReconcileError> {
        let c = &self.caches;
        let on =
            |api| cx.shared.optional_apis.availability(api, &cx.key.namespace) == Availability::On;
        if on(OptionalApi::Routes) {
            wait_synced(CACHE_WAIT, &[c.routes.synced()])
                .await
                .map_err(ReconcileError::other)?;
        }
        if on(OptionalApi::HttpRoutes) {
            wait_synced(CACHE_WAIT, &[c.http_routes.synced()])
                .await
                .map_err(ReconcileError::other)?;
        }
        wait_synced(
            CACHE_WAIT,
            &[
                c.service_accounts.synced(),
                c.services.synced(),
                c.deployments.synced(),
                c.replica_sets.synced(),
                c.pods.synced(),
                c.jobs.synced(),
                c.persistent_volume_claims.synced(),
                c.network_policies.synced(),
                c.ingresses.synced(),
                c.clusters.index().synced(),
                c.poolers.index().synced(),
                c.pgadmin_accesses.index().synced(),
                c.database_roles.index().synced(),
                c.secrets.synced(),
            ],
        )
        .await
        .map_err(ReconcileError::other)
    }

    /// The exposure decided from the caches and the prober's answers, with the reads past the
    /// cache of a Route or HTTPRoute whose API is refused in the namespace (and the delete of
    /// one the decision removes).
    async fn exposure(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        names: &ChildNames,
        hostname: Result<(), &crate::reconcile::exposure::HostnameRefusal>,
    ) -> Result<ExposureDecision, ReconcileError> {
        let ns = cx.key.namespace.as_str();
        let key = owner_key(&cx.key);
        let apis = &cx.shared.optional_apis;
        let routes = apis.availability(OptionalApi::Routes, ns);
        let http_routes = apis.availability(OptionalApi::HttpRoutes, ns);
        let route = first(self.caches.routes.children_of(&key)).and_then(|r| r.to_dynamic());
        let http_route =
            first(self.caches.http_routes.children_of(&key)).and_then(|r| r.to_dynamic());
        let ingress = first(self.caches.ingresses.children_of(&key));
        let recorded = obj
            .status
            .as_ref()
            .map(|s| s.published_exposure_kinds.clone())
            .unwrap_or_default();
        let kinds = past_cache_reads(&routes, &http_routes);
        let mut checks = read_past_cache(&cx.client, owner, &names.workload, &kinds).await?;
        let decide = |checks: &[PastCacheCheck]| {
            decide_exposure(&ExposureInputs {
                exposure: ExposureView::from(&obj.spec.exposure),
                child_name: &names.workload,
                service_name: &names.workload,
                hostname,
                routes: &routes,
                http_routes: &http_routes,
                observed: ObservedExposure {
                    route: route.as_ref(),
                    ingress: ingress.as_deref(),
                    http_route: http_route.as_ref(),
                },
                namespace: ns,
                recorded: &recorded,
                past_cache: checks,
            })
        };
        let decision = decide(&checks);
        let mut refused_any = false;
        for (kind, uid) in &decision.delete_past_cache {
            let deleted =
                delete_past_cache(&cx.client, &cx.writes, owner, &names.workload, *kind, uid)
                    .await?;
            if !deleted {
                refused_any = true;
                for check in checks.iter_mut().filter(|c| c.kind == *kind) {
                    check.delete_refused = true;
                }
            }
        }
        Ok(if refused_any {
            decide(&checks)
        } else {
            decision
        })
    }

    /// Applies the exposure children the decision wants (none: withdrawn).
    async fn apply_exposure(
        &self,
        obj: &PgAdmin,
        cx: &ObjectContext,
        owner: &ChildOwner,
        names: &ChildNames,
        decision: &ExposureDecision,
    ) -> Result<ApplyReport, PgAdminError> {
        use crate::api::ExposureKind as K;
        let applier = Applier {
            client: &cx.client,
            writes: &cx.writes,
        };
        let view = ExposureView::from(&obj.spec.exposure);
        let ns = cx.key.namespace.as_str();
        let labels = Default::default();
        let c = Component::PgAdmin;
        let w = &names.workload;
        let mut report = ApplyReport::default();
        let ingress: Vec<_> = (decision.apply == Some(K::Ingress))
            .then(|| desired(c, desired_ingress(w, ns, &labels, &view, w, PORT)))
            .into_iter()
            .collect();
        merge(
            &mut report,
            applier
                .apply(&self.caches.ingresses, owner, ingress)
                .await?,
        );
        // Routes and HTTPRoutes through their stores only where their API is readable here.
        let on = |api| cx.shared.optional_apis.availability(api, ns) == Availability::On;
        if on(OptionalApi::Routes) {
            let mut routes = Vec::new();
            if decision.apply == Some(K::Route) {
                let value = desired_route(w, ns, &labels, &view, w, PORT);
                routes.push(desired(c, Route::from_value(value).map_err(render_error)?));
            }
            merge(
                &mut report,
                applier.apply(&self.caches.routes, owner, routes).await?,
            );
        }
        if on(OptionalApi::HttpRoutes) {
            let mut http_routes = Vec::new();
            if decision.apply == Some(K::HttpRoute) {
                let value = desired_http_route(w, ns, &labels, &view, w, PORT);
                http_routes.push(desired(
                    c,
                    HttpRoute::from_value(value).map_err(render_error)?,
                ));
            }
            merge(
                &mut report,
                applier
                    .apply(&self.caches.http_routes, owner, http_routes)
                    .await?,
            );
        }
        Ok(report)
    }

    async fn pass(&self, obj: &PgAdmin, cx: &ObjectContext) -> Result<Outcome, ReconcileError> {
        self.wait_synced(cx).await?;
        let ns = cx.key.namespace.as_str();
        let name = cx.key.name.as_str();
        let key = owner_key(&cx.key);
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
        }
        if facts.paused {
            if refusal.is_some() {
                // Withdrawn even while paused: the URL and the published kinds say so.
                let none = PgAdminStatus::default();
                let stored = obj.status.as_ref().unwrap_or(&none);
                facts = facts
                    .with_status_field(StatusField::Url, &exposure.url, &stored.url)
                    .and_then(|f| {
                        f.with_status_field(
                            StatusField::PublishedExposureKinds,
                            &exposure.published,
                            &stored.published_exposure_kinds,
                        )
                    })
                    .map_err(PgAdminError::from)?;
            }
            let written = self.write(obj, facts, Extras::default(), cx).await?;
            return Ok(Outcome::done().with_status(written));
        }

        // Images and the OAuth2 client Secret.
        let defaults = &settings.default_images;
        let image = resolve_image(obj.spec.image.as_deref(), defaults.pgadmin.as_deref())
            .unwrap_or_else(|| BUILTIN_PGADMIN_IMAGE.to_owned());
        let oauth2 = obj
            .spec
            .authentication
            .as_ref()
            .and_then(|a| a.oauth2.as_ref());
        let proxy_image = oauth2.map(|o| {
            resolve_image(o.proxy_image.as_deref(), defaults.oauth2_proxy.as_deref())
                .unwrap_or_else(|| BUILTIN_OAUTH2_PROXY_IMAGE.to_owned())
        });
        let mut images = vec![(ImageRole::PgAdmin, image.as_str())];
        if let Some(proxy) = &proxy_image {
            images.push((ImageRole::OAuth2Proxy, proxy.as_str()));
        }
        let allow = ImageAllowList::new(&settings.allowed_image_repositories);
        let image_refusal = allow.verdict(&images);

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
        if refusal.is_none()
            && image_refusal.is_none()
            && missing_oauth2.is_none()
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
        let stalled = config.image_refusal.is_some()
            || config.settings_problem.is_some()
            || missing_oauth2.is_some();
        let mut foreign: Option<(String, String)> = match &settings {
            Some(SettingsDb::NotOwned { kind, name }) => Some((kind.clone(), name.clone())),
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
        if refusal.is_none() && !stalled && foreign.is_none() {
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
            let outcome = self
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
            facts = outcome.0;
            converged = outcome.1;
            foreign = outcome.2;
        }
        config.foreign_child = foreign.as_ref().map(|(k, n)| (k.as_str(), n.as_str()));
        let configuration = configuration_valid(&config, ns);
        facts = facts
            .with_aspect(ConditionType::ConfigurationValid, configuration)
            .map_err(PgAdminError::from)?
            .with_children_converged(converged && reports.iter().all(ApplyReport::converged));
        facts = status_fields(obj, facts, &decided, refusal.is_some() || stalled)?;
        let written = self.write(obj, facts, Extras::default(), cx).await?;
        Ok(Outcome::done().with_status(written))
    }

    /// Renders and applies every child; returns the facts with the aspects judged from the
    /// caches, whether everything was already in place, and a name taken by a foreign object.
    #[allow(clippy::too_many_arguments)]
    async fn render(
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
    ) -> Result<(PassFacts, bool, Option<(String, String)>), ReconcileError> {
        let ns = cx.key.namespace.as_str();
        let key = owner_key(&cx.key);
        let applier = Applier {
            client: &cx.client,
            writes: &cx.writes,
        };
        let mut facts = facts;
        let login_created =
            ensure_login_secret(&cx.client, &cx.writes, &self.caches.secrets, owner, names).await?;
        let (hash, wrote) = match self
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
            ServersOutcome::Current { hash, wrote } => (hash, wrote),
            ServersOutcome::NotOwned => {
                return Ok((
                    facts,
                    false,
                    Some(("Secret".to_owned(), names.servers_secret.clone())),
                ));
            }
        };
        let mut report = ApplyReport::default();
        let pg = Component::PgAdmin;
        merge(
            &mut report,
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
        merge(
            &mut report,
            applier
                .apply(
                    &self.caches.persistent_volume_claims,
                    owner,
                    vec![desired(pg, data_claim(input).map_err(PgAdminError::from)?)],
                )
                .await
                .map_err(PgAdminError::from)?,
        );
        let (workload, workload_hash) = deployment(input).map_err(PgAdminError::from)?;
        let current = self
            .caches
            .deployments
            .get(&ObjectKey::new(ns, names.workload.as_str()));
        // No pgAdmin Pod until CloudNativePG applied the settings database.
        if gate.pending.is_none() || current.is_some() {
            if let Some(note) = rollout_started(current.as_deref(), &workload_hash) {
                facts = facts
                    .with_event(pgadmin::ROLLOUT_STARTED, &note)
                    .map_err(PgAdminError::from)?;
            }
            if let UpgradeGate::Roll {
                image,
                event: Some((reason, note)),
                ..
            } = gate.upgrade
                && current.as_deref().and_then(pgadmin_image) != Some(image.as_str())
            {
                facts = facts
                    .with_event(*reason, note)
                    .map_err(PgAdminError::from)?;
            }
            merge(
                &mut report,
                applier
                    .apply(&self.caches.deployments, owner, vec![desired(pg, workload)])
                    .await
                    .map_err(PgAdminError::from)?,
            );
        }
        merge(
            &mut report,
            applier
                .apply(
                    &self.caches.services,
                    owner,
                    vec![desired(pg, service(input).map_err(PgAdminError::from)?)],
                )
                .await
                .map_err(PgAdminError::from)?,
        );
        merge(
            &mut report,
            self.apply_exposure(obj, cx, owner, names, &decided.exposure)
                .await?,
        );
        let extra = obj
            .spec
            .egress
            .as_ref()
            .map(|e| e.extra_rules.clone())
            .unwrap_or_default();
        let rules = egress_rules(
            &offered.clusters,
            &offered.poolers,
            input.oauth2.is_some(),
            &extra,
        )
        .map_err(PgAdminError::from)?;
        let policy =
            egress_policy(input.owner, &names.egress_policy, &rules).map_err(PgAdminError::from)?;
        merge(
            &mut report,
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
        if existing.is_none()
            && job_report
                .verdicts
                .iter()
                .any(|v| matches!(v, ChildVerdict::Applied { .. }))
        {
            facts = facts
                .with_event(
                    pgadmin::REGISTRATION_STARTED,
                    &format!(
                        "Job {job_name} registers the offered set ({} servers)",
                        offered.servers.len()
                    ),
                )
                .map_err(PgAdminError::from)?;
        }
        merge(&mut report, job_report);

        if let Some(ChildVerdict::NotOwned { kind, name }) = report.not_owned() {
            return Ok((facts, false, Some((kind.clone(), name.clone()))));
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
        let workload = match (refused(&report), &gate.pending, gate.upgrade) {
            (Some(v), _, _) => v,
            (None, Some(pending), _) => pending.clone(),
            (None, None, UpgradeGate::BackingUp { job, .. }) => Verdict::fails(
                pgadmin::UPGRADE_BACKUP_RUNNING,
                format!(
                    "Job {job} backs up the settings database before {} replaces {}; the old image keeps running",
                    decided_target(obj, input),
                    input.image
                ),
            ),
            (None, None, UpgradeGate::Failed { job, fact, .. }) => Verdict::fails(
                pgadmin::UPGRADE_BACKUP_FAILED,
                format!(
                    "Job {job} failed to back up the settings database ({fact}): {} keeps running; fix it and delete the Job, or set {SKIP_UPGRADE_BACKUP_ANNOTATION}: {}",
                    input.image,
                    decided_target(obj, input)
                ),
            ),
            (None, None, _) => {
                workload_verdict(&names.workload, deployment.as_deref(), &replica_sets, &pods)
            }
        };
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
        let converged = report.converged() && !wrote && !login_created && (done || !pod_ready);
        Ok((facts, converged, None))
    }

    async fn write(
        &self,
        obj: &PgAdmin,
        facts: PassFacts,
        extras: Extras,
        cx: &ObjectContext,
    ) -> Result<Written, ReconcileError> {
        self.status
            .write(obj, &facts, extras, cx.target())
            .await
            .map_err(ReconcileError::other)
    }
}

fn render_error(e: serde_json::Error) -> PgAdminError {
    PgAdminError::Apply(crate::children::ApplyError::Render(e))
}

/// What besides the rollout decides WorkloadReady: the settings database and the upgrade gate.
struct WorkloadGate<'a> {
    upgrade: &'a UpgradeGate,
    /// `status.image`: the backup Job runs the image that made the settings.
    running: Option<&'a str>,
    /// `ConfigDatabaseNotReady` while CloudNativePG has not applied the settings database.
    pending: Option<Verdict>,
}

/// The image the spec asks for (the gate may render the running one meanwhile).
fn decided_target(obj: &PgAdmin, input: &RenderInput<'_>) -> String {
    obj.spec
        .image
        .clone()
        .unwrap_or_else(|| input.image.to_owned())
}

/// The pgAdmin container's image of a Deployment.
fn pgadmin_image(deployment: &k8s_openapi::api::apps::v1::Deployment) -> Option<&str> {
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

fn first<C>(children: Vec<Arc<C>>) -> Option<Arc<C>> {
    children.into_iter().next()
}

fn merge(report: &mut ApplyReport, more: ApplyReport) {
    report.verdicts.extend(more.verdicts);
    report.deleted.extend(more.deleted);
}

/// A child the server refused: the workload cannot be rendered as asked.
fn refused(report: &ApplyReport) -> Option<Verdict> {
    report.verdicts.iter().find_map(|v| match v {
        ChildVerdict::Refused {
            name,
            code,
            message,
            ..
        } => Some(Verdict::fails(
            common::RECONCILIATION_FAILED,
            format!("the API server refused {name} ({code}): {message}"),
        )),
        _ => None,
    })
}

/// The kind's status fields as this pass decided them. A stalled pass states only the servers
/// (what would be offered) and leaves the rest as it was.
fn status_fields(
    obj: &PgAdmin,
    facts: PassFacts,
    decided: &Decided,
    stalled: bool,
) -> Result<PassFacts, PgAdminError> {
    let none = PgAdminStatus::default();
    let stored = obj.status.as_ref().unwrap_or(&none);
    let mut facts =
        facts.with_status_field(StatusField::Servers, &decided.offered.rows, &stored.servers)?;
    facts = facts
        .with_status_field(StatusField::Url, &decided.exposure.url, &stored.url)?
        .with_status_field(
            StatusField::PublishedExposureKinds,
            &decided.exposure.published,
            &stored.published_exposure_kinds,
        )?;
    if stalled {
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
            &stored.registration,
        )?;
    }
    if decided.image.is_some() {
        facts = facts.with_status_field(StatusField::Image, &decided.image, &stored.image)?;
    }
    Ok(facts)
}

impl Reconciler for PgAdminReconciler {
    type Object = PgAdmin;

    async fn reconcile(
        &self,
        obj: Arc<PgAdmin>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        let obj = self.status.freshest(&cx.key, obj);
        self.pass(&obj, cx).await
    }

    async fn on_stop(&self, key: &ObjectKey, _cx: &ObjectContext) {
        let owner = owner_key(key);
        let c = &self.caches;
        c.clusters.index().forget(&owner);
        c.poolers.index().forget(&owner);
        c.pgadmin_accesses.index().forget(&owner);
        c.database_roles.index().forget(&owner);
        c.secrets.forget(&owner);
        self.servers
            .forget(&key.namespace, &ChildNames::of(&key.name));
        self.status.forget(key);
    }

    async fn report_error(&self, obj: Arc<PgAdmin>, failure: PassFailure<'_>, cx: &ObjectContext) {
        self.status
            .report_error(obj, failure.classify(), cx.target())
            .await;
    }
}
