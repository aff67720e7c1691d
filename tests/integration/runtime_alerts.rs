//! deploy/monitoring: the ServiceMonitor finds the metrics Service, and every alert of the two
//! PrometheusRules (the operator's, the evidence agents') names a runbook section of
//! docs/operations.md, is covered by the promtool tests (firing and silent), which pass, and
//! the operator's query only metrics the operator exports (the agents' rule is checked against
//! the agent's own registry beside it, in evidence-agent/src/state.rs).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::Value;

use crate::runtime_dashboard::exported_samples;
use crate::runtime_deploy::kustomize;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn yaml_file(path: &str) -> Value {
    let text = std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The alerting rules of the PrometheusRule, each as written.
fn alerts(rule: &Value) -> Vec<&Value> {
    rule["spec"]["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
        .filter(|r| r.get("alert").is_some())
        .collect()
}

/// The anchors GitHub gives the headings of a Markdown file: lower case, spaces as dashes,
/// punctuation other than dashes and underscores dropped.
fn anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| {
            line.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

fn promtool(args: &[&str], dir: &Path) -> String {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "promtool could not run ({e}): install the Debian package `prometheus` \
                 (.ci/run installs it: apt-get install -y prometheus)"
            )
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {}:\n{text}", args.join(" "));
    text
}

#[test]
fn monitoring_renders_a_servicemonitor_for_the_metrics_service_and_the_rule() {
    let Some(rendered) = kustomize("deploy/monitoring") else {
        return;
    };
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&rendered)
        .map(|doc| Value::deserialize(doc).expect("a YAML object"))
        .collect();
    let kinds: BTreeSet<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["PrometheusRule", "ServiceMonitor"]),
        "{rendered}"
    );
    for doc in &docs {
        assert_eq!(doc["apiVersion"], "monitoring.coreos.com/v1", "{doc}");
        assert_eq!(doc["metadata"]["namespace"], "pgtoolbox-system", "{doc}");
        assert!(doc["metadata"]["name"].is_string(), "{doc}");
    }
    for (name, file) in RULES.iter().map(|r| (r.name, r.file)) {
        let rule = docs
            .iter()
            .find(|d| d["kind"] == "PrometheusRule" && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("rule {name} in {rendered}"));
        assert_eq!(
            rule["spec"],
            yaml_file(file)["spec"],
            "the rendered rule {name} is the file promtool tests"
        );
    }

    // The ServiceMonitor selects the metrics Service of deploy/ by its labels and port name.
    let monitor = docs
        .iter()
        .find(|d| d["kind"] == "ServiceMonitor")
        .expect("monitor");
    let service = yaml_file("deploy/07-metrics-service.yaml");
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    assert!(!selector.is_empty());
    for (key, value) in selector {
        assert_eq!(&service["metadata"]["labels"][key], value, "label {key}");
    }
    assert_eq!(
        monitor["spec"]["namespaceSelector"]["matchNames"][0],
        service["metadata"]["namespace"]
    );
    let ports: BTreeSet<&str> = service["spec"]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for endpoint in monitor["spec"]["endpoints"].as_array().expect("endpoints") {
        let port = endpoint["port"].as_str().expect("a named port");
        assert!(ports.contains(port), "{port} not in {ports:?}");
        assert_eq!(endpoint["path"], "/metrics");
    }
}

/// A PrometheusRule of deploy/monitoring and its promtool tests.
struct Rules {
    name: &'static str,
    file: &'static str,
    tests: &'static str,
    /// The least number of alerts it holds (an alert dropped by mistake fails).
    at_least: usize,
}

const RULES: [Rules; 2] = [
    Rules {
        name: "pgtoolbox-operator",
        file: "deploy/monitoring/prometheusrule.yaml",
        tests: "deploy/monitoring/tests/alerts.test.yaml",
        at_least: 9,
    },
    Rules {
        name: "pgtoolbox-evidence-agent",
        file: "deploy/monitoring/evidence-agent-rule.yaml",
        tests: "deploy/monitoring/tests/evidence-agent.test.yaml",
        at_least: 4,
    },
];

