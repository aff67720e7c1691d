//! The embedded Kubernetes API server: real HTTP on loopback, real JSON and watch streams.
//!
//! ```no_run
//! # async fn demo() -> Result<(), pgtoolbox_sim::SimError> {
//! use pgtoolbox_sim::{Sim, SimConfig};
//! let sim = Sim::start(SimConfig::default()).await?;
//! let client: kube::Client = sim.client();
//! # Ok(()) }
//! ```

pub mod admin;
pub mod admission;
pub mod apply;
pub mod auth;
pub mod cluster;
pub mod config;
pub mod defaults;
pub mod discovery;
pub mod error;
pub mod events;
pub mod external;
pub mod faults;
pub mod filter;
pub mod host;
pub mod hpa;
pub mod http;
pub mod kubeconfig;
pub mod list_keys;
pub mod managed_fields;
pub mod media;
pub mod meta;
pub mod object_meta;
pub mod openapi;
pub mod openapi_schemas;
pub mod ops;
pub mod patch;
pub mod pod_security;
pub mod printers;
pub mod proto;
pub mod rbac_audit;
pub mod render;
pub mod resources;
pub mod reviews;
pub mod schema;
pub mod selector;
pub mod server;
pub mod shard;
pub mod store;
pub mod subresource;
pub mod table;
pub mod validate;
pub mod watch;
pub mod wire;
pub mod workload_faults;

mod handle;

#[cfg(test)]
mod fuzz_tests;

pub use admin::Admin;
pub use config::{DenyRule, FeatureGates, SimConfig};
pub use faults::Stats;
pub use handle::{InProcessSim, Sim, SimError, THREAD_NAME, run_api_only};
pub use kubeconfig::{KubeconfigError, KubeconfigFile};
