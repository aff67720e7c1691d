//! The children of a PgAdmin (pure, byte-stable): ServiceAccount, data PVC, Deployment and
//! Service `<name>-pgadmin`, Secret `<name>-pgadmin-servers`, the registration Job and the
//! egress NetworkPolicy. pgAdmin runs as one process (`Recreate`), configured through its
//! documented environment variables; with OAuth2 an oauth2-proxy sidecar fronts it and pgAdmin
//! listens on loopback, trusting the proxy's user header.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, ResourceRequirements, Secret, Service, ServiceAccount,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::config_database::ConfigConnection;
use super::image;
use super::offered::POSTGRES_PORT;
use super::servers_file::{SERVERS_FILE_KEY, SERVERS_MOUNT};
use crate::api::{Ldap, OAuth2, PgAdminStorage, PodTemplate};
use crate::reconcile::children::{Component, child_labels, child_name, pod_template_labels};
use crate::reconcile::workload::{SecretDigest, finish_pod, stamp_workload_hash};

/// The Service port the exposure targets.
pub const HTTP_PORT_NAME: &str = "http";
pub const SERVICE_PORT: i32 = 80;
/// pgAdmin's port (on loopback behind the OAuth2 proxy).
pub const PGADMIN_PORT: i32 = 8080;
/// oauth2-proxy's port.
pub const PROXY_PORT: i32 = 4180;
/// pgAdmin's data directory (settings, sessions, the servers it knows).
pub const DATA_MOUNT: &str = "/var/lib/pgadmin";
/// The pgAdmin image's user and group.
const PGADMIN_UID: i64 = 5050;
/// Keys of the login Secret `<name>-pgadmin-login`, created once by the operator.
pub const LOGIN_PASSWORD_KEY: &str = "password";
pub const COOKIE_SECRET_KEY: &str = "cookie-secret";

/// Names of a PgAdmin's children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildNames {
    /// ServiceAccount, PVC, Deployment, Service and exposure.
    pub workload: String,
    pub servers_secret: String,
    pub login_secret: String,
    pub egress_policy: String,
}

impl ChildNames {
    pub fn of(owner: &str) -> Self {
        Self {
            workload: child_name(owner, "pgadmin"),
            servers_secret: child_name(owner, "pgadmin-servers"),
            login_secret: child_name(owner, "pgadmin-login"),
            egress_policy: child_name(owner, "pgadmin-egress"),
        }
    }
}

/// The pgAdmin user the registration imports servers for: pgAdmin's initial user.
pub fn admin_email(owner: &str, namespace: &str) -> String {
    format!("admin@{owner}.{namespace}.pgadmin.local")
}

#[derive(Debug, thiserror::Error)]
#[error("{what} not rendered: {source}")]
pub struct RenderError {
    what: &'static str,
    #[source]
    source: serde_json::Error,
}

pub(super) fn typed<T: DeserializeOwned>(
    what: &'static str,
    value: Value,
) -> Result<T, RenderError> {
    serde_json::from_value(value).map_err(|source| RenderError { what, source })
}

/// What the children are rendered from.
#[derive(Clone, Debug)]
pub struct RenderInput<'a> {
    pub owner: &'a str,
    pub namespace: &'a str,
    pub image: &'a str,
    pub resources: Option<&'a ResourceRequirements>,
    pub storage: &'a PgAdminStorage,
    /// The OAuth2 settings and the proxy image resolved.
    pub oauth2: Option<(&'a OAuth2, &'a str)>,
    /// `spec.authentication.ldap`.
    pub ldap: Option<&'a Ldap>,
    /// The settings database, once CloudNativePG applied it.
    pub config_db: Option<&'a ConfigConnection>,
    /// Digests of the Secrets the pgAdmin Pod consumes: a change rolls it.
    pub consumed: &'a [SecretDigest],
    pub names: &'a ChildNames,
    /// The object's `podTemplate` block, on the pgAdmin Pod and on its Jobs' Pods.
    pub pod_template: Option<&'a PodTemplate>,
    /// `spec.config.settings` (the keys the operator owns are never rendered).
    pub settings: Option<&'a BTreeMap<String, Value>>,
}