#[test]
fn every_alert_has_a_runbook_queries_exported_metrics_and_passes_its_promtool_tests() {
    let samples = exported_samples();
    check_rules(&RULES[0], &|metric: &str| {
        assert!(
            samples.contains_key(metric),
            "it queries {metric}, which the operator does not export (it does: {:?})",
            samples.keys()
        );
    });
}

#[test]
fn every_evidence_agent_alert_has_a_runbook_and_passes_its_promtool_tests() {
    // The names are the agent's: its own test holds them against its registry.
    check_rules(&RULES[1], &|metric: &str| {
        assert!(metric.starts_with("pgtoolbox_evidence_"), "{metric}");
    });
}

/// Every alert of `rules` has a severity, a summary, a `for`, its own runbook section, queries
/// metrics `exported` accepts, and is tested firing and silent; promtool checks and runs them.
fn check_rules(rules: &Rules, exported: &dyn Fn(&str)) {
    let rule = yaml_file(rules.file);
    let alerts = alerts(&rule);
    assert!(alerts.len() >= rules.at_least, "{} alerts", alerts.len());
    let operations = std::fs::read_to_string(repo("docs/operations.md")).expect("docs");
    let anchors = anchors(&operations);
    let metric_name = regex::Regex::new(r"\bpgtoolbox_[a-z0-9_]+").expect("regex");
    let tests = yaml_file(rules.tests);
    let cases: Vec<&Value> = tests["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().into_iter().flatten())
        .collect();

    let mut names = BTreeSet::new();
    for alert in &alerts {
        let name = alert["alert"].as_str().expect("an alert name");
        assert!(names.insert(name), "{name} twice");
        assert!(alert["for"].is_string(), "{name}: a `for`");
        assert!(
            ["warning", "critical"].contains(&alert["labels"]["severity"].as_str().unwrap_or("")),
            "{name}: a severity"
        );
        assert!(
            alert["annotations"]["summary"].is_string(),
            "{name}: a summary"
        );
        let runbook = alert["annotations"]["runbook"].as_str().expect("a runbook");
        let anchor = runbook
            .strip_prefix("docs/operations.md#")
            .unwrap_or_else(|| panic!("{name}: {runbook} is not in docs/operations.md"));
        assert_eq!(anchor, name.to_lowercase(), "{name}: its own section");
        assert!(anchors.contains(anchor), "{name}: no heading for #{anchor}");

        let expr = alert["expr"].as_str().expect("an expr");
        let used: Vec<&str> = metric_name.find_iter(expr).map(|m| m.as_str()).collect();
        assert!(!used.is_empty(), "{name} queries none of ours: {expr}");
        for metric in used {
            exported(metric);
        }

        let of_alert = || cases.iter().filter(|c| c["alertname"] == name);
        let fires = of_alert().any(|c| c["exp_alerts"].as_array().is_some_and(|a| !a.is_empty()));
        let silent = of_alert().any(|c| c["exp_alerts"].as_array().is_some_and(|a| a.is_empty()));
        assert!(
            fires && silent,
            "{name}: tested firing ({fires}) and silent ({silent})"
        );
    }

    // promtool reads plain rule groups: the PrometheusRule's spec, beside a copy of the tests.
    let dir = tempfile::tempdir().expect("a scratch directory");
    let groups = serde_yaml_ng::to_string(&rule["spec"]).expect("rules as YAML");
    std::fs::write(dir.path().join("rules.yaml"), groups).expect("rules.yaml");
    std::fs::copy(repo(rules.tests), dir.path().join("alerts.test.yaml")).expect("the tests");
    let checked = promtool(&["check", "rules", "rules.yaml"], dir.path());
    assert!(
        checked.contains(&format!("SUCCESS: {} rules found", alerts.len())),
        "{checked}"
    );
    let tested = promtool(&["test", "rules", "alerts.test.yaml"], dir.path());
    assert!(tested.contains("SUCCESS"), "{tested}");
    eprintln!("{checked}{tested}");
}
