//! The operator's Prometheus registry and the typed handles actors call to feed it.
//!
//! Handles are cheap to clone (one `Arc`) and every update is a lock-free atomic on an
//! already-created series, so calling them on the reconcile path costs next to nothing.

pub(crate) mod client_layer;
mod heap;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbLabels {
    verb: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    verb: String,
    resource: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabels {
    api: String,
}

fn duration_histogram() -> Histogram {
    // 1 ms .. ~65 s: a reconcile is normally a few ms against a local cache, seconds under throttling.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

struct Series {
    reconcile_duration: Family<KindLabels, Histogram, fn() -> Histogram>,
    api_requests: Family<VerbLabels, Counter>,
    api_writes: Family<VerbLabels, Counter>,
    api_errors: Family<ErrorLabels, Counter>,
    leader: Gauge,
    write_capacity: Gauge,
    write_wait: Counter<f64, AtomicU64>,
    dropped_namespaces: Gauge,
    unreachable_access_requests: Gauge,
    undecodable_objects: Family<KindLabels, Gauge>,
    refused_namespaces: Family<ApiLabels, Gauge>,
    optional_api_unavailable: Family<ApiLabels, Gauge>,
}

/// The registry served on `/metrics`, plus handles to the series of the shared actors and the
/// client. Passes by result, live actors and restarts are the runtime's (`RuntimeMetrics`,
/// registered here too).
#[derive(Clone)]
pub struct OperatorMetrics {
    /// Behind a lock only so others can add their series (`register_more`); the series
    /// themselves are updated without it.
    registry: Arc<Mutex<Registry>>,
    series: Arc<Series>,
}

impl Default for OperatorMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for OperatorMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorMetrics").finish_non_exhaustive()
    }
}

impl OperatorMetrics {
    pub fn new() -> Self {
        let series = Series {
            reconcile_duration: Family::new_with_constructor(duration_histogram),
            api_requests: Family::default(),
            api_writes: Family::default(),
            api_errors: Family::default(),
            leader: Gauge::default(),
            write_capacity: Gauge::default(),
            write_wait: Counter::default(),
            dropped_namespaces: Gauge::default(),
            unreachable_access_requests: Gauge::default(),
            undecodable_objects: Family::default(),
            refused_namespaces: Family::default(),
            optional_api_unavailable: Family::default(),
        };
        let mut registry = Registry::default();
        registry.register_with_unit(
            "pgtoolbox_reconcile_duration",
            "Time one reconcile pass took, by kind",
            Unit::Seconds,
            series.reconcile_duration.clone(),
        );
        registry.register(
            "pgtoolbox_api_requests",
            "Requests sent to the Kubernetes API server, by verb",
            series.api_requests.clone(),
        );
        registry.register(
            "pgtoolbox_api_writes",
            "Writes sent to the Kubernetes API server, by verb",
            series.api_writes.clone(),
        );
        registry.register(
            "pgtoolbox_api_errors",
            "Requests the API server answered with an error status (code=transport: no answer), by verb, resource and code",
            series.api_errors.clone(),
        );
        registry.register(
            "pgtoolbox_leader",
            "1 while this replica holds the leader lease, or runs without leader election",
            series.leader.clone(),
        );
        registry.register(
            "pgtoolbox_write_budget_capacity",
            "API writes allowed in flight at once (--max-inflight-writes)",
            series.write_capacity.clone(),
        );
        registry.register_with_unit(
            "pgtoolbox_write_budget_wait",
            "Time writes spent waiting for a slot of the write budget, summed over writes",
            Unit::Seconds,
            series.write_wait.clone(),
        );
        registry.register(
            "pgtoolbox_dropped_namespaces",
            "Namespaces of WATCH_NAMESPACES left out at start for missing permissions",
            series.dropped_namespaces.clone(),
        );
        registry.register(
            "pgtoolbox_unreachable_access_requests",
            "PgAccessRequests in namespaces left out at start for missing permissions: nothing expires them",
            series.unreachable_access_requests.clone(),
        );
        registry.register(
            "pgtoolbox_undecodable_objects",
            "Watched objects of our kinds the operator cannot decode, by kind: left out of reconciliation",
            series.undecodable_objects.clone(),
        );
        registry.register(
            "pgtoolbox_optional_api_refused_namespaces",
            "Watched namespaces where an optional API is refused (403) while served",
            series.refused_namespaces.clone(),
        );
        registry.register(
            "pgtoolbox_optional_api_unavailable",
            "1 when an optional API is off until the next start (not served, or refused everywhere)",
            series.optional_api_unavailable.clone(),
        );
        registry.register_collector(Box::new(heap::HeapCollector));
        Self {
            registry: Arc::new(Mutex::new(registry)),
            series: Arc::new(series),
        }
    }

