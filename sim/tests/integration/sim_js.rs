//! The JavaScript client `@kubernetes/client-node` (pinned in tests/js/package.json) as a third
//! real client, beside kubectl and the Python one (tests/js/sim_client.mjs): it reads the
//! kubeconfig the sim writes (which needs `insecure-skip-tls-verify: true` for an `http://`
//! server), lists namespaces, creates, reads, patches (merge, JSON, strategic), replaces and
//! deletes ConfigMaps and a Secret, selects by label and field, watches a few events and drives
//! a custom resource through `CustomObjectsApi`.
//!
//! `.ci/run` installs the package (`npm ci --prefix tests/js`). Without `node_modules` the test
//! fails saying how to install it: a skipped client would pass silently.

use std::path::Path;
use std::process::Command;

const JS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/js");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_client_passes_every_check() {
    let installed = Path::new(JS_DIR).join("node_modules/@kubernetes/client-node/package.json");
    assert!(
        installed.is_file(),
        "{} is missing: install the JavaScript client with `npm ci --prefix tests/js --no-audit --no-fund` (as .ci/run does)",
        installed.display()
    );
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|o| o.status.success()),
        "`node` does not run ({node:?}): the JavaScript client test needs Node.js 20 or later"
    );

    let (sim, _client) = crate::sim_support::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    // The file `sim` writes itself (`--kubeconfig-out`), marker line included.
    sim.kubeconfig_file(Some(&kubeconfig)).expect("kubeconfig");
    let script = Path::new(JS_DIR).join("sim_client.mjs");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(script)
            .arg(&kubeconfig)
            .arg("js-client")
            .current_dir(JS_DIR)
            .env("HOME", dir.path())
            .output()
            .expect("node runs")
    })
    .await
    .expect("joined");
    crate::sim_support::client_checks_passed("javascript", &output);
}
