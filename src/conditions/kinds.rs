//! Per-kind tables: the ordered aspects of Ready, the advisory conditions, the quiet
//! reasons and which `False` reasons are stalls.

use std::time::Duration;

use super::event::EventType;
use super::fields::StatusField;
use super::reasons::{Owner, Reason, access_request, common, console, evidence_agent, pgadmin};
use super::types::{ConditionStatus, ConditionType};
use super::verdict::Subject;
use crate::messages::TimerPurpose;

/// How long a stall on an input the operator cannot watch (a ClusterRole, a user's ConfigMap)
/// waits before it is looked at again. Defined here once; the runtime's timer purposes follow.
pub const STALL_RECHECK: Duration = Duration::from_secs(120);

/// The same for an ingress NetworkPolicy the API server refused: the refusal may come from an
/// admission policy the operator does not watch either.
pub const STALL_RECHECK_LONG: Duration = Duration::from_secs(300);

/// The timer purpose of a stall recheck delay.
pub(crate) fn recheck_purpose(delay: Duration) -> TimerPurpose {
    if delay >= STALL_RECHECK_LONG {
        TimerPurpose::Recheck5m
    } else {
        TimerPurpose::Recheck2m
    }
}

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

    /// The Kubernetes kind name (the CRD's `kind`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::PgAdmin => "PgAdmin",
            Kind::EvidenceAgent => "EvidenceAgent",
            Kind::PgToolBoxConsole => "PgToolBoxConsole",
            Kind::PgAccessRequest => "PgAccessRequest",
        }
    }

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

    /// The status fields the kind writes besides conditions and observedGeneration.
    pub const fn status_fields(self) -> &'static [StatusField] {
        use StatusField as F;
        match self {
            Kind::PgAdmin => &[
                F::Url,
                F::Image,
                F::Servers,
                F::Registration,
                F::PublishedExposureKinds,
            ],
            Kind::EvidenceAgent => &[F::ObjectStore, F::Certificate],
            Kind::PgToolBoxConsole => &[F::Url, F::InstanceCaBundle, F::PublishedExposureKinds],
            Kind::PgAccessRequest => &[F::Phase],
        }
    }

    /// The kind's own Events (beside the transition Events the engine decides), each with
    /// its type.
    pub const fn events(self) -> &'static [(Reason, EventType)] {
        use EventType::{Normal, Warning};
        match self {
            Kind::PgAdmin => &[
                (pgadmin::ROLLOUT_STARTED, Normal),
                (pgadmin::REGISTRATION_STARTED, Normal),
                (pgadmin::SERVERS_REGISTERED, Normal),
                (pgadmin::UPGRADE_BACKUP_COMPLETED, Normal),
                (pgadmin::UPGRADE_BACKUP_SKIPPED, Warning),
            ],
            Kind::EvidenceAgent => &[(evidence_agent::CERTIFICATE_ISSUED, Normal)],
            Kind::PgToolBoxConsole => &[],
            Kind::PgAccessRequest => &[
                (access_request::ROLE_BINDING_DELETED, Normal),
                (access_request::ACCESS_EXPIRED, Normal),
                (access_request::SELF_APPROVAL_REFUSED, Warning),
            ],
        }
    }

    /// The type of one of the kind's own Events, `None` for a reason that is not one.
    pub fn event_type(self, reason: Reason) -> Option<EventType> {
        self.events()
            .iter()
            .find(|(r, _)| *r == reason)
            .map(|(_, t)| *t)
    }

    /// Whether some of the kind's stalls depend on what a verdict is about ([`Subject`]).
    pub const fn has_subjects(self) -> bool {
        matches!(self, Kind::PgAdmin)
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
                Some(STALL_RECHECK)
            }
            Kind::PgToolBoxConsole if reason == console::EXPOSURE_POLICY_INVALID => {
                Some(STALL_RECHECK_LONG)
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
            Kind::EvidenceAgent => &[evidence_agent::SERVICE_CA_PENDING],
            Kind::PgToolBoxConsole | Kind::PgAccessRequest => &[],
        };
        shared.contains(&reason) || own.contains(&reason)
    }

    /// Whether an aspect result, by the kind's rules, means the object cannot make progress
    /// without a change of input. Nothing else decides it: a PgAccessRequest never stalls,
    /// every `ConfigurationValid=False` of a console or an agent does, and a PgAdmin's reasons
    /// that stall only for one [`Subject`] need the verdict to say it is about that.
    pub fn stalls_on(
        self,
        aspect: ConditionType,
        status: ConditionStatus,
        reason: Reason,
        subject: Option<Subject>,
    ) -> bool {
        if status != ConditionStatus::False {
            return false;
        }
        match (self, aspect) {
            (Kind::PgAdmin, C::ConfigurationValid) => {
                let always = [
                    common::IMAGE_NOT_ALLOWED,
                    common::HOSTNAME_NOT_ALLOWED,
                    common::RESOURCE_NOT_OWNED,
                    pgadmin::DATABASE_API_UNAVAILABLE,
                    pgadmin::PASSWORD_GENERATION_UNAVAILABLE,
                ];
                let about_settings_database = [
                    common::CONFIGURATION_INVALID,
                    pgadmin::DATABASE_ROLE_API_UNAVAILABLE,
                ];
                always.contains(&reason)
                    || (reason == common::SECRET_NOT_FOUND
                        && subject == Some(Subject::SignInSecret))
                    || (about_settings_database.contains(&reason)
                        && subject == Some(Subject::SettingsDatabase))
            }
            (Kind::PgAdmin, C::WorkloadReady) => reason == pgadmin::UPGRADE_BACKUP_FAILED,
            (Kind::EvidenceAgent | Kind::PgToolBoxConsole, C::ConfigurationValid) => true,
            _ => false,
        }
    }
}
