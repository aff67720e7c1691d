//! The children of a valid EvidenceAgent (pure, byte-stable): ServiceAccount, Service,
//! Deployment `<name>-evidence`, and the serving certificate Secret `<name>-evidence-tls`
//! (written by the operator for the `operator` provider; by the service CA for `openshift`,
//! with the CA bundle ConfigMap `<name>-evidence-ca`).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource, PodSpec,
    PodTemplateSpec, ResourceRequirements, Secret, SecretKeySelector, SecretVolumeSource, Service,
    ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::certificate::{CERTIFICATE_DIGEST_ANNOTATION, certificate_digest};
use super::config::ValidConfig;
use super::pki::{CertAndKey, TLS_CA_KEY, TLS_CERT_KEY, TLS_KEY_KEY};
use crate::api::{CertificateProvider, PodTemplate};
use crate::reconcile::children::{Component, child_labels, child_name, pod_template_labels};
use crate::reconcile::workload::{SecretDigest, finish_pod, stamp_workload_hash};

/// The Service annotation that makes the OpenShift service CA issue a serving certificate.
pub const SERVING_CERT_ANNOTATION: &str = "service.beta.openshift.io/serving-cert-secret-name";
/// The ConfigMap annotation that makes the OpenShift service CA inject its bundle.
pub const INJECT_CABUNDLE_ANNOTATION: &str = "service.beta.openshift.io/inject-cabundle";
/// The key the service CA injects its bundle under.
pub const CABUNDLE_KEY: &str = "service-ca.crt";
/// The port the agent serves TLS on.
pub const AGENT_PORT: i32 = 8443;

const COMPONENT: Component = Component::EvidenceAgent;

/// The API server's default mode of a projected Secret or ConfigMap volume (0644).
const DEFAULT_MODE: i32 = 420;

/// The pull policy the API server defaults (list items compare whole, so the rendered
/// container states it): `Always` for `:latest` or no tag, else `IfNotPresent`.
pub fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// Names of an agent's children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildNames {
    /// ServiceAccount, Service and Deployment.
    pub workload: String,
    pub tls_secret: String,
    pub ca_config_map: String,
}

impl ChildNames {
    pub fn of(agent: &str) -> Self {
        Self {
            workload: child_name(agent, "evidence"),
            tls_secret: child_name(agent, "evidence-tls"),
            ca_config_map: child_name(agent, "evidence-ca"),
        }
    }
}

/// What the children are rendered from besides the valid configuration.
#[derive(Clone, Debug)]
pub struct RenderInput<'a> {
    pub agent: &'a str,
    pub replicas: i32,
    pub resources: Option<&'a ResourceRequirements>,
    pub provider: CertificateProvider,
    pub config: &'a ValidConfig,
    /// The Secrets the Pods consume (the credentials, the serving certificate): a new version
    /// of any of them is a new workload hash, hence a rollout.
    pub secrets: &'a [SecretDigest],
    /// The object's `podTemplate` block (placement, pull secrets, Pod metadata).
    pub pod_template: Option<&'a PodTemplate>,
}

fn meta(name: &str, agent: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(child_labels(agent, COMPONENT)),
        ..ObjectMeta::default()
    }
}

pub fn service_account(input: &RenderInput<'_>) -> ServiceAccount {
    let names = ChildNames::of(input.agent);
    ServiceAccount {
        metadata: meta(&names.workload, input.agent),
        automount_service_account_token: Some(false),
        ..ServiceAccount::default()
    }
}

