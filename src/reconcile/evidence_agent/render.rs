//! The children of a valid EvidenceAgent (pure, byte-stable): ServiceAccount, Service,
//! Deployment `<name>-evidence`, and the serving certificate Secret `<name>-evidence-tls`
//! (written by the operator for the `operator` provider; by the service CA for `openshift`,
//! with the CA bundle ConfigMap `<name>-evidence-ca`).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource, KeyToPath,
    PodSpec, PodTemplateSpec, ResourceRequirements, Secret, SecretKeySelector, SecretVolumeSource,
    Service, ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use pgtoolbox_api::evidence as contract;

use super::certificate::{CABUNDLE_KEY, CERTIFICATE_DIGEST_ANNOTATION, certificate_digest};
use super::config::ValidConfig;
use super::pki::{CertAndKey, TLS_CA_KEY, TLS_CERT_KEY, TLS_KEY_KEY};
use crate::api::{CertificateProvider, PodTemplate};
use crate::reconcile::children::{Component, child_labels, child_name, pod_template_labels};
use crate::reconcile::workload::{
    SecretDigest, dns_egress_rule, finish_pod, readiness_probe, stamp_workload_hash,
};

/// The Service annotation that makes the OpenShift service CA issue a serving certificate.
pub const SERVING_CERT_ANNOTATION: &str = "service.beta.openshift.io/serving-cert-secret-name";
/// The ConfigMap annotation that makes the OpenShift service CA inject its bundle.
pub const INJECT_CABUNDLE_ANNOTATION: &str = "service.beta.openshift.io/inject-cabundle";
/// The port the agent serves TLS on.
pub const AGENT_PORT: i32 = contract::PORT as i32;

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

/// The port of the store's endpoint (`endpointURL`'s, else HTTPS's 443).
fn store_port(endpoint: Option<&str>) -> i32 {
    let Some(url) = endpoint else {
        return 443;
    };
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    // An IPv6 literal keeps its colons inside brackets.
    let after_host = host_port
        .rsplit_once(']')
        .map_or(host_port, |(_, rest)| rest);
    after_host
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or(if scheme.eq_ignore_ascii_case("http") {
            80
        } else {
            443
        })
}

/// The agent's NetworkPolicy `<name>-evidence`: in, only `clients` (omitted: the namespace's
/// Pods) on the HTTPS port; out, only DNS and the store's port. A policy cannot name a host
/// outside the cluster, so the store is confined by its port, to any address.
pub fn network_policy(input: &RenderInput<'_>, clients: &[NetworkPolicyPeer]) -> NetworkPolicy {
    let names = ChildNames::of(input.agent);
    let from = if clients.is_empty() {
        vec![NetworkPolicyPeer {
            pod_selector: Some(LabelSelector::default()),
            ..NetworkPolicyPeer::default()
        }]
    } else {
        clients.to_vec()
    };
    let tcp = |port: i32| NetworkPolicyPort {
        protocol: Some("TCP".into()),
        port: Some(IntOrString::Int(port)),
        ..NetworkPolicyPort::default()
    };
    let store = store_port(input.config.store.endpoint_url.as_deref());
    NetworkPolicy {
        metadata: meta(&names.workload, input.agent),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(child_labels(input.agent, COMPONENT)),
                ..LabelSelector::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(from),
                ports: Some(vec![tcp(AGENT_PORT)]),
            }]),
            egress: Some(vec![
                dns_egress_rule(),
                NetworkPolicyEgressRule {
                    to: None,
                    ports: Some(vec![tcp(store)]),
                },
            ]),
        }),
    }
}

pub fn deployment(input: &RenderInput<'_>) -> Deployment {
    let names = ChildNames::of(input.agent);
    let store = &input.config.store;
    let mut env = vec![
        plain_env(contract::ENV_DESTINATION_PATH, &store.destination_path),
        plain_env(contract::ENV_SERVER_NAME, &input.config.server_name),
        plain_env(contract::ENV_OBJECT_STORE, &store.name),
        plain_env(contract::ENV_TLS_DIR, contract::TLS_DIR),
        secret_env(contract::ENV_ACCESS_KEY_ID, &store.access_key_id),
        secret_env(contract::ENV_SECRET_ACCESS_KEY, &store.secret_access_key),
    ];
    if let Some(endpoint) = &store.endpoint_url {
        env.push(plain_env(contract::ENV_ENDPOINT_URL, endpoint));
    }
    if let Some(region) = &store.region {
        env.push(secret_env(contract::ENV_REGION, region));
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
        mount_path: contract::TLS_DIR.into(),
        read_only: Some(true),
        ..VolumeMount::default()
    }];
    if input.provider == CertificateProvider::Operator {
        // The operator's CA travels in the certificate Secret.
        env.push(plain_env(
            contract::ENV_CA_FILE,
            &format!("{}/{TLS_CA_KEY}", contract::TLS_DIR),
        ));
    }
    if input.provider == CertificateProvider::Openshift {
        env.push(plain_env(
            contract::ENV_CA_FILE,
            &format!("{}/{CABUNDLE_KEY}", contract::SERVICE_CA_DIR),
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
            mount_path: contract::SERVICE_CA_DIR.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    if let Some((secret, key)) = &store.endpoint_ca {
        // The one key of the endpoint CA Secret, under the file name the agent reads.
        env.push(plain_env(
            contract::ENV_ENDPOINT_CA_FILE,
            &format!(
                "{}/{}",
                contract::ENDPOINT_CA_DIR,
                contract::ENDPOINT_CA_FILE
            ),
        ));
        volumes.push(Volume {
            name: "endpoint-ca".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.clone()),
                default_mode: Some(DEFAULT_MODE),
                items: Some(vec![KeyToPath {
                    key: key.clone(),
                    path: contract::ENDPOINT_CA_FILE.into(),
                    ..KeyToPath::default()
                }]),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        });
        mounts.push(VolumeMount {
            name: "endpoint-ca".into(),
            mount_path: contract::ENDPOINT_CA_DIR.into(),
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
                readiness_probe: Some(readiness_probe(contract::PATH_READYZ, "https", "HTTPS")),
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
