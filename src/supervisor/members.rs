//! Dynamic membership (`--shards auto`): each member holds a Lease of its own, labelled
//! [`MEMBER_LABEL`]; the unexpired ones form the ring. Expiry is judged as for the leader
//! Lease (silence measured on our own monotonic clock), and a member whose renewals fail
//! stops before anyone may count it gone. The hand-off rule is `reconcile::shard::Handshake`;
//! the view a member drained to is published in its Lease's [`VIEW_ANNOTATION`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::{Client, ResourceExt};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

use super::leader::{LeaderConfig, Seen, held_spec};
use super::operator::Resharder;
use crate::reconcile::shard::{Handshake, Peer, Step};

pub const MEMBER_LABEL: &str = "pgtoolbox.fyannk.dev/shard-member";
pub const VIEW_ANNOTATION: &str = "pgtoolbox.fyannk.dev/shard-view";

/// A Lease silent this many of its durations is collected (its member is long gone).
const STALE_AFTER: u32 = 4;

/// The Lease timings of a member (those of the leader Lease) and its own Lease's name.
pub fn member_config(namespace: &str, identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_name: format!("pgtoolbox-operator-shard-{identity}"),
        ..LeaderConfig::new(namespace, identity)
    }
}

/// Creates or renews our Lease, showing `view`.
async fn renew(api: &Api<Lease>, cfg: &LeaderConfig, view: Option<u64>) -> Result<(), kube::Error> {
    let now = cfg.clock.now();
    let previous = api.get_opt(&cfg.lease_name).await?;
    let mut lease = previous.clone().unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(cfg.lease_name.clone()),
            ..ObjectMeta::default()
        },
        spec: None,
    });
    lease.spec = Some(held_spec(
        previous.as_ref().and_then(|l| l.spec.as_ref()),
        cfg,
        now,
    ));
    lease
        .labels_mut()
        .insert(MEMBER_LABEL.into(), cfg.identity.clone());
    let annotations = lease.annotations_mut();
    match view {
        Some(view) => annotations.insert(VIEW_ANNOTATION.into(), format!("{view:016x}")),
        None => annotations.remove(VIEW_ANNOTATION),
    };
    match previous {
        // The resourceVersion carried over makes this a compare-and-swap.
        Some(_) => {
            api.replace(&cfg.lease_name, &PostParams::default(), &lease)
                .await?
        }
        None => api.create(&PostParams::default(), &lease).await?,
    };
    Ok(())
}

/// Renews our Lease until a renewal has not succeeded for the deadline. `published` is the
/// view to show; `landed` the last one a successful renewal wrote. The deadline runs from the
/// first renewal that landed in time: before it the member owns nothing (`follow` waits for it),
/// so a first write slowed by a busy server (the caches' first lists at start) is waited for and
/// made again rather than taken as a lost Lease.
async fn renew_loop(
    api: Api<Lease>,
    cfg: LeaderConfig,
    mut published: watch::Receiver<Option<u64>>,
    landed: watch::Sender<Option<u64>>,
) {
    let mut valid_until: Option<Instant> = None;
    loop {
        let attempt = Instant::now();
        let view = *published.borrow_and_update();
        let renewal = renew(&api, &cfg, view);
        let outcome = match valid_until {
            Some(until) => match tokio::time::timeout_at(until, renewal).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    // Said here: the loss is otherwise logged without its cause.
                    tracing::warn!(
                        deadline = ?cfg.deadline(),
                        in_flight_for = ?attempt.elapsed(),
                        "shard member Lease not renewed within the deadline: a renewal was still waiting for the API server"
                    );
                    return;
                }
            },
            None => renewal.await,
        };
        let renewed = match outcome {
            // Only a renewal that landed within the deadline counts: the others may have seen
            // it as early as the attempt. A first one that landed later is simply made again.
            Ok(()) if Instant::now() < attempt + cfg.deadline() => {
                valid_until = Some(attempt + cfg.deadline());
                let _ = landed.send(Some(view.unwrap_or(0)));
                true
            }
            Ok(()) => {
                tracing::info!("shard member Lease written after the deadline: renewing");
                false
            }
            Err(err) => {
                tracing::warn!(error = %err, "shard member Lease renewal");
                false
            }
        };
        // A failed renewal is tried again at the retry period (as the leader Lease's): waiting
        // a whole renewal period could reach the deadline after a single error.
        let wait = if renewed {
            cfg.renew_every
        } else {
            cfg.retry_every
        };
        let next = match valid_until {
            Some(until) => (Instant::now() + wait).min(until),
            None => Instant::now() + wait,
        };
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            // A new view is published at once.
            _ = published.changed() => {}
        }
        if valid_until.is_some_and(|until| Instant::now() >= until) {
            tracing::warn!(
                deadline = ?cfg.deadline(),
                "shard member Lease not renewed within the deadline: the renewals failed"
            );
            return;
        }
    }
}

