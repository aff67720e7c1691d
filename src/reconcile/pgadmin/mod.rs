//! PgAdmin (pure): the offered set, `status.servers`, `ConfigurationValid`, the servers file
//! and its hash, `ServersSynced` from the registration Job, and the children to render.

mod children;
mod conclude;
mod config;
mod config_database;
mod egress;
mod facts;
mod image;
mod ldap;
mod offered;
mod pass;
mod plan;
mod registration;
mod render;
mod selector;
pub use selector::selector_matches;
mod servers_file;
mod settings;
mod upgrade;

#[cfg(test)]
pub use children::Registration;
pub use children::{ChildObjects, ChildrenFacts, ChildrenJudged, children};
pub use conclude::{Applied, Conclusion, Seen, Writes, conclude, withdrawn};
#[cfg(test)]
pub use config::{ConfigFacts, configuration_valid};
pub use config_database::{
    ConfigConnection, ConfigDatabaseFacts, applied_facts, config_database_name,
    config_database_pending, config_database_problem, controlled_by, desired_settings_objects,
    password_generation_served, spec_matches,
};
#[cfg(test)]
pub use facts::cluster_facts;
pub use facts::{grant_facts, pooler_facts, role_facts};
pub use offered::{ClusterFacts, OfferedServer, RoleFacts};
#[cfg(test)]
pub use offered::{
    GrantFacts, MAX_SERVERS, Offered, OfferedInputs, PoolerFacts, Problem, offered_set,
};
pub use pass::{BUILTIN_OAUTH2_PROXY_IMAGE, ForeignChild, Gates};
pub use plan::{
    Observed, Plan, Referenced, SettingsDb, ca_secrets, credential_secrets, decide, plan,
};
pub use registration::{JobState, job_state, pgadmin_pod_ready};
#[cfg(test)]
pub use registration::{
    RegistrationFacts, job_wanted, registration_job_name, servers_registered_event, servers_synced,
    with_block,
};
pub use render::{
    COOKIE_SECRET_KEY, ChildNames, HTTP_PORT_NAME, LOGIN_PASSWORD_KEY, RenderError, SERVICE_PORT,
    servers_secret,
};
#[cfg(test)]
pub use render::{RenderInput, data_claim, deployment, registration_job, upgrade_backup_job};
#[cfg(test)]
pub use servers_file::SERVERS_FILE_KEY;
pub use servers_file::{Credential, servers_file};
pub use upgrade::{SKIP_UPGRADE_BACKUP_ANNOTATION, upgrade_backup_job_name};

#[cfg(test)]
mod tests;
