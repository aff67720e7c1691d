//! What the agent knows: the last evidence, the last read's error, and the metrics.

use std::sync::{Arc, RwLock};

use pgtoolbox_api::evidence::Evidence;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::catalog::{BarmanTime, text};

type Labels = Vec<(&'static str, String)>;

/// The metrics (`/metrics`), labelled with the server name.
pub struct Metrics {
    registry: Registry,
    last_backup_age: Family<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    last_wal_age: Family<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    gaps: Family<Labels, Gauge>,
    readable: Family<Labels, Gauge>,
    read_errors: Family<Labels, Counter>,
    read_duration: Family<Labels, Histogram>,
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("pgtoolbox_evidence");
        let last_backup_age = Family::default();
        let last_wal_age = Family::default();
        let gaps = Family::default();
        let readable = Family::default();
        let read_errors = Family::default();
        let read_duration: Family<Labels, Histogram> =
            Family::new_with_constructor(duration_histogram);
        registry.register(
            "last_backup_age_seconds",
            "Seconds since the newest DONE base backup ended",
            last_backup_age.clone(),
        );
        registry.register(
            "last_archived_wal_age_seconds",
            "Seconds since the newest WAL segment was archived",
            last_wal_age.clone(),
        );
        registry.register(
            "wal_gaps",
            "Ranges of missing WAL segments in the archive, all timelines",
            gaps.clone(),
        );
        registry.register(
            "store_readable",
            "1 when the last read of the object store succeeded, else 0",
            readable.clone(),
        );
        registry.register(
            "read_errors",
            "Reads of the object store that failed, by reason",
            read_errors.clone(),
        );
        registry.register(
            "read_duration_seconds",
            "How long a read of the catalog took",
            read_duration.clone(),
        );
        Self {
            registry,
            last_backup_age,
            last_wal_age,
            gaps,
            readable,
            read_errors,
            read_duration,
        }
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.05, 2.0, 14))
}

/// The last read, as served.
#[derive(Default)]
struct Last {
    evidence: Option<Arc<Evidence>>,
    /// The newest DONE backup's end and the newest archived WAL's time (epoch seconds).
    backup_end: Option<i64>,
    wal_time: Option<i64>,
    /// The last read's error, in words; `None` once a read succeeded after it.
    error: Option<String>,
}

pub struct State {
    server: String,
    last: RwLock<Last>,
    metrics: Metrics,
}

/// Readiness as `/readyz` tells it.
pub enum Readiness {
    Ready,
    NotReady(String),
}

impl State {
    pub fn new(server: &str) -> Arc<Self> {
        Arc::new(Self {
            server: server.to_owned(),
            last: RwLock::new(Last {
                error: Some("the catalog has not been read yet".into()),
                ..Last::default()
            }),
            metrics: Metrics::new(),
        })
    }

    fn labels(&self) -> Labels {
        vec![("server", self.server.clone())]
    }

