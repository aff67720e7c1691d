//! One read at a time per key for the reads past the caches that are kept by resourceVersion
//! (a Cluster's contents, a CA Secret's `ca.crt`, a ClusterRole's existence). Without it, the
//! first passes after a start that name the same object all miss the kept read together and
//! each sends its own GET (121 GETs of 4 Clusters in a fleet restart of 900 objects): the
//! second reader now waits for the first and finds its answer kept.

use std::hash::Hash;
use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::{Mutex, OwnedMutexGuard};

pub struct OneRead<K: Eq + Hash> {
    locks: DashMap<K, Arc<Mutex<()>>>,
}

impl<K: Eq + Hash> Default for OneRead<K> {
    fn default() -> Self {
        Self {
            locks: DashMap::new(),
        }
    }
}

impl<K: Eq + Hash + Clone> OneRead<K> {
    /// Held while `key` is read and its answer kept; the caller checks what is kept again
    /// once it holds it (a reader before it may have kept the answer meanwhile).
    pub async fn turn(&self, key: &K) -> OwnedMutexGuard<()> {
        let lock = self.locks.entry(key.clone()).or_default().clone();
        lock.lock_owned().await
    }

    /// Drops the locks of keys `keep` no longer wants (nobody reads them now).
    pub fn retain(&self, keep: impl Fn(&K) -> bool) {
        // A lock someone holds or waits for is shared beyond the map: kept.
        self.locks
            .retain(|key, lock| keep(key) || Arc::strong_count(lock) > 1);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_second_reader_of_a_key_waits_for_the_first_and_finds_its_answer() {
        let turns = Arc::new(OneRead::<String>::default());
        let kept = Arc::new(DashMap::<String, u32>::new());
        let reads = Arc::new(AtomicUsize::new(0));
        let read = |turns: Arc<OneRead<String>>, kept: Arc<DashMap<String, u32>>| {
            let reads = reads.clone();
            async move {
                let key = "cluster".to_owned();
                let _turn = turns.turn(&key).await;
                if let Some(known) = kept.get(&key) {
                    return *known;
                }
                reads.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
                kept.insert(key, 7);
                7
            }
        };
        let readers: Vec<_> = (0..8)
            .map(|_| tokio::spawn(read(turns.clone(), kept.clone())))
            .collect();
        for reader in readers {
            assert_eq!(reader.await.unwrap(), 7);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        turns.retain(|_| false);
        assert!(turns.locks.is_empty());
    }
}
