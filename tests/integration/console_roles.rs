//! The console's ServiceAccount holds nothing: every editor of a namespace can mint a token for
//! it, and the program acts as the signed-in user for everything. Checked with `kubectl auth
//! can-i` on the embedded API server (which enforces RBAC), with deploy/'s ClusterRoles as
//! `pgtoolbox-operator sim` installs them and all three bound by the operator.

use crate::kubectl_support::kubectl_present;
use crate::pgar_kubectl::Sim;

#[test]
fn the_console_service_account_may_do_no_more_than_any_authenticated_identity() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the console roles check");
        return;
    }
    let sim = Sim::start();
    // orders-console (examples/) has restore drills and pod logs: the operator binds all three.
    for binding in [
        "orders-console-console",
        "orders-console-console-pod-logs",
        "orders-console-console-restore-drills",
    ] {
        sim.kubectl.ok(&[
            "wait",
            "-n",
            "team-a",
            &format!("rolebinding/{binding}"),
            "--for=create",
            "--timeout=60s",
        ]);
    }
    let console = "system:serviceaccount:team-a:orders-console-console";
    let can_i = |args: &[&str], who: &str| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-n", "team-a", "--as", who]);
        sim.kubectl.run(&all).1.trim().to_string()
    };
    // The answer, without kubectl's warning about a kind this sim does not serve.
    let answer = |args: &[&str], who: &str| {
        can_i(args, who)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    // What it held before: none of it any more, not even a viewer's reads.
    for args in [
        ["create", "clusters.postgresql.cnpg.io"].as_slice(),
        &["delete", "clusters.postgresql.cnpg.io"],
        &["create", "backups.postgresql.cnpg.io"],
        &["delete", "backups.postgresql.cnpg.io"],
        &["get", "pods", "--subresource=log"],
        &["list", "clusters.postgresql.cnpg.io"],
        &["list", "pgaccessrequests.pgtoolbox.fyannk.dev"],
        &["list", "events"],
        &[
            "patch",
            "pgaccessrequests.pgtoolbox.fyannk.dev",
            "--subresource=status",
        ],
        &["create", "rolebindings"],
        &["get", "secrets"],
    ] {
        assert_eq!(answer(args, console), "no", "{args:?}");
    }
    // And nothing else: its rules are those of an account nobody bound anything to.
    let list = |who: &str| can_i(&["--list"], who);
    let nobody = list("system:serviceaccount:team-a:nobody");
    assert!(nobody.contains("selfsubjectaccessreviews"), "{nobody}");
    assert_eq!(list(console), nobody);
}
