use std::sync::Arc;

/// Why a timer was armed. An object actor holds at most one timer per purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimerPurpose {
    /// A deadline taken from the object itself (e.g. `expiresAt`).
    Expiry,
    /// A grace period before acting (e.g. the one-minute orphan grace).
    Grace,
    /// The two-minute recheck of a stalled condition.
    Recheck2m,
    /// The five-minute recheck of a stalled condition.
    Recheck5m,
    /// The backoff retry after a failed reconcile.
    Retry,
    /// A status change held back while its object's last write is recent, so that a burst
    /// of changes is written once (see `status::writer`).
    Settle,
}

impl TimerPurpose {
    /// How many purposes there are: the timer slots of an object.
    pub const COUNT: usize = 6;

    pub const ALL: [TimerPurpose; Self::COUNT] = [
        TimerPurpose::Expiry,
        TimerPurpose::Grace,
        TimerPurpose::Recheck2m,
        TimerPurpose::Recheck5m,
        TimerPurpose::Retry,
        TimerPurpose::Settle,
    ];

    /// Dense index, used to keep the timer slots in a fixed array.
    pub const fn index(self) -> usize {
        match self {
            TimerPurpose::Expiry => 0,
            TimerPurpose::Grace => 1,
            TimerPurpose::Recheck2m => 2,
            TimerPurpose::Recheck5m => 3,
            TimerPurpose::Retry => 4,
            TimerPurpose::Settle => 5,
        }
    }
}

/// Messages of one object actor.
#[derive(Debug)]
pub enum ObjectMsg<K> {
    /// The watch saw a new version of the object: replaces the latest copy.
    Delta(Arc<K>),
    /// One of the object's owned children, or an object it references (a Secret, a Cluster),
    /// changed or disappeared: the pass reads what changed from the caches.
    ChildChanged,
    /// A timer fired; stale generations (re-armed or cancelled timers) are ignored.
    TimerFired {
        purpose: TimerPurpose,
        generation: u64,
    },
    /// Run one reconcile pass now (sent by the actor to itself; at most one is queued).
    Reconcile,
    /// The supervisor took the actor out of the registry: stop without a trace if the pass of
    /// `epoch` is still the last one and nothing is queued, else say `Awake` and stay.
    Hibernate { epoch: u64 },
}
