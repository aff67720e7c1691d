//! Shared server state: store, served kinds, faults and counters.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::config::SimConfig;
use crate::error::ApiError;
use crate::faults::{Faults, StatsCell};
use crate::rbac_audit::Audit;
use crate::resources::{self, ResourceInfo};
use crate::store::{Locked, ObjKey, ResKey, Store};
use crate::workload_faults::WorkloadFaults;

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

/// Every served resource by `(group, version, plural)`, in registration order per group.
#[derive(Default)]
pub struct Registry {
    by_gvr: HashMap<(String, String, String), Arc<ResourceInfo>>,
    /// group -> versions in preference order.
    groups: BTreeMap<String, Vec<String>>,
    /// group -> registration order, so `/apis` lists built-ins first like a real server.
    order: Vec<String>,
}

impl Registry {
    pub fn with_builtins() -> Self {
        let mut r = Self::default();
        for info in resources::builtins() {
            r.add(info);
        }
        r
    }

    pub fn add(&mut self, info: ResourceInfo) {
        let versions = self.groups.entry(info.group.clone()).or_default();
        if !versions.contains(&info.version) {
            versions.push(info.version.clone());
        }
        if !self.order.contains(&info.group) {
            self.order.push(info.group.clone());
        }
        self.by_gvr.insert(
            (
                info.group.clone(),
                info.version.clone(),
                info.plural.clone(),
            ),
            Arc::new(info),
        );
    }

    /// Stop serving every version of `group/plural` (a deleted CRD).
    pub fn remove(&mut self, group: &str, plural: &str) {
        self.by_gvr
            .retain(|(g, _, p), _| !(g == group && p == plural));
        let still: Vec<String> = self
            .by_gvr
            .keys()
            .filter(|(g, _, _)| g == group)
            .map(|(_, v, _)| v.clone())
            .collect();
        if let Some(versions) = self.groups.get_mut(group) {
            versions.retain(|v| still.contains(v));
            if versions.is_empty() {
                self.groups.remove(group);
                self.order.retain(|g| g != group);
            }
        }
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// What kube-apiserver answers for a resource path nothing serves in `group/version`. A
    /// built-in group version has routes of its own, whose miss is a `Status` (`the server could
    /// not find the requested resource`); any other path, a removed custom resource's included
    /// (whether or not its group still serves other resources), falls through the
    /// CustomResourceDefinition handler to the last handler: a plain-text `404 page not found`.
    pub fn unrouted(&self, group: &str, version: &str) -> ApiError {
        let builtin = self
            .by_gvr
            .iter()
            .any(|((g, v, _), info)| g == group && v == version && !info.custom);
        if builtin {
            ApiError::not_found_path()
        } else {
            ApiError::path_not_installed()
        }
    }

    /// Any served version of a kind, for following ownerReferences.
    pub fn by_resource(&self, group: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.by_gvr
            .iter()
            .find(|((g, _, p), _)| g == group && p == plural)
            .map(|(_, i)| i.clone())
    }

    pub fn serves_version(&self, group: &str, version: &str) -> bool {
        self.groups
            .get(group)
            .is_some_and(|v| v.iter().any(|x| x == version))
    }

    /// Groups in registration order with their versions.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        self.order
            .iter()
            .filter_map(|g| self.groups.get(g).map(|v| (g.clone(), v.clone())))
            .collect()
    }

    pub fn resources(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        let mut out: Vec<Arc<ResourceInfo>> = self
            .by_gvr
            .iter()
            .filter(|((g, v, _), _)| g == group && v == version)
            .map(|(_, i)| i.clone())
            .collect();
        out.sort_by(|a, b| a.plural.cmp(&b.plural));
        out
    }
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
    pub oidc: std::sync::OnceLock<Arc<crate::auth::oidc::OidcAuthenticator>>,
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
