//! The custom resources of `pgtoolbox.fyannk.dev/v1alpha1`, one file per kind, and the
//! generator of their CRD manifests (`pgtoolbox-operator crds`).

// kube's repeated printcolumn(name = .., type_ = ..) arguments are not duplicates.
#[allow(clippy::duplicated_attributes)]
mod access_policy;
#[allow(clippy::duplicated_attributes)]
mod access_request;
mod common;
#[allow(clippy::duplicated_attributes)]
mod console;
mod crds;
#[allow(clippy::duplicated_attributes)]
mod evidence_agent;
#[allow(clippy::duplicated_attributes)]
mod pgadmin;
#[allow(clippy::duplicated_attributes)]
mod pgadmin_access;
mod status;

pub use access_policy::{PgAccessPolicy, PgAccessPolicySpec};
pub use access_request::{
    AccessPhase, AccessSubject, Approval, PgAccessRequest, PgAccessRequestSpec,
    PgAccessRequestStatus, SubjectKind,
};
pub use common::{
    CommonStatus, ConsoleExposure, Exposure, ExposureKind, ExposureNetworkPolicy, ExposureTls,
    ExposureType, ExtraMount, GROUP, GatewayExposure, GatewayParentRef, KeyRef, PodTemplate,
    VERSION,
};
pub use console::{
    ConsoleAuthentication, InstanceCaBundleStatus, MissingInstanceCa, Oidc, PgToolBoxConsole,
    PgToolBoxConsoleSpec, PgToolBoxConsoleStatus, RestoreDrills,
};
pub use crds::{CrdError, crd_manifests, render_crds_yaml, rendered_crd_files, write_crd_files};
pub use evidence_agent::{
    CertificateProvider, CertificateStatus, EvidenceAgent, EvidenceAgentSpec, EvidenceAgentStatus,
    LocalClusterRef, ObjectStoreStatus, ServingCertificate,
};
pub use pgadmin::{
    ConfigDatabase, CrossNamespaceClusterRef, Egress, Ldap, LdapCa, OAuth2, PgAdmin,
    PgAdminAuthentication, PgAdminConfig, PgAdminSpec, PgAdminStatus, PgAdminStorage,
    RegistrationStatus, ServerState, ServerStatus, UpgradeBackup,
};
pub use pgadmin_access::{PgAdminAccess, PgAdminAccessSpec, PgAdminAccessStatus, PgAdminRef};
pub use status::{Reported, ReportsConditions};

/// The annotation that pauses reconciliation of an object (value `skip`).
pub const RECONCILE_ANNOTATION: &str = "pgtoolbox.fyannk.dev/reconcile";
/// The annotation naming the target image an upgrade may take without a settings backup.
pub const SKIP_UPGRADE_BACKUP_ANNOTATION: &str = "pgtoolbox.fyannk.dev/skip-upgrade-backup";

/// Whether an object's annotations pause it.
pub fn is_paused(annotations: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    annotations
        .and_then(|a| a.get(RECONCILE_ANNOTATION))
        .is_some_and(|v| v == "skip")
}

#[cfg(test)]
mod tests;
