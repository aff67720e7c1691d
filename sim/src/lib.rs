//! The embedded Kubernetes API server: real HTTP on loopback, real JSON and watch streams.
//!
//! ```no_run
//! # async fn demo() -> Result<(), pgtoolbox_sim::SimError> {
//! use pgtoolbox_sim::{Sim, SimConfig};
//! let sim = Sim::start(SimConfig::default()).await?;
//! let client: kube::Client = sim.client();
//! # Ok(()) }
//! ```

pub mod apiserver;
pub mod cluster;
pub mod harness;
pub mod store;

pub use apiserver::config::{DenyRule, FeatureGates, SimConfig};
pub use apiserver::faults::Stats;
pub use apiserver::{auth, ops, pod_security, proto};
pub use harness::admin::Admin;
pub use harness::handle::{InProcessSim, Sim, SimError, THREAD_NAME, run_api_only};
pub use harness::kubeconfig::{KubeconfigError, KubeconfigFile};
pub use harness::{external, kubeconfig};
pub use store::shard;
