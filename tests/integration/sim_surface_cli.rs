//! `sim` as a product on a shared machine (issue 46, finding 7): it says so when it listens
//! beyond loopback, and its temporary kubeconfig is never written through a link planted
//! where it would go.

use std::io::Read;
use std::process::Stdio;

use pgtoolbox_sim::kubeconfig::MARKER;

use crate::cli_support::{Running, binary};

/// The log lines `sim --api-only --listen ADDR` writes before it serves, then stopped.
fn start_log(listen: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = binary();
    command
        .args(["sim", "--api-only", "--no-controllers", "--listen", listen])
        .env_remove("RUST_LOG")
        .env("TMPDIR", dir.path())
        .current_dir(dir.path())
        .stderr(Stdio::piped());
    let mut running = Running::spawn(command);
    running.wait_for("http://");
    let mut stderr = running.child().stderr.take().expect("stderr");
    let status = running.interrupt();
    assert!(status.success(), "{status:?}");
    let mut log = String::new();
    stderr.read_to_string(&mut log).expect("stderr");
    log
}

#[test]
fn a_listen_beyond_loopback_is_warned_about_and_loopback_is_not() {
    let exposed = start_log("0.0.0.0:0");
    assert!(
        exposed.contains("WARN") && exposed.contains("beyond loopback"),
        "{exposed}"
    );
    assert!(exposed.contains("no real authentication"), "{exposed}");
    let local = start_log("127.0.0.1:0");
    assert!(!local.contains("beyond loopback"), "{local}");
}

#[test]
fn the_temporary_kubeconfig_is_not_written_through_a_planted_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("address")
        .port();
    // Another user of the machine plants the name `sim` will choose, pointing at a file of
    // ours that an earlier `sim --kubeconfig-out` wrote (so it carries the marker).
    let victim = dir.path().join("victim");
    let kept = format!("{MARKER}\nthe victim's own kubeconfig\n");
    std::fs::write(&victim, &kept).expect("victim");
    let planted = dir.path().join(format!("pgtoolbox-sim-{port}.kubeconfig"));
    std::os::unix::fs::symlink(&victim, &planted).expect("link");

    let out = binary()
        .args(["sim", "--api-only", "--no-controllers", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .env("TMPDIR", dir.path())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "sim ran over a planted link: {stderr}"
    );
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), kept);
    assert!(
        std::fs::symlink_metadata(&planted)
            .expect("the link")
            .file_type()
            .is_symlink()
    );
}
