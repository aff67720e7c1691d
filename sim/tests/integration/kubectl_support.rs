//! kubectl as an independent client: runs it against a kubeconfig, in a scratch directory.

#![allow(
    dead_code,
    reason = "two test binaries include this file (the sim's and the operator's); each uses part of it"
)]

use std::path::PathBuf;
use std::process::Command;

/// Whether kubectl is installed; tests that need it skip with a message otherwise.
pub fn kubectl_present() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

pub struct Kubectl {
    pub kubeconfig: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Kubectl {
    /// kubectl against `sim`, with its kubeconfig in a fresh scratch directory.
    pub fn for_sim(sim: &pgtoolbox_sim::Sim) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Kubectl { kubeconfig, dir }
    }

    /// kubectl against the server `kubeconfig` names (a `sim` process of its own), with a
    /// fresh scratch directory.
    pub fn at(kubeconfig: PathBuf) -> Self {
        Kubectl {
            kubeconfig,
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// kubectl with `args`, against this sim, in the scratch directory (callers may override
    /// the environment, e.g. another user's KUBECONFIG).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            // Discovery is cached per host:port; a sim reusing a port of an earlier one must
            // not be described by that one's cache.
            .env("KUBECACHEDIR", self.dir.path().join("kube-cache"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .current_dir(self.dir.path());
        command
    }

    /// Runs a prepared kubectl command; success and the combined output.
    pub fn output(mut command: Command) -> (bool, String) {
        let out = command.output().expect("kubectl runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    /// Runs kubectl; success and the combined output.
    pub fn run(&self, args: &[&str]) -> (bool, String) {
        Self::output(self.command(args))
    }

    /// Runs kubectl, which must succeed; its standard output alone (for `-o json`).
    pub fn stdout(&self, args: &[&str]) -> Vec<u8> {
        let out = self.command(args).output().expect("kubectl runs");
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let (ok, text) = self.run(args);
        assert!(ok, "kubectl {args:?} failed: {text}");
        text
    }

    pub fn refused(&self, args: &[&str], expected: &str) {
        let (ok, text) = self.run(args);
        assert!(!ok, "kubectl {args:?} should have been refused: {text}");
        assert!(text.contains(expected), "kubectl {args:?}: {text}");
    }

    /// Writes a manifest into the scratch directory; returns its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("write manifest");
        p.display().to_string()
    }
}
