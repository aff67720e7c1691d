//! Shared server state: store, served kinds, faults and counters.

use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::apiserver::config::SimConfig;
use crate::apiserver::error::ApiError;
use crate::apiserver::faults::{Faults, StatsCell};
use crate::apiserver::rbac_audit::Audit;
use crate::apiserver::workload_faults::WorkloadFaults;
use crate::store::objects::{Locked, ObjKey, ResKey, Store};
use crate::store::registry::Registry;
use crate::store::resources::ResourceInfo;

/// What the simulated cluster adds to create and delete (its admission plugins and registry
/// strategies). The cluster registers itself when its controllers start; the server asks
/// through this trait so that it need not know the cluster's types.
pub trait ClusterAdmission: Send + Sync {
    /// Mutate and admit `body` (already named, with uid) before it is stored.
    fn admit_create(
        &self,
        l: &Locked<'_>,
        info: &ResourceInfo,
        namespace: &str,
        body: &mut Value,
    ) -> Result<(), ApiError>;

    /// Graceful deletion: the object as marked for deletion, or `None` when the ordinary
    /// deletion applies. `grace_period_seconds` is the one the delete request asked for.
    fn graceful_delete(
        &self,
        l: &mut Locked<'_>,
        info: &ResourceInfo,
        res: &ResKey,
        key: &ObjKey,
        old: &Arc<Value>,
        grace_period_seconds: Option<i64>,
    ) -> Option<Arc<Value>>;
}

pub struct Server {
    pub store: Store,
    pub registry: RwLock<Registry>,
    pub faults: Arc<Faults>,
    pub stats: StatsCell,
    pub config: SimConfig,
    /// Faults the simulated components act out (`/_sim/workloads/faults`).
    pub workload_faults: WorkloadFaults,
    /// The simulated cluster, when controllers run (admission and graceful Pod deletion use it).
    pub cluster: std::sync::OnceLock<Arc<dyn ClusterAdmission>>,
    /// `host:port` the server listens on, for discovery answers.
    pub address: String,
    /// The RBAC rules that allowed a request, per user (least-privilege audits).
    pub rbac_audit: Audit,
    /// The OIDC token authenticator, when `SimConfig::oidc` configures one.
    pub oidc: std::sync::OnceLock<Arc<crate::apiserver::auth::oidc::OidcAuthenticator>>,
}

impl Server {
    pub fn new(config: SimConfig, address: String) -> Self {
        Self {
            // Each buffered event pins two object versions; 16k bounds that memory while 100
            // watchers still keep up with the benchmark write rate.
            store: Store::new(config.history, config.watch_buffer)
                .compacting_after(config.compaction_interval),
            registry: RwLock::new(Registry::with_builtins()),
            faults: Arc::new(Faults::new(&config)),
            stats: StatsCell::default(),
            workload_faults: Default::default(),
            cluster: std::sync::OnceLock::new(),
            config,
            address,
            rbac_audit: Audit::default(),
            oidc: std::sync::OnceLock::new(),
        }
    }

    pub fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.registry.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn registry_mut(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.registry.write().unwrap_or_else(|p| p.into_inner())
    }
}
