//! The operator binary (`pgtoolbox-operator run`) as a process of its own against the embedded
//! API server, so its memory and CPU are its own.

use std::path::Path;
use std::process::{Child, Command, Stdio};

const OPERATOR: &str = env!("CARGO_BIN_EXE_pgtoolbox-operator");

/// Starts `run --kubeconfig <kubeconfig>` with its endpoints on free ports and `RUST_LOG=warn`;
/// its output goes to `log` when given, else nowhere. `configure` adds flags and environment.
pub fn start(kubeconfig: &Path, log: Option<&Path>, configure: impl FnOnce(&mut Command)) -> Child {
    let file = log.and_then(|path| std::fs::File::create(path).ok());
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
        .args(["--metrics-bind-address", "127.0.0.1:0"])
        .args(["--health-probe-bind-address", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(out)
        .stderr(err);
    configure(&mut command);
    command.spawn().expect("operator starts")
}
