use kube::runtime::watcher;
use ractor::{ActorId, ActorRef};

use super::{ObjectKey, ObjectMsg, TimerPurpose};

/// Messages of a per-kind supervisor.
#[derive(Debug)]
pub enum KindMsg<K> {
    /// An event of the managed kind's watch number `source` (one watch per watched namespace).
    Watch {
        source: usize,
        event: watcher::Event<K>,
    },
    /// An object of the managed kind's watch that cannot be decoded (changed, or deleted, as
    /// such): out of the store, as a list without it would leave it.
    Undecodable(ObjectKey),
    /// A child or reference change for an object that had no live actor when it was sent: a
    /// hibernated object is woken by it.
    Wake(ObjectKey),
    /// The kind's timer wheel fired a timer of `key`.
    TimerFired {
        key: ObjectKey,
        purpose: TimerPurpose,
        generation: u64,
    },
    /// The restart backoff of a failed object actor elapsed: spawn it again.
    Respawn(ObjectKey),
    /// A restarted object actor completed a pass: forget its restart count.
    Recovered(ObjectKey),
    /// An object actor finished a successful pass with nothing queued: it may hibernate once
    /// it stayed idle for the kind's linger. `epoch` names that pass.
    Idle {
        key: ObjectKey,
        actor: ActorId,
        epoch: u64,
    },
    /// Idle actors whose linger elapsed are asked to hibernate.
    Sweep,
    /// An actor admitted from the cold-start queue finished its first pass (either way): its
    /// slot goes to the next waiting object.
    FirstPassDone(ObjectKey),
    /// A first-pass slot was freed without a pass (its actor failed to start): admit the next.
    Admit,
    /// An actor asked to hibernate found work queued meanwhile and stays live.
    Awake {
        key: ObjectKey,
        actor: ActorRef<ObjectMsg<K>>,
    },
    /// What the supervisor holds per object (a test checks none of it outlives its object).
    Census(ractor::RpcReplyPort<KindCensus>),
    /// This member's share changed: drain what it lost; the reply comes once the drained
    /// actors ended, and says whether the share may hold objects this member has not seen.
    Drain(
        std::sync::Arc<crate::ring::Ownership>,
        ractor::RpcReplyPort<bool>,
    ),
    /// After a drain (and the children caches' relist): adopt what the share gained.
    Adopt(ractor::RpcReplyPort<()>),
}

/// The objects a kind supervisor holds state for, by the state held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindCensus {
    pub kind: String,
    /// Objects with a live actor (hibernating ones included).
    pub live: Vec<ObjectKey>,
    /// Objects kept without an actor (their copy packed).
    pub hibernated: Vec<ObjectKey>,
    /// Objects whose actor waits for a restart.
    pub restarting: Vec<ObjectKey>,
    /// Objects with a timer armed.
    pub timers: Vec<ObjectKey>,
    /// The supervisor's copy of every object, as JSON (decoded, or packed while it
    /// hibernates): a test checks that none holds a Secret value.
    pub copies: Vec<String>,
}

/// Messages of the root supervisor. It only supervises; it has nothing to be told but to stop.
#[derive(Debug)]
pub enum RootMsg {
    Shutdown,
}
