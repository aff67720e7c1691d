//! One timer slot per purpose for one object actor; the timers themselves live in the kind's
//! [`TimerWheel`], so they survive the actor's hibernation and wake it.

use std::time::Duration;

use crate::messages::{ObjectKey, TimerPurpose};
use crate::runtime::TimerWheel;

/// The generation of each armed timer of one actor, to tell a current tick from a stale one
/// (a timer re-armed or cancelled after it fired).
#[derive(Debug, Default)]
pub struct Timers {
    generations: [Option<u64>; TimerPurpose::COUNT],
    /// False until the first schedule of this actor: timers armed by an earlier actor of the
    /// same object (before it hibernated or failed) may still be in the wheel, so the first
    /// schedule cancels every purpose it does not name, known or not.
    synced: bool,
}

impl Timers {
    /// Arm (or re-arm) the timer of `purpose` to fire after `delay`.
    pub fn arm(
        &mut self,
        wheel: &TimerWheel,
        key: &ObjectKey,
        purpose: TimerPurpose,
        delay: Duration,
    ) {
        self.generations[purpose.index()] = Some(wheel.arm(key, purpose, delay));
    }

    pub fn cancel(&mut self, wheel: &TimerWheel, key: &ObjectKey, purpose: TimerPurpose) {
        if self.generations[purpose.index()].take().is_some() || !self.synced {
            wheel.cancel(key, purpose);
        }
    }

    /// A successful pass's schedule, one delay (or none) per purpose: each named purpose is
    /// armed, every other one cancelled.
    pub fn schedule(
        &mut self,
        wheel: &TimerWheel,
        key: &ObjectKey,
        delays: [Option<Duration>; TimerPurpose::COUNT],
    ) {
        for (purpose, delay) in TimerPurpose::ALL.iter().zip(delays) {
            match delay {
                Some(delay) => self.arm(wheel, key, *purpose, delay),
                None => self.cancel(wheel, key, *purpose),
            }
        }
        self.synced();
    }

    /// A failed pass: the retry after `retry`, and what the pass had decided before it failed;
    /// the other timers stay as they were (a failed pass does not know they are no longer
    /// needed; a spare pass is harmless).
    pub fn after_failure(
        &mut self,
        wheel: &TimerWheel,
        key: &ObjectKey,
        retry: Duration,
        decided: [Option<Duration>; TimerPurpose::COUNT],
    ) {
        self.arm(wheel, key, TimerPurpose::Retry, retry);
        for (purpose, delay) in TimerPurpose::ALL.iter().zip(decided) {
            if let Some(delay) = delay {
                self.arm(wheel, key, *purpose, delay);
            }
        }
    }

    /// A whole schedule was applied: from now on the slots know every armed timer.
    pub fn synced(&mut self) {
        self.synced = true;
    }

    /// A tick arrived: true when it belongs to the currently armed timer (which is then spent),
    /// false for a tick of a timer that was re-armed or cancelled after it fired.
    pub fn take_if_current(&mut self, purpose: TimerPurpose, generation: u64) -> bool {
        let slot = &mut self.generations[purpose.index()];
        if *slot == Some(generation) {
            *slot = None;
            true
        } else {
            false
        }
    }

    pub fn armed_count(&self) -> usize {
        self.generations.iter().filter(|s| s.is_some()).count()
    }

    /// A retry is armed: the actor is backing off and must keep its failure count.
    pub fn retrying(&self) -> bool {
        self.generations[TimerPurpose::Retry.index()].is_some()
    }
}
