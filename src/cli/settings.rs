//! The operator settings as flags and environment variables (docs/api.md, "Operator settings").

use std::net::SocketAddr;

use clap::Args;

use crate::supervisor::{DefaultImages, OperatorSettings};

#[derive(Args, Clone, Debug)]
pub struct SettingsArgs {
    /// Namespaces to watch (comma list); empty = all namespaces.
    #[arg(
        long,
        env = "WATCH_NAMESPACES",
        value_delimiter = ',',
        default_value = ""
    )]
    pub watch_namespaces: Vec<String>,
    /// DNS suffixes an exposure hostname must end with (comma list); empty = any.
    #[arg(
        long,
        env = "EXPOSURE_ALLOWED_HOST_SUFFIXES",
        value_delimiter = ',',
        default_value = ""
    )]
    pub exposure_allowed_host_suffixes: Vec<String>,
    /// Repository prefixes allowed for rendered images (comma list); empty = any.
    #[arg(
        long,
        env = "ALLOWED_IMAGE_REPOSITORIES",
        value_delimiter = ',',
        default_value = ""
    )]
    pub allowed_image_repositories: Vec<String>,
    /// Console image of a PgToolBoxConsole without `spec.image`.
    #[arg(long, env = "DEFAULT_CONSOLE_IMAGE")]
    pub default_console_image: Option<String>,
    /// pgAdmin image of a PgAdmin without `spec.image`.
    #[arg(long, env = "DEFAULT_PGADMIN_IMAGE")]
    pub default_pgadmin_image: Option<String>,
    /// OAuth2 proxy image of a PgAdmin with OAuth2 and no `proxyImage`.
    #[arg(long, env = "DEFAULT_OAUTH2_PROXY_IMAGE")]
    pub default_oauth2_proxy_image: Option<String>,
    /// Agent image of an EvidenceAgent without `spec.image`.
    #[arg(long, env = "DEFAULT_EVIDENCE_AGENT_IMAGE")]
    pub default_evidence_agent_image: Option<String>,
    /// Cap on concurrent API writes across all objects.
    #[arg(long, env = "MAX_INFLIGHT_WRITES", default_value_t = 32)]
    pub max_inflight_writes: usize,
    /// Export traces over OTLP/HTTP to this endpoint.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otel_exporter_otlp_endpoint: Option<String>,
    /// Lifetime of the serving certificates the operator issues to EvidenceAgents (`2160h`,
    /// `90m`, `45s`); each is renewed once two thirds of it have passed.
    #[arg(long, env = "EVIDENCE_CERTIFICATE_VALIDITY", default_value = "2160h", value_parser = parse_lifetime)]
    pub evidence_certificate_validity: std::time::Duration,
    /// Log lines as JSON objects (for a log collector) or as text.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// A positive duration in hours, minutes and seconds (`2160h`, `1h30m`, `45s`).
fn parse_lifetime(text: &str) -> Result<std::time::Duration, String> {
    let parsed: jiff::SignedDuration = text
        .trim()
        .parse()
        .map_err(|e| format!("expected a duration like 2160h or 90s: {e}"))?;
    std::time::Duration::try_from(parsed)
        .ok()
        .filter(|d| d.as_secs() >= 1)
        .ok_or_else(|| format!("{text:?} is not a positive duration of at least one second"))
}

/// The shape of the log lines on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Where `run` serves its endpoints (`sim` serves none: it is for trying, not for scraping).
#[derive(Args, Clone, Debug)]
pub struct EndpointArgs {
    /// Address of `/metrics` (Prometheus text).
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = "0.0.0.0:8080", value_parser = parse_bind)]
    pub metrics_bind_address: SocketAddr,
    /// Address of `/healthz` and `/readyz`.
    #[arg(long, env = "HEALTH_PROBE_BIND_ADDRESS", default_value = "0.0.0.0:8081", value_parser = parse_bind)]
    pub health_probe_bind_address: SocketAddr,
}

/// Accepts Go-style `:8080` (all interfaces) as well as `host:port`.
fn parse_bind(text: &str) -> Result<SocketAddr, String> {
    let full = if text.starts_with(':') {
        format!("0.0.0.0{text}")
    } else {
        text.to_string()
    };
    full.parse()
        .map_err(|e| format!("invalid bind address {text:?}: {e}"))
}

fn non_empty(list: &[String]) -> Vec<String> {
    list.iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl SettingsArgs {
    pub fn to_settings(&self) -> OperatorSettings {
        OperatorSettings {
            watch_namespaces: non_empty(&self.watch_namespaces),
            exposure_allowed_host_suffixes: non_empty(&self.exposure_allowed_host_suffixes),
            allowed_image_repositories: non_empty(&self.allowed_image_repositories),
            default_images: DefaultImages {
                console: self.default_console_image.clone(),
                pgadmin: self.default_pgadmin_image.clone(),
                oauth2_proxy: self.default_oauth2_proxy_image.clone(),
                evidence_agent: self.default_evidence_agent_image.clone(),
            },
            max_inflight_writes: self.max_inflight_writes,
            evidence_certificate_validity: self.evidence_certificate_validity,
            ..OperatorSettings::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn bind_addresses_follow_controller_runtime() {
        assert_eq!(parse_bind(":8080"), Ok("0.0.0.0:8080".parse().unwrap()));
        assert_eq!(
            parse_bind("127.0.0.1:9"),
            Ok("127.0.0.1:9".parse().unwrap())
        );
        assert!(parse_bind("localhost").is_err());
        assert!(parse_bind(":http").is_err());
    }

    #[derive(Parser)]
    struct Probe {
        #[command(flatten)]
        settings: SettingsArgs,
        #[command(flatten)]
        endpoints: EndpointArgs,
    }

    #[test]
    fn comma_lists_go_style_addresses_and_empty_defaults() {
        let parsed = Probe::try_parse_from([
            "x",
            "--watch-namespaces",
            "a, b,,c",
            "--metrics-bind-address",
            ":9090",
            "--default-console-image",
            "registry.example/console:1",
        ])
        .map(|p| (p.settings, p.endpoints));
        let Ok((args, endpoints)) = parsed else {
            panic!("{parsed:?}")
        };
        let settings = args.to_settings();
        assert_eq!(settings.watch_namespaces, ["a", "b", "c"]);
        assert!(settings.allowed_image_repositories.is_empty());
        assert_eq!(
            endpoints.metrics_bind_address,
            "0.0.0.0:9090".parse().unwrap()
        );
        assert_eq!(
            settings.default_images.console.as_deref(),
            Some("registry.example/console:1")
        );
        assert_eq!(settings.default_images.pgadmin, None);
        assert_eq!(
            settings.evidence_certificate_validity,
            std::time::Duration::from_secs(90 * 24 * 3600)
        );
    }

    #[test]
    fn certificate_validity_is_a_positive_duration() {
        let parse = |value: &str| {
            Probe::try_parse_from(["x", "--evidence-certificate-validity", value])
                .map(|p| p.settings.to_settings().evidence_certificate_validity)
                .ok()
        };
        for (text, secs) in [
            ("45s", Some(45)),
            ("1h30m", Some(5400)),
            ("2160h", Some(7_776_000)),
        ] {
            assert_eq!(
                parse(text),
                secs.map(std::time::Duration::from_secs),
                "{text}"
            );
        }
        for text in ["0s", "-5s", "soon", "500ms"] {
            assert_eq!(parse(text), None, "{text}");
        }
    }
}
