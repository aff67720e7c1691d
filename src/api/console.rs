//! `PgToolBoxConsole`: a web console for the Clusters of its namespace.

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, ConsoleExposure, ExposureKind, ExtraMount, KeyRef, NAME_LABEL_MESSAGE,
    NAME_LABEL_RULE, PodTemplate, default_one, default_true,
};

/// The console to run: its image and size, the Clusters it shows, what its users may do
/// through it, how they sign in and how it is published.
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
    /// The console image. Omitted, the operator's --default-console-image (neither:
    /// ConsoleImageRequired). Must be within the operator's allowed image repositories, when it
    /// has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub image: Option<String>,
    /// Console Pods, 0 to 10. Default 1.
    #[serde(default = "default_one")]
    #[schemars(range(min = 0, max = 10))]
    pub replicas: i32,
    /// CPU and memory requests and limits of the console container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Selects the CloudNativePG Clusters of the console's namespace it shows. Omitted, all of
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    /// Let the console read the Pod logs of the Clusters (binds the ClusterRole
    /// pgtoolbox-console-pod-logs in the namespace). Default true.
    #[serde(default = "default_true")]
    pub pod_logs: bool,
    /// Restore drills from the console.
    #[serde(default)]
    pub restore_drills: RestoreDrills,
    /// A ConfigMap key of the namespace holding the CA bundle the console verifies the
    /// Clusters' TLS with. Omitted, the operator mirrors each selected Cluster's server CA
    /// into ConfigMap `<name>-instance-ca`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "instanceCABundleRef"
    )]
    pub instance_ca_bundle_ref: Option<KeyRef>,
    /// How users sign in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<ConsoleAuthentication>,
    /// Secrets of the namespace mounted into the console container, at most 32; a change of
    /// their content rolls the console.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub extra_secrets: Vec<ExtraMount>,
    /// ConfigMaps of the namespace mounted into the console container, at most 32.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub extra_config_maps: Vec<ExtraMount>,
    /// How the console is published outside the cluster, and who may reach it. Default: its
    /// Service only.
    #[serde(default)]
    pub exposure: ConsoleExposure,
    /// Placement, pull secrets, labels and annotations of the console Pods
    /// (docs/api.md, "Pod template").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RestoreDrills {
    /// Let the console run restore drills (binds the ClusterRole
    /// pgtoolbox-console-restore-drills in the namespace). Default false.
    #[serde(default)]
    pub enabled: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConsoleAuthentication {
    /// Sign in with OpenID Connect: every request the console makes for a user carries that
    /// user's own identity, so Kubernetes RBAC judges the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<Oidc>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Oidc {
    /// The OpenID Connect issuer, an https:// URL.
    #[serde(rename = "issuerURL")]
    #[schemars(length(min = 1, max = 2048), regex(pattern = r"^https://"))]
    pub issuer_url: String,
    /// The client ID registered with the issuer.
    #[serde(rename = "clientID")]
    #[schemars(length(min = 1, max = 512))]
    pub client_id: String,
    /// The Secret key (in the console's namespace) holding the client secret; a change of it
    /// rolls the console.
    pub client_secret_ref: KeyRef,
}

/// What the operator observed of the console and its children.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PgToolBoxConsoleStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// The URL the console is published at, once its exposure is admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The instance CA bundle the operator mirrors (without instanceCABundleRef).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "instanceCABundle"
    )]
    pub instance_ca_bundle: Option<InstanceCaBundleStatus>,
    /// The exposure kinds (Route, Ingress, HTTPRoute) the operator may have published, so one
    /// left behind can be found and removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub published_exposure_kinds: Vec<ExposureKind>,
}

/// The mirrored instance CA bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceCaBundleStatus {
    /// The ConfigMap holding the bundle, `<name>-instance-ca` (key ca.crt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
    /// How many Clusters' CAs are in the bundle.
    #[serde(default)]
    pub clusters: i32,
    /// The selected Clusters whose CA is not in the bundle, and why: the console cannot
    /// verify their TLS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<MissingInstanceCa>,
}

/// A Cluster left out of the bundle, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MissingInstanceCa {
    /// The Cluster.
    pub cluster: String,
    /// The CA Secret the Cluster names, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// SecretNotFound, SecretKeyMissing, InstanceCAInvalid or InstanceCABundleFull.
    pub reason: String,
}
