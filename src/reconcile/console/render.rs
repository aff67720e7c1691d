//! The children of a console (pure, byte-stable: the same input renders the same JSON):
//! ServiceAccount and Deployment/Service `<name>-console`, one RoleBinding per bound ClusterRole,
//! the ingress NetworkPolicy `<name>-ingress`, the mirrored CA bundle `<name>-instance-ca`.
//! The exposure object is `reconcile::exposure`'s.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource, PodSpec,
    PodTemplateSpec, ResourceRequirements, SecretKeySelector, SecretVolumeSource, Service,
    ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use pgtoolbox_api::console as contract;
use sha2::{Digest, Sha256};

use super::ca_bundle::CA_KEY;
use super::cidr::Cidr;
use super::names::{ChildNames, RoleGrant};
use super::peers::NodeCidrs;
use crate::api::PgToolBoxConsoleSpec;
use crate::reconcile::children::{Component, child_labels, pod_template_labels};
use crate::reconcile::evidence_agent::pull_policy;
use crate::reconcile::exposure::BackendPort;
use crate::reconcile::workload::{SecretDigest, finish_pod, readiness_probe, stamp_workload_hash};

const COMPONENT: Component = Component::Console;
/// The console's HTTP port (Service, exposure, NetworkPolicy).
pub const CONSOLE_PORT: BackendPort<'static> = BackendPort {
    name: "http",
    number: 8080,
};
/// The peers a console Pod trusts with `X-Forwarded-For`: the digest of the ingress policy's
/// `from` it was granted for. On the pod template (so on its Pods) only while granted.
pub const TRUST_ANNOTATION: &str = "pgtoolbox.fyannk.dev/forwarded-for-trust";
/// The same digest on the NetworkPolicy: which `from` it renders.
pub const PEERS_ANNOTATION: &str = "pgtoolbox.fyannk.dev/ingress-peers";
/// The environment variable the console reads: `true` only while granted.
pub const TRUST_ENV: &str = pgtoolbox_api::console::TRUST_X_FORWARDED_FOR;
/// The CIDRs of the trusted peers, rendered only with the grant.
pub const TRUSTED_PROXIES_ENV: &str = pgtoolbox_api::console::TRUSTED_PROXIES;
/// The OpenShift routers' namespaces carry this label (value `ingress`).
pub const POLICY_GROUP_LABEL: &str = "network.openshift.io/policy-group";

/// The API server's default mode of a Secret or ConfigMap volume (0644).
const DEFAULT_MODE: i32 = 420;
const INSTANCE_CA_DIR: &str = "/etc/pgtoolbox/instance-ca";

/// What the children are rendered from.
#[derive(Clone, Debug)]
pub struct RenderInput<'a> {
    pub console: &'a str,
    pub namespace: &'a str,
    pub spec: &'a PgToolBoxConsoleSpec,
    pub image: &'a str,
    /// The trust grant: the peers digest the Pods may trust, `None` for no trust.
    pub grant: Option<&'a str>,
    /// With the grant: the CIDRs of those peers ([`trusted_proxies`]), rendered as
    /// `CONSOLE_TRUSTED_PROXIES`.
    pub trusted_proxies: &'a [String],
    /// Digests of the Secrets the Pods consume: a changed one rolls the workload.
    pub secrets: &'a [SecretDigest],
}

fn meta(name: &str, console: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(child_labels(console, COMPONENT)),
        ..ObjectMeta::default()
    }
}

pub fn service_account(input: &RenderInput<'_>) -> ServiceAccount {
    let names = ChildNames::of(input.console);
    ServiceAccount {
        metadata: meta(&names.workload, input.console),
        ..ServiceAccount::default()
    }
}

pub fn role_binding(input: &RenderInput<'_>, grant: &RoleGrant) -> RoleBinding {
    let names = ChildNames::of(input.console);
    RoleBinding {
        metadata: meta(&grant.binding, input.console),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: grant.cluster_role.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: names.workload,
            namespace: Some(input.namespace.to_owned()),
            api_group: None,
        }]),
    }
}

