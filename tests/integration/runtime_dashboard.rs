//! deploy/grafana/pgtoolbox-operator.json queries what the operator exports, and all of it: every
//! metric name in its PromQL is a series of the operator's registry (as `/metrics` encodes it),
//! and every family of that registry has a panel.

use std::collections::{BTreeMap, BTreeSet};

use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::{PassResult, Reported};
use serde_json::Value;

fn dashboard() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/grafana/pgtoolbox-operator.json"
    );
    let text = std::fs::read_to_string(path).expect("the dashboard");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every panel, those nested in collapsed rows included.
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        out.push(panel);
        out.extend(panel["panels"].as_array().into_iter().flatten());
    }
    out
}

/// The sample names the registry serves, each with its family: `# TYPE` lines give each family
/// and its type; a counter is sampled as `_total`, a histogram as `_bucket`, `_sum` and `_count`.
pub(crate) fn exported(text: &str) -> BTreeMap<String, String> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (family, kind) = rest.split_once(' ').expect("# TYPE name type");
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            _ => &[""],
        };
        for suffix in suffixes {
            samples.insert(format!("{family}{suffix}"), family.to_owned());
        }
    }
    samples
}

/// Every sample name the operator's registry serves (with its family), each family fed once:
/// a family is encoded once it has a series.
pub(crate) fn exported_samples() -> BTreeMap<String, String> {
    let metrics = OperatorMetrics::new();
    // Registers the runtime's series (passes, actors, timers) beside the shared ones, as the
    // operator does at start.
    let shared = Shared::with_metrics(Default::default(), metrics.clone());
    metrics.reconcile_took("PgAdmin", std::time::Duration::from_millis(3));
    metrics.api_request("get");
    metrics.api_write("patch");
    metrics.api_error("list", "routes", "403");
    metrics.set_leader(true);
    metrics.set_write_capacity(32);
    metrics.write_waited(std::time::Duration::from_millis(5));
    metrics.set_optional_api("routes", 0, false);
    metrics.set_unreachable_access_requests(0);
    metrics.undecodable_objects("PgAccessRequest").set(0);
    shared.runtime.pass("PgAdmin", PassResult::Converged);
    shared.runtime.restart("PgAdmin");
    shared.runtime.set_actors("PgAdmin", 1);
    shared.runtime.set_hibernated("PgAdmin", 1);
    shared.runtime.set_timers("PgAdmin", 1);
    let stalled = Reported {
        ready: Some(("False", "SecretNotFound")),
        stalled: Some("SecretNotFound"),
        certificate_not_after: None,
    };
    shared
        .runtime
        .reported("PgAdmin", &Reported::default(), &stalled);
    shared
        .runtime
        .set_certificate_expiry("EvidenceAgent", Some(1_800_000_000));
    exported(&metrics.encode().expect("encoded"))
}

#[test]
fn the_dashboard_queries_every_exported_metric_and_nothing_else() {
    let samples = exported_samples();
    let families: BTreeSet<&String> = samples.values().collect();
    assert!(families.len() >= 17, "{families:?}");

    let dashboard = dashboard();
    let metric_name = regex::Regex::new(r"\bpgtoolbox_[a-z0-9_]+").expect("regex");
    let mut queries: Vec<String> = Vec::new();
    let mut ids = BTreeSet::new();
    for panel in panels(&dashboard) {
        let id = panel["id"].as_u64().expect("a numeric panel id");
        assert!(ids.insert(id), "panel id {id} twice");
        assert!(panel["title"].as_str().is_some_and(|t| !t.is_empty()));
        assert!(
            panel["gridPos"]["w"].as_u64().is_some(),
            "panel {id} placed"
        );
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(
            panel["datasource"]["uid"], "${datasource}",
            "panel {id} queries the dashboard's data source"
        );
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {id} has no target");
        for target in targets {
            let expr = target["expr"].as_str().expect("a PromQL expr");
            assert!(
                metric_name.is_match(expr),
                "panel {id} queries none of ours: {expr}"
            );
            queries.push(expr.to_owned());
        }
    }
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    assert!(
        variables.iter().any(|v| v["name"] == "datasource"
            && v["type"] == "datasource"
            && v["query"] == "prometheus"),
        "a Prometheus data source variable"
    );
    queries.extend(
        variables
            .iter()
            .filter_map(|v| v["definition"].as_str().map(str::to_owned)),
    );

    let used: BTreeSet<&str> = queries
        .iter()
        .flat_map(|q| metric_name.find_iter(q).map(|m| m.as_str()))
        .collect();
    let unknown: Vec<&&str> = used.iter().filter(|m| !samples.contains_key(**m)).collect();
    assert!(
        unknown.is_empty(),
        "queried but not exported: {unknown:?} (exported: {:?})",
        samples.keys()
    );
    let shown: BTreeSet<&String> = used.iter().filter_map(|m| samples.get(*m)).collect();
    let unshown: Vec<&&String> = families.difference(&shown).collect();
    assert!(unshown.is_empty(), "exported without a panel: {unshown:?}");
}
