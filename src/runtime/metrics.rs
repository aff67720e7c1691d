//! Runtime metrics: passes by result, actor restarts, live and hibernated objects, armed
//! timers, per kind; and what the objects' stored statuses report (Ready and Stalled by reason,
//! the earliest certificate expiry), counted by the kind's supervisor from its watch.

use crate::api::Reported;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
pub enum PassResult {
    Converged,
    Stalled,
    Failed,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PassLabels {
    kind: String,
    result: PassResult,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReadyLabels {
    kind: String,
    ready: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    kind: String,
    reason: &'static str,
}

#[derive(Debug, Default)]
pub struct RuntimeMetrics {
    passes: Family<PassLabels, Counter>,
    restarts: Family<KindLabels, Counter>,
    actors: Family<KindLabels, Gauge>,
    hibernated: Family<KindLabels, Gauge>,
    timers: Family<KindLabels, Gauge>,
    by_ready: Family<ReadyLabels, Gauge>,
    stalled: Family<ReasonLabels, Gauge>,
    certificate_expiry: Family<KindLabels, Gauge>,
}

impl RuntimeMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "pgtoolbox_reconcile_passes",
            "Reconcile passes by kind and result",
            metrics.passes.clone(),
        );
        registry.register(
            "pgtoolbox_object_actor_restarts",
            "Restarts of object actors whose pass panicked",
            metrics.restarts.clone(),
        );
        registry.register(
            "pgtoolbox_object_actors",
            "Live object actors",
            metrics.actors.clone(),
        );
        registry.register(
            "pgtoolbox_hibernated_objects",
            "Objects whose actor is stopped until a change wakes it",
            metrics.hibernated.clone(),
        );
        registry.register(
            "pgtoolbox_armed_timers",
            "Timers armed in the kind's timer wheel",
            metrics.timers.clone(),
        );
        registry.register(
            "pgtoolbox_objects",
            "Objects by kind and the status and reason of their Ready condition, as stored",
            metrics.by_ready.clone(),
        );
        registry.register(
            "pgtoolbox_stalled_objects",
            "Objects whose stored Stalled condition is True, by kind and reason",
            metrics.stalled.clone(),
        );
        registry.register_with_unit(
            "pgtoolbox_certificate_earliest_expiry_timestamp",
            "The earliest notAfter among the certificates the operator issued, by kind",
            prometheus_client::registry::Unit::Seconds,
            metrics.certificate_expiry.clone(),
        );
        metrics
    }

    /// An object of `kind` went from reporting `before` to reporting `after` (`Reported::default()`
    /// for an object that appears or goes). The certificate expiry is not counted here: the
    /// supervisor publishes the earliest one with [`RuntimeMetrics::set_certificate_expiry`].
    pub fn reported(&self, kind: &str, before: &Reported, after: &Reported) {
        if before.ready != after.ready {
            if let Some((ready, reason)) = before.ready {
                self.by_ready
                    .get_or_create(&ready_labels(kind, ready, reason))
                    .dec();
            }
            if let Some((ready, reason)) = after.ready {
                self.by_ready
                    .get_or_create(&ready_labels(kind, ready, reason))
                    .inc();
            }
        }
        if before.stalled != after.stalled {
            if let Some(reason) = before.stalled {
                self.stalled
                    .get_or_create(&reason_labels(kind, reason))
                    .dec();
            }
            if let Some(reason) = after.stalled {
                self.stalled
                    .get_or_create(&reason_labels(kind, reason))
                    .inc();
            }
        }
    }

    /// The earliest certificate expiry of `kind` (Unix seconds), or none: the series goes.
    pub fn set_certificate_expiry(&self, kind: &str, not_after: Option<i64>) {
        let labels = KindLabels {
            kind: kind.to_string(),
        };
        match not_after {
            Some(at) => {
                self.certificate_expiry.get_or_create(&labels).set(at);
            }
            None => {
                self.certificate_expiry.remove(&labels);
            }
        }
    }

    pub fn pass(&self, kind: &str, result: PassResult) {
        self.passes
            .get_or_create(&PassLabels {
                kind: kind.to_string(),
                result,
            })
            .inc();
    }

    /// Passes of `kind` ended so far, whatever their result (tests wait on it advancing).
    pub fn passes(&self, kind: &str) -> u64 {
        [
            PassResult::Converged,
            PassResult::Stalled,
            PassResult::Failed,
        ]
        .into_iter()
        .filter_map(|result| {
            let labels = PassLabels {
                kind: kind.to_string(),
                result,
            };
            self.passes.get(&labels).map(|counter| counter.get())
        })
        .sum()
    }

    pub fn restart(&self, kind: &str) {
        self.restarts
            .get_or_create(&KindLabels {
                kind: kind.to_string(),
            })
            .inc();
    }

    pub fn set_actors(&self, kind: &str, count: usize) {
        set(&self.actors, kind, count);
    }

    pub fn set_hibernated(&self, kind: &str, count: usize) {
        set(&self.hibernated, kind, count);
    }

    pub fn set_timers(&self, kind: &str, count: usize) {
        set(&self.timers, kind, count);
    }

    /// Live and hibernated objects of `kind` (0 for a kind never counted).
    pub fn objects(&self, kind: &str) -> (i64, i64) {
        let get = |family: &Family<KindLabels, Gauge>| {
            family
                .get(&KindLabels {
                    kind: kind.to_string(),
                })
                .map_or(0, |gauge| gauge.get())
        };
        (get(&self.actors), get(&self.hibernated))
    }
}

