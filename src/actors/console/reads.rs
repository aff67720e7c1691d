//! What a console pass reads past the caches, each kept so a converged pass reads nothing:
//! the installation's ClusterRoles and the Nodes' podCIDRs (not cached; read again once the
//! last read is older than the short stall recheck), and the `ca.crt` of the CloudNativePG
//! CA Secrets it mirrors (read again only when the Secret's resourceVersion moves).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use dashmap::DashMap;
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

use crate::children::{OneRead, ReferenceIndex, RoleReads};
use crate::messages::ObjectKey;
use crate::reconcile::console::{CA_KEY, CaSource, MAX_NODES, NodeCidrs, node_cidrs_of};
use crate::reconcile::workload::SecretDigest;

#[derive(Default)]
pub struct PastCache {
    /// The installation's ClusterRoles, each read once per recheck.
    roles: RoleReads,
    nodes: Mutex<Option<(NodeCidrs, Instant)>>,
    /// CA Secret → (resourceVersion read, what it held).
    cas: DashMap<ObjectKey, (Option<String>, CaSource)>,
    /// A Secret the Pods consume → (resourceVersion read, digest of its contents).
    digests: DashMap<ObjectKey, (Option<String>, SecretDigest)>,
    /// The first passes after a start read each Secret once, not each.
    reading_secrets: OneRead<ObjectKey>,
    /// How many reads the last sweep of unused ones kept.
    kept_after_sweep: AtomicUsize,
}

/// Fewer kept reads than this are not swept at all: a small install keeps a few stale ones.
const SWEEP_FLOOR: usize = 64;

impl PastCache {
    /// The ClusterRoles among `names` that do not exist.
    pub async fn missing_roles(
        &self,
        client: &Client,
        names: &[&'static str],
        fresh_for: Duration,
    ) -> Result<Vec<&'static str>, kube::Error> {
        let mut missing = Vec::new();
        for name in names {
            if !self.roles.exists(client, name, fresh_for).await? {
                missing.push(*name);
            }
        }
        Ok(missing)
    }

    /// The Nodes' podCIDRs (a 403 means no grant: said, not failed).
    pub async fn node_cidrs(
        &self,
        client: &Client,
        fresh_for: Duration,
    ) -> Result<NodeCidrs, kube::Error> {
        if let Ok(guard) = self.nodes.lock()
            && let Some((known, at)) = guard.as_ref()
            && at.elapsed() < fresh_for
        {
            return Ok(known.clone());
        }
        let api: Api<Node> = Api::all(client.clone());
        let limit = u32::try_from(MAX_NODES + 1).unwrap_or(u32::MAX);
        let read = match api.list(&ListParams::default().limit(limit)).await {
            Ok(list) => node_cidrs_of(&list.items, list.metadata.continue_.is_some()),
            Err(kube::Error::Api(status)) if status.code == 403 => NodeCidrs::NoGrant,
            Err(err) => return Err(err),
        };
        if let Ok(mut guard) = self.nodes.lock() {
            *guard = Some((read.clone(), Instant::now()));
        }
        Ok(read)
    }

    /// A CA Secret's `ca.crt`, read once per resourceVersion (only the public certificate text
    /// is kept).
    pub async fn ca(
        &self,
        client: &Client,
        index: &ReferenceIndex,
        key: &ObjectKey,
    ) -> Result<CaSource, kube::Error> {
        if index.exists(key) == Some(false) {
            self.cas.remove(key);
            return Ok(CaSource::SecretNotFound);
        }
        if let Some(known) = kept(&self.cas, index, key) {
            return Ok(known);
        }
        let _turn = self.reading_secrets.turn(key).await;
        if let Some(known) = kept(&self.cas, index, key) {
            return Ok(known);
        }
        let api: Api<Secret> = Api::namespaced(client.clone(), &key.namespace);
        let (read_version, source) = match api.get_opt(&key.name).await? {
            None => (None, CaSource::SecretNotFound),
            Some(secret) => {
                let text = secret
                    .data
                    .as_ref()
                    .and_then(|d| d.get(CA_KEY))
                    .map(|b| String::from_utf8_lossy(&b.0).into_owned());
                let version = secret.resource_version();
                match text {
                    Some(text) => (version, CaSource::Text(text)),
                    None => (version, CaSource::KeyMissing),
                }
            }
        };
        self.cas.insert(key.clone(), (read_version, source.clone()));
        Ok(source)
    }

