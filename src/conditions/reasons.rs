//! The reason registry: every reason the operator may write, registered once, by owner.
//!
//! A [`Reason`] can only be built inside this module, so code elsewhere can only use the
//! registered constants (`reasons::common::AS_EXPECTED`, `reasons::pgadmin::TOO_MANY_SERVERS`, ...).
//! Reasons are frozen public API: extend the registry, never rename (the golden file
//! `tests/golden/reasons` holds the set).

use std::fmt;

/// Which part of the product a reason belongs to. `Common` reasons are shared by every kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    Common,
    PgAdmin,
    EvidenceAgent,
    Console,
    PgAccessRequest,
}

impl Owner {
    /// The owner's name as written in the golden file and the docs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Owner::Common => "common",
            Owner::PgAdmin => "pgadmin",
            Owner::EvidenceAgent => "evidenceagent",
            Owner::Console => "console",
            Owner::PgAccessRequest => "pgaccessrequest",
        }
    }
}

/// A registered condition or Event reason. Only the constants below exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reason {
    owner: Owner,
    name: &'static str,
}

impl Reason {
    /// Private on purpose: the registry is the only place a reason comes into being.
    const fn registered(owner: Owner, name: &'static str) -> Self {
        Reason { owner, name }
    }

    pub const fn as_str(self) -> &'static str {
        self.name
    }

    pub const fn owner(self) -> Owner {
        self.owner
    }

    /// Looks a reason up by its wire name (e.g. one read back from a stored condition).
    pub fn parse(name: &str) -> Option<Reason> {
        ALL.iter().copied().find(|r| r.name == name)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl AsRef<str> for Reason {
    fn as_ref(&self) -> &str {
        self.name
    }
}

/// Declares the constants of each owner and the full list `ALL` from one table, so a
/// constant cannot exist without being registered.
macro_rules! registry {
    ($( $module:ident => $owner:expr, { $( $constant:ident = $name:literal ),* $(,)? } )*) => {
        $(
            pub mod $module {
                use super::{Owner, Reason};
                $( pub const $constant: Reason = Reason::registered($owner, $name); )*
            }
        )*
        /// Every registered reason, grouped by owner.
        pub const ALL: &[Reason] = &[ $( $( $module::$constant, )* )* ];
    };
}

registry! {
    common => Owner::Common, {
        AS_EXPECTED = "AsExpected",
        INITIALIZING = "Initializing",
        RECONCILING = "Reconciling",
        RECONCILE_ERROR = "ReconcileError",
        RECONCILIATION_PAUSED = "ReconciliationPaused",
        CONFIGURATION_INVALID = "ConfigurationInvalid",
        RESOURCE_NOT_OWNED = "ResourceNotOwned",
        SECRET_NOT_FOUND = "SecretNotFound",
        SECRET_KEY_MISSING = "SecretKeyMissing",
        CONFIG_MAP_NOT_FOUND = "ConfigMapNotFound",
        CLUSTER_NOT_FOUND = "ClusterNotFound",
        ROLLOUT_IN_PROGRESS = "RolloutInProgress",
        ROLLOUT_STUCK = "RolloutStuck",
        POD_UNSCHEDULABLE = "PodUnschedulable",
        IMAGE_PULL_FAILED = "ImagePullFailed",
        CRASH_LOOP_BACK_OFF = "CrashLoopBackOff",
        REPLICA_FAILURE = "ReplicaFailure",
        POD_NOT_READY = "PodNotReady",
        SCALED_TO_ZERO = "ScaledToZero",
        NOT_REQUESTED = "NotRequested",
        NOT_ADMITTED = "NotAdmitted",
        NOT_ACCEPTED = "NotAccepted",
        GATEWAY_NOT_FOUND = "GatewayNotFound",
        HOSTNAME_CONFLICT = "HostnameConflict",
        ROUTE_API_UNAVAILABLE = "RouteAPIUnavailable",
        GATEWAY_API_UNAVAILABLE = "GatewayAPIUnavailable",
        IMAGE_NOT_ALLOWED = "ImageNotAllowed",
        HOSTNAME_NOT_ALLOWED = "HostnameNotAllowed",
        RECONCILIATION_FAILED = "ReconciliationFailed",
        QUOTA_EXCEEDED = "QuotaExceeded",
        ADMISSION_DENIED = "AdmissionDenied",
        NAMESPACE_NOT_WATCHED = "NamespaceNotWatched",
    }
    pgadmin => Owner::PgAdmin, {
        NO_CLUSTER_SELECTED = "NoClusterSelected",
        POOLER_NOT_FOUND = "PoolerNotFound",
        TOO_MANY_SERVERS = "TooManyServers",
        PGADMIN_NOT_RUNNING = "PgAdminNotRunning",
        REGISTRATION_RUNNING = "RegistrationRunning",
        REGISTRATION_FAILED = "RegistrationFailed",
        REGISTRATION_STARTED = "RegistrationStarted",
        SERVERS_REGISTERED = "ServersRegistered",
        UPGRADE_BACKUP_RUNNING = "UpgradeBackupRunning",
        UPGRADE_BACKUP_FAILED = "UpgradeBackupFailed",
        UPGRADE_BACKUP_COMPLETED = "UpgradeBackupCompleted",
        UPGRADE_BACKUP_SKIPPED = "UpgradeBackupSkipped",
        ROLLOUT_STARTED = "RolloutStarted",
        PGADMIN_EGRESS_OPEN = "PgAdminEgressOpen",
        DATABASE_ROLE_API_UNAVAILABLE = "DatabaseRoleAPIUnavailable",
        POOLER_API_UNAVAILABLE = "PoolerAPIUnavailable",
        GRANT_MISSING = "GrantMissing",
        CONFIG_DATABASE_NOT_READY = "ConfigDatabaseNotReady",
        PASSWORD_GENERATION_UNAVAILABLE = "PasswordGenerationUnavailable",
        DATABASE_API_UNAVAILABLE = "DatabaseAPIUnavailable",
    }
    evidenceagent => Owner::EvidenceAgent, {
        BARMAN_PLUGIN_NOT_CONFIGURED = "BarmanPluginNotConfigured",
        OBJECT_STORE_NOT_FOUND = "ObjectStoreNotFound",
        OBJECT_STORE_API_UNAVAILABLE = "ObjectStoreAPIUnavailable",
        UNSUPPORTED_OBJECT_STORE = "UnsupportedObjectStore",
        DESTINATION_INVALID = "DestinationInvalid",
        REGION_REQUIRED = "RegionRequired",
        IMAGE_REQUIRED = "ImageRequired",
        SERVICE_CA_PENDING = "ServiceCAPending",
        CERTIFICATE_ISSUED = "CertificateIssued",
    }
    console => Owner::Console, {
        CONSOLE_IMAGE_REQUIRED = "ConsoleImageRequired",
        CONSOLE_ROLE_MISSING = "ConsoleRoleMissing",
        INSTANCE_CA_MISSING = "InstanceCAMissing",
        INSTANCE_CA_INVALID = "InstanceCAInvalid",
        INSTANCE_CA_BUNDLE_FULL = "InstanceCABundleFull",
        EXPOSURE_OPEN = "ExposureOpen",
        EXPOSURE_PEERS_BROAD = "ExposurePeersBroad",
        EXPOSURE_POLICY_INVALID = "ExposurePolicyInvalid",
        EXPOSURE_POLICY_BYPASSED = "ExposurePolicyBypassed",
        EXPOSURE_TRUST_UNVERIFIED = "ExposureTrustUnverified",
        EXPOSURE_POLICY_KEPT = "ExposurePolicyKept",
    }
    pgaccessrequest => Owner::PgAccessRequest, {
        AWAITING_DECISION = "AwaitingDecision",
        ACCESS_GRANTED = "AccessGranted",
        ACCESS_DENIED = "AccessDenied",
        ACCESS_EXPIRED = "AccessExpired",
        ACCESS_REVOKED = "AccessRevoked",
        ROLE_BINDING_MISSING = "RoleBindingMissing",
        ROLE_BINDING_DRIFTED = "RoleBindingDrifted",
        ROLE_BINDING_ORPHANED = "RoleBindingOrphaned",
        SELF_APPROVAL_REFUSED = "SelfApprovalRefused",
        ROLE_BINDING_DELETED = "RoleBindingDeleted",
    }
}

/// The golden-file form of the registry: `owner reason` per line, sorted.
pub fn golden_listing() -> String {
    let mut lines: Vec<String> = ALL
        .iter()
        .map(|r| format!("{} {}", r.owner().as_str(), r.as_str()))
        .collect();
    lines.sort();
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_reason_is_registered_once() {
        let mut seen = HashSet::new();
        for reason in ALL {
            assert!(seen.insert(reason.as_str()), "{reason} registered twice");
        }
    }

    #[test]
    fn parse_round_trips_every_reason() {
        for reason in ALL {
            assert_eq!(Reason::parse(reason.as_str()), Some(*reason));
        }
        assert_eq!(Reason::parse("Waiting"), None);
    }

    #[test]
    fn registry_matches_the_golden_file() {
        let golden = include_str!("../../tests/golden/reasons");
        assert_eq!(
            golden_listing(),
            golden,
            "the reason registry changed: extending it means updating tests/golden/reasons \
             deliberately; renaming a reason is never allowed"
        );
    }
}

#[cfg(test)]
mod docs_tests {
    use super::ALL;
    use crate::conditions::ConditionType;

    #[test]
    fn every_reason_and_type_is_described_in_the_docs() {
        let docs = include_str!("../../docs/conditions.md");
        for reason in ALL {
            let row = format!("| `{reason}` |");
            assert!(
                docs.contains(&row),
                "docs/conditions.md has no row for {reason}"
            );
        }
        for type_ in ConditionType::ALL {
            let row = format!("| `{type_}` |");
            assert!(
                docs.contains(&row),
                "docs/conditions.md has no row for {type_}"
            );
        }
    }
}
