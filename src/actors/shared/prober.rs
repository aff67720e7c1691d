//! The optional-API prober: asks the API server once at start which optional APIs are served
//! and readable in the watched namespaces, then holds the answer for the process's lifetime.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use ractor::{Actor, ActorProcessingErr, ActorRef, SpawnErr};
use tracing::{info, instrument, warn};

use crate::k8s::WatchScope;
use crate::metrics::OperatorMetrics;
use crate::reconcile::optional_api::{
    Answer, ApiState, Discovery, OptionalApi, ProbeError, ProbeResult, classify,
};

/// Probes in flight at once: enough to finish quickly, few enough not to burst a real server.
const PROBE_CONCURRENCY: usize = 8;

/// Why the prober could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProberStartError {
    #[error(transparent)]
    Probe(#[from] ProbeError),
    #[error("the optional-API prober actor could not start: {0}")]
    Spawn(String),
}

/// Reduces a client error to the answers the probe distinguishes.
pub fn answer_of(error: &kube::Error) -> Answer {
    match error {
        kube::Error::Api(status) => match status.code {
            401 => Answer::Unauthorized,
            403 => Answer::Forbidden,
            404 => Answer::NotFound,
            code => Answer::Other(format!("{code} {}: {}", status.reason, status.message)),
        },
        other => Answer::Other(other.to_string()),
    }
}

async fn discover(client: &Client, api: OptionalApi) -> Discovery {
    match client.list_api_group_resources(&api.api_version()).await {
        Ok(list) if list.resources.iter().any(|r| r.name == api.plural()) => Discovery::Served,
        Ok(_) => Discovery::ResourceNotListed,
        Err(error) => Discovery::Failed(answer_of(&error)),
    }
}

async fn read_once(client: &Client, api: OptionalApi, namespace: Option<&str>) -> Answer {
    let resource = api.resource();
    let handle: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    match handle.list(&ListParams::default().limit(1)).await {
        Ok(_) => Answer::Ok,
        Err(error) => answer_of(&error),
    }
}

#[instrument(skip(client), fields(api = %api))]
async fn probe_one(
    client: &Client,
    api: OptionalApi,
    scope: &WatchScope,
) -> Result<ApiState, ProbeError> {
    let discovery = discover(client, api).await;
    let reads = if discovery == Discovery::Served {
        futures::stream::iter(scope.namespaces())
            .map(|ns| async move {
                let answer = read_once(client, api, ns.as_deref()).await;
                (ns, answer)
            })
            .buffer_unordered(PROBE_CONCURRENCY)
            .collect::<Vec<_>>()
            .await
    } else {
        Vec::new()
    };
    classify(api, &discovery, &reads)
}

/// Probes every optional API. Fails on the first answer that is neither usable, a 404 or a 403.
pub async fn probe_optional_apis(
    client: &Client,
    scope: &WatchScope,
) -> Result<ProbeResult, ProbeError> {
    let results = futures::stream::iter(OptionalApi::ALL)
        .map(|api| async move { (api, probe_one(client, api, scope).await) })
        .buffer_unordered(PROBE_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    let mut states = BTreeMap::new();
    for (api, state) in results {
        states.insert(api, state?);
    }
    Ok(ProbeResult::new(states))
}

/// Publishes the probe's answer as metrics and one log line per degraded API.
pub fn publish(result: &ProbeResult, metrics: &OperatorMetrics) {
    for (api, state) in result.states() {
        metrics.set_optional_api(
            api.plural(),
            state.refused_namespace_count(),
            state.is_off(),
        );
        match state {
            ApiState::On { refused_in } if refused_in.is_empty() => {}
            ApiState::On { refused_in } => {
                let namespaces: Vec<&str> = refused_in.iter().map(String::as_str).collect();
                warn!(%api, ?namespaces, "optional API refused in some namespaces: off there only");
            }
            ApiState::NotServed => info!(%api, "optional API not served: off until the next start"),
            ApiState::RefusedEverywhere => {
                warn!(%api, "optional API refused in every watched namespace: off until the next start")
            }
        }
    }
}

/// The prober actor: probes in `pre_start` (a failed probe is a failed spawn), then answers queries.
/// What the prober is asked.
pub enum ProberMsg {
    /// The whole answer, to share read-only.
    Result(ractor::RpcReplyPort<Arc<ProbeResult>>),
}

pub struct OptionalApiProber;

pub struct ProberArgs {
    pub client: Client,
    pub scope: WatchScope,
    pub metrics: OperatorMetrics,
}

impl Actor for OptionalApiProber {
    type Msg = ProberMsg;
    type State = Arc<ProbeResult>;
    type Arguments = ProberArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: ProberArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let result = probe_optional_apis(&args.client, &args.scope).await?;
        publish(&result, &args.metrics);
        Ok(Arc::new(result))
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: ProberMsg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ProberMsg::Result(reply) => {
                // The caller may have gone away; nothing to do then.
                let _ = reply.send(state.clone());
            }
        }
        Ok(())
    }
}

/// Starts the prober and returns its handle with the shared answer object actors read directly.
pub async fn start_prober(
    args: ProberArgs,
) -> Result<(ActorRef<ProberMsg>, Arc<ProbeResult>), ProberStartError> {
    let (actor, _task) = Actor::spawn(None, OptionalApiProber, args)
        .await
        .map_err(|error| match error {
            SpawnErr::StartupFailed(inner) => match inner.downcast::<ProbeError>() {
                Ok(probe) => ProberStartError::Probe(*probe),
                Err(other) => ProberStartError::Spawn(other.to_string()),
            },
            other => ProberStartError::Spawn(other.to_string()),
        })?;
    let result = ractor::call!(actor, ProberMsg::Result)
        .map_err(|error| ProberStartError::Spawn(error.to_string()))?;
    Ok((actor, result))
}
