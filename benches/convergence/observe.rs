//! Watches every PgAccessRequest from the benchmark's side and tells when the fleet converged.
//!
//! It is started (and has listed) before the timed part, so it adds one open watch and no
//! request to the counters of the run; the same observer runs for every driver.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::watcher;
use pgtoolbox_operator::api::PgAccessRequest;
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

use super::seed::{Shape, index_of};

/// Every RoleBindingSynced reason the benchmark expects to see, as small codes.
const REASONS: [&str; 5] = [
    "AwaitingDecision",
    "AccessGranted",
    "AccessDenied",
    "AccessExpired",
    "RoleBindingDrifted",
];

fn code(reason: &str) -> u8 {
    REASONS
        .iter()
        .position(|r| *r == reason)
        .map_or(u8::MAX, |p| p as u8 + 1)
}

#[derive(Clone, Copy, Default)]
struct Seen {
    /// RoleBindingSynced reason code (0: no status yet).
    reason: u8,
    /// Ready was written for the current generation.
    ready_current: bool,
}

struct Fleet {
    seen: Vec<Seen>,
    expected: Vec<u8>,
    /// When each request's reason last changed (allocated with the observer, before any
    /// measurement of the run).
    reason_since: Vec<Option<Instant>>,
    with_status: usize,
    converged: usize,
    last_expiry_seen: Option<Instant>,
}

impl Fleet {
    fn is_converged(&self, index: usize) -> bool {
        let s = self.seen[index];
        s.ready_current && s.reason == self.expected[index]
    }

    fn update(&mut self, index: usize, now: Seen) {
        let had_status = self.seen[index].reason != 0;
        let was = self.is_converged(index);
        if self.seen[index].reason != now.reason {
            self.reason_since[index] = Some(Instant::now());
        }
        self.seen[index] = now;
        let is = self.is_converged(index);
        self.with_status =
            self.with_status + usize::from(now.reason != 0) - usize::from(had_status);
        self.converged = self.converged + usize::from(is) - usize::from(was);
        if is && !was && Shape::of(index).expiring() {
            self.last_expiry_seen = Some(Instant::now());
        }
    }
}

pub struct Observer {
    fleet: Arc<Mutex<Fleet>>,
    changed: watch::Receiver<u64>,
    _task: AbortOnDropHandle<()>,
}

fn seen_of(obj: &PgAccessRequest) -> Seen {
    let generation = obj.metadata.generation;
    let conditions = obj
        .status
        .as_ref()
        .map(|s| s.common.conditions.as_slice())
        .unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c.type_ == t);
    Seen {
        reason: find("RoleBindingSynced").map_or(0, |c| code(&c.reason)),
        ready_current: find("Ready").is_some_and(|c| c.observed_generation == generation),
    }
}

impl Observer {
    /// Starts watching and returns once the initial list is in.
    pub async fn start(client: &kube::Client, n: usize) -> Self {
        let fleet = Arc::new(Mutex::new(Fleet {
            seen: vec![Seen::default(); n],
            expected: (0..n).map(|i| code(Shape::of(i).final_reason())).collect(),
            reason_since: vec![None; n],
            with_status: 0,
            converged: 0,
            last_expiry_seen: None,
        }));
        let (tx, changed) = watch::channel(0u64);
        let (listed_tx, listed) = tokio::sync::oneshot::channel();
        let api: Api<PgAccessRequest> = Api::all(client.clone());
        let shared = fleet.clone();
        let task = tokio::spawn(async move {
            let mut listed_tx = Some(listed_tx);
            let mut events = watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let obj = match event {
                    Ok(watcher::Event::Apply(obj) | watcher::Event::InitApply(obj)) => obj,
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = listed_tx.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    Ok(_) => continue,
                    Err(err) => {
                        eprintln!("observer watch error: {err}");
                        continue;
                    }
                };
                let Some(index) = obj.metadata.name.as_deref().and_then(index_of) else {
                    continue;
                };
                if index >= n {
                    continue;
                }
                let seen = seen_of(&obj);
                shared
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .update(index, seen);
                tx.send_modify(|v| *v += 1);
            }
        });
        listed.await.expect("observer listed the fleet");
        Self {
            fleet,
            changed,
            _task: AbortOnDropHandle::new(task),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&Fleet) -> T) -> T {
        f(&self.fleet.lock().unwrap_or_else(|p| p.into_inner()))
    }

    async fn until(&mut self, what: &str, timeout: Duration, done: impl Fn(&Fleet) -> bool) {
        let fleet = self.fleet.clone();
        let check = |_: &u64| done(&fleet.lock().unwrap_or_else(|p| p.into_inner()));
        if tokio::time::timeout(timeout, self.changed.wait_for(check))
            .await
            .is_err()
        {
            let (status, converged) = self.with(|f| (f.with_status, f.converged));
            panic!(
                "{what}: not reached in {timeout:?} ({status} with status, {converged} converged)"
            );
        }
    }

    /// Every request has a status with its RoleBindingSynced reason.
    pub async fn all_with_status(&mut self, timeout: Duration) {
        let n = self.with(|f| f.seen.len());
        self.until("every status written", timeout, |f| f.with_status == n)
            .await;
    }

    /// Every request shows its final reason with Ready written for its generation.
    pub async fn all_converged(&mut self, timeout: Duration) {
        let n = self.with(|f| f.seen.len());
        self.until("every request converged", timeout, |f| f.converged == n)
            .await;
    }

    /// Waits until every request at `indices` shows RoleBindingSynced `reason`; answers, for
    /// each, when its reason became that one.
    pub async fn reached_at(
        &mut self,
        indices: &[usize],
        reason: &str,
        timeout: Duration,
    ) -> Vec<Instant> {
        let wanted = code(reason);
        self.until(reason, timeout, |f| {
            indices.iter().all(|&i| f.seen[i].reason == wanted)
        })
        .await;
        self.with(|f| {
            indices
                .iter()
                .map(|&i| f.reason_since[i].expect("a reason seen arrives with its instant"))
                .collect()
        })
    }

    /// When the last expiring request was seen converged.
    pub fn last_expiry_seen(&self) -> Option<Instant> {
        self.with(|f| f.last_expiry_seen)
    }
}
