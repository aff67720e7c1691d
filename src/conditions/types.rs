//! Condition types and statuses: the other half of the frozen status vocabulary.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::fmt;

/// Every condition type the operator writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConditionType {
    Ready,
    Progressing,
    Stalled,
    ConfigurationValid,
    WorkloadReady,
    ExposureReady,
    ServersSynced,
    ServingCertificateReady,
    RoleBindingSynced,
    PgAdminEgressConfined,
    InstanceCABundleComplete,
    ExposureConfined,
}

impl ConditionType {
    pub const ALL: &'static [ConditionType] = &[
        ConditionType::Ready,
        ConditionType::Progressing,
        ConditionType::Stalled,
        ConditionType::ConfigurationValid,
        ConditionType::WorkloadReady,
        ConditionType::ExposureReady,
        ConditionType::ServersSynced,
        ConditionType::ServingCertificateReady,
        ConditionType::RoleBindingSynced,
        ConditionType::PgAdminEgressConfined,
        ConditionType::InstanceCABundleComplete,
        ConditionType::ExposureConfined,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Progressing => "Progressing",
            ConditionType::Stalled => "Stalled",
            ConditionType::ConfigurationValid => "ConfigurationValid",
            ConditionType::WorkloadReady => "WorkloadReady",
            ConditionType::ExposureReady => "ExposureReady",
            ConditionType::ServersSynced => "ServersSynced",
            ConditionType::ServingCertificateReady => "ServingCertificateReady",
            ConditionType::RoleBindingSynced => "RoleBindingSynced",
            ConditionType::PgAdminEgressConfined => "PgAdminEgressConfined",
            ConditionType::InstanceCABundleComplete => "InstanceCABundleComplete",
            ConditionType::ExposureConfined => "ExposureConfined",
        }
    }

    pub fn parse(name: &str) -> Option<ConditionType> {
        Self::ALL.iter().copied().find(|t| t.as_str() == name)
    }
}

impl fmt::Display for ConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `metav1.Condition.status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }

    /// Anything but `True`/`False` reads as `Unknown`, as kubectl does.
    pub fn parse(value: &str) -> ConditionStatus {
        match value {
            "True" => ConditionStatus::True,
            "False" => ConditionStatus::False,
            _ => ConditionStatus::Unknown,
        }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Finds a condition by type.
pub fn find_condition(conditions: &[Condition], type_: ConditionType) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == type_.as_str())
}