/// pgAdmin's configuration, the same for the pgAdmin container and the registration Job (whose
/// script builds `config_distro.py` from it as the image's entrypoint does): each
/// `PGADMIN_CONFIG_*` value is a Python expression without blanks (see [`super::image`]).
fn config_env(input: &RenderInput<'_>) -> Vec<Value> {
    let mut env = vec![
        json!({"name": "PGADMIN_CONFIG_ENHANCED_COOKIE_PROTECTION", "value": "True"}),
        json!({"name": "PGADMIN_CONFIG_UPGRADE_CHECK_ENABLED", "value": "False"}),
        // The initial user's domain is under `.local`, a special-use name pgAdmin refuses
        // unless allowed (the entrypoint and the login form both read this).
        json!({"name": "PGADMIN_CONFIG_ALLOW_SPECIAL_EMAIL_DOMAINS", "value": "'local'"}),
        json!({"name": "PGADMIN_CONFIG_SHARED_STORAGE", "value": image::shared_storage()}),
    ];
    if let Some(db) = input.config_db {
        env.push(json!({"name": image::CONFIG_DB_PASSWORD_ENV, "valueFrom": {"secretKeyRef": {"name": db.password_secret, "key": "password"}}}));
        env.push(
            json!({"name": "PGADMIN_CONFIG_CONFIG_DATABASE_URI", "value":
            image::config_database_uri(&db.role, &db.host, POSTGRES_PORT, &db.database)}),
        );
    }
    if input.oauth2.is_some() {
        env.push(
            json!({"name": "PGADMIN_CONFIG_AUTHENTICATION_SOURCES", "value": "['webserver']"}),
        );
        env.push(json!({"name": "PGADMIN_CONFIG_WEBSERVER_AUTO_CREATE_USER", "value": "True"}));
        env.push(
            json!({"name": "PGADMIN_CONFIG_WEBSERVER_REMOTE_USER", "value": "'X-Forwarded-Email'"}),
        );
        // A user the proxy let in has no password to derive pgAdmin's key from: pgAdmin then
        // uses a key of the session (nothing is saved with it: servers connect with their
        // credential files).
        env.push(json!({"name": "PGADMIN_CONFIG_MASTER_PASSWORD_REQUIRED", "value": "False"}));
    }
    if let Some(ldap) = input.ldap {
        env.extend(super::ldap::config_env(ldap));
    }
    if let Some(settings) = input.settings {
        env.extend(super::settings::settings_env(settings));
    }
    env
}

const COMPONENT: Component = Component::PgAdmin;

fn meta(name: &str) -> Value {
    json!({ "name": name })
}

pub fn service_account(input: &RenderInput<'_>) -> Result<ServiceAccount, RenderError> {
    typed(
        "ServiceAccount",
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": meta(&input.names.workload),
            "automountServiceAccountToken": false,
        }),
    )
}

pub fn data_claim(input: &RenderInput<'_>) -> Result<PersistentVolumeClaim, RenderError> {
    let mut spec = json!({
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": input.storage.size}},
    });
    if let Some(class) = &input.storage.storage_class_name {
        spec["storageClassName"] = json!(class);
    }
    typed(
        "PersistentVolumeClaim",
        json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": meta(&input.names.workload),
            "spec": spec,
        }),
    )
}

pub fn service(input: &RenderInput<'_>) -> Result<Service, RenderError> {
    typed(
        "Service",
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": meta(&input.names.workload),
            "spec": {
                "selector": child_labels(input.owner, COMPONENT),
                "ports": [{"name": HTTP_PORT_NAME, "port": SERVICE_PORT, "targetPort": HTTP_PORT_NAME}],
            },
        }),
    )
}

fn pgadmin_container(input: &RenderInput<'_>) -> Value {
    let login = &input.names.login_secret;
    let mut env = vec![
        json!({"name": "PGADMIN_DEFAULT_EMAIL", "value": admin_email(input.owner, input.namespace)}),
        json!({"name": "PGADMIN_DEFAULT_PASSWORD", "valueFrom": {"secretKeyRef": {"name": login, "key": LOGIN_PASSWORD_KEY}}}),
        json!({"name": "PGADMIN_LISTEN_PORT", "value": PGADMIN_PORT.to_string()}),
        json!({"name": "PGADMIN_DISABLE_POSTFIX", "value": "true"}),
    ];
    env.extend(config_env(input));
    let mut ports = Vec::new();
    if input.oauth2.is_some() {
        env.push(json!({"name": "PGADMIN_LISTEN_ADDRESS", "value": "127.0.0.1"}));
    } else {
        ports.push(json!({"name": HTTP_PORT_NAME, "containerPort": PGADMIN_PORT}));
    }
    let mut mounts = vec![
        json!({"name": "data", "mountPath": DATA_MOUNT}),
        json!({"name": "credentials", "mountPath": image::CREDENTIALS_MOUNT, "readOnly": true}),
    ];
    let ldap_ca = input.ldap.and_then(super::ldap::ca_volume);
    mounts.extend(ldap_ca.map(|(_, mount)| mount));
    let mut container = json!({
        "name": "pgadmin",
        "image": input.image,
        "env": env,
        "volumeMounts": mounts,
    });
    if !ports.is_empty() {
        container["ports"] = json!(ports);
        container["readinessProbe"] =
            json!({"httpGet": {"path": "/misc/ping", "port": HTTP_PORT_NAME}});
    }
    if let Some(resources) = input.resources {
        container["resources"] = json!(resources);
    }
    container
}

