//! Pure decisions: observed world in, desired children, condition facts and routing out. No I/O.
pub mod access_request;
pub mod children;
pub mod cluster_ca;
pub mod console;
pub mod evidence_agent;
pub mod exposure;
#[cfg(test)]
pub(crate) mod fuzz_support;
pub mod images;
pub mod namespace_permissions;
pub mod observed;
pub mod optional_api;
pub mod pgadmin;
pub mod redact;
pub mod remembered;
pub mod shard;
pub mod workload;
