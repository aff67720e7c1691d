//! The two small HTTP servers of the operator: `/metrics` on `--metrics-bind-address`, and
//! `/healthz` + `/readyz` on `--health-probe-bind-address`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::metrics::OperatorMetrics;

const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("invalid bind address {0:?}: expected HOST:PORT or :PORT")]
    BadAddress(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Parses a bind address as controller-runtime writes it: `:8080` means every interface.
/// `0` disables the server (returns `None`).
pub fn parse_bind_address(text: &str) -> Result<Option<SocketAddr>, ServeError> {
    let text = text.trim();
    if text == "0" {
        return Ok(None);
    }
    if let Some(port) = text.strip_prefix(':') {
        let port = port
            .parse::<u16>()
            .map_err(|_| ServeError::BadAddress(text.to_owned()))?;
        return Ok(Some(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port,
        )));
    }
    text.parse()
        .map(Some)
        .map_err(|_| ServeError::BadAddress(text.to_owned()))
}

/// Readiness of the process: the initial lists are synced and the optional-API probe is done.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    lists_synced: Arc<AtomicBool>,
    probe_done: Arc<AtomicBool>,
}

impl Readiness {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn mark_lists_synced(&self) {
        self.lists_synced.store(true, Ordering::Release);
    }

    pub fn mark_probe_done(&self) {
        self.probe_done.store(true, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.lists_synced.load(Ordering::Acquire) && self.probe_done.load(Ordering::Acquire)
    }
}

/// A running server: where it listens, and its task (abort it to stop serving).
#[derive(Debug)]
pub struct Serving {
    pub local_addr: SocketAddr,
    pub task: JoinHandle<()>,
}

/// Starts serving `/metrics` in the background.
pub async fn serve_metrics(
    addr: SocketAddr,
    metrics: OperatorMetrics,
) -> Result<Serving, ServeError> {
    let router = Router::new()
        .route("/metrics", get(metrics_text))
        .with_state(metrics);
    serve(addr, router, "metrics").await
}

/// Starts serving `/healthz` and `/readyz` in the background.
pub async fn serve_health(addr: SocketAddr, readiness: Readiness) -> Result<Serving, ServeError> {
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(readiness);
    serve(addr, router, "health").await
}

async fn serve(
    addr: SocketAddr,
    router: Router,
    what: &'static str,
) -> Result<Serving, ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    tracing::info!(%local_addr, server = what, "serving");
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, server = what, "server stopped");
        }
    });
    Ok(Serving { local_addr, task })
}

async fn metrics_text(State(metrics): State<OperatorMetrics>) -> Response {
    match metrics.encode() {
        Ok(text) => ([(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)], text).into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot encode metrics");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

async fn ready(State(readiness): State<Readiness>) -> (StatusCode, &'static str) {
    if readiness.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: initial sync or optional-API probe pending",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_follow_controller_runtime() {
        assert_eq!(
            parse_bind_address(":8080").unwrap(),
            Some("0.0.0.0:8080".parse().unwrap())
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9").unwrap(),
            Some("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(parse_bind_address("0").unwrap(), None);
        assert!(parse_bind_address("localhost").is_err());
        assert!(parse_bind_address(":http").is_err());
    }

    #[test]
    fn ready_needs_both_sync_and_probe() {
        let r = Readiness::new();
        assert!(!r.is_ready());
        r.mark_probe_done();
        assert!(!r.is_ready());
        r.mark_lists_synced();
        assert!(r.is_ready());
    }
}
