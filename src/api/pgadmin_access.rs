//! `PgAdminAccess`: lives in a Cluster's namespace and grants one PgAdmin of another
//! namespace access to named Clusters. It has no controller: PgAdmin actors read it.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{CommonStatus, DNS_SUBDOMAIN};

/// The grant: which PgAdmin, and which Clusters of this namespace it may register.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "pgtoolbox.fyannk.dev",
    version = "v1alpha1",
    kind = "PgAdminAccess",
    plural = "pgadminaccesses",
    namespaced,
    status = "PgAdminAccessStatus",
    shortname = "pgaa",
    category = "pgtoolbox",
    doc = "Grants a PgAdmin of another namespace access to named Clusters of this one",
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
    printcolumn(name = "PgAdmin", type_ = "string", json_path = ".spec.pgAdmin.name"),
    printcolumn(name = "From", type_ = "string", json_path = ".spec.pgAdmin.namespace"),
    printcolumn(name = "Clusters", type_ = "string", json_path = ".spec.clusters"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PgAdminAccessSpec {
    /// The PgAdmin granted access; it names these Clusters in its crossNamespaceClusterRefs.
    pub pg_admin: PgAdminRef,
    /// The Clusters of this namespace the PgAdmin may register, at most 64 names.
    #[schemars(length(max = 64), inner(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN)))]
    pub clusters: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PgAdminRef {
    /// The PgAdmin's namespace.
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_SUBDOMAIN))]
    pub namespace: String,
    /// The PgAdmin's name.
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub name: String,
}

/// Standard status; no controller writes conditions for this kind today.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PgAdminAccessStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
}