/// Copies the credential files where libpq accepts them (see [`super::image`]).
fn credentials_container(input: &RenderInput<'_>) -> Value {
    json!({
        "name": "credentials",
        "image": input.image,
        "command": ["/bin/sh", "-c", image::copy_credentials_script(SERVERS_MOUNT)],
        "volumeMounts": [
            {"name": "servers", "mountPath": SERVERS_MOUNT, "readOnly": true},
            {"name": "credentials", "mountPath": image::CREDENTIALS_MOUNT},
        ],
    })
}

fn proxy_container(input: &RenderInput<'_>, oauth2: &OAuth2, image: &str) -> Value {
    let login = &input.names.login_secret;
    json!({
        "name": "oauth2-proxy",
        "image": image,
        "args": [
            "--provider=oidc",
            format!("--oidc-issuer-url={}", oauth2.issuer_url),
            format!("--client-id={}", oauth2.client_id),
            format!("--http-address=0.0.0.0:{PROXY_PORT}"),
            format!("--upstream=http://127.0.0.1:{PGADMIN_PORT}/"),
            "--email-domain=*",
            "--pass-user-headers=true",
            "--reverse-proxy=true",
        ],
        "env": [
            {"name": "OAUTH2_PROXY_CLIENT_SECRET", "valueFrom": {"secretKeyRef": {
                "name": oauth2.client_secret_ref.name, "key": oauth2.client_secret_ref.key}}},
            {"name": "OAUTH2_PROXY_COOKIE_SECRET", "valueFrom": {"secretKeyRef": {
                "name": login, "key": COOKIE_SECRET_KEY}}},
        ],
        "ports": [{"name": HTTP_PORT_NAME, "containerPort": PROXY_PORT}],
        "readinessProbe": {"httpGet": {"path": "/ping", "port": HTTP_PORT_NAME}},
    })
}

/// The Deployment; returns it with its workload hash.
pub fn deployment(input: &RenderInput<'_>) -> Result<(Deployment, String), RenderError> {
    let mut containers = vec![pgadmin_container(input)];
    if let Some((oauth2, image)) = input.oauth2 {
        containers.push(proxy_container(input, oauth2, image));
    }
    let mut volumes = vec![
        json!({"name": "data", "persistentVolumeClaim": {"claimName": input.names.workload}}),
        json!({"name": "servers", "secret": {"secretName": input.names.servers_secret}}),
        // The credential copies live as long as the Pod, in memory.
        json!({"name": "credentials", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}),
    ];
    volumes.extend(
        input
            .ldap
            .and_then(super::ldap::ca_volume)
            .map(|(volume, _)| volume),
    );
    let template = json!({
        "metadata": {"labels": pod_template_labels(input.owner, COMPONENT)},
        "spec": {
            "serviceAccountName": input.names.workload,
            "automountServiceAccountToken": false,
            "securityContext": {"runAsUser": PGADMIN_UID, "runAsGroup": PGADMIN_UID, "fsGroup": PGADMIN_UID},
            "initContainers": [credentials_container(input)],
            "containers": containers,
            "volumes": volumes,
        },
    });
    let mut template: k8s_openapi::api::core::v1::PodTemplateSpec =
        typed("pod template", template)?;
    finish_pod(&mut template, input.pod_template, WRITABLE_ROOT);
    let hash = stamp_workload_hash(&mut template, input.consumed);
    let deployment = typed(
        "Deployment",
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": meta(&input.names.workload),
            "spec": {
                // One pgAdmin process: it keeps database connections per process.
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": child_labels(input.owner, COMPONENT)},
                "template": template,
            },
        }),
    )?;
    Ok((deployment, hash))
}

/// Secret `<name>-pgadmin-servers` holding the servers file and the credential files.
pub fn servers_secret(
    names: &ChildNames,
    data: &BTreeMap<String, String>,
) -> Result<Secret, RenderError> {
    let mut secret: Secret = typed(
        "Secret",
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": meta(&names.servers_secret),
            "type": "Opaque",
        }),
    )?;
    secret.data = Some(
        data.iter()
            .map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec())))
            .collect(),
    );
    Ok(secret)
}

