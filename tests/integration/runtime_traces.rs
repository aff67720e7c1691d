//! The operator's traces, received: the binary runs against the embedded API server with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a small OTLP/HTTP receiver here, which decodes what
//! arrives. One span per reconcile pass names the object and the result; the API calls of the
//! pass are its children, and no attribute carries a credential.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use kube::api::{Api, DynamicObject, PostParams};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

use crate::harness::TestOperator;

const NS: &str = "team-a";

type Received = Arc<Mutex<Vec<Span>>>;

/// `POST /v1/traces` with a protobuf `ExportTraceServiceRequest`, as the OTLP/HTTP exporter sends.
async fn receive(State(received): State<Received>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        != Some("application/x-protobuf")
    {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE;
    }
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    let spans = request
        .resource_spans
        .into_iter()
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans);
    received.lock().expect("lock").extend(spans);
    // An empty body is the encoding of an empty ExportTraceServiceResponse.
    StatusCode::OK
}

async fn start_receiver() -> (String, Received) {
    let received = Received::default();
    let app = axum::Router::new()
        .route("/v1/traces", post(receive))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), received)
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            AnyValue::StringValue(s) => s.clone(),
            other => format!("{other:?}"),
        })
}

fn is_pass_of(span: &Span, name: &str) -> bool {
    span.name == "reconcile"
        && attribute(span, "kind").as_deref() == Some("PgAccessRequest")
        && attribute(span, "namespace").as_deref() == Some(NS)
        && attribute(span, "name").as_deref() == Some(name)
}

/// The pass's API calls: spans of the same trace whose parent is the pass.
fn children_of<'a>(spans: &'a [Span], pass: &Span) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.trace_id == pass.trace_id && s.parent_span_id == pass.span_id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_pass_is_a_span_with_its_api_calls_as_children() {
    let (endpoint, received) = start_receiver().await;
    let (sim, client) = TestOperator::new().namespace(NS).start_cluster().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    // A bearer token this time (the plain kubeconfig has none): it must not reach the spans.
    let token = pgtoolbox_sim::auth::token_for("tracer", &["system:masters".to_owned()]);
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {}\ncontexts:\n- name: sim\n  context: {{cluster: sim, user: tracer}}\ncurrent-context: sim\nusers:\n- name: tracer\n  user:\n    token: {token}\n",
            sim.url()
        ),
    )
    .expect("kubeconfig");
    let _operator = crate::cli_support::operator_run(&kubeconfig)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        // The batch exporter's default is 5 s between exports; the test need not wait that long.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary starts");

    // A request no one decides: its pass writes its status (Pending) and nothing else.
    let requests = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        NS,
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(
                "pgtoolbox.fyannk.dev",
                "v1alpha1",
                "PgAccessRequest",
            ),
            "pgaccessrequests",
        ),
    );
    let request: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
        "metadata": {"name": "traced", "namespace": NS},
        "spec": {"subject": {"kind": "User", "name": "alice"}, "clusterRole": "view",
            "expiresAt": "2999-01-01T00:00:00Z", "reason": "tracing test"}}))
    .expect("request");
    requests
        .create(&PostParams::default(), &request)
        .await
        .expect("request created");

    // The pass that wrote the status, with that write among its children.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (pass, calls) = loop {
        let spans = received.lock().expect("lock").clone();
        let found = spans
            .iter()
            .filter(|s| is_pass_of(s, "traced"))
            .map(|pass| (pass.clone(), children_of(&spans, pass)))
            .find(|(_, calls)| {
                calls.iter().any(|c| {
                    attribute(c, "http.method").as_deref() == Some("PATCH")
                        && attribute(c, "http.url")
                            .is_some_and(|u| u.contains("/pgaccessrequests/traced/status"))
                })
            })
            .map(|(pass, calls)| (pass, calls.into_iter().cloned().collect::<Vec<_>>()));
        if let Some(found) = found {
            break found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no pass span of team-a/traced with its status write as a child; received: {:#?}",
            spans
                .iter()
                .map(|s| (&s.name, &s.attributes))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let result = attribute(&pass, "result").expect("the pass records its result");
    assert!(
        ["Converged", "Stalled"].contains(&result.as_str()),
        "result {result}"
    );
    assert!(pass.end_time_unix_nano >= pass.start_time_unix_nano);
    for call in &calls {
        assert!(
            call.start_time_unix_nano >= pass.start_time_unix_nano
                && call.end_time_unix_nano <= pass.end_time_unix_nano,
            "an API call of the pass lies within it: {call:?}"
        );
    }

    // Nothing exported carries the credential.
    let spans = received.lock().expect("lock").clone();
    assert!(spans.len() > 1);
    for span in &spans {
        for a in &span.attributes {
            let text = format!("{:?}", a.value);
            assert!(
                !text.contains(&token)
                    && !text.to_lowercase().contains("bearer")
                    && !a.key.to_lowercase().contains("authorization"),
                "{} carries {}: {text}",
                span.name,
                a.key
            );
        }
    }
}
