//! `/healthz`, `/readyz` and `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use crate::actors::Shared;

#[derive(Clone)]
struct Endpoints {
    shared: Arc<Shared>,
    ready: Arc<AtomicBool>,
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(e): State<Endpoints>) -> (StatusCode, &'static str) {
    if e.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "starting")
    }
}

async fn metrics(State(e): State<Endpoints>) -> (StatusCode, String) {
    let mut text = String::new();
    let registry = e
        .shared
        .metrics
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match prometheus_client::encoding::text::encode(&mut text, &registry) {
        Ok(()) => (StatusCode::OK, text),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, String::new()),
    }
}

/// Serve the probes and the metrics (one listener when both addresses are equal).
pub async fn serve(
    health: SocketAddr,
    metrics_addr: SocketAddr,
    shared: Arc<Shared>,
    ready: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let state = Endpoints { shared, ready };
    let probes = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz));
    let scrape = Router::new().route("/metrics", get(metrics));
    if health == metrics_addr {
        spawn(health, probes.merge(scrape).with_state(state)).await
    } else {
        spawn(health, probes.with_state(state.clone())).await?;
        spawn(metrics_addr, scrape.with_state(state)).await
    }
}

async fn spawn(addr: SocketAddr, router: Router) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, router).await {
            tracing::error!(%addr, error = %err, "endpoint server stopped");
        }
    });
    Ok(())
}