pub fn service(input: &RenderInput<'_>) -> Service {
    let names = ChildNames::of(input.agent);
    let mut metadata = meta(&names.workload, input.agent);
    if input.provider == CertificateProvider::Openshift {
        metadata.annotations = Some(BTreeMap::from([(
            SERVING_CERT_ANNOTATION.to_owned(),
            names.tls_secret.clone(),
        )]));
    }
    Service {
        metadata,
        spec: Some(ServiceSpec {
            selector: Some(child_labels(input.agent, COMPONENT)),
            ports: Some(vec![ServicePort {
                name: Some("https".into()),
                port: 443,
                target_port: Some(IntOrString::String("https".into())),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The serving certificate Secret of the `operator` provider: the certificate, its key and the
/// CA that signed it, with the digest of the certificate the operator wrote.
pub fn serving_secret(agent: &str, issued: &CertAndKey, ca_pem: &str) -> Secret {
    let names = ChildNames::of(agent);
    let mut metadata = meta(&names.tls_secret, agent);
    metadata.annotations = Some(BTreeMap::from([(
        CERTIFICATE_DIGEST_ANNOTATION.to_owned(),
        certificate_digest(&issued.cert_pem),
    )]));
    let bytes = |text: &str| ByteString(text.as_bytes().to_vec());
    Secret {
        metadata,
        type_: Some("kubernetes.io/tls".into()),
        data: Some(BTreeMap::from([
            (TLS_CA_KEY.to_owned(), bytes(ca_pem)),
            (TLS_CERT_KEY.to_owned(), bytes(&issued.cert_pem)),
            (TLS_KEY_KEY.to_owned(), bytes(&issued.key_pem)),
        ])),
        ..Secret::default()
    }
}

/// The CA bundle ConfigMap the service CA fills (`openshift` provider only).
pub fn ca_config_map(input: &RenderInput<'_>) -> Option<ConfigMap> {
    (input.provider == CertificateProvider::Openshift).then(|| {
        let names = ChildNames::of(input.agent);
        let mut metadata = meta(&names.ca_config_map, input.agent);
        metadata.annotations = Some(BTreeMap::from([(
            INJECT_CABUNDLE_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]));
        ConfigMap {
            metadata,
            ..ConfigMap::default()
        }
    })
}

fn secret_env(name: &str, (secret, key): &(String, String)) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.clone(),
                key: key.clone(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

fn plain_env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        ..EnvVar::default()
    }
}

pub fn deployment(input: &RenderInput<'_>) -> Deployment {
    let names = ChildNames::of(input.agent);
    let store = &input.config.store;
    let mut env = vec![
        plain_env("EVIDENCE_DESTINATION_PATH", &store.destination_path),
        plain_env("EVIDENCE_OBJECT_STORE", &store.name),
        plain_env("EVIDENCE_TLS_DIR", "/etc/evidence/tls"),
        secret_env("AWS_ACCESS_KEY_ID", &store.access_key_id),
        secret_env("AWS_SECRET_ACCESS_KEY", &store.secret_access_key),
    ];
    if let Some(endpoint) = &store.endpoint_url {
        env.push(plain_env("EVIDENCE_ENDPOINT_URL", endpoint));
    }
    if let Some(region) = &store.region {
        env.push(secret_env("AWS_REGION", region));
    }
    let mut volumes = vec![Volume {
        name: "tls".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(names.tls_secret.clone()),
            default_mode: Some(DEFAULT_MODE),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }];
    let mut mounts = vec![VolumeMount {
        name: "tls".into(),
        mount_path: "/etc/evidence/tls".into(),
        read_only: Some(true),
        ..VolumeMount::default()
    }];
    if input.provider == CertificateProvider::Operator {
        // The operator's CA travels in the certificate Secret.
        env.push(plain_env(
            "EVIDENCE_CA_FILE",
            &format!("/etc/evidence/tls/{TLS_CA_KEY}"),
        ));
    }
    if input.provider == CertificateProvider::Openshift {
        env.push(plain_env(
            "EVIDENCE_CA_FILE",
            "/etc/evidence/ca/service-ca.crt",
        ));
        volumes.push(Volume {
            name: "ca".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: names.ca_config_map.clone(),
                default_mode: Some(DEFAULT_MODE),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        });
        mounts.push(VolumeMount {
            name: "ca".into(),
            mount_path: "/etc/evidence/ca".into(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    let mut template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_template_labels(input.agent, COMPONENT)),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            service_account_name: Some(names.workload.clone()),
            automount_service_account_token: Some(false),
            containers: vec![Container {
                name: "agent".into(),
                image: Some(input.config.image.clone()),
                image_pull_policy: Some(pull_policy(&input.config.image).to_owned()),
                termination_message_path: Some("/dev/termination-log".into()),
                termination_message_policy: Some("File".into()),
                ports: Some(vec![ContainerPort {
                    name: Some("https".into()),
                    container_port: AGENT_PORT,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                }]),
                env: Some(env),
                volume_mounts: Some(mounts),
                resources: Some(input.resources.cloned().unwrap_or_default()),
                ..Container::default()
            }],
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
    };
    finish_pod(&mut template, input.pod_template, &[]);
    stamp_workload_hash(&mut template, input.secrets);
    Deployment {
        metadata: meta(&names.workload, input.agent),
        spec: DeploymentSpec {
            replicas: Some(input.replicas),
            selector: LabelSelector {
                match_labels: Some(child_labels(input.agent, COMPONENT)),
                ..LabelSelector::default()
            },
            template,
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}
