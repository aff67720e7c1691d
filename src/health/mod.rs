//! The two small HTTP servers of the operator: `/metrics` on `--metrics-bind-address`, and
//! `/healthz` + `/readyz` on `--health-probe-bind-address`.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pgtoolbox_api::OPENMETRICS_CONTENT_TYPE;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::metrics::OperatorMetrics;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Readiness of the process: the optional-API probe is done and every initial list of every
/// watch has completed. Each watch registers itself (`expect_list`) when it starts, reports its
/// first complete list (`list_synced`), and the start-up says when all watches are registered.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    inner: Arc<ReadinessInner>,
}

#[derive(Debug, Default)]
struct ReadinessInner {
    probe_done: AtomicBool,
    lists_expected: AtomicBool,
    stopping: AtomicBool,
    standby: AtomicBool,
    pending: Mutex<HashSet<String>>,
}

impl Readiness {
    pub fn new() -> Self {
        Self::default()
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.inner.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A watch named `id` has started and will report its first complete list.
    pub fn expect_list(&self, id: &str) {
        self.pending().insert(id.to_owned());
    }

    /// The watch named `id` completed its first list (later relists change nothing).
    pub fn list_synced(&self, id: &str) {
        self.pending().remove(id);
    }

    /// Every watch has been registered with `expect_list`.
    pub fn mark_lists_expected(&self) {
        self.inner.lists_expected.store(true, Ordering::Release);
    }

    pub fn mark_probe_done(&self) {
        self.inner.probe_done.store(true, Ordering::Release);
    }

    /// Waiting for the leader lease (`on`), or leading from now on. A standby replica has
    /// nothing to sync and reports ready: a rollout must be able to replace the leader.
    pub fn set_standby(&self, on: bool) {
        self.inner.standby.store(on, Ordering::Release);
    }

    /// Shutting down: not ready any more, so traffic and leader checks move on.
    pub fn mark_stopping(&self) {
        self.inner.stopping.store(true, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        if self.inner.stopping.load(Ordering::Acquire) {
            return false;
        }
        if self.inner.standby.load(Ordering::Acquire) {
            return true;
        }
        self.inner.probe_done.load(Ordering::Acquire)
            && self.inner.lists_expected.load(Ordering::Acquire)
            && self.pending().is_empty()
    }
}

/// A running server: where it listens, and its task (abort it to stop serving).
#[derive(Debug)]
pub struct Serving {
    pub local_addr: SocketAddr,
    pub task: JoinHandle<()>,
}

fn metrics_router(metrics: OperatorMetrics) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .with_state(metrics)
}

fn health_router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(readiness)
}

/// Starts serving `/metrics` in the background.
pub async fn serve_metrics(
    addr: SocketAddr,
    metrics: OperatorMetrics,
) -> Result<Serving, ServeError> {
    serve(addr, metrics_router(metrics), "metrics").await
}

/// Starts serving `/healthz` and `/readyz` in the background.
pub async fn serve_health(addr: SocketAddr, readiness: Readiness) -> Result<Serving, ServeError> {
    serve(addr, health_router(readiness), "health").await
}

/// Starts both, on one listener when the two addresses are the same.
pub async fn serve_endpoints(
    health: SocketAddr,
    metrics_addr: SocketAddr,
    readiness: Readiness,
    metrics: OperatorMetrics,
) -> Result<Vec<Serving>, ServeError> {
    if health == metrics_addr {
        let router = health_router(readiness).merge(metrics_router(metrics));
        return Ok(vec![serve(health, router, "health and metrics").await?]);
    }
    Ok(vec![
        serve_health(health, readiness).await?,
        serve_metrics(metrics_addr, metrics).await?,
    ])
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
    fn ready_needs_the_probe_and_every_first_list() {
        let r = Readiness::new();
        r.expect_list("PgAdmin/0");
        r.expect_list("PgAdmin/1");
        r.mark_lists_expected();
        assert!(!r.is_ready());
        r.mark_probe_done();
        r.list_synced("PgAdmin/0");
        assert!(!r.is_ready(), "one watch still lists");
        r.list_synced("PgAdmin/1");
        assert!(r.is_ready());
        r.list_synced("PgAdmin/1");
        assert!(r.is_ready(), "a relist changes nothing");
        r.mark_stopping();
        assert!(!r.is_ready());
    }

    #[test]
    fn a_standby_replica_is_ready_until_it_leads() {
        let r = Readiness::new();
        r.set_standby(true);
        assert!(r.is_ready());
        r.set_standby(false);
        assert!(!r.is_ready(), "the new leader syncs first");
    }
}
