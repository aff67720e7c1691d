//! The evidence agent's contract: what the operator renders for `pgtoolbox-evidence-agent`,
//! what it reads, and the evidence it serves.
//!
//! The operator's renderer (`src/reconcile/evidenceagent/render.rs`) and the program
//! (`evidence-agent/`) both take every name below from here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `s3://<bucket>[/<prefix>]`: the ObjectStore's `destinationPath`.
pub const ENV_DESTINATION_PATH: &str = "EVIDENCE_DESTINATION_PATH";
/// The barman server name whose layout is read (`<destinationPath>/<serverName>/...`): the
/// plugin's `serverName` parameter, else the Cluster's name.
pub const ENV_SERVER_NAME: &str = "EVIDENCE_SERVER_NAME";
/// The ObjectStore's name (shown, never used to read).
pub const ENV_OBJECT_STORE: &str = "EVIDENCE_OBJECT_STORE";
/// The ObjectStore's `endpointURL`; absent: AWS S3 of the region.
pub const ENV_ENDPOINT_URL: &str = "EVIDENCE_ENDPOINT_URL";
/// The file holding the CA bundle that signs the store's endpoint (the ObjectStore's
/// `endpointCA`); absent: the system's roots.
pub const ENV_ENDPOINT_CA_FILE: &str = "EVIDENCE_ENDPOINT_CA_FILE";
/// The S3 credentials and region, under the names every S3 tool reads.
pub const ENV_ACCESS_KEY_ID: &str = "AWS_ACCESS_KEY_ID";
pub const ENV_SECRET_ACCESS_KEY: &str = "AWS_SECRET_ACCESS_KEY";
pub const ENV_REGION: &str = "AWS_REGION";
/// The directory of the serving certificate ([`TLS_CERT_FILE`], [`TLS_KEY_FILE`]).
pub const ENV_TLS_DIR: &str = "EVIDENCE_TLS_DIR";
/// The CA bundle clients verify the agent's certificate with (published by the operator).
pub const ENV_CA_FILE: &str = "EVIDENCE_CA_FILE";
/// The address to listen on (default `0.0.0.0:<PORT>`); not rendered, for running by hand.
pub const ENV_LISTEN: &str = "EVIDENCE_LISTEN";
/// Seconds between two catalog reads (default [`DEFAULT_REFRESH_SECONDS`]).
pub const ENV_REFRESH_SECONDS: &str = "EVIDENCE_REFRESH_SECONDS";

pub const DEFAULT_REFRESH_SECONDS: u64 = 60;

/// Where the serving certificate Secret is mounted.
pub const TLS_DIR: &str = "/etc/evidence/tls";
pub const TLS_CERT_FILE: &str = "tls.crt";
pub const TLS_KEY_FILE: &str = "tls.key";
pub const TLS_CA_FILE: &str = "ca.crt";
/// Where the OpenShift service CA bundle ConfigMap is mounted.
pub const SERVICE_CA_DIR: &str = "/etc/evidence/ca";
/// Where the endpoint CA (one key of the ObjectStore's `endpointCA` Secret) is mounted, and
/// the file name it is projected to.
pub const ENDPOINT_CA_DIR: &str = "/etc/evidence/endpoint-ca";
pub const ENDPOINT_CA_FILE: &str = "ca.crt";

/// The HTTPS port.
pub const PORT: u16 = 8443;

/// The routes.
pub const PATH_EVIDENCE: &str = "/v1/evidence";
pub const PATH_PAGE: &str = "/";
pub const PATH_HEALTHZ: &str = "/healthz";
pub const PATH_READYZ: &str = "/readyz";
pub const PATH_METRICS: &str = "/metrics";

/// `GET /v1/evidence`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// `s3://<bucket>[/<prefix>]` as rendered.
    pub destination_path: String,
    pub server_name: String,
    /// The ObjectStore's name, as rendered.
    pub object_store: Option<String>,
    pub read: ReadInfo,
    /// Every base backup, ordered by backup id, each with barman's own field names and values
    /// (as `barman-cloud-backup-list --format json` gives them).
    pub backups: Vec<BackupFields>,
    /// Backup directories whose `backup.info` could not be read or parsed.
    pub unreadable_backups: Vec<String>,
    /// The WAL archive, one entry per timeline, in timeline order.
    pub wal: Vec<TimelineArchive>,
    /// `<timeline>.history` files, as archived.
    pub history_files: Vec<String>,
    pub recovery_window: Option<RecoveryWindow>,
    /// The backup id of the newest backup with status `DONE`.
    pub last_successful_backup: Option<String>,
    /// The backup id of the newest backup with status `FAILED`.
    pub last_failed_backup: Option<String>,
}

/// One base backup: barman's field names to their values (`None`: JSON `null`).
pub type BackupFields = BTreeMap<String, Option<BarmanValue>>;

/// A value of a `backup.info` field as barman's JSON has it: a number for its integer
/// fields, the JSON of the Python literal for the fields barman evaluates as literals
/// (`tablespaces`, `included_files`, `copy_stats`, `snapshots_info`), else a string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BarmanValue {
    Integer(i64),
    Text(String),
    Literal(serde_json::Value),
}

/// How the catalog was read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadInfo {
    /// When the read began (RFC 3339, UTC).
    pub started_at: String,
    pub duration_seconds: f64,
    /// Objects listed.
    pub objects: u64,
}

/// The archived WAL of one timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineArchive {
    pub timeline: u32,
    /// Full segments archived (`.partial` and `.backup` files not counted).
    pub segments: u64,
    pub first_segment: Option<String>,
    pub last_segment: Option<String>,
    /// Ranges of missing segments between the first and the last, inclusive.
    pub gaps: Vec<WalGap>,
    /// `.partial` segments (the end of a timeline a promotion left).
    pub partial_files: Vec<String>,
    /// `.backup` label files (one per base backup).
    pub backup_label_files: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalGap {
    /// The first missing segment.
    pub from: String,
    /// The last missing segment.
    pub to: String,
    pub missing_segments: u64,
}

/// From when to when a point-in-time recovery can target, as the archive stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryWindow {
    /// The end of the oldest `DONE` backup (barman's `end_time_iso`).
    pub first_recoverability_point: Option<String>,
    /// The newest archived segment of the newest timeline.
    pub last_archived_wal: Option<String>,
    /// When it was archived (the object's last modification, RFC 3339).
    pub last_archived_wal_time: Option<String>,
}
