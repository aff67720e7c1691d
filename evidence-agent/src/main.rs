//! `pgtoolbox-evidence-agent`: reads the barman-cloud catalog of one server from S3 (list and
//! get requests only) and serves it over HTTPS: `/v1/evidence` (JSON), `/` (HTML), `/healthz`,
//! `/readyz`, `/metrics`. Configured by the environment the operator renders
//! (`pgtoolbox_api::evidence`); docs/evidence-agent.md tells how to run it.

mod catalog;
mod config;
mod http;
mod literal;
mod state;
mod store;
mod tls;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};

use crate::config::Config;
use crate::state::State;
use crate::store::{Store, StoreError};
use crate::tls::ReloadingCert;

#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("configuration: {0}")]
    Config(#[from] config::ConfigError),
    #[error("serving certificate: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

/// One read of the catalog, timed.
async fn read_once(
    store: &Store,
    config: &Config,
) -> Result<pgtoolbox_api::evidence::Evidence, StoreError> {
    let started_at = jiff::Timestamp::now();
    let clock = Instant::now();
    let catalog = store.read().await?;
    let objects = catalog.objects;
    let mut evidence = catalog.evidence(&config.destination_path, &config.server_name);
    evidence.object_store = config.object_store.clone();
    evidence.read = pgtoolbox_api::evidence::ReadInfo {
        started_at: started_at
            .round(jiff::Unit::Millisecond)
            .unwrap_or(started_at)
            .to_string(),
        duration_seconds: clock.elapsed().as_secs_f64(),
        objects,
    };
    Ok(evidence)
}

/// Reads the catalog every `config.refresh`; a failed read is retried with exponential
/// backoff (1 s doubling, at most the refresh interval), each failure reported at once.
async fn refresh(
    store: Store,
    config: Config,
    state: Arc<State>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let backoff = ExponentialBuilder::default()
        .with_min_delay(Duration::from_secs(1))
        .with_max_delay(config.refresh.max(Duration::from_secs(1)))
        .with_jitter()
        .without_max_times();
    loop {
        let attempt = (|| read_once(&store, &config)).retry(backoff).notify(
            |error: &StoreError, after: Duration| {
                tracing::warn!(%error, retry_in = ?after, "reading the catalog failed");
                state.read_failed(error.reason(), error.to_string());
            },
        );
        let read = tokio::select! {
            r = attempt => r,
            _ = stop.changed() => return,
        };
        match read {
            Ok(evidence) => {
                tracing::info!(
                    backups = evidence.backups.len(),
                    objects = evidence.read.objects,
                    seconds = evidence.read.duration_seconds,
                    "catalog read"
                );
                state.read_succeeded(evidence);
            }
            // Without a limit on retries this is not reached; reported all the same.
            Err(error) => state.read_failed(error.reason(), error.to_string()),
        }
        tokio::select! {
            _ = tokio::time::sleep(config.refresh) => {}
            _ = stop.changed() => return,
        }
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

async fn run() -> Result<(), StartError> {
    let config = Config::from_env(|name| std::env::var(name).ok())?;
    tracing::info!(?config, "starting");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cert = ReloadingCert::load(&config.tls_dir)?;
    let server_config = tls::server_config(cert.clone())?;
    let store = Store::open(&config)?;
    let state = State::new(&config.server_name);
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Listen {
            addr: config.listen,
            source,
        })?;
    tracing::info!(addr = %config.listen, "serving HTTPS");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let watcher = tokio::spawn(cert.watch(stop_rx.clone()));
    let reader = tokio::spawn(refresh(store, config, state.clone(), stop_rx.clone()));
    let server = tokio::spawn(http::serve(
        listener,
        server_config,
        http::router(state),
        stop_rx,
    ));
    shutdown_signal().await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    for task in [watcher, reader, server] {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "a task ended abnormally");
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            eprintln!("pgtoolbox-evidence-agent: {e}");
            ExitCode::FAILURE
        }
    }
}
