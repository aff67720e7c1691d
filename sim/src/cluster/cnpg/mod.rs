//! CloudNativePG as the simulated cluster runs it: the operator's Cluster and Pooler controllers
//! and the instance manager's Database and DatabaseRole reconcilers, writing the objects and
//! status fields the real ones write (see `shapes`), plus the switchover a user requests with
//! `kubectl cnpg promote` (`POST /_sim/cnpg/switchover`), and backups: the Backup reconciler with
//! the instance manager's barman-cloud backup, and the ScheduledBackup reconciler.

pub mod backup;
pub mod cluster;
pub mod database;
pub mod pooler;
pub mod scheduled;
pub mod shapes;
pub mod switchover;

use std::sync::Arc;

use super::{Component, Kind};

pub const GROUP: &str = "postgresql.cnpg.io";
pub const CLUSTERS: Kind = Kind::new(GROUP, "v1", "Cluster", "clusters");
pub const POOLERS: Kind = Kind::new(GROUP, "v1", "Pooler", "poolers");
pub const DATABASES: Kind = Kind::new(GROUP, "v1", "Database", "databases");
pub const DATABASE_ROLES: Kind = Kind::new(GROUP, "v1", "DatabaseRole", "databaseroles");
pub const BACKUPS: Kind = Kind::new(GROUP, "v1", "Backup", "backups");
pub const SCHEDULED_BACKUPS: Kind = Kind::new(GROUP, "v1", "ScheduledBackup", "scheduledbackups");
/// The field manager of the operator's writes.
pub const MANAGER_NAME: &str = "cloudnative-pg";

/// CNPG's status timestamps: RFC 3339 with microseconds (`pgTime.GetCurrentTimestamp`).
pub fn cnpg_timestamp(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

/// The components of this module, in start order.
pub fn components() -> Vec<Arc<dyn Component>> {
    vec![
        Arc::new(cluster::ClusterController),
        Arc::new(pooler::PoolerController),
        Arc::new(database::DatabaseController),
        Arc::new(database::DatabaseRoleController),
        Arc::new(backup::BackupController),
        Arc::new(scheduled::ScheduledBackupController),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_carry_microseconds() {
        let t = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        assert_eq!(cnpg_timestamp(t), "2027-01-15T08:00:00.000000Z");
    }
}
