//! Logging and tracing: fmt logs on stderr; spans exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{FilterExt, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use super::settings::LogFormat;

/// Keeps the exporter alive; flushes pending spans when dropped.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(err) = provider.shutdown()
        {
            eprintln!("trace export shutdown: {err}");
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// Install the global subscriber. `RUST_LOG` filters (default `info`).
pub fn init(otlp_endpoint: Option<&str>, format: LogFormat) -> Result<Telemetry, TelemetryError> {
    init_with_default(otlp_endpoint, "info", format)
}

/// As [`init`], with another default level when `RUST_LOG` is unset.
pub fn init_with_default(
    otlp_endpoint: Option<&str>,
    default_level: &str,
    format: LogFormat,
) -> Result<Telemetry, TelemetryError> {
    let filter =
        || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    // Colour codes only for a person at a terminal, never in a file or a log collector.
    let fmt = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter())
            .boxed(),
        // One JSON object per line, the span fields (kind, namespace, name) included.
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_filter(filter())
            .boxed(),
    };
    let (otel, provider) = match otlp_endpoint.filter(|e| !e.is_empty()) {
        Some(endpoint) => {
            use opentelemetry_otlp::WithExportConfig;
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
                .build()?;
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(
                    Resource::builder()
                        .with_service_name("pgtoolbox-operator")
                        .build(),
                )
                .build();
            let tracer = provider.tracer("pgtoolbox-operator");
            let layer = tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(filter().or(filter_fn(is_api_call_span)))
                .boxed();
            (Some(layer), Some(provider))
        }
        None => (None, None),
    };
    // A second init (tests) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
    Ok(Telemetry { provider })
}

/// kube's client opens one `debug` span per HTTP request (method, URL and status; never headers
/// or bodies, so no token and no Secret data). Exported whatever `RUST_LOG` says, they are the
/// API calls of a reconcile pass, children of its span; the logs keep the `RUST_LOG` level.
fn is_api_call_span(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.is_span() && metadata.target().starts_with("kube_client::client")
}
