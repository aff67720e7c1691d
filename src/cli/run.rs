//! `run`: the operator against a real cluster.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use kube::Resource;
use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::settings::{EndpointArgs, SettingsArgs};
use super::shards::{ShardArgs, Sharding};
use super::signal::Stop;
use super::{CliError, telemetry};
use crate::actors::shared::start_shared_actors_owning;
use crate::api::PgAdmin;
use crate::cli::register_all;
use crate::health::{Readiness, serve_endpoints};
use crate::k8s::{ShardSelector, server_filters};
use crate::metrics::OperatorMetrics;
use crate::ring::{Ownership, Placement};
use crate::runtime::DEFAULT_OPERATOR_NAMESPACE;
use crate::supervisor::leader::{self, LeaderConfig};
use crate::supervisor::members::{Membership, member_config};
use crate::supervisor::{OperatorBuilder, OperatorSettings};

/// The pod name when running in a cluster.
fn pod_name() -> Option<String> {
    std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .ok()
}

/// This replica's name in the Lease: the pod name when running in a cluster, made unique per
/// process (a restarted pod is a new member).
fn identity() -> String {
    let host = pod_name().unwrap_or_else(|| "pgtoolbox-operator".into());
    format!("{host}-{:08x}", rand::random::<u32>())
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Kubeconfig file; else `KUBECONFIG` (a path list, merged), else the in-cluster
    /// service account.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    #[command(flatten)]
    pub shards: ShardArgs,
    /// Run only while holding the `pgtoolbox-operator` Lease (one active replica).
    #[arg(long, env = "LEADER_ELECT")]
    pub leader_elect: bool,
    /// The operator's own namespace: its leader-election Lease and the Secret of the CA that
    /// signs EvidenceAgent serving certificates.
    #[arg(long, env = "POD_NAMESPACE", default_value = DEFAULT_OPERATOR_NAMESPACE)]
    pub leader_election_namespace: String,
    /// Bound on the time in-flight reconciles get to finish on SIGTERM/SIGINT.
    #[arg(long, default_value = "25s", value_parser = humantime_secs)]
    pub shutdown_timeout: Duration,
}

fn humantime_secs(text: &str) -> Result<Duration, String> {
    let secs = text.strip_suffix('s').unwrap_or(text);
    secs.parse::<u64>()
        .map(Duration::from_secs)
        .map_err(|e| format!("expected seconds like 25s: {e}"))
}

/// The operator's client; every request it sends is counted on `/metrics`.
pub async fn client(
    kubeconfig: Option<&PathBuf>,
    metrics: &OperatorMetrics,
) -> Result<kube::Client, CliError> {
    let file = match kubeconfig {
        Some(path) => Some(Kubeconfig::read_from(path)?),
        None => Kubeconfig::from_env()?,
    };
    let config = match file {
        Some(file) => {
            kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::incluster()?,
    };
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&metrics.client_layer())
        .build())
}

/// The ranges this member's watches ask the API server for, where it filters by them: only
/// for objects placed by namespace, by several members, with a server that offers KEP-5866.
async fn server_shard(
    client: &kube::Client,
    ownership: &Ownership,
    watch_namespaces: &[String],
) -> Option<Arc<ShardSelector>> {
    if ownership.is_all() || ownership.placement() != Placement::Namespace {
        return None;
    }
    // A collection the operator may list: its PgAdmins, where it watches.
    let path = PgAdmin::url_path(&(), watch_namespaces.first().map(String::as_str));
    match server_filters(client, &path).await {
        Ok(true) => {
            tracing::info!(
                "the API server filters this member's watches by its share (shardSelector)"
            );
            Some(Arc::new(ShardSelector::new(watch_namespaces.to_vec())))
        }
        Ok(false) => {
            tracing::warn!(
                "the API server does not offer shardSelector (gate ShardedListAndWatch): \
                 every member reads every event and keeps its share"
            );
            None
        }
        Err(error) => {
            tracing::warn!(%error, "whether the API server offers shardSelector is unknown: not used");
            None
        }
    }
}

/// The kinds this build runs: the start-up checks ask only for their permissions.
pub fn kind_names(client: &kube::Client) -> Vec<String> {
    // Registering builds the reconcilers and nothing else (no I/O): cheap to do twice.
    register_all(OperatorBuilder::new(client.clone(), Default::default())).kind_names()
}

