//! `EvidenceAgent`: a read-only agent serving backup evidence of one Cluster's object store.

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, DNS_SUBDOMAIN, NAME_LABEL_MESSAGE, NAME_LABEL_RULE, PodTemplate, default_one,
};

/// The agent to run: the Cluster whose backups it reports on (read from the barman-cloud
/// ObjectStore the Cluster's plugin names), its image and size, and who signs its serving
/// certificate.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "pgtoolbox.fyannk.dev",
    version = "v1alpha1",
    kind = "EvidenceAgent",
    namespaced,
    status = "EvidenceAgentStatus",
    shortname = "pgev",
    category = "pgtoolbox",
    doc = "A read-only agent serving the backup evidence of one Cluster over TLS",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].reason"#
    ),
    printcolumn(name = "Cluster", type_ = "string", json_path = ".spec.cluster.name"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    validation = Rule::new(NAME_LABEL_RULE).message(NAME_LABEL_MESSAGE)
)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceAgentSpec {
    /// The CloudNativePG Cluster, in the agent's namespace, whose backups the agent serves.
    pub cluster: LocalClusterRef,
    /// The agent image. Omitted, the operator's --default-evidence-agent-image (neither:
    /// ImageRequired). Must be within the operator's allowed image repositories, when it has
    /// any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub image: Option<String>,
    /// Agent Pods, 0 to 10. Default 1.
    #[serde(default = "default_one")]
    #[schemars(range(min = 0, max = 10))]
    pub replicas: i32,
    /// CPU and memory requests and limits of the agent container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// The TLS certificate the agent serves with (Secret `<name>-evidence-tls`).
    #[serde(default)]
    pub serving_certificate: ServingCertificate,
    /// Who may reach the agent: the peers its NetworkPolicy `<name>-evidence` admits to the
    /// HTTPS port. Omitted: every Pod of the agent's namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<NetworkPolicyPeer>,
    /// Placement, pull secrets, labels and annotations of the agent Pods
    /// (docs/api.md, "Pod template").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
}

/// A CloudNativePG Cluster of the object's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocalClusterRef {
    /// The name of the Cluster.
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub name: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CertificateProvider {
    /// The operator signs the agent's certificate and renews it before expiry.
    #[default]
    Operator,
    /// The OpenShift service CA issues the certificate and injects the CA bundle.
    Openshift,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServingCertificate {
    /// Who issues it: `operator` (the default: the operator's own CA signs it and renews it
    /// before it expires) or `openshift` (the OpenShift service CA issues it and injects its
    /// CA bundle into ConfigMap `<name>-evidence-ca`).
    #[serde(default)]
    pub provider: CertificateProvider,
}

/// What the operator observed of the agent and its children.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceAgentStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// The barman-cloud ObjectStore the agent reads, as the Cluster's plugin names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_store: Option<ObjectStoreStatus>,
    /// The serving certificate, once issued: its Secret and when it expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<CertificateStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStoreStatus {
    /// The ObjectStore's name, in the agent's namespace.
    pub name: String,
    /// Its S3 destination, `s3://<bucket>[/<prefix>]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_path: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateStatus {
    /// The Secret holding the serving certificate.
    pub secret: String,
    /// When the current certificate expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<Time>,
}
