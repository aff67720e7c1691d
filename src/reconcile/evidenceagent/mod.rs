//! EvidenceAgent decisions: pure, unit-tested, no I/O.
mod bucket;
mod config;

pub use bucket::{BucketNameError, parse_destination, validate_bucket_name};
pub use config::{
    AgentFacts, BARMAN_PLUGIN, ConfigOutcome, ForeignChild, StoreProfile, ValidConfig,
    barman_object_name, decide,
};

#[cfg(test)]
mod tests;