pub fn service(input: &RenderInput<'_>) -> Service {
    let names = ChildNames::of(input.console);
    Service {
        metadata: meta(&names.workload, input.console),
        spec: Some(ServiceSpec {
            selector: Some(child_labels(input.console, COMPONENT)),
            ports: Some(vec![ServicePort {
                name: Some(CONSOLE_PORT.name.into()),
                port: CONSOLE_PORT.number,
                target_port: Some(IntOrString::String(CONSOLE_PORT.name.into())),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The mirrored bundle (only when `instanceCABundleRef` is omitted).
pub fn instance_ca(input: &RenderInput<'_>, bundle: &str) -> ConfigMap {
    let names = ChildNames::of(input.console);
    ConfigMap {
        metadata: meta(&names.instance_ca, input.console),
        data: Some(BTreeMap::from([(CA_KEY.to_owned(), bundle.to_owned())])),
        ..ConfigMap::default()
    }
}

/// The peers the ingress policy admits: `from` as given, or for a Route without it the
/// OpenShift router namespaces. `None`: no policy (turned off, clusterIP, or an Ingress or
/// Gateway without `from`, whose controller's Pods the operator cannot name).
pub fn policy_peers(spec: &PgToolBoxConsoleSpec) -> Option<Vec<NetworkPolicyPeer>> {
    use crate::api::ExposureType;
    let policy = &spec.exposure.network_policy;
    if !policy.enabled || spec.exposure.type_ == ExposureType::ClusterIp {
        return None;
    }
    if !policy.from.is_empty() {
        return Some(policy.from.clone());
    }
    (spec.exposure.type_ == ExposureType::Route).then(|| {
        vec![NetworkPolicyPeer {
            namespace_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    POLICY_GROUP_LABEL.to_owned(),
                    "ingress".to_owned(),
                )])),
                ..LabelSelector::default()
            }),
            ..NetworkPolicyPeer::default()
        }]
    })
}

/// The addresses the peers of a granted ingress policy connect from: what the console
/// believes `X-Forwarded-For` from (`CONSOLE_TRUSTED_PROXIES`). An ipBlock peer is its `cidr`
/// (its `except` ranges are not admitted, so they never reach the port). A namespace or Pod
/// selector admits Pods whose addresses come and go: it stands for the Pod network, the
/// Nodes' `spec.podCIDRs`; the policy, verified confined, lets no other Pod of that network
/// reach the port. Traffic from the Nodes themselves (host-network Pods, the kubelet) is not
/// in it: it is not confined by NetworkPolicy. With the Pod network unknown a selector peer
/// adds nothing, so its `X-Forwarded-For` is believed from no one. Sorted, each block once.
pub fn trusted_proxies(peers: &[NetworkPolicyPeer], nodes: &NodeCidrs) -> Vec<String> {
    let mut blocks: Vec<Cidr> = Vec::new();
    for peer in peers {
        match &peer.ip_block {
            Some(block) => blocks.extend(Cidr::parse(&block.cidr)),
            None => {
                if let NodeCidrs::Known(nodes) = nodes {
                    blocks.extend(nodes.iter().flat_map(|(_, cidrs)| cidrs.iter().copied()));
                }
            }
        }
    }
    let mut text: Vec<String> = blocks.iter().map(Cidr::to_string).collect();
    text.sort();
    text.dedup();
    text
}

/// The digest of a peer list (16 hex characters).
pub fn peers_digest(peers: &[NetworkPolicyPeer]) -> String {
    let json = serde_json::to_vec(peers).unwrap_or_default();
    hex::encode(&Sha256::digest(&json)[..8])
}

pub fn network_policy(input: &RenderInput<'_>, peers: &[NetworkPolicyPeer]) -> NetworkPolicy {
    let names = ChildNames::of(input.console);
    let mut metadata = meta(&names.network_policy, input.console);
    metadata.annotations = Some(BTreeMap::from([(
        PEERS_ANNOTATION.to_owned(),
        peers_digest(peers),
    )]));
    NetworkPolicy {
        metadata,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(child_labels(input.console, COMPONENT)),
                ..LabelSelector::default()
            }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(peers.to_vec()),
                ports: Some(vec![NetworkPolicyPort {
                    port: Some(IntOrString::Int(CONSOLE_PORT.number)),
                    protocol: Some("TCP".into()),
                    end_port: None,
                }]),
            }]),
            egress: None,
        }),
    }
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        ..EnvVar::default()
    }
}