    pub fn read_succeeded(&self, evidence: Evidence) {
        let backup_end = evidence.last_successful_backup.as_ref().and_then(|id| {
            evidence
                .backups
                .iter()
                .find(|b| text(b, "backup_id") == Some(id))
                .and_then(|b| text(b, "end_time_iso"))
                .and_then(|t| BarmanTime::parse(&t.replacen('T', " ", 1)))
                .and_then(|t| t.epoch_seconds())
        });
        let wal_time = evidence
            .recovery_window
            .as_ref()
            .and_then(|w| w.last_archived_wal_time.as_deref())
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_second());
        let labels = self.labels();
        let gaps: usize = evidence.wal.iter().map(|t| t.gaps.len()).sum();
        self.metrics
            .gaps
            .get_or_create(&labels)
            .set(i64::try_from(gaps).unwrap_or(i64::MAX));
        self.metrics.readable.get_or_create(&labels).set(1);
        self.metrics
            .read_duration
            .get_or_create(&labels)
            .observe(evidence.read.duration_seconds);
        if let Ok(mut last) = self.last.write() {
            *last = Last {
                evidence: Some(Arc::new(evidence)),
                backup_end,
                wal_time,
                error: None,
            };
        }
    }

    /// A failed read: `reason` (a word of [`crate::store::StoreError::reason`]) labels the
    /// counter, `error` is the not-ready reason in words.
    pub fn read_failed(&self, reason: &'static str, error: String) {
        let labels = self.labels();
        let mut by_reason = labels.clone();
        by_reason.push(("reason", reason.to_owned()));
        self.metrics.read_errors.get_or_create(&by_reason).inc();
        self.metrics.readable.get_or_create(&labels).set(0);
        if let Ok(mut last) = self.last.write() {
            last.error = Some(error);
        }
    }

    pub fn readiness(&self) -> Readiness {
        match self.last.read() {
            Ok(last) => match &last.error {
                None => Readiness::Ready,
                Some(e) => Readiness::NotReady(e.clone()),
            },
            Err(_) => Readiness::NotReady("the agent's state is poisoned".into()),
        }
    }

    /// The last evidence read, and the error of the read after it, if that one failed.
    pub fn evidence(&self) -> (Option<Arc<Evidence>>, Option<String>) {
        match self.last.read() {
            Ok(last) => (last.evidence.clone(), last.error.clone()),
            Err(_) => (None, Some("the agent's state is poisoned".into())),
        }
    }

    /// The metrics text, with the ages taken now.
    pub fn metrics_text(&self) -> Result<String, std::fmt::Error> {
        let now = jiff::Timestamp::now().as_second();
        let labels = self.labels();
        let (backup_end, wal_time) = self
            .last
            .read()
            .map(|l| (l.backup_end, l.wal_time))
            .unwrap_or((None, None));
        let age = |family: &Family<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>,
                   at: Option<i64>| match at {
            // Precision of seconds is plenty for ages of hours.
            #[allow(clippy::cast_precision_loss)]
            Some(at) => {
                family.get_or_create(&labels).set((now - at) as f64);
            }
            None => family.clear(),
        };
        age(&self.metrics.last_backup_age, backup_end);
        age(&self.metrics.last_wal_age, wal_time);
        let mut out = String::new();
        encode(&mut out, &self.metrics.registry)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::State;

    /// The sample names the agent exports: every registered metric, with the suffixes its
    /// type gives its samples (read from the `# TYPE` lines of an agent whose every family
    /// holds a value: the encoder leaves empty families out).
    fn exported() -> BTreeSet<String> {
        let state = State::new("orders");
        state.read_failed("unreachable", "unreachable".into());
        let labels = state.labels();
        state.metrics.gaps.get_or_create(&labels).set(0);
        state
            .metrics
            .read_duration
            .get_or_create(&labels)
            .observe(0.1);
        if let Ok(mut last) = state.last.write() {
            last.backup_end = Some(0);
            last.wal_time = Some(0);
        }
        let text = state.metrics_text().expect("metrics");
        let mut names = BTreeSet::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if (words.next(), words.next()) != (Some("#"), Some("TYPE")) {
                continue;
            }
            let (Some(name), Some(kind)) = (words.next(), words.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
        }
        names
    }

    #[test]
    fn the_alert_rules_query_only_what_the_agent_exports() {
        let exported = exported();
        assert!(
            exported.contains("pgtoolbox_evidence_wal_gaps"),
            "{exported:?}"
        );
        let rule = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/monitoring/evidence-agent-rule.yaml"
        );
        let text = std::fs::read_to_string(rule).expect("the agents' PrometheusRule");
        let queried: BTreeSet<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("expr:"))
            .flat_map(|l| l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
            .filter(|word| word.starts_with("pgtoolbox_"))
            .collect();
        assert!(queried.len() >= 4, "{queried:?}");
        for metric in queried {
            assert!(
                exported.contains(metric),
                "the rule queries {metric}, which the agent does not export ({exported:?})"
            );
        }
    }
}
