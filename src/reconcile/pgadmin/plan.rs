//! What one PgAdmin pass decides before it writes its children, pure: [`decide`] (the images
//! and their verdict, the offered set, the OAuth2 client Secret, the gates before the settings
//! database is known), then [`plan`] (the settings database's outcome folded into the gates,
//! the Secrets that wake the PgAdmin, the upgrade gate, whether the children are rendered and
//! from what).

use super::config::ConfigFacts;
use super::config_database::ConfigConnection;
use super::offered::{
    ClusterFacts, GrantFacts, Offered, OfferedInputs, OfferedServer, PoolerFacts, RoleFacts,
    offered_set,
};
use super::pass::{ForeignChild, Gates, PassImages};
use super::registration::JobState;
use super::render::{ChildNames, RenderInput};
use super::upgrade::{UpgradeFacts, UpgradeGate, upgrade_backup_job_name, upgrade_gate};
use crate::api::PgAdminSpec;
use crate::conditions::Verdict;
use crate::messages::ObjectKey;
use crate::reconcile::images::ImageAllowList;
use crate::reconcile::optional_api::{Availability, OptionalApi};
use crate::reconcile::workload::SecretDigest;

/// The objects the offered set is decided from, as the caches hold them.
#[derive(Default)]
pub struct Referenced {
    pub clusters: Vec<ClusterFacts>,
    pub clusters_unreadable: Vec<String>,
    pub grants: Vec<GrantFacts>,
    pub poolers: Vec<PoolerFacts>,
}

impl Referenced {
    /// The offered set with `roles` (none: to learn which Clusters are registered).
    pub fn offered(
        &self,
        namespace: &str,
        name: &str,
        spec: &PgAdminSpec,
        roles: &[RoleFacts],
        apis: &dyn Fn(OptionalApi, &str) -> Availability,
    ) -> Offered {
        offered_set(&OfferedInputs {
            namespace,
            name,
            spec,
            clusters: &self.clusters,
            clusters_unreadable: &self.clusters_unreadable,
            grants: &self.grants,
            poolers: &self.poolers,
            roles,
            apis,
        })
    }
}

/// The prober's answer for an optional API in a namespace.
pub type ApiAnswers<'a> = Box<dyn Fn(OptionalApi, &str) -> Availability + Send + Sync + 'a>;

/// A cache consulted by name in the PgAdmin's namespace, when a decision needs it.
pub type Lookup<'a, T> = Box<dyn Fn(&str) -> T + Send + Sync + 'a>;

/// What a pass read (and was told by the operator's settings) before it writes anything but
/// the exposure.
pub struct Observed<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub spec: &'a PgAdminSpec,
    /// `status.image`: the image running now.
    pub running: Option<&'a str>,
    /// The skip-upgrade-backup annotation's value.
    pub skip_upgrade_backup: Option<&'a str>,
    pub hostname_refused: bool,
    /// The operator's default images (pgAdmin, OAuth2 proxy).
    pub default_images: (Option<&'a str>, Option<&'a str>),
    pub allow: ImageAllowList,
    pub referenced: Referenced,
    /// The DatabaseRoles of the registered Clusters' namespaces.
    pub roles: Vec<RoleFacts>,
    pub apis: ApiAnswers<'a>,
    /// Whether a Secret of the namespace exists, as the Secret index says (`None`: unknown).
    pub secret_exists: Lookup<'a, Option<bool>>,
    /// A Job of the namespace as the cache shows it.
    pub job: Lookup<'a, Option<JobState>>,
}

/// What the pass decided before the settings database is ensured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub images: PassImages,
    /// `ImageNotAllowed`, naming every refused image.
    pub image_refusal: Option<Verdict>,
    pub offered: Offered,
    /// The sign-in Secret (OAuth2 client, LDAP bind password) with the field naming it.
    pub sign_in_secret: Option<(&'static str, ObjectKey)>,
    /// The sign-in Secret is known to be missing (an unknown answer is not missing).
    pub missing_sign_in_secret: bool,
    /// The gates, `settings_problem` not yet known.
    pub gates: Gates,
    /// `spec.config.settings` naming keys the operator owns (not a stall).
    pub settings_refusal: Option<Verdict>,
}

