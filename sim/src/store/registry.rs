//! The served kinds: every resource the server answers for, by group, version and plural.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::store::resources::{self, ResourceInfo};

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
