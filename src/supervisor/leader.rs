//! Leader election through a `coordination.k8s.io/v1` Lease: one active replica.
//!
//! Two clocks, two jobs. The times written into the Lease (`renewTime`, `acquireTime`) are for
//! people reading it; nobody judges expiry by comparing them with their own time of day, since
//! two replicas' clocks may disagree. A standby instead measures, on its own monotonic clock,
//! how long the Lease has stayed unchanged; the holder measures, on its own monotonic clock,
//! how long ago it sent its last successful renewal, and gives up `renew_deadline` after it,
//! before any standby can count `lease_duration` of silence (as client-go does).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

#[derive(Clone, Debug)]
pub struct LeaderConfig {
    pub namespace: String,
    pub lease_name: String,
    pub identity: String,
    pub lease_duration: Duration,
    /// The holder stops leading once this long has passed since it sent its last successful
    /// renewal. Shorter than `lease_duration`: the difference is the time its work gets to
    /// stop before a standby may take over.
    pub renew_deadline: Duration,
    pub renew_every: Duration,
    pub retry_every: Duration,
    /// The time of day written into the Lease.
    pub clock: crate::runtime::Clock,
}

impl LeaderConfig {
    pub fn new(namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            lease_name: "pgtoolbox-operator".into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            renew_every: Duration::from_secs(5),
            retry_every: Duration::from_secs(2),
            clock: crate::runtime::Clock::System,
        }
    }

    /// The deadline, never past the lease's own duration.
    pub(super) fn deadline(&self) -> Duration {
        self.renew_deadline.min(self.lease_duration)
    }

    /// How long a replica that lost the lease has to stop its work before a standby may act:
    /// what separates its deadline from the lease's duration, less a second for the exit.
    pub fn stop_within(&self) -> Duration {
        self.lease_duration
            .saturating_sub(self.deadline())
            .saturating_sub(Duration::from_secs(1))
    }
}

/// The Lease as last seen, and since when (monotonic) it has not changed.
#[derive(Debug)]
pub(super) struct Seen {
    spec: Option<LeaseSpec>,
    since: Instant,
}

impl Seen {
    pub(super) fn new() -> Self {
        Self {
            spec: None,
            since: Instant::now(),
        }
    }

    /// Records `spec` and returns how long it has stayed as it is now.
    pub(super) fn unchanged_for(&mut self, spec: Option<&LeaseSpec>) -> Duration {
        let now = Instant::now();
        if self.spec.as_ref() != spec {
            self.spec = spec.cloned();
            self.since = now;
        }
        now.saturating_duration_since(self.since)
    }
}

/// May `me` take (or keep) the lease, the record having stayed unchanged for `unchanged_for`?
/// Free, ours, or its holder silent for longer than the duration it announced.
pub fn may_hold(lease: &Lease, me: &str, unchanged_for: Duration) -> bool {
    let Some(spec) = &lease.spec else { return true };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() || holder == me {
        return true;
    }
    let seconds = u64::try_from(spec.lease_duration_seconds.unwrap_or(15)).unwrap_or(0);
    unchanged_for > Duration::from_secs(seconds)
}

