//! Read-your-writes: a pass that starts before the watch delivered what the previous pass wrote
//! would judge a stale object (repeating a status write and its Events, or POSTing a child it
//! just created again). Each written object is kept until the watch catches up with it, so the
//! map holds only writes in flight, not a second copy of every object. The status writer and
//! the children store ([`crate::children::ChildStore`]) share it.

use std::sync::Arc;

use dashmap::DashMap;
use kube::Resource;

use crate::messages::ObjectKey;

pub struct ReadYourWrites<K> {
    written: DashMap<ObjectKey, Arc<K>>,
}

impl<K> Default for ReadYourWrites<K> {
    fn default() -> Self {
        Self {
            written: DashMap::new(),
        }
    }
}

impl<K> ReadYourWrites<K> {
    /// The writes the watch has not delivered yet, as kept (tests inspect what is held).
    pub fn copies(&self) -> Vec<Arc<K>> {
        self.written.iter().map(|w| w.value().clone()).collect()
    }
}

fn version<K: Resource>(obj: &K) -> Option<u64> {
    obj.meta().resource_version.as_deref()?.parse().ok()
}

impl<K: Resource> ReadYourWrites<K> {
    /// Remember what a write returned.
    pub fn wrote(&self, key: &ObjectKey, obj: K) {
        self.written.insert(key.clone(), Arc::new(obj));
    }

    /// The newer of the watched object and the last write; forgets writes the watch has caught
    /// up with. Versions that are not numbers (opaque to clients) trust the watch.
    pub fn freshest(&self, key: &ObjectKey, watched: Arc<K>) -> Arc<K> {
        let Some(written) = self.written.get(key).map(|w| w.clone()) else {
            return watched;
        };
        match (version(watched.as_ref()), version(written.as_ref())) {
            (Some(seen), Some(ours)) if ours > seen => written,
            _ => {
                self.written.remove(key);
                watched
            }
        }
    }

    /// What was written under `key` when the watch has not reported the object at all yet.
    pub fn unseen(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.written.get(key).map(|w| w.clone())
    }

    /// The watch reported `watched`: forgets the write once the watch has caught up with it
    /// (or when versions are not comparable: the watch is trusted).
    pub fn seen(&self, key: &ObjectKey, watched: &K) {
        if self.written.is_empty() {
            return;
        }
        self.written.remove_if(key, |_, ours| {
            !matches!((version(watched), version(ours.as_ref())), (Some(seen), Some(ours)) if ours > seen)
        });
    }

    pub fn forget(&self, key: &ObjectKey) {
        self.written.remove(key);
    }

    /// Forgets and returns the write under `key`.
    pub fn take(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.written.remove(key).map(|(_, w)| w)
    }

    /// Forgets every write `drop` selects (by key and copy); returns them.
    pub fn forget_where(&self, drop: impl Fn(&ObjectKey, &K) -> bool) -> Vec<(ObjectKey, Arc<K>)> {
        let keys: Vec<ObjectKey> = self
            .written
            .iter()
            .filter(|e| drop(e.key(), e.value()))
            .map(|e| e.key().clone())
            .collect();
        keys.into_iter()
            .filter_map(|key| self.written.remove(&key))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// Writes the watch has not delivered yet.
    pub fn in_flight(&self) -> usize {
        self.written.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn at(rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_newer_write_wins_until_the_watch_catches_up() {
        let cache = ReadYourWrites::default();
        let key = ObjectKey::new("ns", "a");
        cache.wrote(&key, at("10"));
        let seen = cache.freshest(&key, Arc::new(at("9")));
        assert_eq!(seen.metadata.resource_version.as_deref(), Some("10"));
        assert_eq!(cache.in_flight(), 1);
        let seen = cache.freshest(&key, Arc::new(at("10")));
        assert_eq!(seen.metadata.resource_version.as_deref(), Some("10"));
        assert_eq!(cache.in_flight(), 0, "caught up: forgotten");
        let seen = cache.freshest(&key, Arc::new(at("12")));
        assert_eq!(seen.metadata.resource_version.as_deref(), Some("12"));
    }

    #[test]
    fn a_write_the_watch_has_not_reported_is_kept_until_it_does() {
        let cache = ReadYourWrites::default();
        let key = ObjectKey::new("ns", "a");
        cache.wrote(&key, at("10"));
        assert!(cache.unseen(&key).is_some());
        cache.seen(&key, &at("9"));
        assert_eq!(cache.in_flight(), 1, "an older event keeps our write");
        cache.seen(&key, &at("10"));
        assert_eq!(cache.in_flight(), 0, "caught up: forgotten");
        assert!(cache.unseen(&key).is_none());
    }
}
