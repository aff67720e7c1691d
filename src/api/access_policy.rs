//! `PgAccessPolicy`: what a PgAccessRequest may ask for, read by the API server itself (the
//! ValidatingAdmissionPolicy `pgtoolbox-access-request-policy` takes it as its `paramKind`).
//! The operator does not reconcile it: it has no status.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{default_one, default_true};

/// A Go duration of hours, minutes and seconds (`8h`, `1h30m`, `90s`): what CEL's `duration()`
/// reads. Bounded so that the sum stays far below what a duration can hold.
pub(crate) const MAX_DURATION_PATTERN: &str = r"^([0-9]{1,6}h)?([0-9]{1,6}m)?([0-9]{1,6}s)?$";

/// The rules of access requests in a namespace. The cluster's default is the one named
/// `default` in the operator's namespace; a namespace a cluster administrator labelled
/// `pgtoolbox.fyannk.dev/access-policy=namespace` follows the one named `default` in it
/// instead (and refuses every request while it has none).
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "pgtoolbox.fyannk.dev",
    version = "v1alpha1",
    kind = "PgAccessPolicy",
    namespaced,
    shortname = "pgap",
    category = "pgtoolbox",
    doc = "The rules the API server holds PgAccessRequests of a namespace to: which ClusterRoles, for how long, with a reason or not, and how many approvers",
    printcolumn(
        name = "Roles",
        type_ = "string",
        json_path = ".spec.allowedClusterRoles"
    ),
    printcolumn(name = "Max", type_ = "string", json_path = ".spec.maxDuration"),
    printcolumn(
        name = "Approvals",
        type_ = "integer",
        json_path = ".spec.approvalsRequired"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PgAccessPolicySpec {
    /// The ClusterRoles a request may name; a request for any other is refused. Empty: no
    /// request is admitted.
    #[schemars(length(max = 64))]
    pub allowed_cluster_roles: Vec<String>,
    /// The longest access a request may ask for, from its creation to its `expiresAt`, as a
    /// duration of hours, minutes and seconds (`8h`, `1h30m`).
    #[schemars(length(min = 2, max = 24), regex(pattern = MAX_DURATION_PATTERN))]
    pub max_duration: String,
    /// Whether a request must say why (a `reason` that is not blank).
    #[serde(default = "default_true")]
    pub reason_required: bool,
    /// How many distinct people (never the subject) must approve a request; a request must
    /// ask for at least this many (`spec.approvalsRequired`).
    #[serde(default = "default_one")]
    #[schemars(range(min = 1, max = 8))]
    pub approvals_required: i32,
}
