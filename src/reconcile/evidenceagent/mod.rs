//! EvidenceAgent decisions: pure, unit-tested, no I/O.
mod bucket;
mod certificate;
mod config;
mod render;

pub use bucket::{BucketNameError, parse_destination, validate_bucket_name};
pub use certificate::{ServiceCaFacts, service_ca_verdict};
pub use config::{
    AgentFacts, BARMAN_PLUGIN, ConfigOutcome, ForeignChild, StoreProfile, ValidConfig,
    barman_object_name, decide,
};
pub use render::{
    AGENT_PORT, CABUNDLE_KEY, ChildNames, INJECT_CABUNDLE_ANNOTATION, RenderInput,
    SERVING_CERT_ANNOTATION, ca_config_map, deployment, pull_policy, service, service_account,
};

#[cfg(test)]
mod tests;
