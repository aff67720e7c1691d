//! `PgAccessRequest`: a time-boxed request for RBAC access to the Clusters of one namespace.
//! A console approves it (writing the status); the operator only ever takes grants away.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::common::{CommonStatus, DNS_SUBDOMAIN};

/// Everything but `expiresAt` is fixed at creation; `expiresAt` may only move earlier.
const IMMUTABLE_RULE: &str = "self.subject == oldSelf.subject \
    && self.clusterRole == oldSelf.clusterRole \
    && has(self.cluster) == has(oldSelf.cluster) \
    && (!has(self.cluster) || self.cluster == oldSelf.cluster) \
    && has(self.reason) == has(oldSelf.reason) \
    && (!has(self.reason) || self.reason == oldSelf.reason) \
    && self.approvalsRequired == oldSelf.approvalsRequired";

/// The latest `expiresAt` admitted: RFC 3339 reaches 9999-12-31T23:59:59Z, the operator's time
/// type stops a little before (and a request it cannot decode could never expire).
const EXPIRES_AT_BOUND: &str = "self.expiresAt < timestamp('9999-01-01T00:00:00Z')";

/// The same bound for the decision times in status (`decidedAt`, each approval's): the operator
/// decodes them with the same time type, and a request it cannot decode is never reconciled.
const DECIDED_AT_BOUND: &str = "self < timestamp('9999-01-01T00:00:00Z')";
const DECIDED_AT_MESSAGE: &str = "must be before 9999-01-01T00:00:00Z: a later time cannot be \
    represented by the operator";

/// The request: who, which ClusterRole, until when and why. Fixed at creation, except that
/// expiresAt may move earlier.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "pgtoolbox.fyannk.dev",
    version = "v1alpha1",
    kind = "PgAccessRequest",
    namespaced,
    status = "PgAccessRequestStatus",
    shortname = "pgar",
    category = "pgtoolbox",
    doc = "A time-boxed request for RBAC access to the CloudNativePG Clusters of a namespace",
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
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Subject", type_ = "string", json_path = ".spec.subject.name"),
    // A date column prints "<invalid>" for a time in the future: show the timestamp itself.
    printcolumn(name = "Expires", type_ = "string", json_path = ".spec.expiresAt"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new(IMMUTABLE_RULE).message("spec is immutable, except that expiresAt may move earlier"),
    validation = Rule::new("self.expiresAt <= oldSelf.expiresAt").message("expiresAt may only move earlier"),
    validation = Rule::new(EXPIRES_AT_BOUND).message("expiresAt must be before 9999-01-01T00:00:00Z: a later time cannot be represented by the operator, so it could never expire"),
)]
pub struct PgAccessRequestSpec {
    /// Who gets the access; an approver may not be the subject (four eyes).
    pub subject: AccessSubject,
    /// The Cluster the access is for (ClusterNotFound while it does not exist); the grant, a
    /// RoleBinding in this namespace, covers every Cluster of the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN))]
    pub cluster: Option<String>,
    /// The ClusterRole the approval binds to the subject in this namespace.
    #[schemars(length(min = 1, max = 253))]
    pub cluster_role: String,
    /// When the access ends (RFC 3339): the request turns Expired and its RoleBinding is
    /// deleted. May only move earlier.
    pub expires_at: Time,
    /// Why the access is needed, for the approver; at most 1024 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
    /// How many distinct people (never the subject) must approve before access is granted; at
    /// least what the namespace's access policy (PgAccessPolicy) requires, which the API server
    /// checks at creation. Fixed at creation.
    #[serde(default = "super::common::default_one")]
    #[schemars(range(min = 1, max = 8))]
    pub approvals_required: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SubjectKind {
    User,
    Group,
    ServiceAccount,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
// `namespace` is a reserved word in CEL: Kubernetes exposes the field as `__namespace__`.
#[x_kube(validation = Rule::new(
    "self.kind == 'ServiceAccount' ? has(self.__namespace__) : !has(self.__namespace__)"
).message("namespace is required for a ServiceAccount subject and allowed for no other"))]
pub struct AccessSubject {
    /// User, Group or ServiceAccount, as in a RoleBinding's subjects.
    pub kind: SubjectKind,
    /// The user, group or ServiceAccount name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The ServiceAccount's namespace: required for a ServiceAccount, refused for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_SUBDOMAIN))]
    pub namespace: Option<String>,
}