fn registration_env(input: &RenderInput<'_>) -> Vec<Value> {
    let (name, value) = image::verify_env();
    let mut env = config_env(input);
    env.push(json!({"name": name, "value": value}));
    env
}

/// The registration Job: pgAdmin's own `setup.py load-servers` against its data volume, next
/// to the pgAdmin Pod (the volume is ReadWriteOnce), with pgAdmin's configuration. `--replace`
/// makes the registered set exactly the offered one, and the Job fails unless `dump-servers`
/// shows exactly that set.
pub fn registration_job(input: &RenderInput<'_>, job_name: &str) -> Result<Job, RenderError> {
    let email = admin_email(input.owner, input.namespace);
    job_beside_pgadmin(
        input,
        job_name,
        Component::PgAdminRegistration,
        json!({
            "name": "register",
            "image": input.image,
            "env": registration_env(input),
            "command": ["/bin/sh", "-c", image::registration_script(
                &format!("{SERVERS_MOUNT}/{SERVERS_FILE_KEY}"), &email)],
            "volumeMounts": [
                {"name": "data", "mountPath": DATA_MOUNT},
                {"name": "servers", "mountPath": SERVERS_MOUNT, "readOnly": true},
            ],
        }),
        &[json!({"name": "servers", "secret": {"secretName": input.names.servers_secret}})],
    )
}

/// The backup of the settings database before an image change: pg_dump (of the running
/// image, whose client matches) into pgAdmin's data volume, next to the pgAdmin Pod.
pub fn upgrade_backup_job(
    input: &RenderInput<'_>,
    job_name: &str,
    running_image: &str,
) -> Result<Option<Job>, RenderError> {
    let Some(db) = input.config_db else {
        return Ok(None);
    };
    let script = image::backup_script(
        &format!("{DATA_MOUNT}/backups"),
        &format!("{job_name}.dump"),
        &db.host,
        POSTGRES_PORT,
        &db.role,
        &db.database,
    );
    job_beside_pgadmin(
        input,
        job_name,
        Component::PgAdminUpgradeBackup,
        json!({
            "name": "backup",
            "image": running_image,
            "command": ["/bin/sh", "-c", script],
            "env": [
                {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": db.password_secret, "key": "password"}}},
                {"name": "PGSSLMODE", "value": "require"},
            ],
            "volumeMounts": [{"name": "data", "mountPath": DATA_MOUNT}],
        }),
        &[],
    )
    .map(Some)
}

/// The containers whose program writes into the image: the entrypoint (and the registration
/// script, as the entrypoint would) writes pgAdmin's `config_distro.py` under `/pgadmin4`, and
/// gunicorn and `dump-servers` write under `/tmp`. Every other container's root is read-only.
const WRITABLE_ROOT: &[&str] = &["pgadmin", "register"];

/// A one-shot Job of `component` running `container` next to the pgAdmin Pod (pgAdmin's data
/// volume is ReadWriteOnce, mounted as `data`, beside `volumes`), as pgAdmin's user, finished as
/// the pgAdmin Pod is (see [`finish_pod`]): the object's `podTemplate` block and the restricted
/// security context.
fn job_beside_pgadmin(
    input: &RenderInput<'_>,
    job_name: &str,
    component: Component,
    container: Value,
    volumes: &[Value],
) -> Result<Job, RenderError> {
    let mut all_volumes =
        vec![json!({"name": "data", "persistentVolumeClaim": {"claimName": input.names.workload}})];
    all_volumes.extend(volumes.iter().cloned());
    let mut job: Job = typed(
        "Job",
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": meta(job_name),
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": pod_template_labels(input.owner, component)},
                    "spec": {
                        "restartPolicy": "Never",
                        "serviceAccountName": input.names.workload,
                        "automountServiceAccountToken": false,
                        "securityContext": {"runAsUser": PGADMIN_UID, "runAsGroup": PGADMIN_UID, "fsGroup": PGADMIN_UID},
                        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": {"matchLabels": child_labels(input.owner, COMPONENT)},
                            "topologyKey": "kubernetes.io/hostname",
                        }]}},
                        "containers": [container],
                        "volumes": all_volumes,
                    },
                },
            },
        }),
    )?;
    if let Some(spec) = job.spec.as_mut() {
        finish_pod(&mut spec.template, input.pod_template, WRITABLE_ROOT);
    }
    Ok(job)
}
