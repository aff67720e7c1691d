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
pub mod apply;
pub mod cluster;
pub mod config;
pub mod discovery;
pub mod error;
pub mod events;
pub mod external;
pub mod faults;
pub mod filter;
pub mod http;
pub mod openapi;
pub mod ops;
pub mod patch;
pub mod render;
pub mod resources;
pub mod schema;
pub mod selector;
pub mod server;
pub mod store;
pub mod table;
pub mod watch;

mod handle;

pub use config::{DenyRule, SimConfig};
pub use faults::{Admin, Stats};
pub use handle::{Sim, SimError, run_api_only};
