//! A third-party scanner over what we install and what we render (issue 46): checkov's
//! Kubernetes checks over `deploy/`, each overlay (rendered by `kubectl kustomize`) and every
//! child the built-in examples make `sim` render. A check that fails must be justified in one
//! line of docs/operations.md's "Security" section (`- \`CKV_...\` ...`); any other fails this
//! test, naming the resource.
//!
//! `.ci/run` installs the pinned checkov and sets `CHECKOV`; with `CHECKOV` set the test must
//! run. Without it, a `checkov` on `PATH` is used, else the test skips, saying so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::cli_support::Running;
use crate::kubectl_support::{Kubectl, kubectl_present};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The workloads of the examples, Ready once their children are all rendered.
const READY: [&str; 5] = [
    "PgAdmin team-a/team-pgadmin Ready=True",
    "PgToolBoxConsole team-a/orders-console Ready=True",
    "PgToolBoxConsole team-a/team-console Ready=True",
    "EvidenceAgent team-a/orders-audit Ready=True",
    "EvidenceAgent team-a/orders-evidence Ready=True",
];

/// The child kinds checkov has checks for.
const CHILD_KINDS: &str = "deployments,jobs,cronjobs,services,serviceaccounts,networkpolicies,\
roles,rolebindings,configmaps,ingresses,poddisruptionbudgets,persistentvolumeclaims";

fn checkov() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHECKOV") {
        return Some(PathBuf::from(path));
    }
    let on_path = Command::new("checkov")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    on_path.then(|| PathBuf::from("checkov"))
}

/// The check ids docs/operations.md justifies: `- \`CKV...\`` lines of its Security section.
fn justified() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/operations.md")).expect("doc");
    let section = doc
        .split("\n## Security\n")
        .nth(1)
        .expect("docs/operations.md has a Security section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|rest| rest.split('`').next())
        .filter(|id| id.starts_with("CKV"))
        .map(str::to_owned)
        .collect()
}

/// Every child the running `sim` rendered, one JSON file each, without what the API server
/// adds (status, managedFields, uid...).
fn write_children(kubeconfig: &str, dir: &Path) -> usize {
    let out = Kubectl::at(kubeconfig.into()).stdout(&[
        "get",
        CHILD_KINDS,
        "-A",
        "-o",
        "json",
        "-l",
        "app.kubernetes.io/managed-by=pgtoolbox-operator",
    ]);
    let list: Value = serde_json::from_slice(&out).expect("a list");
    let items = list["items"].as_array().expect("items");
    for item in items {
        let mut item = item.clone();
        let obj = item.as_object_mut().expect("an object");
        obj.remove("status");
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            for added in [
                "managedFields",
                "uid",
                "resourceVersion",
                "creationTimestamp",
            ] {
                meta.remove(added);
            }
        }
        let name = format!(
            "{}-{}-{}.json",
            item["kind"].as_str().unwrap_or("").to_lowercase(),
            item["metadata"]["namespace"].as_str().unwrap_or(""),
            item["metadata"]["name"].as_str().unwrap_or("")
        );
        std::fs::write(
            dir.join(name),
            serde_json::to_vec_pretty(&item).expect("json"),
        )
        .expect("write");
    }
    items.len()
}

/// `deploy/` and each overlay as `kubectl kustomize` renders them.
fn write_install(dir: &Path) {
    let overlays = std::fs::read_dir(Path::new(ROOT).join("overlays")).expect("overlays");
    let mut sources = vec!["deploy".to_string()];
    sources.extend(overlays.map(|e| {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        format!("overlays/{name}")
    }));
    for source in sources {
        let rendered = crate::runtime_deploy::kustomize(&source).expect("kubectl is present");
        let name = source.replace('/', "-");
        std::fs::write(dir.join(format!("{name}.yaml")), rendered).expect("write");
    }
}

#[test]
fn checkov_finds_nothing_unjustified_in_the_install_and_the_rendered_children() {
    let Some(checkov) = checkov() else {
        eprintln!("checkov not installed (see .ci/run): skipping the scan");
        return;
    };
    if !kubectl_present() {
        eprintln!("kubectl not found (it renders the overlays): skipping the scan");
        return;
    }
    // checkov skips directories whose name starts with a dot, as tempfile's do by default.
    let dir = tempfile::Builder::new()
        .prefix("checkov-")
        .tempdir()
        .expect("tempdir");
    let scan = dir.path().join("scan");
    for sub in ["children", "install"] {
        std::fs::create_dir_all(scan.join(sub)).expect("mkdir");
    }
    write_install(&scan.join("install"));

    let mut sim = Running::start(&["sim"], dir.path(), Stdio::null());
    let kubeconfig = sim.kubeconfig();
    let mut waiting: BTreeSet<&str> = READY.into_iter().collect();
    while !waiting.is_empty() {
        let line = sim.wait_for("Ready=True");
        waiting.retain(|ready| !line.contains(ready));
    }
    let children = write_children(&kubeconfig, &scan.join("children"));
    assert!(sim.interrupt().success());
    assert!(children >= 20, "only {children} children rendered");

    let out = Command::new(&checkov)
        .arg("-d")
        .arg(&scan)
        .args([
            "--framework",
            "kubernetes",
            "--compact",
            "--quiet",
            "-o",
            "json",
        ])
        .output()
        .expect("checkov runs");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "checkov's report is not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    // One report per framework that ran: a list of them, or the one alone.
    let report = match report {
        Value::Array(reports) => reports
            .into_iter()
            .find(|r| r["check_type"] == "kubernetes")
            .expect("a kubernetes report"),
        report => report,
    };
    let summary = &report["summary"];
    assert_eq!(summary["parsing_errors"], 0, "{report}");
    assert!(
        summary["resource_count"].as_u64().unwrap_or(0) > children as u64,
        "checkov did not read every file: {summary}"
    );
    let justified = justified();
    let mut unjustified: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for failed in report["results"]["failed_checks"]
        .as_array()
        .expect("failed_checks")
    {
        let id = failed["check_id"].as_str().unwrap_or("");
        if !justified.contains(id) {
            unjustified
                .entry(format!(
                    "{id} {}",
                    failed["check_name"].as_str().unwrap_or("")
                ))
                .or_default()
                .push(format!(
                    "{} ({})",
                    failed["resource"].as_str().unwrap_or(""),
                    failed["file_path"].as_str().unwrap_or("")
                ));
        }
    }
    assert!(
        unjustified.is_empty(),
        "checkov findings neither fixed nor justified in docs/operations.md's Security section: \
         {unjustified:#?}"
    );
}
