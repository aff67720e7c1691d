//! The hand-off: one member SIGKILLed, then at once a drift the operator repairs (a second
//! user added to the RoleBinding of approved requests, which the owner deletes, reporting
//! `RoleBindingDrifted`) on a sample spread over all the requests. The survivors' own requests
//! are repaired at once; the killed member's only after its Lease expired and the survivors
//! agreed to split its share.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::common::stats::median;
use super::members::{self, Member};
use super::observe::Observer;
use super::seed::{self, Shape};

/// Concurrent clients sending the drifts.
const WRITERS: usize = 16;
/// Bound on the wait for the last repair (a Lease expiry and a few renewal periods).
const REPAIR_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HandOff {
    pub sample: usize,
    /// Of the sample, how many the killed member owned.
    pub killed_owned: usize,
    /// From the kill until every drift was sent.
    pub sent_s: f64,
    /// Each drift's repair, from the drift sent until its status showed it, ms: the requests of
    /// the killed member and those of the survivors.
    pub killed_ms: Vec<f64>,
    pub survivors_ms: Vec<f64>,
}

impl HandOff {
    fn all_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.killed_ms.iter().chain(&self.survivors_ms).copied()
    }

    /// The slowest repair: the hand-off.
    pub fn max_ms(&self) -> f64 {
        self.all_ms().fold(f64::NAN, f64::max)
    }

    pub fn p50_ms(&self) -> f64 {
        median(self.all_ms().collect())
    }
}

/// `k` approved (non-expiring) requests among the first `n`, evenly spread.
pub fn sample(n: usize, k: usize) -> Vec<usize> {
    let approved: Vec<usize> = (0..n)
        .filter(|&i| Shape::of(i) == Shape::Approved)
        .collect();
    let step = (approved.len() / k.max(1)).max(1);
    approved.into_iter().step_by(step).take(k).collect()
}

/// Kills `victim` (the last member) and times the repair of a drift on each of `indices`.
pub async fn measure(
    client: &kube::Client,
    observer: &mut Observer,
    victim: &mut Member,
    indices: &[usize],
) -> HandOff {
    let identities = members::identities(client).await;
    let rings = members::rings(&identities);
    let prefix = format!("{}-", victim.name);
    let killed = identities
        .iter()
        .position(|id| id.starts_with(&prefix))
        .expect("the victim holds a Lease");
    let killed_owned: Vec<bool> = indices
        .iter()
        .map(|&i| members::owner_of(&rings, i) == Some(killed))
        .collect();

    victim.kill();
    let killed_at = Instant::now();
    let sent = drift_all(client, indices).await;
    let sent_s = killed_at.elapsed().as_secs_f64();
    eprintln!(
        "   killed {} ({} of {} sampled requests were its own); drifts sent in {sent_s:.2} s",
        identities[killed],
        killed_owned.iter().filter(|k| **k).count(),
        indices.len()
    );
    let seen = observer
        .reached_at(indices, "RoleBindingDrifted", REPAIR_TIMEOUT)
        .await;
    let (mut killed_ms, mut survivors_ms) = (Vec::new(), Vec::new());
    for ((sent, seen), own) in sent.iter().zip(&seen).zip(&killed_owned) {
        let ms = seen.saturating_duration_since(*sent).as_secs_f64() * 1e3;
        if *own {
            killed_ms.push(ms);
        } else {
            survivors_ms.push(ms);
        }
    }
    HandOff {
        sample: indices.len(),
        killed_owned: killed_ms.len(),
        sent_s,
        killed_ms,
        survivors_ms,
    }
}

/// Sends the drift of every request in `indices`; answers when each was sent, in their order.
async fn drift_all(client: &kube::Client, indices: &[usize]) -> Vec<Instant> {
    let chunk = indices.len().div_ceil(WRITERS).max(1);
    let tasks: Vec<_> = indices
        .chunks(chunk)
        .map(|chunk| {
            let (client, chunk) = (client.clone(), chunk.to_vec());
            tokio::spawn(async move {
                let mut sent = Vec::new();
                for index in chunk {
                    sent.push(seed::drift_binding(&client, index).await);
                }
                sent
            })
        })
        .collect();
    let mut sent = Vec::new();
    for task in tasks {
        sent.extend(task.await.expect("drift writer"));
    }
    sent
}