pub(super) fn held_spec(
    previous: Option<&LeaseSpec>,
    cfg: &LeaderConfig,
    now: Timestamp,
) -> LeaseSpec {
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
async fn try_hold(
    api: &Api<Lease>,
    cfg: &LeaderConfig,
    seen: &mut Seen,
) -> Result<bool, kube::Error> {
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
        Some(lease) => {
            let unchanged_for = seen.unchanged_for(lease.spec.as_ref());
            if !may_hold(&lease, &cfg.identity, unchanged_for) {
                return Ok(false);
            }
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
    }
}

/// Held leadership: renewed in the background until dropped or released.
pub struct Leadership {
    lost: watch::Receiver<bool>,
    stop_within: Duration,
    api: Api<Lease>,
    cfg: LeaderConfig,
    renewer: AbortOnDropHandle<()>,
}

impl Leadership {
    /// Resolves once the lease may no longer be counted on: another holder, or no successful
    /// renewal within the deadline (a renewal still in flight then does not count).
    pub async fn lost(&mut self) {
        let _ = self.lost.wait_for(|lost| *lost).await;
    }

    /// [`Leadership::lost`] as a future of its own, so that the caller can still
    /// [`Leadership::release`] once it resolves or is dropped.
    pub fn on_lost(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut lost = self.lost.clone();
        async move {
            let _ = lost.wait_for(|lost| *lost).await;
        }
    }

    /// Gives the lease up once this replica's work has stopped, as client-go's
    /// `ReleaseOnCancel` does: renewals stop, then a Lease that still names this replica is
    /// written free (no holder, one second), so a standby takes it at its next try instead of
    /// counting the whole duration of silence. A Lease someone else holds is left alone; a
    /// failed write only costs the standby that wait.
    pub async fn release(self) {
        let Leadership {
            api, cfg, renewer, ..
        } = self;
        renewer.abort();
        let _ = renewer.await;
        match release_lease(&api, &cfg).await {
            Ok(true) => tracing::info!(identity = %cfg.identity, "leader lease released"),
            Ok(false) => tracing::debug!(identity = %cfg.identity, "leader lease no longer ours"),
            Err(err) => tracing::warn!(
                error = %crate::conditions::readable(&err),
                "leader lease not released; a standby takes over once it expires"
            ),
        }
    }

    /// After [`Leadership::lost`], how long the replica's work has to stop.
    pub fn stop_within(&self) -> Duration {
        self.stop_within
    }
}

/// Wait until this replica holds the lease.
pub async fn acquire(client: Client, cfg: LeaderConfig) -> Leadership {
    let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
    let mut seen = Seen::new();
    let held_since = loop {
        // Taken before the Lease is read: the renewal written is no older than this.
        let attempt = Instant::now();
        match try_hold(&api, &cfg, &mut seen).await {
            Ok(true) => break attempt,
            Ok(false) => tracing::debug!(lease = %cfg.lease_name, "another replica leads"),
            Err(err) => {
                tracing::warn!(error = %crate::conditions::readable(&err), "leader election")
            }
        }
        tokio::time::sleep(cfg.retry_every).await;
    };
    tracing::info!(identity = %cfg.identity, "became leader");
    let (tx, lost) = watch::channel(false);
    let stop_within = cfg.stop_within();
    let (renew_api, renew_cfg) = (api.clone(), cfg.clone());
    let renewer = tokio::spawn(async move {
        renew(
            &renew_api,
            &renew_cfg,
            seen,
            held_since + renew_cfg.deadline(),
        )
        .await;
        tracing::warn!(identity = %renew_cfg.identity, "leadership lost");
        let _ = tx.send(true);
    });
    Leadership {
        lost,
        stop_within,
        api,
        cfg,
        renewer: AbortOnDropHandle::new(renewer),
    }
}

/// The Lease as a holder leaves it: nobody holds it, for one second, the transitions kept.
pub(super) fn released_spec(previous: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: previous.lease_transitions,
        ..LeaseSpec::default()
    }
}

/// Writes the Lease free if it still names this replica (compare-and-swap on its
/// resourceVersion). `Ok(false)`: it is gone or someone else's.
async fn release_lease(api: &Api<Lease>, cfg: &LeaderConfig) -> Result<bool, kube::Error> {
    let Some(lease) = api.get_opt(&cfg.lease_name).await? else {
        return Ok(false);
    };
    let Some(spec) = lease.spec.as_ref() else {
        return Ok(false);
    };
    if spec.holder_identity.as_deref() != Some(cfg.identity.as_str()) {
        return Ok(false);
    }
    let mut next = lease.clone();
    next.spec = Some(released_spec(spec, cfg.clock.now()));
    match api
        .replace(&lease.name_any(), &PostParams::default(), &next)
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(err) => Err(err),
    }
}

