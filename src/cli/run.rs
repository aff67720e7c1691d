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
use crate::supervisor::{OperatorBuilder, register_all};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Kubeconfig file; else `KUBECONFIG`, else the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub settings: SettingsArgs,
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
    let config = match kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path)?;
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
    let operator = register_all(OperatorBuilder::new(client, shared))
        .start()
        .await?;
    ready.store(true, Ordering::Relaxed);
    tracing::info!(kinds = ?operator.kinds().collect::<Vec<_>>(), "operator running");
    super::signal::terminated().await;
    tracing::info!("shutting down");
    ready.store(false, Ordering::Relaxed);
    operator.shutdown(args.shutdown_timeout).await;
    Ok(())
}
