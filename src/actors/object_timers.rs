//! One timer slot per purpose for one object actor.

use std::time::Duration;

use ractor::ActorRef;
use tokio_util::task::AbortOnDropHandle;

use crate::messages::{ObjectMsg, TimerPurpose};

/// The armed timers of one actor. Each timer is one sleeping task that sends `TimerFired`.
/// Re-arming aborts the previous task; dropping `Timers` (actor stopped, or failed, when
/// `post_stop` is skipped) aborts them all, so no timer outlives its actor.
#[derive(Debug, Default)]
pub struct Timers {
    slots: [Option<Slot>; 5],
    next_generation: u64,
}

#[derive(Debug)]
struct Slot {
    generation: u64,
    _task: AbortOnDropHandle<()>,
}

impl Timers {
    /// Arm (or re-arm) the timer of `purpose` to fire after `delay`.
    pub fn arm<K: Send + Sync + 'static>(
        &mut self,
        purpose: TimerPurpose,
        delay: Duration,
        actor: &ActorRef<ObjectMsg<K>>,
    ) {
        self.next_generation += 1;
        let generation = self.next_generation;
        let actor = actor.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            // The actor may be gone; then there is nothing left to wake.
            let _ = actor.send_message(ObjectMsg::TimerFired {
                purpose,
                generation,
            });
        });
        self.slots[purpose.index()] = Some(Slot {
            generation,
            _task: AbortOnDropHandle::new(task),
        });
    }

    pub fn cancel(&mut self, purpose: TimerPurpose) {
        self.slots[purpose.index()] = None;
    }

    pub fn cancel_all(&mut self) {
        self.slots = Default::default();
    }

    /// A tick arrived: true when it belongs to the currently armed timer (which is then spent),
    /// false for a tick of a timer that was re-armed or cancelled after it fired.
    pub fn take_if_current(&mut self, purpose: TimerPurpose, generation: u64) -> bool {
        let slot = &mut self.slots[purpose.index()];
        if slot.as_ref().is_some_and(|s| s.generation == generation) {
            *slot = None;
            true
        } else {
            false
        }
    }

    pub fn armed_count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }
}