    /// How long one reconcile pass of an object of `kind` took.
    pub fn reconcile_took(&self, kind: &str, took: Duration) {
        self.series
            .reconcile_duration
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// One request to the API server; `verb` is the Kubernetes verb (get, list, watch, create, ...).
    pub fn api_request(&self, verb: &str) {
        self.series
            .api_requests
            .get_or_create(&verb_labels(verb))
            .inc();
    }

    /// One write to the API server (create, update, patch, delete).
    pub fn api_write(&self, verb: &str) {
        self.series
            .api_writes
            .get_or_create(&verb_labels(verb))
            .inc();
    }

    /// A request the API server answered with an error status, or not at all (`code` is then
    /// `transport`). `resource` is the plural the path names (`deployments`, `routes`, ...).
    pub fn api_error(&self, verb: &str, resource: &str, code: &str) {
        self.series
            .api_errors
            .get_or_create(&ErrorLabels {
                verb: verb.to_owned(),
                resource: resource.to_owned(),
                code: code.to_owned(),
            })
            .inc();
    }

    /// Whether this replica leads (holds the lease, or runs without leader election).
    pub fn set_leader(&self, leads: bool) {
        self.series.leader.set(i64::from(leads));
    }

    /// The write budget's capacity, published once when the budget is made.
    pub fn set_write_capacity(&self, capacity: usize) {
        self.series.write_capacity.set(gauge_value(capacity));
    }

    /// A write waited this long for a slot of the write budget.
    pub fn write_waited(&self, waited: Duration) {
        self.series.write_wait.inc_by(waited.as_secs_f64());
    }

    pub fn set_dropped_namespaces(&self, count: usize) {
        self.series.dropped_namespaces.set(gauge_value(count));
    }

    /// The PgAccessRequests found at start in the namespaces left out for missing permissions.
    pub fn set_unreachable_access_requests(&self, count: usize) {
        self.series
            .unreachable_access_requests
            .set(gauge_value(count));
    }

    /// The gauge of the objects of `kind` a watch could not decode.
    pub fn undecodable_objects(&self, kind: &str) -> Gauge {
        self.series
            .undecodable_objects
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .clone()
    }

    /// Publishes what the start-up probe found for one optional API.
    pub fn set_optional_api(&self, api: &str, refused_namespaces: usize, unavailable: bool) {
        let labels = ApiLabels {
            api: api.to_owned(),
        };
        self.series
            .refused_namespaces
            .get_or_create(&labels)
            .set(gauge_value(refused_namespaces));
        self.series
            .optional_api_unavailable
            .get_or_create(&labels)
            .set(i64::from(unavailable));
    }

    /// Adds series of the runtime, a kind or another component to the served registry. Names
    /// are used as given: start them with `pgtoolbox_`.
    pub fn register_more<T>(&self, register: impl FnOnce(&mut Registry) -> T) -> T {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        register(&mut registry)
    }

    /// The whole registry in the text exposition format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        prometheus_client::encoding::text::encode(&mut text, &registry)?;
        Ok(text)
    }
}

fn verb_labels(verb: &str) -> VerbLabels {
    VerbLabels {
        verb: verb.to_owned(),
    }
}

fn gauge_value(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The value of one series (name and labels as written) in an exposition text.
#[cfg(test)]
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_feed_the_named_series() {
        let m = OperatorMetrics::new();
        m.reconcile_took("PgAdmin", Duration::from_millis(3));
        m.reconcile_took("PgAdmin", Duration::from_millis(5));
        m.api_request("list");
        m.api_write("patch");
        m.set_dropped_namespaces(2);
        m.api_error("list", "routes", "403");
        m.set_leader(true);
        m.set_write_capacity(32);
        m.write_waited(Duration::from_millis(250));
        m.set_optional_api("routes", 1, false);
        m.set_optional_api("gateways", 0, true);
        let extra = m.register_more(|r| {
            let c: Counter = Counter::default();
            r.register("pgtoolbox_extra", "a kind's own series", c.clone());
            c
        });
        extra.inc();
        let text = m.encode().unwrap();
        let get = |s: &str| sample(&text, s);
        assert_eq!(
            get(r#"pgtoolbox_reconcile_duration_seconds_count{kind="PgAdmin"}"#),
            Some(2.0)
        );
        assert_eq!(
            get(r#"pgtoolbox_api_requests_total{verb="list"}"#),
            Some(1.0)
        );
        assert_eq!(
            get(r#"pgtoolbox_api_writes_total{verb="patch"}"#),
            Some(1.0)
        );
        assert_eq!(get("pgtoolbox_dropped_namespaces"), Some(2.0));
        assert_eq!(
            get(r#"pgtoolbox_api_errors_total{verb="list",resource="routes",code="403"}"#),
            Some(1.0)
        );
        assert_eq!(get("pgtoolbox_leader"), Some(1.0));
        assert_eq!(get("pgtoolbox_write_budget_capacity"), Some(32.0));
        assert_eq!(get("pgtoolbox_write_budget_wait_seconds_total"), Some(0.25));
        assert_eq!(
            get(r#"pgtoolbox_optional_api_refused_namespaces{api="routes"}"#),
            Some(1.0)
        );
        assert_eq!(
            get(r#"pgtoolbox_optional_api_unavailable{api="gateways"}"#),
            Some(1.0)
        );
        assert_eq!(get("pgtoolbox_extra_total"), Some(1.0));
    }
}
