//! Runtime metrics: passes by result, actor restarts, live and hibernated objects, armed
//! timers, per kind.

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

#[derive(Debug, Default)]
pub struct RuntimeMetrics {
    passes: Family<PassLabels, Counter>,
    restarts: Family<KindLabels, Counter>,
    actors: Family<KindLabels, Gauge>,
    hibernated: Family<KindLabels, Gauge>,
    timers: Family<KindLabels, Gauge>,
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
        metrics
    }

    pub fn pass(&self, kind: &str, result: PassResult) {
        self.passes
            .get_or_create(&PassLabels {
                kind: kind.to_string(),
                result,
            })
            .inc();
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
}
