//! The harness: what starts the layers and steers them from a test.
//!
//! `Sim` and `InProcessSim` (`handle`) seed the store, start the API server and, with
//! `controllers` on, the simulated cluster; `front` is the door every request comes through
//! (`/_sim/` to the admin endpoint, the rest to the API); `Admin` and its `/_sim/` endpoint
//! (`admin`); the shared-machine guards (`host`), kubeconfig files (`kubeconfig`) and the
//! embedded external CRDs (`external`). It may import every layer; no layer imports it.

pub mod admin;
pub mod external;
pub mod front;
pub mod handle;
pub mod host;
pub mod kubeconfig;
