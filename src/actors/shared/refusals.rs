//! The namespace-refusal tracker: at start, asks the API server (SelfSubjectAccessReview)
//! whether the operator holds every permission it needs in each namespace of WATCH_NAMESPACES,
//! keeps the namespaces where it does, and tells the objects of the others why they are left out
//! (those of its share: see [`NotWatchedMarker`]).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use ractor::{Actor, ActorProcessingErr, ActorRef, SpawnErr};
use tracing::{info, instrument, warn};

use crate::actors::not_watched::{NotWatchedMarker, find_unreachable_requests};
use crate::actors::runtime_refusals::RuntimeRefusals;
use crate::k8s::WatchScope;
use crate::k8s::{EventSink, WriteBudget};
use crate::metrics::OperatorMetrics;
use crate::reconcile::namespace_permissions::{
    Permission, WatchPlan, plan_watch, required_permissions,
};
use crate::ring::Ownership;

/// Access reviews in flight at once.
const REVIEW_CONCURRENCY: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum RefusalError {
    #[error(
        "cannot check the operator's permission to {permission} in namespace {namespace}: {}",
        describe(source)
    )]
    Review {
        namespace: String,
        permission: Permission,
        #[source]
        source: kube::Error,
    },
    #[error("the namespace-refusal tracker could not start: {0}")]
    Spawn(String),
}

/// An API error as one short line: `401 Unauthorized: <message>`.
fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            format!("{} {}: {}", status.code, status.reason, status.message)
        }
        other => other.to_string(),
    }
}

fn review_of(namespace: &str, permission: &Permission) -> SelfSubjectAccessReview {
    let optional = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_owned()),
                verb: Some(permission.verb.to_owned()),
                group: Some(permission.group.to_owned()),
                resource: Some(permission.resource.to_owned()),
                subresource: optional(permission.subresource),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    }
}

async fn allowed(
    client: &Client,
    namespace: &str,
    permission: Permission,
) -> Result<bool, RefusalError> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answer = reviews
        .create(&PostParams::default(), &review_of(namespace, &permission))
        .await
        .map_err(|source| RefusalError::Review {
            namespace: namespace.to_owned(),
            permission,
            source,
        })?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// Reviews every required permission in every listed namespace and splits them into kept and
/// dropped. With every namespace watched (`WatchScope::All`) nothing is dropped.
#[instrument(skip(client))]
pub async fn check_namespaces(
    client: &Client,
    scope: &WatchScope,
    kinds: &[String],
) -> Result<WatchPlan, RefusalError> {
    let WatchScope::Namespaces(namespaces) = scope else {
        return Ok(WatchPlan::default());
    };
    let permissions = required_permissions(kinds);
    let mut checks = Vec::with_capacity(namespaces.len() * permissions.len());
    for ns in namespaces {
        checks.extend(permissions.iter().map(|p| (ns.clone(), *p)));
    }
    let answers: Vec<Result<(String, Permission, bool), RefusalError>> =
        futures::stream::iter(checks)
            .map(|(ns, permission)| async move {
                let ok = allowed(client, &ns, permission).await?;
                Ok((ns, permission, ok))
            })
            .buffer_unordered(REVIEW_CONCURRENCY)
            .collect()
            .await;
    let answers = answers.into_iter().collect::<Result<Vec<_>, _>>()?;
    let plan = plan_watch(namespaces, &answers);
    for dropped in &plan.dropped {
        warn!(
            namespace = %dropped.namespace,
            missing = %dropped.missing_list(),
            "namespace of WATCH_NAMESPACES not watched: permissions missing"
        );
    }
    info!(watched = ?plan.watched, dropped = plan.dropped.len(), "namespaces checked");
    Ok(plan)
}

/// What the tracker hands the rest of the operator.
pub struct RefusalTracking {
    pub actor: ActorRef<RefusalMsg>,
    pub plan: Arc<WatchPlan>,
    pub runtime: Arc<RuntimeRefusals>,
    /// Marks the dropped namespaces again when this member's share changes.
    pub marker: Arc<NotWatchedMarker>,
}