fn mount(name: String, path: &str) -> VolumeMount {
    VolumeMount {
        name,
        mount_path: path.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}

pub fn deployment(input: &RenderInput<'_>, resources: Option<&ResourceRequirements>) -> Deployment {
    let names = ChildNames::of(input.console);
    let spec = input.spec;
    let (ca_map, ca_key) = match &spec.instance_ca_bundle_ref {
        Some(r) => (r.name.clone(), r.key.clone()),
        None => (names.instance_ca.clone(), CA_KEY.to_owned()),
    };
    let selector = spec
        .cluster_selector
        .as_ref()
        .and_then(|s| serde_json::to_string(s).ok())
        .unwrap_or_default();
    let mut envs = vec![
        env(contract::NAMESPACE, input.namespace),
        env(contract::CLUSTER_SELECTOR, &selector),
        env(
            contract::INSTANCE_CA_FILE,
            &format!("{INSTANCE_CA_DIR}/{ca_key}"),
        ),
        env(contract::POD_LOGS, &spec.pod_logs.to_string()),
        env(
            contract::RESTORE_DRILLS,
            &spec.restore_drills.enabled.to_string(),
        ),
        env(contract::LISTEN_PORT, &CONSOLE_PORT.number.to_string()),
        env(TRUST_ENV, &input.grant.is_some().to_string()),
        env(contract::NAME, input.console),
    ];
    if input.grant.is_some() && !input.trusted_proxies.is_empty() {
        envs.push(env(TRUSTED_PROXIES_ENV, &input.trusted_proxies.join(",")));
    }
    if let Some(oidc) = spec.authentication.as_ref().and_then(|a| a.oidc.as_ref()) {
        envs.push(env(contract::OIDC_ISSUER_URL, &oidc.issuer_url));
        envs.push(env(contract::OIDC_CLIENT_ID, &oidc.client_id));
        envs.push(EnvVar {
            name: contract::OIDC_CLIENT_SECRET.into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: oidc.client_secret_ref.name.clone(),
                    key: oidc.client_secret_ref.key.clone(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        });
    }
    let mut volumes = vec![Volume {
        name: "instance-ca".into(),
        config_map: Some(ConfigMapVolumeSource {
            name: ca_map,
            default_mode: Some(DEFAULT_MODE),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }];
    let mut mounts = vec![mount("instance-ca".into(), INSTANCE_CA_DIR)];
    for (i, extra) in spec.extra_secrets.iter().enumerate() {
        let name = format!("secret-{i}");
        volumes.push(Volume {
            name: name.clone(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(extra.name.clone()),
                default_mode: Some(DEFAULT_MODE),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        });
        mounts.push(mount(name, &extra.mount_path));
    }
    for (i, extra) in spec.extra_config_maps.iter().enumerate() {
        let name = format!("configmap-{i}");
        volumes.push(Volume {
            name: name.clone(),
            config_map: Some(ConfigMapVolumeSource {
                name: extra.name.clone(),
                default_mode: Some(DEFAULT_MODE),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        });
        mounts.push(mount(name, &extra.mount_path));
    }
    let annotations = input
        .grant
        .map(|g| BTreeMap::from([(TRUST_ANNOTATION.to_owned(), g.to_owned())]));
    let mut template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_template_labels(input.console, COMPONENT)),
            annotations,
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            service_account_name: Some(names.workload.clone()),
            containers: vec![Container {
                name: "console".into(),
                image: Some(input.image.to_owned()),
                image_pull_policy: Some(pull_policy(input.image).to_owned()),
                termination_message_path: Some("/dev/termination-log".into()),
                termination_message_policy: Some("File".into()),
                ports: Some(vec![ContainerPort {
                    name: Some(CONSOLE_PORT.name.into()),
                    container_port: CONSOLE_PORT.number,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                }]),
                env: Some(envs),
                readiness_probe: Some(readiness_probe(
                    contract::READYZ_PATH,
                    CONSOLE_PORT.name,
                    "HTTP",
                )),
                volume_mounts: Some(mounts),
                resources: Some(resources.cloned().unwrap_or_default()),
                ..Container::default()
            }],
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
    };
    finish_pod(&mut template, spec.pod_template.as_ref(), &[]);
    stamp_workload_hash(&mut template, input.secrets);
    Deployment {
        metadata: meta(&names.workload, input.console),
        spec: DeploymentSpec {
            replicas: Some(spec.replicas),
            selector: LabelSelector {
                match_labels: Some(child_labels(input.console, COMPONENT)),
                ..LabelSelector::default()
            },
            template,
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}