impl AccessSubject {
    /// The identity an approver of this subject would have: the user name, or
    /// `system:serviceaccount:<ns>:<name>`. A Group has no single identity.
    pub fn identity(&self) -> Option<String> {
        match (self.kind, &self.namespace) {
            (SubjectKind::User, _) => Some(self.name.clone()),
            (SubjectKind::ServiceAccount, Some(ns)) => {
                Some(format!("system:serviceaccount:{ns}:{}", self.name))
            }
            (SubjectKind::ServiceAccount, None) | (SubjectKind::Group, _) => None,
        }
    }
}

/// The decision on a request. Written by a console; a value this operator does not know
/// stays readable as `Unrecognized` so the reconciler can report it instead of failing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum AccessPhase {
    #[default]
    Pending,
    Approved,
    Denied,
    Revoked,
    Expired,
    Unrecognized(String),
}

impl AccessPhase {
    pub const KNOWN: [&'static str; 5] = ["Pending", "Approved", "Denied", "Revoked", "Expired"];

    pub fn as_str(&self) -> &str {
        match self {
            AccessPhase::Pending => "Pending",
            AccessPhase::Approved => "Approved",
            AccessPhase::Denied => "Denied",
            AccessPhase::Revoked => "Revoked",
            AccessPhase::Expired => "Expired",
            AccessPhase::Unrecognized(other) => other,
        }
    }

    pub fn parse(value: &str) -> AccessPhase {
        match value {
            "Pending" => AccessPhase::Pending,
            "Approved" => AccessPhase::Approved,
            "Denied" => AccessPhase::Denied,
            "Revoked" => AccessPhase::Revoked,
            "Expired" => AccessPhase::Expired,
            other => AccessPhase::Unrecognized(other.to_owned()),
        }
    }

    /// Denied, Revoked and Expired never change again.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AccessPhase::Denied | AccessPhase::Revoked | AccessPhase::Expired
        )
    }
}

impl Serialize for AccessPhase {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AccessPhase {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = String::deserialize(deserializer)?;
        Ok(AccessPhase::parse(&value))
    }
}

impl JsonSchema for AccessPhase {
    fn schema_name() -> Cow<'static, str> {
        "AccessPhase".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // No enum on purpose: a console of another version may record a phase this operator
        // does not know; the API server keeps it and the operator reports it (fail closed)
        // instead of the console's write failing where nobody sees it.
        json_schema!({
            "type": "string",
            "maxLength": 64,
            "description": "Pending, Approved, Denied, Revoked or Expired; any other value is reported as ConfigurationInvalid and nothing stays bound.",
        })
    }
}

/// One approval of a request: who approved and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// Who approved, as the API server authenticated them: a user name or
    /// `system:serviceaccount:<ns>:<name>` (the admission policy refuses any other name).
    #[schemars(length(min = 1, max = 253))]
    pub approver: String,
    /// When they approved.
    #[x_kube(validation = Rule::new(DECIDED_AT_BOUND).message(DECIDED_AT_MESSAGE))]
    pub decided_at: Time,
}

/// What the operator and the console observed and decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct PgAccessRequestStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// The decision, written by the console; Pending until it decides.
    #[serde(default)]
    pub phase: AccessPhase,
    /// Who decided (for an approval, the last approver): a user name or
    /// `system:serviceaccount:<ns>:<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// When the decision was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(DECIDED_AT_BOUND).message(DECIDED_AT_MESSAGE))]
    pub decided_at: Option<Time>,
    /// The approvals so far, one per distinct approver, in order; the request turns Approved
    /// with the one that reaches `spec.approvalsRequired` (its approver is then `approver`).
    /// Only ever appended to, each approver adding their own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub approvals: Vec<Approval>,
    /// The RoleBinding the console created for the approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_binding_name: Option<String>,
}
