//! The README's walkthrough, as a new user runs it: `pgtoolbox-operator sim`, then kubectl plays
//! the console — approve a request, watch it granted, expire, and its RoleBinding go.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::kubectl_support::{Kubectl, kubectl_present};

/// `pgtoolbox-operator sim` as a user runs it, driven with kubectl (also console_roles.rs).
pub(crate) struct Sim {
    child: Child,
    pub(crate) kubectl: Kubectl,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sim {
    pub(crate) fn start() -> Sim {
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
        // namespace and its access policy come with them.
        while !sim.kubectl.kubeconfig.exists()
            || !sim.kubectl.run(&["get", "pgaccessrequests", "-A"]).0
            || !sim.kubectl.run(&["get", "namespace", "team-a"]).0
            // team-a's own access policy (examples/pgaccessrequest.yaml): until it is applied,
            // the labelled namespace refuses every request (fail closed).
            || !sim
                .kubectl
                .run(&["get", "pgaccesspolicy", "default", "-n", "team-a"])
                .0
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
    // bob decides, as himself: sim installs deploy/'s admission policies, which refuse an
    // approver name other than the writer's, and an approval he does not append as his own.
    sim.apply(
        "bob.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-approves, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pgtoolbox-access-request-approver}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
",
    );
    let bob = sim.kubeconfig_for("bob");
    let binding = sim.kubectl.file(
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
    sim.kubectl
        .ok(&["--kubeconfig", &bob, "apply", "-f", &binding]);
    sim.kubectl.ok(&[
        "--kubeconfig",
        &bob,
        "patch",
        "-n",
        "team-a",
        "pgar/demo",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Approved","approver":"bob","approvals":[{"approver":"bob","decidedAt":"2026-01-01T00:00:00Z"}]}}"#,
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

impl Sim {
    /// A kubeconfig for `user` (and `groups`), from the sim's admin endpoint.
    fn kubeconfig_for(&self, user: &str) -> String {
        let config = self
            .kubectl
            .ok(&["get", "--raw", &format!("/_sim/kubeconfig?user={user}")]);
        self.kubectl.file(&format!("{user}.kubeconfig"), &config)
    }

    /// `kubectl pgtoolbox access ARGS` as the owner of `kubeconfig`: kubectl finds the plugin
    /// on PATH, as it does for a user who installed it.
    fn access(&self, kubeconfig: &str, args: &[&str]) -> (bool, String) {
        let plugin = std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-pgtoolbox"));
        let path = format!(
            "{}:{}",
            plugin.parent().expect("plugin directory").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut all = vec!["pgtoolbox", "access"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-n", "team-a"]);
        let mut command = self.kubectl.command(&all);
        command.env("KUBECONFIG", kubeconfig).env("PATH", path);
        Kubectl::output(command)
    }

    fn wait_request(&self, name: &str, reason: &str) {
        let condition = format!(
            "--for=jsonpath={{.status.conditions[?(@.type==\"RoleBindingSynced\")].reason}}={reason}"
        );
        self.kubectl.ok(&[
            "wait",
            "-n",
            "team-a",
            &format!("pgar/{name}"),
            &condition,
            "--timeout=60s",
        ]);
    }

    fn can_i(&self, args: &[&str]) -> String {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-n", "team-a"]);
        self.kubectl.run(&all).1.trim().to_string()
    }
}

/// The shipped workflow, as people run it: alice asks with the plugin, cannot approve her own
/// request, an editor cannot approve it, bob (the shipped approver role) approves it as himself,
/// alice ends it early, bob revokes and denies others. Nobody types an approver's name: the
/// plugin records who the API server says the caller is. The console's ServiceAccount holds no
/// approval power.
#[test]
fn the_plugin_requests_approves_revokes_and_denies_as_the_caller() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the plugin walkthrough");
        return;
    }
    let sim = Sim::start();
    let roles = sim.kubectl.file(
        "roles.yaml",
        &format!(
            "{}\n---\n{}",
            include_str!("../../deploy/06-user-roles.yaml"),
            "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: view}
rules: [{apiGroups: [\"\"], resources: [pods], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-requests, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pgtoolbox-access-requester}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-approves, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pgtoolbox-access-request-approver}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-edits, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pgtoolbox-aggregate-to-edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-views, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pgtoolbox-aggregate-to-view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
"
        ),
    );
    sim.kubectl.ok(&["apply", "-f", &roles]);
    let (alice, bob, carol) = (
        sim.kubeconfig_for("alice"),
        sim.kubeconfig_for("bob"),
        sim.kubeconfig_for("carol"),
    );

    let (ok, out) = sim.access(
        &alice,
        &[
            "request",
            "alice-db",
            "--role",
            "view",
            "--for",
            "2h",
            "--cluster",
            "orders",
            "--reason",
            "INC-1",
        ],
    );
    assert!(ok, "{out}");
    sim.wait_request("alice-db", "AwaitingDecision");
    let shown = sim.access(&alice, &["show", "alice-db"]).1;
    assert!(
        shown.contains("User alice") && shown.contains("Pending"),
        "{shown}"
    );

    // Four eyes: not her own, not by an editor.
    let (ok, out) = sim.access(&alice, &["approve", "alice-db"]);
    assert!(
        !ok && out.contains("another person must decide it"),
        "{out}"
    );
    let (ok, out) = sim.access(&carol, &["approve", "alice-db"]);
    assert!(
        !ok && out.contains("forbidden"),
        "an editor is no approver: {out}"
    );
    assert_eq!(sim.can_i(&["list", "pods", "--as", "alice"]), "no");

    // sim installs deploy/'s admission policy: an approver cannot record someone else's name.
    let (ok, out) = sim.kubectl.run(&[
        "--kubeconfig",
        &bob,
        "patch",
        "-n",
        "team-a",
        "pgar/alice-db",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Approved","approver":"carol"}}"#,
    ]);
    assert!(!ok && out.contains("ValidatingAdmissionPolicy"), "{out}");

    let (ok, out) = sim.access(&bob, &["approve", "alice-db"]);
    assert!(ok, "{out}");
    sim.wait_request("alice-db", "AccessGranted");
    let shown = sim.access(&bob, &["show", "alice-db"]).1;
    assert!(
        shown.contains("Approver:    bob") && shown.contains("RoleBinding: pgar-alice-db"),
        "{shown}"
    );
    assert_eq!(sim.can_i(&["list", "pods", "--as", "alice"]), "yes");
    let listed = sim.access(&bob, &["list"]).1;
    assert!(
        listed.contains("alice-db") && listed.contains("Approved"),
        "{listed}"
    );

    // Its subject ends it early; the grant goes at once.
    let (ok, out) = sim.access(&alice, &["revoke", "alice-db"]);
    assert!(ok, "{out}");
    sim.wait_request("alice-db", "AccessExpired");
    sim.kubectl.ok(&[
        "wait",
        "-n",
        "team-a",
        "rolebinding/pgar-alice-db",
        "--for=delete",
        "--timeout=30s",
    ]);
    assert_eq!(sim.can_i(&["list", "pods", "--as", "alice"]), "no");

    // An approver revokes another, and denies a third.
    for name in ["alice-db2", "alice-db3"] {
        let (ok, out) = sim.access(
            &alice,
            &[
                "request", name, "--role", "view", "--for", "1h", "--reason", "INC-2",
            ],
        );
        assert!(ok, "{out}");
    }
    assert!(sim.access(&bob, &["approve", "alice-db2"]).0);
    sim.wait_request("alice-db2", "AccessGranted");
    let (ok, out) = sim.access(&bob, &["revoke", "alice-db2"]);
    assert!(ok, "{out}");
    sim.wait_request("alice-db2", "AccessRevoked");
    let (ok, out) = sim.access(&bob, &["deny", "alice-db3"]);
    assert!(ok, "{out}");
    sim.wait_request("alice-db3", "AccessDenied");

    // The access policy (team-a's own, from the examples) refuses at once, naming the rule.
    let (ok, out) = sim.access(
        &alice,
        &[
            "request",
            "alice-admin",
            "--role",
            "cluster-admin",
            "--for",
            "1h",
            "--reason",
            "x",
        ],
    );
    assert!(
        !ok && out.contains("ClusterRole cluster-admin is not allowed"),
        "{out}"
    );
    let (ok, out) = sim.access(
        &alice,
        &["request", "alice-why", "--role", "view", "--for", "1h"],
    );
    assert!(!ok && out.contains("reason required"), "{out}");
    // Two approvers: bob's approval is recorded and grants nothing; he cannot give the second;
    // dave's, the second, creates the RoleBinding.
    sim.kubectl.ok(&[
        "create",
        "rolebinding",
        "dave-approves",
        "-n",
        "team-a",
        "--clusterrole=pgtoolbox-access-request-approver",
        "--user=dave",
    ]);
    let dave = sim.kubeconfig_for("dave");
    let (ok, out) = sim.access(
        &alice,
        &[
            "request",
            "alice-two",
            "--role",
            "view",
            "--for",
            "1h",
            "--reason",
            "INC-3",
            "--approvals",
            "2",
        ],
    );
    assert!(ok, "{out}");
    let (ok, out) = sim.access(&bob, &["approve", "alice-two"]);
    assert!(ok && out.contains("1 of 2 approvals"), "{out}");
    let (ok, out) = sim.access(&bob, &["approve", "alice-two"]);
    assert!(!ok && out.contains("approved it already"), "{out}");
    assert!(
        !sim.kubectl
            .run(&["get", "rolebinding", "pgar-alice-two", "-n", "team-a"])
            .0
    );
    let (ok, out) = sim.access(&dave, &["approve", "alice-two"]);
    assert!(ok, "{out}");
    sim.wait_request("alice-two", "AccessGranted");
    let (ok, shown) = sim.access(&bob, &["show", "alice-two"]);
    assert!(
        ok && shown.contains("Approvals:   2 of 2 (bob, dave)"),
        "{shown}"
    );
    assert!(shown.contains("Approver:    dave"), "{shown}");

    // The console's ServiceAccount cannot decide or grant anything.
    let console = "system:serviceaccount:team-a:team-console-console";
    assert_eq!(
        sim.can_i(&[
            "patch",
            "pgaccessrequests",
            "--subresource=status",
            "--as",
            console
        ]),
        "no"
    );
    assert_eq!(
        sim.can_i(&["create", "rolebindings", "--as", console]),
        "no"
    );
}