/// The live members among the listed Leases; stale ones are deleted on the way.
async fn live_members(
    api: &Api<Lease>,
    cfg: &LeaderConfig,
    seen: &mut HashMap<String, Seen>,
) -> Result<Vec<Peer>, kube::Error> {
    let leases = api
        .list(&ListParams::default().labels(MEMBER_LABEL))
        .await?;
    let mut live = BTreeMap::new();
    let mut listed = Vec::new();
    for lease in leases {
        let name = lease.name_any();
        listed.push(name.clone());
        let Some(spec) = lease.spec.as_ref() else {
            continue;
        };
        let Some(identity) = spec.holder_identity.clone() else {
            continue;
        };
        let silent = seen
            .entry(name.clone())
            .or_insert_with(Seen::new)
            .unchanged_for(Some(spec));
        let duration = Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(15)).unwrap_or(15),
        );
        if identity == cfg.identity || silent <= duration {
            let view = lease
                .annotations()
                .get(VIEW_ANNOTATION)
                .and_then(|v| u64::from_str_radix(v, 16).ok());
            live.insert(identity.clone(), Peer { identity, view });
        } else if silent > duration * STALE_AFTER {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    resource_version: lease.resource_version(),
                    uid: None,
                }),
                ..DeleteParams::default()
            };
            if let Err(err) = api.delete(&name, &params).await {
                tracing::debug!(lease = %name, error = %err, "stale member Lease not collected");
            }
        }
    }
    seen.retain(|name, _| listed.contains(name));
    Ok(live.into_values().collect())
}

/// This member's place in the ring, kept up in the background.
pub struct Membership {
    lost: watch::Receiver<bool>,
    api: Api<Lease>,
    lease_name: String,
    stop_within: Duration,
    _task: AbortOnDropHandle<()>,
}

impl Membership {
    /// Joins: renews our Lease and hands the operator its share as the ring changes.
    pub fn join(client: Client, cfg: LeaderConfig, resharder: Resharder) -> Self {
        let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
        let (lost_tx, lost) = watch::channel(false);
        let (publish, published) = watch::channel(None);
        let (landed_tx, landed) = watch::channel(None);
        // Aborted with the membership: a dropped member renews nothing.
        let renewer = AbortOnDropHandle::new(tokio::spawn(renew_loop(
            api.clone(),
            cfg.clone(),
            published,
            landed_tx,
        )));
        let (task_api, task_cfg) = (api.clone(), cfg.clone());
        let task = tokio::spawn(async move {
            let handshake = follow(task_api, task_cfg, resharder, publish, landed);
            tokio::select! {
                _ = renewer => {}
                _ = handshake => {}
            }
            tracing::warn!("shard membership lost");
            let _ = lost_tx.send(true);
        });
        Self {
            lost,
            api,
            lease_name: cfg.lease_name.clone(),
            stop_within: cfg.stop_within(),
            _task: AbortOnDropHandle::new(task),
        }
    }

    /// Resolves once our Lease may no longer be counted on: the member must stop.
    pub async fn lost(&mut self) {
        let _ = self.lost.wait_for(|lost| *lost).await;
    }

    /// After [`Membership::lost`], how long the member's work has to stop.
    pub fn stop_within(&self) -> Duration {
        self.stop_within
    }

    /// Leaves the ring at a graceful stop (after the operator stopped): deleting our Lease
    /// lets the others take our objects without waiting for it to expire.
    pub async fn leave(self) {
        let Self {
            api,
            lease_name,
            _task,
            ..
        } = self;
        drop(_task);
        if let Err(err) = api.delete(&lease_name, &DeleteParams::default()).await {
            tracing::warn!(error = %err, "shard member Lease not deleted");
        }
    }
}

/// Follows the ring: observe the live members, drain, publish, adopt (see `Handshake`).
async fn follow(
    api: Api<Lease>,
    cfg: LeaderConfig,
    resharder: Resharder,
    publish: watch::Sender<Option<u64>>,
    mut landed: watch::Receiver<Option<u64>>,
) {
    let mut handshake = Handshake::new(cfg.identity.clone(), resharder.placement());
    let mut seen = HashMap::new();
    loop {
        // Read only after our last publication landed (the hand-off's ordering rests on it).
        let want = publish.borrow().unwrap_or(0);
        if landed.wait_for(|v| *v == Some(want)).await.is_err() {
            return;
        }
        match live_members(&api, &cfg, &mut seen).await {
            Ok(live) => match handshake.observe(&live) {
                Step::Drain {
                    ownership,
                    publish: view,
                } => {
                    tracing::info!(members = live.len(), "shard view changed: draining");
                    if !resharder.apply(ownership).await {
                        tracing::warn!("a kind did not answer the hand-off: leaving the ring");
                        return;
                    }
                    let _ = publish.send(Some(view));
                    continue;
                }
                Step::Adopt(ownership) => {
                    tracing::info!(members = live.len(), "shard view agreed: adopting");
                    if !resharder.apply(ownership).await {
                        tracing::warn!("a kind did not answer the hand-off: leaving the ring");
                        return;
                    }
                }
                Step::Hold => {}
            },
            Err(err) => tracing::warn!(error = %err, "shard members not listed"),
        }
        tokio::time::sleep(cfg.retry_every).await;
    }
}
