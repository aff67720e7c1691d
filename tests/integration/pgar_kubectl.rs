//! The README's walkthrough, as a new user runs it: `pgtoolbox-operator sim`, then kubectl plays
//! the console — approve a request, watch it granted, expire, and its RoleBinding go.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::kubectl_support::{Kubectl, kubectl_present};

struct Sim {
    child: Child,
    kubectl: Kubectl,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sim {
    fn start() -> Sim {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let child = Command::new(env!("CARGO_BIN_EXE_pgtoolbox-operator"))
            .args(["sim", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts");
        let sim = Sim {
            child,
            kubectl: Kubectl { kubeconfig, dir },
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        // The API answers before the built-in examples are applied; the walkthrough's
        // namespace comes with them.
        while !sim.kubectl.kubeconfig.exists()
            || !sim.kubectl.run(&["get", "pgaccessrequests", "-A"]).0
            || !sim.kubectl.run(&["get", "namespace", "team-a"]).0
        {
            assert!(Instant::now() < deadline, "sim never answered");
            std::thread::sleep(Duration::from_millis(100));
        }
        sim
    }

    fn apply(&self, name: &str, manifest: &str) {
        let path = self.kubectl.file(name, manifest);
        self.kubectl.ok(&["apply", "-f", &path]);
    }

    fn wait_reason(&self, reason: &str) {
        let condition = format!(
            "--for=jsonpath={{.status.conditions[?(@.type==\"RoleBindingSynced\")].reason}}={reason}"
        );
        self.kubectl.ok(&[
            "wait",
            "-n",
            "team-a",
            "pgar/demo",
            &condition,
            "--timeout=60s",
        ]);
    }
}

#[test]
fn approve_watch_granted_then_expired_with_kubectl() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the walkthrough");
        return;
    }
    let sim = Sim::start();
    let expires = Timestamp::now() + SignedDuration::from_secs(20);
    sim.apply(
        "request.yaml",
        &format!(
            "apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgAccessRequest
metadata: {{name: demo, namespace: team-a}}
spec:
  subject: {{kind: User, name: alice}}
  clusterRole: view
  expiresAt: \"{expires}\"
  reason: walkthrough
"
        ),
    );
    sim.wait_reason("AwaitingDecision");
    sim.apply(
        "binding.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pgar-demo
  namespace: team-a
  labels: {pgtoolbox.fyannk.dev/access-request: demo}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
",
    );
    sim.kubectl.ok(&[
        "patch",
        "-n",
        "team-a",
        "pgar/demo",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Approved","approver":"bob"}}"#,
    ]);
    sim.wait_reason("AccessGranted");
    let table = sim.kubectl.ok(&["get", "-n", "team-a", "pgar/demo"]);
    assert!(table.contains("Approved"), "{table}");
    sim.wait_reason("AccessExpired");
    sim.kubectl.ok(&[
        "wait",
        "-n",
        "team-a",
        "rolebinding/pgar-demo",
        "--for=delete",
        "--timeout=30s",
    ]);
    let table = sim.kubectl.ok(&["get", "-n", "team-a", "pgar/demo"]);
    assert!(table.contains("Expired"), "{table}");
}