/// The images, the offered set, the OAuth2 client Secret and the gates.
pub fn decide(o: &Observed<'_>) -> Decision {
    let images = PassImages::of(o.spec, o.default_images.0, o.default_images.1);
    let image_refusal = o.allow.verdict(&images.by_role());
    let sign_in_secret = o
        .spec
        .authentication
        .as_ref()
        .and_then(|a| a.secret_ref())
        .map(|(field, r)| (field, ObjectKey::new(o.namespace, r.name.as_str())));
    let missing_sign_in_secret = sign_in_secret
        .as_ref()
        .is_some_and(|(_, k)| (o.secret_exists)(&k.name) == Some(false));
    let gates = Gates {
        hostname_refused: o.hostname_refused,
        image_refused: image_refusal.is_some(),
        settings_problem: false,
        missing_sign_in_secret,
    };
    Decision {
        images,
        image_refusal,
        offered: o
            .referenced
            .offered(o.namespace, o.name, o.spec, &o.roles, &*o.apis),
        sign_in_secret,
        missing_sign_in_secret,
        gates,
        settings_refusal: o
            .spec
            .config
            .as_ref()
            .and_then(|c| super::settings::settings_refusal(&c.settings)),
    }
}

/// What ensuring the settings database (`spec.configDatabase`) came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingsDb {
    /// A configuration problem: a stall.
    Problem(Verdict),
    /// A name taken by an object this PgAdmin does not control.
    NotOwned {
        kind: String,
        name: String,
    },
    /// Applied; CloudNativePG has not applied everything yet (`ConfigDatabaseNotReady`).
    Pending(Verdict),
    Ready(ConfigConnection),
}

