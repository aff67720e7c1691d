//! "Synced": every watch of a cache delivered its first complete list (or, for an optional
//! API, was refused). Until then a pass must not read absence as absence.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The cache cannot be read as the truth: not listed in time, or its API went away.
#[derive(Debug, thiserror::Error)]
pub enum NotSynced {
    #[error("{what} not listed after {limit:?}: the operator may lack list/watch permission")]
    Timeout { what: &'static str, limit: Duration },
    /// Served when the watch first listed, answered 404 since: what the cache holds is the
    /// last list, which nothing will update or remove (issue 46, finding 13).
    #[error(
        "{what} are no longer served by the API server (they were when the operator listed \
         them): what the operator last saw of them may be stale"
    )]
    NoLongerServed { what: &'static str },
}

/// Counts the watches of one cache that finished their first list.
#[derive(Debug)]
pub struct Synced {
    what: &'static str,
    expected: AtomicUsize,
    done: AtomicUsize,
    flag: AtomicBool,
    /// The API answered "not served" after a first list ([`NotSynced::NoLongerServed`]).
    gone: AtomicBool,
    /// Wakes the waiters once synced. A `Notify`, not a `watch` channel: a `watch` wakes its
    /// receivers in a random order, so the passes waiting here (every actor started before the
    /// first list) would resume, and write, in a different order in each run of a seed.
    synced: Notify,
}

impl Synced {
    pub fn new(what: &'static str) -> Self {
        Self {
            what,
            expected: AtomicUsize::new(usize::MAX),
            done: AtomicUsize::new(0),
            flag: AtomicBool::new(false),
            gone: AtomicBool::new(false),
            synced: Notify::new(),
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
        if self.done.load(Ordering::SeqCst) >= self.expected.load(Ordering::SeqCst)
            && !self.flag.swap(true, Ordering::SeqCst)
        {
            self.synced.notify_waiters();
        }
    }

    pub fn is_synced(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The API of this cache is served (`true`) or answered "not served" after a first list;
    /// returns whether that changed.
    pub fn set_served(&self, served: bool) -> bool {
        self.gone.swap(!served, Ordering::SeqCst) == served
    }

    fn still_served(&self) -> Result<(), NotSynced> {
        if self.gone.load(Ordering::SeqCst) {
            return Err(NotSynced::NoLongerServed { what: self.what });
        }
        Ok(())
    }

    /// Waits for every first list; gives up after `limit`, so a watch that cannot list fails
    /// the pass visibly instead of hanging it.
    pub async fn wait(&self, limit: Duration) -> Result<(), NotSynced> {
        self.still_served()?;
        // Every pass asks: once synced, answer without subscribing or a timer.
        if self.is_synced() {
            return Ok(());
        }
        let synced = async {
            let notified = self.synced.notified();
            tokio::pin!(notified);
            // Registered before the flag is read again, so a sync in between is not missed.
            notified.as_mut().enable();
            if !self.is_synced() {
                notified.await;
            }
        };
        tokio::time::timeout(limit, synced)
            .await
            .map_err(|_| NotSynced::Timeout {
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

    /// A seeded simulation replays only if the passes waiting for the first list resume in
    /// the same order every run: the order they started waiting in.
    #[tokio::test(start_paused = true)]
    async fn waiters_resume_in_the_order_they_waited() {
        let synced = std::sync::Arc::new(Synced::new("things"));
        synced.expect(1);
        let resumed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..32 {
            let (synced, resumed) = (synced.clone(), resumed.clone());
            tasks.push(tokio::spawn(async move {
                synced.wait(Duration::from_secs(60)).await.unwrap();
                resumed.lock().unwrap().push(i);
            }));
            // Each waiter registers before the next one starts.
            tokio::task::yield_now().await;
        }
        synced.one_done();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(*resumed.lock().unwrap(), (0..32).collect::<Vec<_>>());
    }

    #[tokio::test(start_paused = true)]
    async fn an_api_gone_after_its_first_list_fails_every_wait_until_served_again() {
        let synced = Synced::new("Routes");
        synced.expect(1);
        synced.one_done();
        assert!(synced.wait(Duration::from_secs(1)).await.is_ok());
        assert!(synced.set_served(false), "a change");
        assert!(!synced.set_served(false), "no change");
        let err = synced.wait(Duration::from_secs(1)).await.unwrap_err();
        assert!(
            matches!(err, NotSynced::NoLongerServed { what: "Routes" }),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("Routes are no longer served"),
            "{err}"
        );
        assert!(synced.set_served(true));
        assert!(synced.wait(Duration::from_secs(1)).await.is_ok());
    }
}
