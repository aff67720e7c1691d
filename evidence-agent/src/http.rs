//! The routes and the HTTPS server.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State as Extract;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use pgtoolbox_api::evidence::{self as contract, BarmanValue, Evidence};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::catalog::text;
use crate::state::{Readiness, State};

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections may finish after a shutdown signal.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

pub fn router(state: Arc<State>) -> Router {
    Router::new()
        .route(contract::PATH_EVIDENCE, get(evidence_json))
        .route(contract::PATH_PAGE, get(page))
        .route(contract::PATH_HEALTHZ, get(|| async { "ok\n" }))
        .route(contract::PATH_READYZ, get(readyz))
        .route(contract::PATH_METRICS, get(metrics))
        .with_state(state)
}

async fn evidence_json(Extract(state): Extract<Arc<State>>) -> Response {
    match state.evidence() {
        (Some(evidence), _) => axum::Json(evidence.as_ref().clone()).into_response(),
        (None, error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(serde_json::json!({
                "error": error.unwrap_or_else(|| "the catalog has not been read yet".into())
            })),
        )
            .into_response(),
    }
}

async fn readyz(Extract(state): Extract<Arc<State>>) -> Response {
    match state.readiness() {
        Readiness::Ready => (StatusCode::OK, "ready\n").into_response(),
        Readiness::NotReady(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
            .into_response(),
    }
}

async fn metrics(Extract(state): Extract<Arc<State>>) -> Response {
    match state.metrics_text() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                pgtoolbox_api::OPENMETRICS_CONTENT_TYPE,
            )],
            text,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn page(Extract(state): Extract<Arc<State>>) -> Html<String> {
    let (evidence, error) = state.evidence();
    Html(render_page(evidence.as_deref(), error.as_deref()))
}

/// HTML-escapes text.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn cell(v: Option<&Option<BarmanValue>>) -> String {
    match v {
        Some(Some(BarmanValue::Text(s))) => esc(s),
        Some(Some(BarmanValue::Integer(n))) => n.to_string(),
        Some(Some(BarmanValue::Literal(v))) => esc(&v.to_string()),
        _ => String::from("&ndash;"),
    }
}

/// The page a person reads: the same evidence as the JSON, in tables.
pub fn render_page(evidence: Option<&Evidence>, error: Option<&str>) -> String {
    let mut h = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Backup evidence</title><style>\
         body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:70rem}\
         table{border-collapse:collapse;margin:.5rem 0 1.5rem}\
         td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left;font-size:.9rem}\
         th{background:#f3f3f3}.bad{color:#a40000}.ok{color:#0a6b0a}code{font-size:.9rem}\
         </style></head><body>",
    );
    let _ = write!(h, "<h1>Backup evidence</h1>");
    if let Some(e) = error {
        let _ = write!(h, "<p class=\"bad\">The last read failed: {}</p>", esc(e));
    }
    let Some(ev) = evidence else {
        h.push_str("<p>No catalog has been read yet.</p></body></html>");
        return h;
    };
    let _ = write!(
        h,
        "<p>Server <code>{}</code> in <code>{}</code>, read at {} in {:.2} s ({} objects).</p>",
        esc(&ev.server_name),
        esc(&ev.destination_path),
        esc(&ev.read.started_at),
        ev.read.duration_seconds,
        ev.read.objects
    );
    h.push_str("<h2>Recovery window</h2><table>");
    let w = ev.recovery_window.clone().unwrap_or_default();
    for (k, v) in [
        ("First recoverability point", w.first_recoverability_point),
        ("Last archived WAL", w.last_archived_wal),
        ("Archived at", w.last_archived_wal_time),
        ("Last successful backup", ev.last_successful_backup.clone()),
        ("Last failed backup", ev.last_failed_backup.clone()),
    ] {
        let _ = write!(
            h,
            "<tr><th>{k}</th><td>{}</td></tr>",
            v.as_deref().map_or_else(|| "&ndash;".to_owned(), esc)
        );
    }
    h.push_str("</table><h2>Base backups</h2><table><tr>");
    const COLUMNS: [&str; 9] = [
        "backup_id",
        "backup_name",
        "status",
        "begin_time_iso",
        "end_time_iso",
        "begin_wal",
        "end_wal",
        "timeline",
        "size",
    ];
    for c in COLUMNS {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>");
    for b in ev.backups.iter().rev() {
        let class = match text(b, "status") {
            Some("DONE") => "ok",
            Some("FAILED") => "bad",
            _ => "",
        };
        let _ = write!(h, "<tr class=\"{class}\">");
        for c in COLUMNS {
            let _ = write!(h, "<td>{}</td>", cell(b.get(c)));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table><h2>WAL archive</h2><table><tr><th>Timeline</th><th>Segments</th><th>First</th><th>Last</th><th>Gaps</th><th>Partial</th></tr>");
    for t in &ev.wal {
        let gaps = if t.gaps.is_empty() {
            "none".to_owned()
        } else {
            t.gaps
                .iter()
                .map(|g| {
                    format!(
                        "{}&ndash;{} ({})",
                        esc(&g.from),
                        esc(&g.to),
                        g.missing_segments
                    )
                })
                .collect::<Vec<_>>()
                .join("<br>")
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{gaps}</td><td>{}</td></tr>",
            t.timeline,
            t.segments,
            esc(t.first_segment.as_deref().unwrap_or("")),
            esc(t.last_segment.as_deref().unwrap_or("")),
            if t.gaps.is_empty() { "ok" } else { "bad" },
            esc(&t.partial_files.join(", "))
        );
    }
    h.push_str("</table>");
    if !ev.history_files.is_empty() {
        let _ = write!(
            h,
            "<p>History files: {}</p>",
            esc(&ev.history_files.join(", "))
        );
    }
    if !ev.unreadable_backups.is_empty() {
        let _ = write!(
            h,
            "<p class=\"bad\">Unreadable backup.info: {}</p>",
            esc(&ev.unreadable_backups.join(", "))
        );
    }
    h.push_str("<p>The same as JSON: <a href=\"/v1/evidence\">/v1/evidence</a>.</p></body></html>");
    h
}

/// Serves `app` over TLS on `addr` until `stop` turns true, then lets open connections
/// finish (up to [`DRAIN_TIMEOUT`]).
pub async fn serve(
    listener: TcpListener,
    tls: rustls::ServerConfig,
    app: Router,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let graceful = GracefulShutdown::new();
    loop {
        let accepted: std::io::Result<(tokio::net::TcpStream, SocketAddr)> = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let builder = Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), TowerToHyperService::new(app));
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after the drain timeout");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgtoolbox_api::evidence::{TimelineArchive, WalGap};

    #[test]
    fn the_page_escapes_and_shows_gaps() {
        let ev = Evidence {
            server_name: "<srv>".into(),
            destination_path: "s3://b".into(),
            wal: vec![TimelineArchive {
                timeline: 1,
                gaps: vec![WalGap {
                    from: "A".into(),
                    to: "B".into(),
                    missing_segments: 2,
                }],
                ..TimelineArchive::default()
            }],
            ..Evidence::default()
        };
        let page = render_page(Some(&ev), Some("denied & gone"));
        assert!(page.contains("&lt;srv&gt;"));
        assert!(!page.contains("<srv>"));
        assert!(page.contains("denied &amp; gone"));
        assert!(page.contains("A&ndash;B (2)"));
    }
}
