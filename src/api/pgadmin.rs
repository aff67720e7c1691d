//! `PgAdmin`: a pgAdmin 4 with the CloudNativePG Clusters registered as its servers.

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::api::networking::v1::NetworkPolicyEgressRule;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, DNS_SUBDOMAIN, Exposure, ExposureKind, KeyRef, NAME_LABEL_MESSAGE,
    NAME_LABEL_RULE, default_true,
};

/// pgAdmin runs as one process, so there is no replicas field (the Deployment uses Recreate).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "pgtoolbox.fyannk.dev",
    version = "v1alpha1",
    kind = "PgAdmin",
    namespaced,
    status = "PgAdminStatus",
    shortname = "pga",
    category = "pgtoolbox",
    doc = "A pgAdmin 4 for CloudNativePG Clusters, with their servers registered",
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
    printcolumn(name = "URL", type_ = "string", json_path = ".status.url"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    validation = Rule::new(NAME_LABEL_RULE).message(NAME_LABEL_MESSAGE)
)]
#[serde(rename_all = "camelCase")]
pub struct PgAdminSpec {
    /// Defaults to the operator's --default-pgadmin-image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(default)]
    pub storage: PgAdminStorage,
    /// Selects Clusters of the PgAdmin's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    /// Clusters of other namespaces; each needs a PgAdminAccess there granting this PgAdmin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cross_namespace_cluster_refs: Vec<CrossNamespaceClusterRef>,
    /// Per registered Cluster: `rw`, `ro`, `r` or `pooler:<name>`.
    #[serde(default = "default_endpoints")]
    #[schemars(
        length(min = 1, max = 8),
        inner(regex(pattern = r"^(rw|ro|r|pooler:[a-z0-9]([-a-z0-9]*[a-z0-9])?)$"))
    )]
    pub endpoints: Vec<String>,
    /// Offer the CloudNativePG DatabaseRoles of registered Clusters as server rows.
    #[serde(default = "default_true")]
    pub offer_database_roles: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PgAdminAuthentication>,
    /// Keep pgAdmin's settings in a CloudNativePG Database instead of its volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_database: Option<ConfigDatabase>,
    #[serde(default)]
    pub upgrade_backup: UpgradeBackup,
    #[serde(default)]
    pub exposure: Exposure,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Egress>,
}

fn default_endpoints() -> Vec<String> {
    vec!["rw".to_owned()]
}

fn default_storage_size() -> Quantity {
    Quantity("1Gi".to_owned())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PgAdminStorage {
    /// Size of pgAdmin's data volume.
    #[serde(default = "default_storage_size")]
    pub size: Quantity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub storage_class_name: Option<String>,
}

impl Default for PgAdminStorage {
    fn default() -> Self {
        PgAdminStorage {
            size: default_storage_size(),
            storage_class_name: None,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CrossNamespaceClusterRef {
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_SUBDOMAIN))]
    pub namespace: String,
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub name: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PgAdminAuthentication {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2: Option<OAuth2>,
}

/// An OAuth2 proxy sidecar in front of pgAdmin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2 {
    #[serde(rename = "issuerURL")]
    #[schemars(length(min = 1, max = 2048), regex(pattern = r"^https://"))]
    pub issuer_url: String,
    #[serde(rename = "clientID")]
    #[schemars(length(min = 1, max = 512))]
    pub client_id: String,
    pub client_secret_ref: KeyRef,
    /// Defaults to the operator's --default-oauth2-proxy-image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub proxy_image: Option<String>,
}

fn default_pgadmin_name() -> String {
    "pgadmin".to_owned()
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigDatabase {
    /// A Cluster of the PgAdmin's namespace.
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub cluster: String,
    #[serde(default = "default_pgadmin_name")]
    #[schemars(length(min = 1, max = 63))]
    pub database: String,
    #[serde(default = "default_pgadmin_name")]
    #[schemars(length(min = 1, max = 63))]
    pub role: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UpgradeBackup {
    /// With configDatabase: back the settings up before an image change.
    #[serde(default = "default_true")]
    pub enabled: bool,
}

impl Default for UpgradeBackup {
    fn default() -> Self {
        UpgradeBackup { enabled: true }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Egress {
    /// Added to the generated egress NetworkPolicy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_rules: Vec<NetworkPolicyEgressRule>,
}

/// What the operator observed of the PgAdmin and its children.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PgAdminStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The image running now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration: Option<RegistrationStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub published_exposure_kinds: Vec<ExposureKind>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ServerState {
    Offered,
    NotOffered,
}

/// One server row: a registered Cluster's endpoint (and role), offered or not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServerStatus {
    pub cluster: String,
    pub namespace: String,
    pub endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub state: ServerState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationStatus {
    /// Hash of the offered set the registration Job was made for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}
