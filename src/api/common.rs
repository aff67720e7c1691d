//! Field types shared by several kinds.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, LocalObjectReference, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of every kind.
pub const GROUP: &str = "pgtoolbox.fyannk.dev";
/// The served and stored version.
pub const VERSION: &str = "v1alpha1";

/// DNS-1123 subdomain, as Kubernetes names and hostnames are.
pub(crate) const DNS_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// Kinds whose children (a Service first of all) are named after them accept only names that
/// can head a DNS-1035 label: a dotted or digit-first name would be accepted, then fail at its
/// first Service. Long names are fine: child names are shortened (`reconcile::children::naming`).
pub(crate) const NAME_LABEL_RULE: &str =
    "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')";
pub(crate) const NAME_LABEL_MESSAGE: &str = "metadata.name must start with a lower-case letter \
    and hold only lower-case letters, digits and '-' (no '.'), since the Services of this kind \
    are named after it";

pub(crate) fn default_true() -> bool {
    true
}

pub(crate) fn default_one() -> i32 {
    1
}

/// A key of a Secret or ConfigMap in the object's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeyRef {
    /// The name of the Secret or ConfigMap.
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub name: String,
    /// The key within it.
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[-._a-zA-Z0-9]+$"))]
    pub key: String,
}

/// A Secret or ConfigMap mounted into a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtraMount {
    /// The name of the Secret or ConfigMap, in the object's namespace.
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub name: String,
    /// Where it is mounted in the container (read-only), an absolute path.
    #[schemars(length(min = 2, max = 4096), regex(pattern = r"^/"))]
    pub mount_path: String,
}

/// How the web UI is published.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ExposureType {
    /// Only the in-cluster Service; nothing is published.
    #[default]
    #[serde(rename = "clusterIP")]
    ClusterIp,
    /// An OpenShift Route.
    #[serde(rename = "route")]
    Route,
    /// A networking.k8s.io Ingress.
    #[serde(rename = "ingress")]
    Ingress,
    /// A Gateway API HTTPRoute.
    #[serde(rename = "gateway")]
    Gateway,
}

/// The kinds of exposure object the operator may have published.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ExposureKind {
    Route,
    Ingress,
    #[serde(rename = "HTTPRoute")]
    HttpRoute,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposureTls {
    /// The Secret holding the certificate; omitted, the platform's default certificate is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub secret_name: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayParentRef {
    /// The name of the Gateway.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The Gateway's namespace. Omitted, the object's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
    /// The listener of the Gateway to attach to. Omitted, any listener that accepts the route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub section_name: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayExposure {
    /// The Gateway the HTTPRoute attaches to.
    pub parent_ref: GatewayParentRef,
}

const HOSTNAME_RULE: &str = "self.type == 'clusterIP' || has(self.hostname)";
const HOSTNAME_MESSAGE: &str = "hostname is required unless the exposure type is clusterIP";
const GATEWAY_RULE: &str = "self.type != 'gateway' || has(self.gateway)";
const GATEWAY_MESSAGE: &str = "gateway.parentRef is required for the exposure type gateway";

/// How a PgAdmin is published.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new(HOSTNAME_RULE).message(HOSTNAME_MESSAGE),
    validation = Rule::new(GATEWAY_RULE).message(GATEWAY_MESSAGE),
)]
pub struct Exposure {
    #[doc = "How the UI is published: `clusterIP` (its Service only, the default), `route` (an OpenShift Route), `ingress` (an Ingress) or `gateway` (a Gateway API HTTPRoute)."]
    #[serde(default, rename = "type")]
    pub type_: ExposureType,
    #[doc = "The host name users reach the UI at; required unless the type is clusterIP. Must end with one of the operator's allowed host suffixes, when it has any (else the exposure is withdrawn: HostnameNotAllowed)."]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub hostname: Option<String>,
    /// HTTPS on the Route or Ingress (a Route redirects HTTP to it); with a Gateway its listener
    /// terminates TLS and this only makes status.url https. Omitted, plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ExposureTls>,
    /// The IngressClass of the Ingress (type ingress). Omitted, the cluster's default class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub ingress_class_name: Option<String>,
    /// The Gateway to attach to; required for the type gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayExposure>,
}

