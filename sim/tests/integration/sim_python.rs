//! The official Python `kubernetes` client as a second real client (tests/python/sim_client.py):
//! CRUD, defaults, selectors, paging, watch with bookmarks, the four patch types, server-side
//! apply with two managers, deletion options, finalizers, discovery, the dynamic client, Tables.

use std::process::Command;
use std::time::Duration;

use pgtoolbox_sim::SimConfig;

fn python_client_present() -> bool {
    Command::new("python3")
        .args(["-c", "import kubernetes"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_passes_every_check() {
    if !python_client_present() {
        // `.ci/run` installs it; a developer machine without it skips, as with kubectl.
        eprintln!("python3 with the kubernetes package not found: skipping the Python client test");
        return;
    }
    let config = SimConfig {
        bookmark_interval: Duration::from_millis(300),
        ..Default::default()
    };
    let (sim, _client) = crate::sim_support::start_with(config).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/python/sim_client.py");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .arg(&kubeconfig)
            .arg("python-client")
            .env("HOME", dir.path())
            .output()
            .expect("python3 runs")
    })
    .await
    .expect("joined");
    crate::sim_support::client_checks_passed("python", &output);
}
