//! Leader election through a `coordination.k8s.io/v1` Lease: one active replica.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

#[derive(Clone, Debug)]
pub struct LeaderConfig {
    pub namespace: String,
    pub lease_name: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_every: Duration,
    pub retry_every: Duration,
    /// The time of day written into and judged from the Lease.
    pub clock: crate::runtime::Clock,
}

impl LeaderConfig {
    pub fn new(namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            lease_name: "pgtoolbox-operator".into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
            retry_every: Duration::from_secs(2),
            clock: crate::runtime::Clock::System,
        }
    }
}

/// May `me` take (or keep) the lease at `now`? Free, ours, or expired.
pub fn may_hold(lease: &Lease, me: &str, now: Timestamp) -> bool {
    let Some(spec) = &lease.spec else { return true };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() || holder == me {
        return true;
    }
    let seconds = i64::from(spec.lease_duration_seconds.unwrap_or(15));
    match &spec.renew_time {
        Some(MicroTime(renewed)) => {
            now > renewed
                .saturating_add(SignedDuration::from_secs(seconds))
                .unwrap_or(*renewed)
        }
        None => true,
    }
}

fn held_spec(previous: Option<&LeaseSpec>, cfg: &LeaderConfig, now: Timestamp) -> LeaseSpec {
    let ours = previous.and_then(|s| s.holder_identity.as_deref()) == Some(cfg.identity.as_str());
    let transitions = previous.and_then(|s| s.lease_transitions).unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(cfg.identity.clone()),
        lease_duration_seconds: i32::try_from(cfg.lease_duration.as_secs()).ok(),
        acquire_time: if ours {
            previous.and_then(|s| s.acquire_time.clone())
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        // A first holder is no transition; a change of holder is.
        lease_transitions: Some(if ours || previous.is_none() {
            transitions
        } else {
            transitions + 1
        }),
        ..LeaseSpec::default()
    }
}

/// One attempt to take or renew the lease. `Ok(false)`: someone else holds it.
async fn try_hold(api: &Api<Lease>, cfg: &LeaderConfig) -> Result<bool, kube::Error> {
    let now = cfg.clock.now();
    match api.get_opt(&cfg.lease_name).await? {
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(cfg.lease_name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(held_spec(None, cfg, now)),
            };
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(err) => Err(err),
            }
        }
        Some(lease) if may_hold(&lease, &cfg.identity, now) => {
            let mut next = lease.clone();
            next.spec = Some(held_spec(lease.spec.as_ref(), cfg, now));
            // The resourceVersion carried over makes this a compare-and-swap.
            match api
                .replace(&lease.name_any(), &PostParams::default(), &next)
                .await
            {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(err) => Err(err),
            }
        }
        Some(_) => Ok(false),
    }
}

/// Held leadership: renewed in the background until dropped.
pub struct Leadership {
    lost: watch::Receiver<bool>,
    _renewer: AbortOnDropHandle<()>,
}

impl Leadership {
    /// Resolves when the lease could not be renewed in time.
    pub async fn lost(&mut self) {
        let _ = self.lost.wait_for(|lost| *lost).await;
    }
}

/// Wait until this replica holds the lease.
pub async fn acquire(client: Client, cfg: LeaderConfig) -> Leadership {
    let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
    loop {
        match try_hold(&api, &cfg).await {
            Ok(true) => break,
            Ok(false) => tracing::debug!(lease = %cfg.lease_name, "another replica leads"),
            Err(err) => tracing::warn!(error = %err, "leader election"),
        }
        tokio::time::sleep(cfg.retry_every).await;
    }
    tracing::info!(identity = %cfg.identity, "became leader");
    let (tx, lost) = watch::channel(false);
    let renewer = tokio::spawn(async move {
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(cfg.renew_every).await;
            match try_hold(&api, &cfg).await {
                Ok(true) => last_renewal = tokio::time::Instant::now(),
                Ok(false) => break,
                Err(err) => {
                    tracing::warn!(error = %err, "lease renewal");
                    if last_renewal.elapsed() >= cfg.lease_duration {
                        break;
                    }
                }
            }
        }
        let _ = tx.send(true);
    });
    Leadership {
        lost,
        _renewer: AbortOnDropHandle::new(renewer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, renewed: Timestamp) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(renewed)),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn a_lease_is_taken_when_free_ours_or_expired() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let fresh = now - SignedDuration::from_secs(5);
        let stale = now - SignedDuration::from_secs(16);
        assert!(may_hold(&lease("", fresh), "me", now));
        assert!(may_hold(&lease("me", fresh), "me", now));
        assert!(!may_hold(&lease("other", fresh), "me", now));
        assert!(may_hold(&lease("other", stale), "me", now));
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_does_not() {
        let cfg = LeaderConfig::new("ns", "me");
        let now = Timestamp::from_second(1_000_000).unwrap();
        let theirs = lease("other", now).spec;
        let taken = held_spec(theirs.as_ref(), &cfg, now);
        assert_eq!(taken.lease_transitions, Some(1));
        let renewed = held_spec(Some(&taken), &cfg, now + SignedDuration::from_secs(5));
        assert_eq!(renewed.lease_transitions, Some(1));
        assert_eq!(renewed.acquire_time, taken.acquire_time);
    }
}
