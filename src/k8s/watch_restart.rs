//! A watch that starts over on demand. A member of a sharded operator keeps only its own share
//! of the objects in its caches; when its share grows it needs the objects it did not keep, and
//! a fresh list (then a watch from that list's version) is how a watcher gets them consistently:
//! the objects listed and the deletions missed while they were not kept both come out of the
//! relist's diff, as after any dropped watch.

use futures::stream::{BoxStream, StreamExt};
use tokio::sync::watch;

/// The generation of a restart: 0 for the first list, then one more per restart asked.
pub type Generation = u64;

/// Asks the watches built with [`restartable`] from its receivers to list again.
#[derive(Clone, Debug)]
pub struct Restarts {
    asked: watch::Sender<Generation>,
}

impl Default for Restarts {
    fn default() -> Self {
        Self {
            asked: watch::Sender::new(0),
        }
    }
}

impl Restarts {
    /// Every watch following this one starts over; returns the generation their items carry
    /// from then on.
    pub fn restart(&self) -> Generation {
        let mut generation = 0;
        self.asked.send_modify(|asked| {
            *asked += 1;
            generation = *asked;
        });
        generation
    }

    /// The restarts to follow (also what a test feeding its own events watches for).
    pub fn subscribe(&self) -> watch::Receiver<Generation> {
        self.asked.subscribe()
    }
}

/// When a restartable watch lists first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstList {
    /// At once.
    Now,
    /// At the first restart asked: a member that owns nothing yet would list every object only
    /// to keep none, then list them all again once its share is agreed.
    OnFirstRestart,
}

impl FirstList {
    /// For a cache that keeps only `share`: a member that owns nothing yet (the ring not agreed)
    /// lists when its first share asks for a restart.
    pub fn for_share(share: &crate::ring::Ownership) -> Self {
        if share.holds_nothing() {
            Self::OnFirstRestart
        } else {
            Self::Now
        }
    }
}

/// The items of `start()`, started again each time `restarts` changes, each tagged with the
/// generation its stream was started for. A restart drops the running stream at once (an item
/// it had not yielded is lost with it, as with any dropped watch: the new list has it).
pub fn restartable<T, F>(
    start: F,
    restarts: watch::Receiver<Generation>,
    first: FirstList,
) -> BoxStream<'static, (Generation, T)>
where
    T: Send + 'static,
    F: Fn() -> BoxStream<'static, T> + Send + Sync + 'static,
{
    let generation = *restarts.borrow();
    let first = match first {
        FirstList::Now => start(),
        FirstList::OnFirstRestart => futures::stream::pending().boxed(),
    };
    let state = (first, generation, restarts, true, start);
    futures::stream::unfold(
        state,
        |(mut inner, mut generation, mut restarts, mut open, start)| async move {
            loop {
                tokio::select! {
                    biased;
                    changed = restarts.changed(), if open => {
                        if changed.is_err() {
                            // Nobody can ask any more: the running stream goes on.
                            open = false;
                            continue;
                        }
                        generation = *restarts.borrow_and_update();
                        inner = start();
                    }
                    item = inner.next() => {
                        let item = item?;
                        return Some(((generation, item), (inner, generation, restarts, open, start)));
                    }
                }
            }
        },
    )
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Each start yields its start count, then waits for ever (a watch after its list).
    fn counting() -> (
        Arc<AtomicU64>,
        impl Fn() -> BoxStream<'static, u64> + Send + Sync,
    ) {
        let starts = Arc::new(AtomicU64::new(0));
        let counter = starts.clone();
        let start = move || {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            futures::stream::iter([n])
                .chain(futures::stream::pending())
                .boxed()
        };
        (starts, start)
    }

    #[tokio::test(start_paused = true)]
    async fn each_restart_starts_the_stream_again_and_tags_its_items() {
        let restarts = Restarts::default();
        let (starts, start) = counting();
        let mut stream = restartable(start, restarts.subscribe(), FirstList::Now);
        assert_eq!(stream.next().await, Some((0, 0)));
        assert_eq!(restarts.restart(), 1);
        assert_eq!(stream.next().await, Some((1, 1)));
        assert_eq!(restarts.restart(), 2);
        assert_eq!(restarts.restart(), 3);
        // Two restarts before the stream was polled again: one new start, the later generation.
        assert_eq!(stream.next().await, Some((3, 2)));
        assert_eq!(starts.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn without_anyone_to_ask_the_running_stream_goes_on_to_its_end() {
        let restarts = Restarts::default();
        let receiver = restarts.subscribe();
        drop(restarts);
        let stream = restartable(
            || futures::stream::iter([7, 8]).boxed(),
            receiver,
            FirstList::Now,
        );
        assert_eq!(stream.collect::<Vec<_>>().await, vec![(0, 7), (0, 8)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_stream_starts_at_the_first_restart() {
        let restarts = Restarts::default();
        let (starts, start) = counting();
        let mut stream = restartable(start, restarts.subscribe(), FirstList::OnFirstRestart);
        let waited = tokio::time::timeout(std::time::Duration::from_secs(60), stream.next()).await;
        assert!(waited.is_err(), "nothing before a restart");
        assert_eq!(starts.load(Ordering::SeqCst), 0, "not even started");
        assert_eq!(restarts.restart(), 1);
        assert_eq!(stream.next().await, Some((1, 0)));
        assert_eq!(starts.load(Ordering::SeqCst), 1);
    }
}
