//! "Synced": every watch of a cache delivered its first complete list (or, for an optional
//! API, was refused). Until then a pass must not read absence as absence.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;

/// The cache was not synced in time.
#[derive(Debug, thiserror::Error)]
#[error("{what} not listed after {limit:?}: the operator may lack list/watch permission")]
pub struct NotSynced {
    pub what: &'static str,
    pub limit: Duration,
}

/// Counts the watches of one cache that finished their first list.
#[derive(Debug)]
pub struct Synced {
    what: &'static str,
    expected: AtomicUsize,
    done: AtomicUsize,
    flag: watch::Sender<bool>,
}

impl Synced {
    pub fn new(what: &'static str) -> Self {
        Self {
            what,
            expected: AtomicUsize::new(usize::MAX),
            done: AtomicUsize::new(0),
            flag: watch::Sender::new(false),
        }
    }

    /// How many watches must report (one per watched namespace, or one for all).
    pub fn expect(&self, watches: usize) {
        self.expected.store(watches, Ordering::SeqCst);
        self.check();
    }

    /// One watch finished its first list (each watch reports once).
    pub fn one_done(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
        self.check();
    }

    fn check(&self) {
        if self.done.load(Ordering::SeqCst) >= self.expected.load(Ordering::SeqCst) {
            self.flag.send_replace(true);
        }
    }

    pub fn is_synced(&self) -> bool {
        *self.flag.borrow()
    }

    /// Waits for every first list; gives up after `limit`, so a watch that cannot list fails
    /// the pass visibly instead of hanging it.
    pub async fn wait(&self, limit: Duration) -> Result<(), NotSynced> {
        // Every pass asks: once synced, answer without subscribing or a timer.
        if self.is_synced() {
            return Ok(());
        }
        let mut flag = self.flag.subscribe();
        let synced = async {
            // The sender lives as long as `self`: this only ends when the flag turns true.
            let _ = flag.wait_for(|synced| *synced).await;
        };
        tokio::time::timeout(limit, synced)
            .await
            .map_err(|_| NotSynced {
                what: self.what,
                limit,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn synced_once_every_watch_listed() {
        let synced = Synced::new("things");
        synced.expect(2);
        synced.one_done();
        assert!(synced.wait(Duration::from_secs(1)).await.is_err());
        synced.one_done();
        assert!(synced.wait(Duration::from_secs(1)).await.is_ok());
    }
}