/// Renews until the lease is lost: returns when another replica holds it, or at `valid_until`
/// (pushed back by every successful renewal) whatever is in flight.
async fn renew(api: &Api<Lease>, cfg: &LeaderConfig, mut seen: Seen, mut valid_until: Instant) {
    let mut next = Instant::now() + cfg.renew_every;
    loop {
        if next >= valid_until {
            return;
        }
        tokio::time::sleep_until(next).await;
        let attempt = Instant::now();
        match tokio::time::timeout_at(valid_until, try_hold(api, cfg, &mut seen)).await {
            Ok(Ok(true)) => {
                valid_until = attempt + cfg.deadline();
                next = Instant::now() + cfg.renew_every;
            }
            Ok(Ok(false)) => return,
            Ok(Err(err)) => {
                tracing::warn!(error = %crate::conditions::readable(&err), "lease renewal");
                next = Instant::now() + cfg.retry_every;
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn a_lease_is_taken_when_free_ours_or_silent_for_its_duration() {
        let fresh = Duration::from_secs(5);
        let stale = Duration::from_secs(16);
        assert!(may_hold(&lease(""), "me", fresh));
        assert!(may_hold(&lease("me"), "me", fresh));
        assert!(!may_hold(&lease("other"), "me", fresh));
        assert!(may_hold(&lease("other"), "me", stale));
    }

    #[tokio::test(start_paused = true)]
    async fn silence_is_counted_from_the_last_change_seen_not_from_the_written_time() {
        let mut seen = Seen::new();
        let first = lease("other").spec;
        assert_eq!(seen.unchanged_for(first.as_ref()), Duration::ZERO);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(seen.unchanged_for(first.as_ref()), Duration::from_secs(10));
        // A renewal (whatever time it claims) starts the count again.
        let mut renewed = first.clone();
        if let Some(spec) = renewed.as_mut() {
            spec.renew_time = None;
        }
        assert_eq!(seen.unchanged_for(renewed.as_ref()), Duration::ZERO);
    }

    #[test]
    fn the_holder_stops_before_a_standby_may_take_over() {
        let cfg = LeaderConfig::new("ns", "me");
        assert!(cfg.deadline() + cfg.stop_within() < cfg.lease_duration);
        let odd = LeaderConfig {
            renew_deadline: Duration::from_secs(60),
            ..cfg
        };
        assert_eq!(odd.deadline(), odd.lease_duration);
        assert_eq!(odd.stop_within(), Duration::ZERO);
    }

    #[test]
    fn a_released_lease_is_free_at_once_and_keeps_its_transitions() {
        let cfg = LeaderConfig::new("ns", "me");
        let now = Timestamp::from_second(1_000_000).unwrap();
        let held = held_spec(lease("other").spec.as_ref(), &cfg, now);
        let released = Lease {
            metadata: ObjectMeta::default(),
            spec: Some(released_spec(&held, now)),
        };
        assert!(may_hold(&released, "standby", Duration::ZERO));
        let spec = released.spec.unwrap();
        assert_eq!(spec.lease_transitions, held.lease_transitions);
        assert_eq!(spec.lease_duration_seconds, Some(1));
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_does_not() {
        let cfg = LeaderConfig::new("ns", "me");
        let now = Timestamp::from_second(1_000_000).unwrap();
        let theirs = lease("other").spec;
        let taken = held_spec(theirs.as_ref(), &cfg, now);
        assert_eq!(taken.lease_transitions, Some(1));
        let later = Timestamp::from_second(1_000_005).unwrap();
        let renewed = held_spec(Some(&taken), &cfg, later);
        assert_eq!(renewed.lease_transitions, Some(1));
        assert_eq!(renewed.acquire_time, taken.acquire_time);
    }
}
