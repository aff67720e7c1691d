//! PgAdmin (pure): the offered set, `status.servers`, `ConfigurationValid`, the servers file
//! and its hash, `ServersSynced` from the registration Job, and the children to render.

mod children;
mod conclude;
mod config;
mod config_database;
mod egress;
mod facts;
mod image;
mod offered;
mod pass;
mod plan;
mod registration;
mod render;
mod selector;
mod servers_file;
mod upgrade;

pub use children::{
    ChildObjects, ChildrenFacts, ChildrenJudged, PgAdminChildren, Registration, children,
};
pub use conclude::{Applied, Conclusion, Seen, Writes, conclude, withdrawn};
pub use config::{ConfigFacts, configuration_valid};
pub use config_database::{
    AppliedFacts, ConfigConnection, ConfigDatabaseFacts, applied_facts, config_database_name,
    config_database_pending, config_database_problem, controlled_by, desired_settings_objects,
    password_generation_served, spec_matches,
};
pub use egress::{EgressRule, egress_confined, egress_policy, egress_rules};
pub use facts::{cluster_facts, grant_facts, pooler_facts, role_facts};
pub use offered::{
    ClusterFacts, Credentials, GrantFacts, MAX_SERVERS, Offered, OfferedInputs, OfferedServer,
    POSTGRES_PORT, PoolerFacts, Problem, RoleFacts, offered_set,
};
pub use pass::{
    BUILTIN_OAUTH2_PROXY_IMAGE, BUILTIN_PGADMIN_IMAGE, Decided, ForeignChild, Gates, PassImages,
    Settled, applies_deployment, children_converged, egress_clusters, exposure_fields,
    pgadmin_image, registration_started, status_fields, target_image, upgrade_event,
    workload_ready,
};
pub use plan::{
    Decision, Observed, Plan, Referenced, SettingsDb, credential_secrets, decide, plan,
};
pub use registration::{
    JobState, RegistrationFacts, job_state, job_wanted, pgadmin_pod_ready, registration_job_name,
    servers_registered_event, servers_synced,
};
pub use render::{
    COOKIE_SECRET_KEY, ChildNames, HTTP_PORT_NAME, LOGIN_PASSWORD_KEY, RenderError, RenderInput,
    SERVICE_PORT, admin_email, data_claim, deployment, registration_job, servers_secret, service,
    service_account, upgrade_backup_job,
};
pub use selector::selector_matches;
pub use servers_file::{Credential, SERVERS_FILE_KEY, ServersFile, hash8, servers_file};
pub use upgrade::{
    SKIP_UPGRADE_BACKUP_ANNOTATION, UpgradeFacts, UpgradeGate, upgrade_backup_job_name,
    upgrade_gate,
};

#[cfg(test)]
mod tests;
