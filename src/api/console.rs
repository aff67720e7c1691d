//! `PgToolBoxConsole`: a web console for the Clusters of its namespace.

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, ConsoleExposure, ExposureKind, ExtraMount, KeyRef, NAME_LABEL_MESSAGE,
    NAME_LABEL_RULE, default_one, default_true,
};

#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "pgtoolbox.fyannk.dev",
    version = "v1alpha1",
    kind = "PgToolBoxConsole",
    namespaced,
    status = "PgToolBoxConsoleStatus",
    shortname = "pgtc",
    category = "pgtoolbox",
    doc = "A web console for the CloudNativePG Clusters of its namespace",
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
pub struct PgToolBoxConsoleSpec {
    /// Defaults to the operator's --default-console-image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub image: Option<String>,
    #[serde(default = "default_one")]
    #[schemars(range(min = 0, max = 10))]
    pub replicas: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Selects Clusters of the console's namespace; omitted, all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    /// Bind the ClusterRole pgtoolbox-console-pod-logs.
    #[serde(default = "default_true")]
    pub pod_logs: bool,
    #[serde(default)]
    pub restore_drills: RestoreDrills,
    /// A user ConfigMap holding the instance CA bundle; omitted, the operator mirrors it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "instanceCABundleRef"
    )]
    pub instance_ca_bundle_ref: Option<KeyRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<ConsoleAuthentication>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub extra_secrets: Vec<ExtraMount>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub extra_config_maps: Vec<ExtraMount>,
    #[serde(default)]
    pub exposure: ConsoleExposure,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RestoreDrills {
    /// Bind the ClusterRole pgtoolbox-console-restore-drills.
    #[serde(default)]
    pub enabled: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConsoleAuthentication {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<Oidc>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Oidc {
    #[serde(rename = "issuerURL")]
    #[schemars(length(min = 1, max = 2048), regex(pattern = r"^https://"))]
    pub issuer_url: String,
    #[serde(rename = "clientID")]
    #[schemars(length(min = 1, max = 512))]
    pub client_id: String,
    pub client_secret_ref: KeyRef,
}

/// What the operator observed of the console and its children.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PgToolBoxConsoleStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "instanceCABundle"
    )]
    pub instance_ca_bundle: Option<InstanceCaBundleStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub published_exposure_kinds: Vec<ExposureKind>,
}

/// The mirrored instance CA bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceCaBundleStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
    /// How many Clusters' CAs are in the bundle.
    #[serde(default)]
    pub clusters: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<MissingInstanceCa>,
}

/// A Cluster left out of the bundle, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MissingInstanceCa {
    pub cluster: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// SecretNotFound, SecretKeyMissing, InstanceCAInvalid or InstanceCABundleFull.
    pub reason: String,
}
