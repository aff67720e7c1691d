//! The operator binary (`pgtoolbox-operator run`) as a process of its own against the embedded
//! API server, so its memory and CPU are its own.

use std::path::Path;
use std::process::{Child, Command, Stdio};

const OPERATOR: &str = env!("CARGO_BIN_EXE_pgtoolbox-operator");

/// Starts `run --kubeconfig <kubeconfig>` with `/metrics` on `metrics_port` (0: any free
/// port), its health probes on a free port and `RUST_LOG=warn`; its output is appended to `log`
/// when given (a restarted operator writes after the first), else goes nowhere. `configure`
/// adds flags and environment.
pub fn start(
    kubeconfig: &Path,
    log: Option<&Path>,
    metrics_port: u16,
    configure: impl FnOnce(&mut Command),
) -> Child {
    let file = log.and_then(|path| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
    });
    let (out, err) = match file {
        Some(file) => (
            Stdio::from(file.try_clone().expect("log file")),
            Stdio::from(file),
        ),
        None => (Stdio::null(), Stdio::null()),
    };
    let mut command = Command::new(OPERATOR);
    command
        .arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args([
            "--metrics-bind-address",
            &format!("127.0.0.1:{metrics_port}"),
        ])
        .args(["--health-probe-bind-address", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(out)
        .stderr(err);
    configure(&mut command);
    command.spawn().expect("operator starts")
}