/// The Secrets whose contents enter the servers file.
pub fn credential_secrets(servers: &[OfferedServer]) -> Vec<ObjectKey> {
    let mut keys: Vec<ObjectKey> = servers
        .iter()
        .filter_map(|s| {
            s.credentials
                .secret()
                .map(|name| ObjectKey::new(s.namespace.as_str(), name))
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The Secrets holding the server CAs of the offered servers' Clusters.
pub fn ca_secrets(servers: &[OfferedServer]) -> Vec<ObjectKey> {
    let mut keys: Vec<ObjectKey> = servers
        .iter()
        .map(|s| ObjectKey::new(s.namespace.as_str(), s.ca_secret.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// What the pass does with its children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub decision: Decision,
    /// The gates with the settings database's problem.
    pub gates: Gates,
    pub settings_problem: Option<Verdict>,
    /// The settings database's name taken by someone else's object.
    pub foreign: Option<ForeignChild>,
    pub config_db: Option<ConfigConnection>,
    /// `ConfigDatabaseNotReady` while CloudNativePG has not applied the settings database.
    pub pending: Option<Verdict>,
    /// The Secrets the pgAdmin Pod consumes (OAuth2 client, settings database password).
    pub consumed: Vec<ObjectKey>,
    /// Every Secret the pass reads or the Pod consumes: a new version wakes this PgAdmin.
    pub watched: Vec<ObjectKey>,
    pub upgrade: UpgradeGate,
    /// `status.image`: the backup Job runs the image that made the settings.
    pub running: Option<String>,
    /// The children are rendered and applied.
    pub renders: bool,
}

/// The plan from what the pass observed, decided and made of the settings database (`None`:
/// not ensured this pass).
pub fn plan(o: &Observed<'_>, decision: Decision, settings: Option<SettingsDb>) -> Plan {
    let (mut settings_problem, mut foreign, mut config_db, mut pending) = (None, None, None, None);
    match settings {
        Some(SettingsDb::Problem(v)) => settings_problem = Some(v),
        Some(SettingsDb::NotOwned { kind, name }) => foreign = Some(ForeignChild { kind, name }),
        Some(SettingsDb::Pending(v)) => pending = Some(v),
        Some(SettingsDb::Ready(connection)) => config_db = Some(connection),
        None => {}
    }
    let gates = Gates {
        settings_problem: settings_problem.is_some(),
        ..decision.gates
    };
    let consumed: Vec<ObjectKey> = decision
        .sign_in_secret
        .iter()
        .map(|(_, k)| k.clone())
        .chain(
            config_db
                .as_ref()
                .map(|c| ObjectKey::new(o.namespace, c.password_secret.as_str())),
        )
        .collect();
    let names = ChildNames::of(o.name);
    let mut watched = vec![
        ObjectKey::new(o.namespace, names.servers_secret.as_str()),
        ObjectKey::new(o.namespace, names.login_secret.as_str()),
    ];
    watched.extend(consumed.iter().cloned());
    watched.extend(credential_secrets(&decision.offered.servers));
    watched.extend(ca_secrets(&decision.offered.servers));
    // With a settings database, an image change waits for its backup; the latest backup Job
    // (the running image's) stays until the next image change.
    let target = decision.images.pgadmin.as_str();
    let block = o.spec.pod_template.as_ref();
    let backup_of = |image: &str| (o.job)(&upgrade_backup_job_name(o.name, image, block));
    let upgrade = upgrade_gate(
        o.name,
        &UpgradeFacts {
            running: o.running,
            target,
            block,
            backup_required: config_db.is_some() && o.spec.upgrade_backup.enabled,
            skip_annotation: o.skip_upgrade_backup,
            backup: backup_of(target),
            running_backup: o.running.and_then(backup_of),
        },
    );
    let renders = gates.renders(foreign.is_some());
    Plan {
        decision,
        gates,
        settings_problem,
        foreign,
        config_db,
        pending,
        consumed,
        watched,
        upgrade,
        running: o.running.map(str::to_owned),
        renders,
    }
}

impl Plan {
    /// What the children are rendered from, with the digests of the consumed Secrets.
    pub fn render_input<'a>(
        &'a self,
        o: &Observed<'a>,
        names: &'a ChildNames,
        consumed: &'a [SecretDigest],
    ) -> RenderInput<'a> {
        let oauth2 = o
            .spec
            .authentication
            .as_ref()
            .and_then(|a| a.oauth2.as_ref());
        RenderInput {
            owner: o.name,
            namespace: o.namespace,
            image: self.upgrade.image(),
            resources: o.spec.resources.as_ref(),
            storage: &o.spec.storage,
            oauth2: oauth2.zip(self.decision.images.oauth2_proxy.as_deref()),
            ldap: o.spec.authentication.as_ref().and_then(|a| a.ldap.as_ref()),
            config_db: self.config_db.as_ref(),
            consumed,
            names,
            pod_template: o.spec.pod_template.as_ref(),
            settings: o.spec.config.as_ref().map(|c| &c.settings),
        }
    }

    /// ConfigurationValid's inputs; `foreign` is the name taken found by the pass, if any.
    pub fn config_facts<'a>(&'a self, foreign: Option<&'a ForeignChild>) -> ConfigFacts<'a> {
        let d = &self.decision;
        ConfigFacts {
            foreign_child: foreign.map(|f| (f.kind.as_str(), f.name.as_str())),
            image_refusal: d.image_refusal.clone(),
            settings_problem: self.settings_problem.clone(),
            missing_sign_in_secret: d
                .sign_in_secret
                .as_ref()
                .filter(|_| d.missing_sign_in_secret)
                .map(|(field, k)| (*field, k.name.as_str())),
            settings_refusal: d.settings_refusal.clone(),
            problems: &d.offered.problems,
            offered: d.offered.servers.len(),
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod plan_tests;
