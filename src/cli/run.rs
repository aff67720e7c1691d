//! `run`: the operator against a real cluster.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::settings::SettingsArgs;
use super::{CliError, endpoints, telemetry};
use crate::actors::Shared;
use crate::supervisor::leader::{self, LeaderConfig};
use crate::supervisor::{OperatorBuilder, register_all};

/// This replica's name in the Lease: the pod name when running in a cluster.
fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "pgtoolbox-operator".into());
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
    /// Run only while holding the `pgtoolbox-operator` Lease (one active replica).
    #[arg(long, env = "LEADER_ELECT")]
    pub leader_elect: bool,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "pgtoolbox-system")]
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

pub async fn client(kubeconfig: Option<&PathBuf>) -> Result<kube::Client, CliError> {
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
    Ok(kube::Client::try_from(config)?)
}

pub async fn run(args: RunArgs) -> Result<(), CliError> {
    let _telemetry = telemetry::init(args.settings.otel_exporter_otlp_endpoint.as_deref())?;
    let client = client(args.kubeconfig.as_ref()).await?;
    let shared = Arc::new(Shared::new(args.settings.to_settings()));
    let ready = Arc::new(AtomicBool::new(false));
    endpoints::serve(
        args.settings.health_probe_bind_address,
        args.settings.metrics_bind_address,
        shared.clone(),
        ready.clone(),
    )
    .await?;
    let mut leadership = if args.leader_elect {
        let config = LeaderConfig::new(&args.leader_election_namespace, identity());
        tokio::select! {
            held = leader::acquire(client.clone(), config) => Some(held),
            _ = super::signal::terminated() => return Ok(()),
        }
    } else {
        None
    };
    let mut operator = register_all(OperatorBuilder::new(client, shared))
        .start()
        .await?;
    ready.store(true, Ordering::Relaxed);
    tracing::info!(kinds = ?operator.kinds().collect::<Vec<_>>(), "operator running");
    let lost = async {
        match leadership.as_mut() {
            Some(held) => held.lost().await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        _ = super::signal::terminated() => Ok(()),
        _ = lost => Err(CliError::LeadershipLost),
        kind = operator.failed() => Err(CliError::KindFailed(kind)),
    };
    tracing::info!("shutting down");
    ready.store(false, Ordering::Relaxed);
    operator.shutdown(args.shutdown_timeout).await;
    outcome
}