fn ready_labels(kind: &str, ready: &'static str, reason: &'static str) -> ReadyLabels {
    ReadyLabels {
        kind: kind.to_string(),
        ready,
        reason,
    }
}

fn reason_labels(kind: &str, reason: &'static str) -> ReasonLabels {
    ReasonLabels {
        kind: kind.to_string(),
        reason,
    }
}

fn set(family: &Family<KindLabels, Gauge>, kind: &str, count: usize) {
    family
        .get_or_create(&KindLabels {
            kind: kind.to_string(),
        })
        .set(i64::try_from(count).unwrap_or(i64::MAX));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_encoded_with_kind_labels() {
        let mut registry = Registry::default();
        let metrics = RuntimeMetrics::register(&mut registry);
        metrics.pass("PgAdmin", PassResult::Failed);
        metrics.pass("PgAdmin", PassResult::Failed);
        metrics.set_actors("PgAdmin", 3);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(r#"pgtoolbox_reconcile_passes_total{kind="PgAdmin",result="Failed"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"pgtoolbox_object_actors{kind="PgAdmin"} 3"#),
            "{text}"
        );
    }

    #[test]
    fn reported_statuses_move_between_series_and_the_expiry_goes_with_the_last_certificate() {
        let mut registry = Registry::default();
        let metrics = RuntimeMetrics::register(&mut registry);
        let stalled = Reported {
            ready: Some(("False", "SecretNotFound")),
            stalled: Some("SecretNotFound"),
            certificate_not_after: None,
        };
        let ready = Reported {
            ready: Some(("True", "AsExpected")),
            ..Reported::default()
        };
        metrics.reported("PgAdmin", &Reported::default(), &stalled);
        metrics.reported("PgAdmin", &Reported::default(), &stalled);
        metrics.reported("PgAdmin", &stalled, &ready);
        metrics.set_certificate_expiry("EvidenceAgent", Some(1_800_000_000));
        let text = encode(&registry);
        for line in [
            r#"pgtoolbox_objects{kind="PgAdmin",ready="False",reason="SecretNotFound"} 1"#,
            r#"pgtoolbox_objects{kind="PgAdmin",ready="True",reason="AsExpected"} 1"#,
            r#"pgtoolbox_stalled_objects{kind="PgAdmin",reason="SecretNotFound"} 1"#,
            r#"pgtoolbox_certificate_earliest_expiry_timestamp_seconds{kind="EvidenceAgent"} 1800000000"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        metrics.reported("PgAdmin", &stalled, &Reported::default());
        metrics.set_certificate_expiry("EvidenceAgent", None);
        let text = encode(&registry);
        assert!(
            text.contains(r#"pgtoolbox_stalled_objects{kind="PgAdmin",reason="SecretNotFound"} 0"#),
            "{text}"
        );
        assert!(
            !text.contains("pgtoolbox_certificate_earliest_expiry_timestamp_seconds{"),
            "{text}"
        );
    }

    fn encode(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    }
}