    /// The digest of a Secret the Pods consume, read once per resourceVersion: its contents
    /// enter the workload hash (a changed Secret rolls the Pods) and are not kept.
    pub async fn digest(
        &self,
        client: &Client,
        index: &ReferenceIndex,
        key: &ObjectKey,
    ) -> Result<SecretDigest, kube::Error> {
        if let Some(known) = kept(&self.digests, index, key) {
            return Ok(known);
        }
        let _turn = self.reading_secrets.turn(key).await;
        if let Some(known) = kept(&self.digests, index, key) {
            return Ok(known);
        }
        let api: Api<Secret> = Api::namespaced(client.clone(), &key.namespace);
        let secret = api.get_opt(&key.name).await?;
        let read_version = secret.as_ref().and_then(|s| s.resource_version());
        let digest = SecretDigest::of_secret(&key.name, secret.as_ref());
        self.digests
            .insert(key.clone(), (read_version, digest.clone()));
        Ok(digest)
    }

    /// Drops the reads of Secrets nobody names any more. Every pass calls it, and a sweep
    /// looks at every console's reads: it runs only once they have doubled since the last
    /// one, so the passes of N consoles cost O(N) sweeping in all, not O(N²) (stale reads
    /// are harmless meanwhile: each is judged by its resourceVersion).
    pub fn forget_unused(&self, index: &ReferenceIndex) {
        let kept = self.cas.len() + self.digests.len();
        if kept < SWEEP_FLOOR.max(2 * self.kept_after_sweep.load(Ordering::Relaxed)) {
            return;
        }
        self.cas.retain(|key, _| index.is_named(key));
        self.digests.retain(|key, _| index.is_named(key));
        self.reading_secrets.retain(|key| index.is_named(key));
        self.kept_after_sweep
            .store(self.cas.len() + self.digests.len(), Ordering::Relaxed);
    }
}

/// What `read` keeps of `key` at the resourceVersion the index reports now.
fn kept<T: Clone>(
    read: &DashMap<ObjectKey, (Option<String>, T)>,
    index: &ReferenceIndex,
    key: &ObjectKey,
) -> Option<T> {
    let version = index.version(key);
    let known = read.get(key)?;
    (version.is_some() && known.0 == version).then(|| known.1.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::children::{Track, secrets_resource};
    use crate::messages::KindKey;

    fn key(i: usize) -> ObjectKey {
        ObjectKey::new("ns", format!("s{i}").as_str())
    }

    fn keep(cache: &PastCache, i: usize) {
        let digest = SecretDigest::of_secret(&format!("s{i}"), None);
        cache.digests.insert(key(i), (None, digest));
    }

    #[test]
    fn unused_reads_are_swept_once_the_reads_doubled_since_the_last_sweep() {
        let index = ReferenceIndex::new("Secrets", secrets_resource());
        let cache = PastCache::default();
        for i in 0..SWEEP_FLOOR {
            keep(&cache, i);
        }
        let console = KindKey::new("PgToolBoxConsole", "ns", "c");
        let named: Vec<ObjectKey> = (0..SWEEP_FLOOR / 2).map(key).collect();
        index.register(&console, named.clone(), Track::Version);
        cache.forget_unused(&index);
        assert_eq!(
            cache.digests.len(),
            SWEEP_FLOOR / 2,
            "the unnamed half went"
        );
        assert!(named.iter().all(|k| cache.digests.contains_key(k)));

        // Nobody names them now, but the reads have not doubled: no sweep yet.
        index.forget(&console);
        cache.forget_unused(&index);
        assert_eq!(cache.digests.len(), SWEEP_FLOOR / 2);
        for i in SWEEP_FLOOR..SWEEP_FLOOR + SWEEP_FLOOR / 2 {
            keep(&cache, i);
        }
        cache.forget_unused(&index);
        assert!(cache.digests.is_empty(), "doubled: every unnamed read went");
    }
}
