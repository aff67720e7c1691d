//! Our generated CRDs served by the embedded API server, driven by kubectl: they apply, the
//! examples apply, printer columns show the status, and the schema's CEL rules are enforced.

use std::path::Path;

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_support::start;

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(path)
        .display()
        .to_string()
}

fn ready_status(extra: &str) -> String {
    format!(
        r#"{{"status":{{"observedGeneration":1,{extra}"conditions":[{{"type":"Ready","status":"False","reason":"ClusterNotFound","message":"no Cluster orders","lastTransitionTime":"2026-01-01T00:00:00Z","observedGeneration":1}}]}}}}"#
    )
}

/// One kind's row: short name, object, extra status fields, header words, values in the row.
struct Columns {
    short: &'static str,
    name: &'static str,
    status: &'static str,
    header: &'static [&'static str],
    values: &'static [&'static str],
}

fn header_and_row(table: &str, name: &str) -> (String, String) {
    let header = table.lines().next().unwrap_or_default().to_owned();
    let row = table
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_default()
        .to_owned();
    (header, row)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_crds_apply_and_print_their_columns() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the CRD kubectl test");
        return;
    }
    let (sim, _client) = start().await;
    let k = Kubectl::for_sim(&sim);
    tokio::task::spawn_blocking(move || {
        for file in ["pgadmins", "pgadminaccesses", "evidenceagents", "pgtoolboxconsoles", "pgaccessrequests", "pgaccesspolicies"] {
            k.ok(&["apply", "--validate=false", "-f", &repo(&format!("crds/{file}.yaml"))]);
        }
        for ns in ["team-a", "team-b"] {
            let manifest = k.file(&format!("{ns}.yaml"), &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"));
            k.ok(&["apply", "--validate=false", "-f", &manifest]);
        }
        for example in ["pgadmin", "pgadminaccess", "evidenceagent", "pgtoolboxconsole", "pgaccessrequest"] {
            k.ok(&["apply", "--validate=false", "-f", &repo(&format!("examples/{example}.yaml"))]);
        }

        // Defaults are applied by the server from the schema.
        let endpoints = k.ok(&["get", "pga", "team-pgadmin", "-n", "team-a", "-o", "jsonpath={.spec.storage.size}"]);
        assert_eq!(endpoints.trim(), "1Gi");

        let cases = [
            Columns {
                short: "pga",
                name: "team-pgadmin",
                status: r#""url":"https://pgadmin.team-a.apps.example.com","#,
                header: &["NAME", "READY", "REASON", "URL", "AGE"],
                values: &["False", "ClusterNotFound", "https://pgadmin.team-a.apps.example.com"],
            },
            Columns {
                short: "pgaa",
                name: "grant-team-a",
                status: "",
                header: &["NAME", "READY", "REASON", "PGADMIN", "FROM", "CLUSTERS", "AGE"],
                values: &["False", "ClusterNotFound", "team-pgadmin", "team-a", "billing"],
            },
            Columns {
                short: "pgev",
                name: "orders-evidence",
                status: "",
                header: &["NAME", "READY", "REASON", "CLUSTER", "AGE"],
                values: &["False", "ClusterNotFound", "orders"],
            },
            Columns {
                short: "pgtc",
                name: "orders-console",
                status: r#""url":"https://console.team-a.apps.example.com","#,
                header: &["NAME", "READY", "REASON", "URL", "AGE"],
                values: &["False", "ClusterNotFound", "https://console.team-a.apps.example.com"],
            },
            Columns {
                short: "pgar",
                name: "alice-orders",
                status: r#""phase":"Approved","approver":"bob","#,
                header: &["NAME", "READY", "REASON", "PHASE", "SUBJECT", "EXPIRES", "AGE"],
                values: &["False", "ClusterNotFound", "Approved", "alice", "2099-01-01T00:00:00Z"],
            },
        ];
        for Columns { short, name, status: extra, header: columns, values } in cases {
            let ns = if short == "pgaa" { "team-b" } else { "team-a" };
            k.ok(&["patch", short, name, "-n", ns, "--type", "merge", "--subresource", "status", "-p", &ready_status(extra)]);
            let table = k.ok(&["get", short, "-n", ns]);
            let (header, row) = header_and_row(&table, name);
            let header_words: Vec<&str> = header.split_whitespace().collect();
            assert_eq!(header_words, columns.to_vec(), "{short}: {table}");
            for value in values {
                assert!(row.contains(value), "{short}: {value} missing in {table}");
            }
        }

        // The API server enforces the schema's CEL rules.
        let no_hostname = k.file("no-hostname.yaml", "apiVersion: pgtoolbox.fyannk.dev/v1alpha1\nkind: PgToolBoxConsole\nmetadata:\n  name: bad\n  namespace: team-a\nspec:\n  exposure:\n    type: route\n");
        k.refused(&["apply", "--validate=false", "-f", &no_hostname], "hostname is required");
        k.refused(
            &["patch", "pgar", "alice-orders", "-n", "team-a", "--type", "merge", "-p", r#"{"spec":{"expiresAt":"2100-01-01T00:00:00Z"}}"#],
            "expiresAt may only move earlier",
        );
        k.ok(&["patch", "pgar", "alice-orders", "-n", "team-a", "--type", "merge", "-p", r#"{"spec":{"expiresAt":"2029-01-01T00:00:00Z"}}"#]);
        k.refused(
            &["patch", "pgar", "alice-orders", "-n", "team-a", "--type", "merge", "-p", r#"{"spec":{"clusterRole":"cluster-admin"}}"#],
            "spec is immutable",
        );
    })
    .await
    .expect("kubectl steps");
}
