//! One timer wheel per kind: a single task with a `DelayQueue` holds every armed timer of every
//! object of the kind, instead of one sleeping task per timer. A timer outlives its actor on
//! purpose: the wheel reports to the kind supervisor, which wakes a hibernated object.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;
use tokio_util::time::{DelayQueue, delay_queue};

use crate::messages::{ObjectKey, TimerPurpose};

enum Command {
    Arm {
        key: ObjectKey,
        purpose: TimerPurpose,
        delay: Duration,
        generation: u64,
    },
    Cancel {
        key: ObjectKey,
        purpose: TimerPurpose,
    },
    /// The object is gone (or its actor failed): drop all its timers.
    CancelAll(ObjectKey),
    /// Which objects have a timer armed (a census of the operator's state).
    Armed(tokio::sync::oneshot::Sender<Vec<ObjectKey>>),
}

/// The longest delay the wheel holds (`DelayQueue` refuses more than about two years). A later
/// instant fires early at this bound; the pass it starts arms the rest.
pub const MAX_DELAY: Duration = Duration::from_secs(365 * 24 * 3600);

/// Handle to a kind's wheel; cheap to clone (one channel sender and one counter).
#[derive(Clone, Debug)]
pub struct TimerWheel {
    commands: mpsc::UnboundedSender<Command>,
    generations: Arc<AtomicU64>,
}

/// Per object, the wheel's entry of each purpose and its generation.
type Armed = HashMap<ObjectKey, [Option<(delay_queue::Key, u64)>; TimerPurpose::COUNT]>;

impl TimerWheel {
    /// Starts the wheel's task. `fire(key, purpose, generation)` is called for each timer that
    /// expires and returns false once nobody listens (the task then ends); `count` is told the
    /// number of armed timers after each change. The task ends when the handle is dropped.
    pub fn start<F, C>(fire: F, count: C) -> (Self, AbortOnDropHandle<()>)
    where
        F: Fn(ObjectKey, TimerPurpose, u64) -> bool + Send + 'static,
        C: Fn(usize) + Send + 'static,
    {
        let (commands, receiver) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(receiver, fire, count));
        let wheel = Self {
            commands,
            generations: Arc::new(AtomicU64::new(0)),
        };
        (wheel, AbortOnDropHandle::new(task))
    }

    /// Arms (or re-arms) the timer of `purpose` for `key`; returns its generation.
    pub fn arm(&self, key: &ObjectKey, purpose: TimerPurpose, delay: Duration) -> u64 {
        let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        // The wheel is gone only when the kind stops: nothing left to fire then.
        let _ = self.commands.send(Command::Arm {
            key: key.clone(),
            purpose,
            delay,
            generation,
        });
        generation
    }

    pub fn cancel(&self, key: &ObjectKey, purpose: TimerPurpose) {
        let _ = self.commands.send(Command::Cancel {
            key: key.clone(),
            purpose,
        });
    }

    pub fn cancel_all(&self, key: &ObjectKey) {
        let _ = self.commands.send(Command::CancelAll(key.clone()));
    }

    /// The objects with at least one timer armed (empty once the wheel stopped).
    pub async fn armed(&self) -> Vec<ObjectKey> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        if self.commands.send(Command::Armed(reply)).is_err() {
            return Vec::new();
        }
        answer.await.unwrap_or_default()
    }
}

async fn run<F, C>(mut commands: mpsc::UnboundedReceiver<Command>, fire: F, count: C)
where
    F: Fn(ObjectKey, TimerPurpose, u64) -> bool,
    C: Fn(usize),
{
    let mut queue: DelayQueue<(ObjectKey, TimerPurpose)> = DelayQueue::new();
    let mut armed: Armed = HashMap::new();
    loop {
        // Commands first, not tokio's random pick: when a re-arm or cancel and an expiry are
        // ready at once, the expiry must not win one time in two (a seeded run would fire a
        // timer its object had already cancelled only sometimes: not replayable).
        tokio::select! {
            biased;
            command = commands.recv() => {
                let Some(command) = command else { return };
                apply(&mut queue, &mut armed, command);
                // Apply whatever else is queued before counting (one gauge update per burst).
                while let Ok(command) = commands.try_recv() {
                    apply(&mut queue, &mut armed, command);
                }
                count(queue.len());
            }
            Some(expired) = std::future::poll_fn(|cx| queue.poll_expired(cx)) => {
                let (key, purpose) = expired.into_inner();
                let generation = take(&mut armed, &key, purpose);
                count(queue.len());
                if let Some(generation) = generation
                    && !fire(key, purpose, generation)
                {
                    return;
                }
            }
        }
    }
}

fn apply(queue: &mut DelayQueue<(ObjectKey, TimerPurpose)>, armed: &mut Armed, command: Command) {
    match command {
        Command::Arm {
            key,
            purpose,
            delay,
            generation,
        } => {
            let delay = delay.min(MAX_DELAY);
            let slots = armed.entry(key.clone()).or_default();
            let slot = &mut slots[purpose.index()];
            match slot {
                Some((entry, armed_generation)) => {
                    queue.reset(entry, delay);
                    *armed_generation = generation;
                }
                None => *slot = Some((queue.insert((key, purpose), delay), generation)),
            }
        }
        Command::Cancel { key, purpose } => {
            if let Some(slots) = armed.get_mut(&key)
                && let Some((entry, _)) = slots[purpose.index()].take()
            {
                queue.remove(&entry);
                if slots.iter().all(Option::is_none) {
                    armed.remove(&key);
                }
            }
        }
        Command::CancelAll(key) => {
            for (entry, _) in armed.remove(&key).into_iter().flatten().flatten() {
                queue.remove(&entry);
            }
        }
        Command::Armed(reply) => {
            let mut keys: Vec<ObjectKey> = armed.keys().cloned().collect();
            keys.sort();
            let _ = reply.send(keys);
        }
    }
}

