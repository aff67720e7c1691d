//! Per-kind tables: the ordered aspects of Ready, the advisory conditions, the quiet
//! reasons and which `False` reasons are stalls.

use std::time::Duration;

use super::reasons::{Owner, Reason, common, console, evidenceagent, pgadmin};
use super::types::{ConditionStatus, ConditionType};

/// The kinds that report conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    PgAdmin,
    EvidenceAgent,
    PgToolBoxConsole,
    PgAccessRequest,
}

use ConditionType as C;

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::PgAdmin,
        Kind::EvidenceAgent,
        Kind::PgToolBoxConsole,
        Kind::PgAccessRequest,
    ];

    /// The conditions Ready is derived from, in the order that decides which one Ready copies.
    pub const fn aspects(self) -> &'static [ConditionType] {
        match self {
            Kind::PgAdmin => &[
                C::ConfigurationValid,
                C::WorkloadReady,
                C::ExposureReady,
                C::ServersSynced,
            ],
            Kind::EvidenceAgent => &[
                C::ConfigurationValid,
                C::ServingCertificateReady,
                C::WorkloadReady,
            ],
            Kind::PgToolBoxConsole => &[C::ConfigurationValid, C::WorkloadReady, C::ExposureReady],
            Kind::PgAccessRequest => &[C::ConfigurationValid, C::RoleBindingSynced],
        }
    }

    /// Conditions reported for information only; they never enter Ready.
    pub const fn advisories(self) -> &'static [ConditionType] {
        match self {
            Kind::PgAdmin => &[C::PgAdminEgressConfined],
            Kind::PgToolBoxConsole => &[C::InstanceCABundleComplete, C::ExposureConfined],
            Kind::EvidenceAgent | Kind::PgAccessRequest => &[],
        }
    }

    /// Every condition type this kind writes, in the order they are listed in status.
    pub fn condition_types(self) -> Vec<ConditionType> {
        let mut all = vec![C::Ready, C::Progressing, C::Stalled];
        all.extend_from_slice(self.aspects());
        all.extend_from_slice(self.advisories());
        all
    }

    /// The owner of the reasons specific to this kind.
    pub const fn owner(self) -> Owner {
        match self {
            Kind::PgAdmin => Owner::PgAdmin,
            Kind::EvidenceAgent => Owner::EvidenceAgent,
            Kind::PgToolBoxConsole => Owner::Console,
            Kind::PgAccessRequest => Owner::PgAccessRequest,
        }
    }

    /// A kind writes common reasons and its own, never another kind's.
    pub fn may_use(self, reason: Reason) -> bool {
        reason.owner() == Owner::Common || reason.owner() == self.owner()
    }

    /// A stall whose input is not (fully) watched is looked at again after this long; every
    /// other stall waits for a watched change.
    pub fn stall_recheck(self, reason: Reason) -> Option<Duration> {
        match self {
            Kind::PgToolBoxConsole
                if reason == console::CONSOLE_ROLE_MISSING
                    || reason == common::CONFIG_MAP_NOT_FOUND =>
            {
                Some(Duration::from_secs(120))
            }
            Kind::PgToolBoxConsole if reason == console::EXPOSURE_POLICY_INVALID => {
                Some(Duration::from_secs(300))
            }
            _ => None,
        }
    }

    /// Reasons of a child on its way: an aspect turning False with one of them is no Event.
    pub fn is_quiet(self, reason: Reason) -> bool {
        let shared = [common::ROLLOUT_IN_PROGRESS, common::POD_NOT_READY];
        let own: &[Reason] = match self {
            Kind::PgAdmin => &[
                pgadmin::UPGRADE_BACKUP_RUNNING,
                pgadmin::CONFIG_DATABASE_NOT_READY,
            ],
            Kind::EvidenceAgent => &[evidenceagent::SERVICE_CA_PENDING],
            Kind::PgToolBoxConsole | Kind::PgAccessRequest => &[],
        };
        shared.contains(&reason) || own.contains(&reason)
    }

    /// Whether an aspect result, by the kind's rules, means the object cannot make progress
    /// without a change of input. A verdict can override this (see `Verdict::stalling`).
    pub fn stalls_on(self, aspect: ConditionType, status: ConditionStatus, reason: Reason) -> bool {
        if status != ConditionStatus::False {
            return false;
        }
        match (self, aspect) {
            (Kind::PgAdmin, C::ConfigurationValid) => [
                common::IMAGE_NOT_ALLOWED,
                common::HOSTNAME_NOT_ALLOWED,
                common::RESOURCE_NOT_OWNED,
                common::SECRET_NOT_FOUND,
                pgadmin::DATABASE_API_UNAVAILABLE,
                pgadmin::DATABASE_ROLE_API_UNAVAILABLE,
                pgadmin::PASSWORD_GENERATION_UNAVAILABLE,
            ]
            .contains(&reason),
            (Kind::PgAdmin, C::WorkloadReady) => reason == pgadmin::UPGRADE_BACKUP_FAILED,
            (Kind::EvidenceAgent | Kind::PgToolBoxConsole, C::ConfigurationValid) => true,
            _ => false,
        }
    }
}
