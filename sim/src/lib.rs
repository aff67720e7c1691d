//! The embedded Kubernetes API server: real HTTP on loopback, real JSON and watch streams.
//!
//! ```no_run
//! # async fn demo() -> Result<(), pgtoolbox_sim::SimError> {
//! use pgtoolbox_sim::{Sim, SimConfig};
//! let sim = Sim::start(SimConfig::default()).await?;
//! let client: kube::Client = sim.client();
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! Four folders, each a layer; a folder imports only from the layers below it, never above:
//!
//! - `store`: the object store and its watch fan-out, the served kinds, schemas,
//!   selectors, metadata helpers. Knows nothing of HTTP, authentication or the cluster.
//! - `apiserver`: what kube-apiserver does between a request and the store: the shared
//!   `Server` state and configuration, the HTTP front and its formats, discovery and OpenAPI,
//!   the write path (verbs, patches, apply, validation, defaults), authentication, RBAC,
//!   admission, subresources, reviews and the API's faults. Imports `store`.
//! - [`cluster`]: the simulated controllers, kubelets, networking and CloudNativePG, acting on
//!   the store through the API server's write path (`ops`), never over HTTP. Imports
//!   `apiserver` and `store`.
//! - `harness`: [`Sim`] and [`InProcessSim`] that start the rest, the door every request
//!   comes through, [`Admin`] and its `/_sim/` endpoint, kubeconfig files and the embedded
//!   external CRDs. Imports every layer; none imports it.
//!
//! The public surface is the re-exports below and a few narrow modules that name what
//! other crates use; `python3 .ci/import-graph.py` checks that no import runs up a layer.

pub(crate) mod apiserver;
pub mod cluster;
pub(crate) mod harness;
pub(crate) mod store;

pub use apiserver::config::{DenyRule, FeatureGates, SimConfig};
pub use apiserver::faults::Stats;
pub use harness::admin::Admin;
pub use harness::handle::{InProcessSim, Sim, SimError, THREAD_NAME, run_api_only};
pub use harness::kubeconfig::{KubeconfigError, KubeconfigFile};
pub use harness::{external, kubeconfig};

/// Credentials: a user's bearer token, and the OpenID Connect client the console shares.
pub mod auth {
    pub use crate::apiserver::auth::token_for;

    /// OpenID Connect: the authenticator's configuration and its HTTPS client.
    pub mod oidc {
        pub use crate::apiserver::auth::oidc::{
            HttpsClientOf, OidcConfig, fetch_json, https_client,
        };
    }
}

/// The server's clock.
pub mod ops {
    pub use crate::store::meta::follow_tokio_clock;
}

/// Pod Security Standards, as the admission plugin checks them.
pub mod pod_security {
    pub use crate::apiserver::pod_security::{Level, describe, violations};
}

/// Protobuf bodies, as the API server reads them.
pub mod proto {
    pub use crate::apiserver::proto::encode;
}

/// Sharded list and watch: the hash a shard range selects on.
pub mod shard {
    pub use crate::store::shard::fnv1a64;
}
