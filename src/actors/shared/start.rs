//! Starting the shared actors before any watch: the namespace-refusal tracker decides which
//! namespaces to watch, the prober probes the optional APIs there, and the secret router
//! starts its metadata-only Secret watch. Their answers go into [`Shared`].

use std::sync::Arc;

use kube::Client;
use ractor::{Actor, ActorRef, SpawnErr};

use crate::actors::Shared;
use crate::actors::not_watched::NotWatchedMarker;
use crate::actors::notice_routes::{NoticeRoutes, SecretRoutes};
use crate::actors::prober::ProberMsg;
use crate::actors::prober::{ProberArgs, ProberStartError, start_prober};
use crate::actors::refusals::RefusalMsg;
use crate::actors::refusals::{RefusalError, TrackerArgs, start_refusal_tracker};
use crate::actors::router_supervisor::{
    Respawn, RouterSlot, RouterSupervisor, RouterSupervisorArgs,
};
use crate::actors::secret_router::RouterArgs;
use crate::children::ReferenceIndex;
use crate::health::Readiness;
use crate::k8s::{EventSink, WatchScope};
use crate::messages::shared::SecretRouterMsg;
use crate::metrics::OperatorMetrics;
use crate::reconcile::namespace_permissions::WatchPlan;
use crate::ring::Ownership;
use crate::runtime::{BackoffPolicy, OperatorSettings};

#[derive(Debug, thiserror::Error)]
pub enum SharedStartError {
    #[error("optional-API probe: {0}")]
    Prober(Box<ProberStartError>),
    #[error("namespace permissions: {0}")]
    Refusals(Box<RefusalError>),
    #[error(
        "the operator lacks permissions in every namespace of WATCH_NAMESPACES ({0}); nothing to watch"
    )]
    NothingToWatch(String),
    #[error("the secret router could not start: {0}")]
    Router(#[from] SpawnErr),
}

/// The running shared actors and the state they share with the object actors.
pub struct SharedActors {
    pub shared: Arc<Shared>,
    pub plan: Arc<WatchPlan>,
    pub prober: ActorRef<ProberMsg>,
    pub tracker: ActorRef<RefusalMsg>,
    /// Marks the dropped namespaces' objects of this replica's share (again after it changed).
    pub marker: Arc<NotWatchedMarker>,
    /// Restarts the secret router if it fails.
    pub router_supervisor: ActorRef<Respawn>,
    router: Arc<RouterSlot>,
}

impl SharedActors {
    /// The secret router running now (`None` while a restart is pending).
    pub fn router(&self) -> Option<ActorRef<SecretRouterMsg>> {
        self.router.current()
    }

    /// Stops the three actors and waits for them (the router's watch, and its client, go too).
    pub async fn stop(&self) {
        let cells = [
            self.router_supervisor.get_cell(),
            self.prober.get_cell(),
            self.tracker.get_cell(),
        ];
        for cell in cells {
            if let Err(error) = cell.stop_and_wait(None, Some(STOP_BOUND)).await {
                tracing::warn!(%error, "a shared actor did not stop in time");
            }
        }
    }
}

/// How long each shared actor gets to stop.
const STOP_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// The namespaces left to watch once the dropped ones are taken out.
fn kept_scope(listed: &[String], plan: &WatchPlan) -> Result<Vec<String>, SharedStartError> {
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    if plan.watched.is_empty() {
        return Err(SharedStartError::NothingToWatch(listed.join(", ")));
    }
    Ok(plan.watched.clone())
}

/// Runs the start-up checks for the kinds the operator runs (`kinds`, as
/// `OperatorBuilder::kind_names` lists them) and starts the shared actors of one replica.
/// `settings.watch_namespaces` in the returned [`Shared`] holds only the namespaces kept; a
/// probe failure fails the start.
pub async fn start_shared_actors(
    client: &Client,
    kinds: &[String],
    settings: OperatorSettings,
    metrics: OperatorMetrics,
    readiness: Readiness,
) -> Result<SharedActors, SharedStartError> {
    let ownership = Ownership::default();
    start_shared_actors_owning(client, kinds, settings, metrics, readiness, ownership).await
}

/// [`start_shared_actors`] for a replica holding `ownership` from the start (its
/// `OperatorBuilder::ownership`): the start-up marking of the dropped namespaces covers only
/// that share.
pub async fn start_shared_actors_owning(
    client: &Client,
    kinds: &[String],
    mut settings: OperatorSettings,
    metrics: OperatorMetrics,
    readiness: Readiness,
    ownership: Ownership,
) -> Result<SharedActors, SharedStartError> {
    let listed = WatchScope::from_namespaces(&settings.watch_namespaces);
    let tracking = start_refusal_tracker(TrackerArgs {
        client: client.clone(),
        scope: listed,
        metrics: metrics.clone(),
        kinds: kinds.to_vec(),
        ownership,
        events: EventSink::new(client.clone()),
    })
    .await
    .map_err(|e| SharedStartError::Refusals(Box::new(e)))?;
    settings.watch_namespaces = kept_scope(&settings.watch_namespaces, &tracking.plan)?;
    let scope = WatchScope::from_namespaces(&settings.watch_namespaces);
    let (prober, optional_apis) = start_prober(ProberArgs {
        client: client.clone(),
        scope: scope.clone(),
        metrics: metrics.clone(),
    })
    .await
    .map_err(|e| SharedStartError::Prober(Box::new(e)))?;
    readiness.mark_probe_done();
    let notices = Arc::new(NoticeRoutes::default());
    let router = Arc::new(RouterSlot::default());
    let secrets = ReferenceIndex::new("Secrets", crate::children::secrets_resource());
    let (router_supervisor, _) = Actor::spawn(
        None,
        RouterSupervisor,
        RouterSupervisorArgs {
            router: RouterArgs {
                subscriber: notices.clone(),
                index: secrets.clone(),
                watch: Some((client.clone(), scope)),
            },
            slot: router.clone(),
            restart: BackoffPolicy::RESTART,
        },
    )
    .await?;
    let shared = Shared {
        optional_apis,
        refusals: tracking.runtime,
        secrets: SecretRoutes::routed(secrets),
        notices,
        readiness,
        ..Shared::with_metrics(settings, metrics)
    };
    Ok(SharedActors {
        shared: Arc::new(shared),
        plan: tracking.plan,
        prober,
        tracker: tracking.actor,
        marker: tracking.marker,
        router_supervisor,
        router,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::namespace_permissions::DroppedNamespace;

    #[test]
    fn all_namespaces_stay_all_and_an_empty_kept_list_is_an_error() {
        let plan = WatchPlan::default();
        assert_eq!(kept_scope(&[], &plan).ok(), Some(Vec::new()));
        let dropped_all = WatchPlan {
            watched: Vec::new(),
            dropped: vec![DroppedNamespace {
                namespace: "a".into(),
                missing: Vec::new(),
            }],
        };
        let err = kept_scope(&["a".to_owned()], &dropped_all).unwrap_err();
        assert!(err.to_string().contains("every namespace"), "{err}");
        let some = WatchPlan {
            watched: vec!["b".into()],
            dropped: dropped_all.dropped,
        };
        assert_eq!(
            kept_scope(&["a".to_owned(), "b".to_owned()], &some).ok(),
            Some(vec!["b".to_owned()])
        );
    }
}
