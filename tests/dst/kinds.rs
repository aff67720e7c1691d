//! The kinds a schedule drives, as the spec names them: their API paths, their children's
//! component label, and the aspects of their `Ready`, in order (the seed's "Aspects of Ready").

use serde_json::{Value, json};

pub const GROUP: &str = "pgtoolbox.fyannk.dev";

/// A workload kind of the operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    Console,
    PgAdmin,
    Agent,
}

impl Workload {
    pub const ALL: [Workload; 3] = [Self::Console, Self::PgAdmin, Self::Agent];

    pub fn kind(self) -> &'static str {
        match self {
            Self::Console => "PgToolBoxConsole",
            Self::PgAdmin => "PgAdmin",
            Self::Agent => "EvidenceAgent",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Self::Console => "pgtoolboxconsoles",
            Self::PgAdmin => "pgadmins",
            Self::Agent => "evidenceagents",
        }
    }

    /// The name of workload `n`: `k0`, `p1`, `e0`...
    pub fn name(self, n: usize) -> String {
        let prefix = match self {
            Self::Console => 'k',
            Self::PgAdmin => 'p',
            Self::Agent => 'e',
        };
        format!("{prefix}{n}")
    }

    pub fn of_kind(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.kind() == kind)
    }
}

/// Every kind of the operator, by its `kind`.
pub const OUR_KINDS: [&str; 4] = [
    "PgAccessRequest",
    "PgToolBoxConsole",
    "PgAdmin",
    "EvidenceAgent",
];

/// The aspects of `Ready`, in the order the spec gives for each kind.
pub fn aspects(kind: &str) -> &'static [&'static str] {
    match kind {
        "PgAccessRequest" => &["ConfigurationValid", "RoleBindingSynced"],
        "PgAdmin" => &[
            "ConfigurationValid",
            "WorkloadReady",
            "ExposureReady",
            "ServersSynced",
        ],
        "EvidenceAgent" => &[
            "ConfigurationValid",
            "ServingCertificateReady",
            "WorkloadReady",
        ],
        "PgToolBoxConsole" => &["ConfigurationValid", "WorkloadReady", "ExposureReady"],
        _ => &[],
    }
}

/// How a console or a PgAdmin is published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposure {
    ClusterIp,
    Ingress,
    Route,
}

impl Exposure {
    pub const ALL: [Exposure; 3] = [Self::ClusterIp, Self::Ingress, Self::Route];

    pub fn spec(self, host: &str) -> Value {
        match self {
            Self::ClusterIp => json!({"type": "clusterIP"}),
            Self::Ingress => json!({"type": "ingress", "hostname": host}),
            Self::Route => json!({"type": "route", "hostname": host}),
        }
    }

    pub fn of_spec(spec: &Value) -> Self {
        match spec["exposure"]["type"].as_str() {
            Some("ingress") => Self::Ingress,
            Some("route") => Self::Route,
            _ => Self::ClusterIp,
        }
    }
}