/// The console's ingress NetworkPolicy, rendered while an exposure is published.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposureNetworkPolicy {
    /// Render the policy while the console is published. Default true; false renders none
    /// (ExposureOpen), and the console then trusts no X-Forwarded-For header.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// The router, ingress controller or gateway Pods allowed to reach the console port.
    /// Omitted: for a Route, the OpenShift router namespaces; for an Ingress or a Gateway no
    /// policy is rendered (ExposureOpen), since the operator cannot name their Pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<NetworkPolicyPeer>,
}

impl Default for ExposureNetworkPolicy {
    fn default() -> Self {
        ExposureNetworkPolicy {
            enabled: true,
            from: Vec::new(),
        }
    }
}

/// How a PgToolBoxConsole is published: as for a PgAdmin, plus its ingress NetworkPolicy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new(HOSTNAME_RULE).message(HOSTNAME_MESSAGE),
    validation = Rule::new(GATEWAY_RULE).message(GATEWAY_MESSAGE),
)]
pub struct ConsoleExposure {
    #[doc = "How the UI is published: `clusterIP` (its Service only, the default), `route` (an OpenShift Route), `ingress` (an Ingress) or `gateway` (a Gateway API HTTPRoute)."]
    #[serde(default, rename = "type")]
    pub type_: ExposureType,
    #[doc = "The host name users reach the UI at; required unless the type is clusterIP. Must end with one of the operator's allowed host suffixes, when it has any (else the exposure is withdrawn: HostnameNotAllowed)."]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub hostname: Option<String>,
    /// HTTPS on the Route or Ingress (a Route redirects HTTP to it); with a Gateway its listener
    /// terminates TLS and this only makes status.url https. Omitted, plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ExposureTls>,
    /// The IngressClass of the Ingress (type ingress). Omitted, the cluster's default class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub ingress_class_name: Option<String>,
    /// The Gateway to attach to; required for the type gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayExposure>,
    /// The console's ingress NetworkPolicy `<name>-ingress`, while it is published.
    #[serde(default)]
    pub network_policy: ExposureNetworkPolicy,
}

/// Where and how the Pods of a workload run, the same block on every kind that runs Pods:
/// placement, pull secrets and extra metadata, put on every Pod and Job Pod the kind renders.
/// A change rolls the workload once (it is part of the workload hash).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplate {
    /// Node labels a Node must carry for the Pods to be scheduled on it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Taints of Nodes the Pods tolerate (e.g. the taint of dedicated database nodes), added to
    /// the ones the API server adds itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub tolerations: Vec<Toleration>,
    /// Node affinity, Pod affinity and anti-affinity of the Pods. A Job that must run beside
    /// the workload's Pod (pgAdmin's registration and backup Jobs share its volume) keeps that
    /// Pod affinity term in addition to these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// How the Pods spread over zones or nodes. A constraint without a labelSelector selects the
    /// Pods of the same workload (its `app.kubernetes.io/instance` and `component` labels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// The PriorityClass of the Pods. Omitted, the cluster's default priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub priority_class_name: Option<String>,
    /// Secrets of the object's namespace holding registry credentials the kubelet pulls the
    /// images with (a private registry).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Labels added to the Pods. The operator's own labels (`app.kubernetes.io/*` it sets) win
    /// over a label of the same key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations added to the Pods. The operator's own annotations (the workload hash
    /// `pgtoolbox.fyannk.dev/workload-hash` among them) win over one of the same key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

// The status fields every kind has (flattened into each kind's status).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommonStatus {
    /// The metadata.generation the conditions were derived from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The object's state, at most 16 standard conditions, one per type: Ready sums up the
    /// others, Stalled says whether only a change can help; `kubectl pgtoolbox explain`
    /// says what a reason means.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 16),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"])
    )]
    pub conditions: Vec<Condition>,
}
