//! `/metrics`, `/healthz` and `/readyz` scraped by a plain HTTP client.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::health::{Readiness, serve_health, serve_metrics};
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::{OperatorSettings, PassResult};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// HTTP/1.0 GET over a bare socket: returns the status code and the body.
async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    (code, body.to_owned())
}

/// A strict reader of the text exposition format: every line is a `# HELP`, `# TYPE`, `# UNIT`,
/// `# EOF` comment or `name{label="value",...} number`. Returns the samples by series.
fn parse_exposition(text: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            let keyword = comment.split_whitespace().next().unwrap_or("");
            assert!(
                ["HELP", "TYPE", "UNIT", "EOF"].contains(&keyword),
                "unexpected comment: {line}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("series and value");
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line}"
        );
        if name_end < series.len() {
            let labels = &series[name_end..];
            assert!(labels.ends_with('}'), "unterminated labels in {line}");
            for pair in labels[1..labels.len() - 1]
                .split(',')
                .filter(|p| !p.is_empty())
            {
                let (key, quoted) = pair.split_once('=').expect("label=value");
                assert!(
                    key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "{line}"
                );
                assert!(quoted.starts_with('"') && quoted.ends_with('"'), "{line}");
            }
        }
        let value: f64 = value.parse().expect("a number");
        samples.insert(series.to_owned(), value);
    }
    samples
}

#[tokio::test]
async fn metrics_are_served_as_prometheus_text() {
    let metrics = OperatorMetrics::new();
    let serving = serve_metrics("127.0.0.1:0".parse().expect("addr"), metrics.clone())
        .await
        .expect("serving");
    metrics.reconcile_took("PgAdmin", Duration::from_millis(12));
    metrics.reconcile_took("PgAdmin", Duration::from_millis(3));
    let shared = Shared::with_metrics(OperatorSettings::default(), metrics.clone());
    shared.runtime.pass("PgAdmin", PassResult::Converged);
    shared.runtime.pass("PgAdmin", PassResult::Failed);
    shared.runtime.set_actors("PgAdmin", 1);
    shared.runtime.restart("PgAdmin");
    metrics.api_request("list");
    metrics.api_write("create");
    metrics.set_dropped_namespaces(1);
    metrics.set_optional_api("routes", 1, false);
    metrics.set_optional_api("databaseroles", 0, true);

    let (code, body) = get(serving.local_addr, "/metrics").await;
    assert_eq!(code, 200);
    let samples = parse_exposition(&body);
    let expect = |series: &str, value: f64| {
        assert_eq!(samples.get(series), Some(&value), "{series} in\n{body}");
    };
    expect(
        r#"pgtoolbox_reconcile_passes_total{kind="PgAdmin",result="Converged"}"#,
        1.0,
    );
    expect(
        r#"pgtoolbox_reconcile_passes_total{kind="PgAdmin",result="Failed"}"#,
        1.0,
    );
    expect(
        r#"pgtoolbox_reconcile_duration_seconds_count{kind="PgAdmin"}"#,
        2.0,
    );
    expect(r#"pgtoolbox_object_actors{kind="PgAdmin"}"#, 1.0);
    expect(
        r#"pgtoolbox_object_actor_restarts_total{kind="PgAdmin"}"#,
        1.0,
    );
    expect(r#"pgtoolbox_api_requests_total{verb="list"}"#, 1.0);
    expect(r#"pgtoolbox_api_writes_total{verb="create"}"#, 1.0);
    expect("pgtoolbox_dropped_namespaces", 1.0);
    expect(
        r#"pgtoolbox_optional_api_refused_namespaces{api="routes"}"#,
        1.0,
    );
    expect(
        r#"pgtoolbox_optional_api_unavailable{api="databaseroles"}"#,
        1.0,
    );
    serving.task.abort();
}

#[tokio::test]
async fn health_is_ok_at_once_and_ready_after_sync_and_probe() {
    let readiness = Readiness::new();
    let serving = serve_health("127.0.0.1:0".parse().expect("addr"), readiness.clone())
        .await
        .expect("serving");
    assert_eq!(get(serving.local_addr, "/healthz").await.0, 200);
    assert_eq!(get(serving.local_addr, "/readyz").await.0, 503);
    readiness.expect_list("PgAdmin/0");
    readiness.mark_lists_expected();
    readiness.mark_probe_done();
    assert_eq!(get(serving.local_addr, "/readyz").await.0, 503);
    readiness.list_synced("PgAdmin/0");
    assert_eq!(get(serving.local_addr, "/readyz").await.0, 200);
    serving.task.abort();
}