/// What the tracker is asked (once, at start).
pub enum RefusalMsg {
    /// The namespaces kept and dropped at start.
    Plan(ractor::RpcReplyPort<Arc<WatchPlan>>),
    /// The shared recorder of 403s met at run time.
    Runtime(ractor::RpcReplyPort<Arc<RuntimeRefusals>>),
    /// The marker of the dropped namespaces.
    Marker(ractor::RpcReplyPort<Arc<NotWatchedMarker>>),
}

pub struct NamespaceRefusalTracker;

pub struct TrackerArgs {
    pub client: Client,
    pub scope: WatchScope,
    pub metrics: OperatorMetrics,
    /// The kinds the operator runs: their permissions are checked, their objects marked.
    pub kinds: Vec<String>,
    /// The share of the objects this replica holds from the start (all of them for one
    /// replica): only those are marked at start.
    pub ownership: Ownership,
    /// Where the NamespaceNotWatched Events go.
    pub events: EventSink,
}

pub struct TrackerState {
    plan: Arc<WatchPlan>,
    runtime: Arc<RuntimeRefusals>,
    marker: Arc<NotWatchedMarker>,
}

impl Actor for NamespaceRefusalTracker {
    type Msg = RefusalMsg;
    type State = TrackerState;
    type Arguments = TrackerArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: TrackerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let plan = Arc::new(check_namespaces(&args.client, &args.scope, &args.kinds).await?);
        args.metrics.set_dropped_namespaces(plan.dropped.len());
        if args.kinds.iter().any(|k| k == "PgAccessRequest") && !plan.dropped.is_empty() {
            let writes = WriteBudget::new(1);
            let found = find_unreachable_requests(
                &args.client,
                &args.events,
                &writes,
                &plan,
                &args.ownership,
            )
            .await;
            args.metrics
                .set_unreachable_access_requests(found.requests.len());
        }
        let marker = NotWatchedMarker::new(args.client, plan.clone(), args.kinds, args.events);
        marker.mark(&args.ownership).await;
        Ok(TrackerState {
            plan,
            runtime: Arc::new(RuntimeRefusals::new()),
            marker: Arc::new(marker),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: RefusalMsg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            RefusalMsg::Plan(reply) => {
                let _ = reply.send(state.plan.clone());
            }
            RefusalMsg::Runtime(reply) => {
                let _ = reply.send(state.runtime.clone());
            }
            RefusalMsg::Marker(reply) => {
                let _ = reply.send(state.marker.clone());
            }
        }
        Ok(())
    }
}

/// Starts the tracker: the namespaces to watch, the shared runtime 403 recorder, and the
/// marker of the dropped namespaces (which marked this replica's share before returning).
pub async fn start_refusal_tracker(args: TrackerArgs) -> Result<RefusalTracking, RefusalError> {
    let (actor, _task) = Actor::spawn(None, NamespaceRefusalTracker, args)
        .await
        .map_err(|error| match error {
            SpawnErr::StartupFailed(inner) => match inner.downcast::<RefusalError>() {
                Ok(refusal) => *refusal,
                Err(other) => RefusalError::Spawn(other.to_string()),
            },
            other => RefusalError::Spawn(other.to_string()),
        })?;
    let spawn_err = |e: ractor::RactorErr<RefusalMsg>| RefusalError::Spawn(e.to_string());
    let plan = ractor::call!(actor, RefusalMsg::Plan).map_err(spawn_err)?;
    let runtime = ractor::call!(actor, RefusalMsg::Runtime).map_err(spawn_err)?;
    let marker = ractor::call!(actor, RefusalMsg::Marker).map_err(spawn_err)?;
    Ok(RefusalTracking {
        actor,
        plan,
        runtime,
        marker,
    })
}