pub async fn run(args: RunArgs) -> Result<(), CliError> {
    let _telemetry = telemetry::init(
        args.settings.otel_exporter_otlp_endpoint.as_deref(),
        args.settings.log_format,
    )?;
    let metrics = OperatorMetrics::new();
    let readiness = Readiness::new();
    let _endpoints = serve_endpoints(
        args.endpoints.health_probe_bind_address,
        args.endpoints.metrics_bind_address,
        readiness.clone(),
        metrics.clone(),
    )
    .await?;
    let sharding = args.shards.sharding(pod_name().as_deref())?;
    args.shards
        .check_placement(&sharding, &args.settings.to_settings().watch_namespaces)?;
    if args.leader_elect && sharding != Sharding::Single {
        // One leader would leave the other members idle: the two modes exclude each other.
        return Err(CliError::Sharding(
            "--leader-elect and sharding exclude each other".into(),
        ));
    }
    let client = client(args.kubeconfig.as_ref(), &metrics).await?;
    // One listener for the whole run: a SIGTERM while waiting for the lease or while starting
    // is kept for the select below instead of falling between two short-lived listeners.
    let mut stop = Stop::listen();
    // `pgtoolbox_leader`: 0 while waiting for the lease, 1 from taking it (or at once without
    // leader election) until it is lost or the replica stops.
    metrics.set_leader(false);
    let leadership = if args.leader_elect {
        readiness.set_standby(true);
        let config = LeaderConfig::new(&args.leader_election_namespace, identity());
        tokio::select! {
            held = leader::acquire(client.clone(), config) => Some(held),
            _ = stop.wait() => return Ok(()),
        }
    } else {
        None
    };
    readiness.set_standby(false);
    metrics.set_leader(true);
    // Before any watch: which namespaces to watch, which optional APIs to use (a probe that
    // fails ends the start, non-zero, and the restart retries), the secret router.
    let settings = OperatorSettings {
        operator_namespace: args.leader_election_namespace.clone(),
        ..args.settings.to_settings()
    };
    let ownership = sharding.ownership(args.shards.shard_placement.into());
    let server_shard = server_shard(&client, &ownership, &settings.watch_namespaces).await;
    let stop_within = leadership.as_ref().map(leader::Leadership::stop_within);
    let on_lost = leadership.as_ref().map(leader::Leadership::on_lost);
    let lost = async move {
        match on_lost {
            Some(lost) => lost.await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(lost);
    // A lease lost while starting ends the start: nothing may act for a replica that no
    // longer leads.
    let start = async {
        let shared_actors = start_shared_actors_owning(
            &client,
            &kind_names(&client),
            settings,
            metrics.clone(),
            readiness.clone(),
            ownership.clone(),
        )
        .await?;
        let mut builder = OperatorBuilder::new(client.clone(), shared_actors.shared.clone())
            .ownership(ownership.clone());
        if let Some(selector) = server_shard {
            builder = builder.server_shard(selector);
        }
        let operator = register_all(builder).start().await?;
        Ok::<_, CliError>((shared_actors, operator))
    };
    let (shared_actors, mut operator) = tokio::select! {
        started = start => started?,
        _ = &mut lost => {
            metrics.set_leader(false);
            return Err(CliError::LeadershipLost);
        }
    };
    readiness.mark_lists_expected();
    tracing::info!(kinds = ?operator.kinds().collect::<Vec<_>>(), ?sharding, "operator running");
    let mut membership = (sharding == Sharding::Auto).then(|| {
        let config = member_config(&args.leader_election_namespace, &identity());
        // The dropped namespaces' objects are marked by their owner, so again at each change.
        let marking = shared_actors.marker.clone().on_reshard();
        Membership::join(client.clone(), config, operator.resharder().also(marking))
    });
    let member_lost = async {
        match membership.as_mut() {
            Some(member) => member.lost().await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        _ = stop.wait() => Ok(()),
        _ = &mut lost => Err(CliError::LeadershipLost),
        _ = member_lost => Err(CliError::MembershipLost),
        kind = operator.failed() => Err(CliError::KindFailed(kind)),
    };
    tracing::info!("shutting down");
    metrics.set_leader(false);
    readiness.mark_stopping();
    // A replica that lost the lease gets only the time left before a standby may take over,
    // not the graceful bound: its in-flight passes must not write beside the new leader's.
    let bound = match (&outcome, stop_within) {
        (Err(CliError::LeadershipLost), Some(left)) => left,
        (Err(CliError::MembershipLost), _) => membership
            .as_ref()
            .map_or(args.shutdown_timeout, Membership::stop_within),
        _ => args.shutdown_timeout,
    };
    operator.shutdown(bound).await;
    shared_actors.stop().await;
    // Our objects are free once the operator stopped writing them.
    if let Some(member) = membership {
        member.leave().await;
    }
    // So is the leader Lease: the next replica takes over at its next try, not after the
    // Lease's whole duration (a rolling update would otherwise pause all work for ~15 s). A
    // lost lease is someone else's already.
    if let Some(held) = leadership
        && !matches!(outcome, Err(CliError::LeadershipLost))
    {
        held.release().await;
    }
    outcome
}
