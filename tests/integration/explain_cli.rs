//! `explain` as a user runs it: the built binaries with a kubeconfig, their exit codes (0
//! Ready, 1 not Ready, 2 error), `-o json`, and `kubectl pgtoolbox explain` through kubectl
//! finding the plugin on PATH.

use std::path::Path;
use std::process::Output;

use pgtoolbox_operator::testing::conditions::reasons::access_request;
use serde_json::Value;
use tokio::process::Command;

use super::kubectl_support::kubectl_present;
use super::pgar_support::{NS, start};

const OPERATOR: &str = env!("CARGO_BIN_EXE_pgtoolbox-operator");
const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-pgtoolbox");

async fn run(program: &str, args: &[&str], kubeconfig: &Path) -> Output {
    Command::new(program)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .await
        .expect("runs")
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_exit_codes_json_and_the_kubectl_plugin() {
    let env = start().await;
    env.request("pending", 3600).await;
    env.request("missing", 3600).await;
    env.decide("missing", "Approved", "bob").await;
    env.wait_reason("pending", "RoleBindingSynced", "AwaitingDecision")
        .await;
    env.wait_reason("missing", "Ready", "RoleBindingMissing")
        .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    env.sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");

    // Ready: 0, from KUBECONFIG.
    let out = run(
        OPERATOR,
        &["explain", "pgar/pending", "-n", NS],
        &kubeconfig,
    )
    .await;
    assert_eq!(code(&out), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).starts_with("PgAccessRequest team-a/pending: Ready\n"));

    // Not Ready: 1, with the reason's texts; --kubeconfig works as well.
    let path = kubeconfig.display().to_string();
    let args = [
        "explain",
        "PgAccessRequests/missing",
        "-n",
        NS,
        "--kubeconfig",
        &path,
    ];
    let out = run(OPERATOR, &args, Path::new("/nonexistent")).await;
    assert_eq!(code(&out), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("decided by RoleBindingSynced"), "{text}");
    assert!(
        text.contains(access_request::ROLE_BINDING_MISSING.action()),
        "{text}"
    );

    // Errors: 2, said on stderr.
    for (args, said) in [
        (vec!["explain", "pgar/nobody", "-n", NS], "not found"),
        (vec!["explain", "deployment/x", "-n", NS], "unknown kind"),
        (vec!["explain", "pgaa/x", "-n", NS], "no controller"),
        (vec!["explain", "pgar", "-n", NS], "KIND/NAME"),
    ] {
        let out = run(OPERATOR, &args, &kubeconfig).await;
        assert_eq!(code(&out), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}");
    }

    // -o json: one document with the same content.
    let out = run(
        OPERATOR,
        &["explain", "pgar/missing", "-n", NS, "-o", "json"],
        &kubeconfig,
    )
    .await;
    assert_eq!(code(&out), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["kind"], "PgAccessRequest");
    assert_eq!(doc["ready"], false);
    assert_eq!(doc["decidedBy"], "RoleBindingSynced");
    let synced = doc["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "RoleBindingSynced")
        .expect("RoleBindingSynced")
        .clone();
    assert_eq!(synced["role"], "aspect");
    assert_eq!(synced["reason"], "RoleBindingMissing");
    assert_eq!(
        synced["meaning"],
        access_request::ROLE_BINDING_MISSING.meaning()
    );
    assert!(doc["events"].is_array() && doc["children"].is_array());

    // The plugin binary alone, then through kubectl with its directory on PATH.
    let out = run(PLUGIN, &["explain", "pgar/pending", "-n", NS], &kubeconfig).await;
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    if !kubectl_present() {
        eprintln!("kubectl not installed: the plugin is not run through it");
        return;
    }
    let plugin_dir = Path::new(PLUGIN).parent().expect("plugin dir");
    let path = format!(
        "{}:{}",
        plugin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("kubectl")
        .args(["pgtoolbox", "explain", "pgar/missing", "-n", NS])
        .env("PATH", path)
        .env("KUBECONFIG", &kubeconfig)
        .env("KUBECACHEDIR", dir.path().join("kube-cache"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .await
        .expect("kubectl runs");
    assert_eq!(code(&out), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).starts_with("PgAccessRequest team-a/missing: not Ready\n"),
        "{}",
        stdout(&out)
    );
}