/// The timer expired: forget its slot and answer its generation.
fn take(armed: &mut Armed, key: &ObjectKey, purpose: TimerPurpose) -> Option<u64> {
    let slots = armed.get_mut(key)?;
    let (_, generation) = slots[purpose.index()].take()?;
    if slots.iter().all(Option::is_none) {
        armed.remove(key);
    }
    Some(generation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tokio::time::Instant;

    type Fired = Arc<Mutex<Vec<(String, TimerPurpose, u64, Duration)>>>;

    #[tokio::test(start_paused = true)]
    async fn the_census_names_the_objects_with_a_timer_armed() {
        let (wheel, _task, _fired, _) = start();
        let (a, b) = (ObjectKey::new("ns", "a"), ObjectKey::new("ns", "b"));
        wheel.arm(&a, TimerPurpose::Expiry, Duration::from_secs(60));
        wheel.arm(&b, TimerPurpose::Expiry, Duration::from_secs(1));
        assert_eq!(wheel.armed().await, vec![a.clone(), b.clone()]);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(wheel.armed().await, vec![a.clone()], "b fired");
        wheel.cancel_all(&a);
        assert!(wheel.armed().await.is_empty());
    }

    fn start() -> (TimerWheel, AbortOnDropHandle<()>, Fired, Arc<Mutex<usize>>) {
        let fired: Fired = Arc::default();
        let armed = Arc::new(Mutex::new(0));
        let t0 = Instant::now();
        let sink = fired.clone();
        let gauge = armed.clone();
        let (wheel, task) = TimerWheel::start(
            move |key, purpose, generation| {
                sink.lock()
                    .unwrap()
                    .push((key.name, purpose, generation, t0.elapsed()));
                true
            },
            move |n| *gauge.lock().unwrap() = n,
        );
        (wheel, task, fired, armed)
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    const SEC: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn timers_fire_once_at_their_time_in_order() {
        let (wheel, _task, fired, armed) = start();
        let b = wheel.arm(&key("b"), TimerPurpose::Expiry, 20 * SEC);
        let a = wheel.arm(&key("a"), TimerPurpose::Grace, 10 * SEC);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(*armed.lock().unwrap(), 2);
        tokio::time::sleep(60 * SEC).await;
        let fired = fired.lock().unwrap().clone();
        let seen: Vec<(&str, TimerPurpose, u64)> =
            fired.iter().map(|f| (f.0.as_str(), f.1, f.2)).collect();
        assert_eq!(
            seen,
            vec![
                ("a", TimerPurpose::Grace, a),
                ("b", TimerPurpose::Expiry, b)
            ]
        );
        assert!(fired[0].3 >= 10 * SEC && fired[0].3 < 11 * SEC, "{fired:?}");
        assert!(fired[1].3 >= 20 * SEC && fired[1].3 < 21 * SEC, "{fired:?}");
        assert_eq!(*armed.lock().unwrap(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn re_arming_replaces_and_cancelling_removes() {
        let (wheel, _task, fired, armed) = start();
        wheel.arm(&key("a"), TimerPurpose::Expiry, 10 * SEC);
        let second = wheel.arm(&key("a"), TimerPurpose::Expiry, 30 * SEC);
        wheel.arm(&key("a"), TimerPurpose::Recheck2m, 5 * SEC);
        wheel.cancel(&key("a"), TimerPurpose::Recheck2m);
        wheel.arm(&key("gone"), TimerPurpose::Grace, SEC);
        wheel.arm(&key("gone"), TimerPurpose::Retry, SEC);
        wheel.cancel_all(&key("gone"));
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(*armed.lock().unwrap(), 1);
        tokio::time::sleep(60 * SEC).await;
        let fired = fired.lock().unwrap().clone();
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!((fired[0].1, fired[0].2), (TimerPurpose::Expiry, second));
        assert!(fired[0].3 >= 30 * SEC && fired[0].3 < 31 * SEC);
    }

    #[tokio::test(start_paused = true)]
    async fn a_delay_beyond_the_wheel_fires_at_its_bound() {
        let (wheel, _task, fired, armed) = start();
        wheel.arm(&key("far"), TimerPurpose::Expiry, Duration::MAX);
        wheel.arm(&key("far"), TimerPurpose::Expiry, 100 * MAX_DELAY);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(*armed.lock().unwrap(), 1, "the wheel survived");
        tokio::time::sleep(MAX_DELAY + SEC).await;
        let fired = fired.lock().unwrap().clone();
        assert_eq!(fired.len(), 1);
        assert!(fired[0].3 >= MAX_DELAY && fired[0].3 < MAX_DELAY + SEC);
    }

    #[tokio::test(start_paused = true)]
    async fn many_timers_need_one_task() {
        let before = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        let (wheel, _task, fired, _) = start();
        for i in 0..1000u64 {
            wheel.arm(
                &key(&format!("o{i}")),
                TimerPurpose::Expiry,
                SEC * (1 + i as u32 % 7),
            );
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        let alive = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        assert_eq!(alive, before + 1);
        tokio::time::sleep(10 * SEC).await;
        assert_eq!(fired.lock().unwrap().len(), 1000);
    }
}
