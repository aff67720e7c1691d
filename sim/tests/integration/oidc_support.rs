//! A real OpenID provider for the tests: the certified npm `oidc-provider` (pinned in
//! tests/browser/package.json, installed by `.ci/run` with `npm ci`), started by the test
//! (tests/browser/oidc_provider.mjs) over HTTPS with a certificate of a fresh CA.

#![allow(
    dead_code,
    reason = "two test binaries include this file (the sim's and the operator's); each uses part of it"
)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use pgtoolbox_sim::cluster::pki::{Ca, Subject, Usage};
use serde_json::Value;

pub const BROWSER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/browser");

/// Fails, saying how to install them, when the npm packages are missing: a skipped peer would
/// pass silently.
pub fn require_packages() {
    let installed = Path::new(BROWSER_DIR).join("node_modules/oidc-provider/package.json");
    assert!(
        installed.is_file(),
        "{} is missing: install the test peers with `npm ci --prefix tests/browser --no-audit --no-fund` (as .ci/run does)",
        installed.display()
    );
}

/// A running provider; stopped when dropped.
pub struct Provider {
    child: Child,
    pub issuer: String,
    /// The CA its serving certificate is signed by (PEM file).
    pub ca_file: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Provider {
    /// Starts the provider with these clients (oidc-provider client metadata) and users
    /// (`{"alice": {"groups": [...], "email": ...}}`).
    pub fn start(clients: Value, users: Value) -> Self {
        Self::start_with(clients, users, serde_json::json!({}))
    }

    /// As [`Provider::start`], with more settings of tests/browser/oidc_provider.mjs
    /// (`idTokenTtl`, `rpInitiatedLogout`) merged into its configuration.
    pub fn start_with(clients: Value, users: Value, settings: Value) -> Self {
        require_packages();
        let dir = tempfile::tempdir().expect("tempdir");
        let now = jiff::Timestamp::now();
        let validity = |cn| Subject {
            common_name: cn,
            organizational_unit: None,
            not_before: now - jiff::SignedDuration::from_hours(1),
            not_after: now + jiff::SignedDuration::from_hours(24),
        };
        let ca = Ca::generate(
            &validity("test OpenID provider CA"),
            &[rcgen::KeyUsagePurpose::KeyCertSign],
        )
        .expect("CA");
        let leaf = ca
            .issue(
                &validity("127.0.0.1"),
                &["127.0.0.1".into(), "localhost".into()],
                Usage::Server,
            )
            .expect("serving certificate");
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("write");
            p
        };
        let ca_file = write("ca.crt", &ca.pem.cert);
        let cert = write("tls.crt", &leaf.cert);
        let key = write("tls.key", &leaf.key);
        let mut config = serde_json::json!({"clients": clients, "users": users});
        if let (Some(config), Some(settings)) = (config.as_object_mut(), settings.as_object()) {
            config.extend(settings.clone());
        }
        let mut child = Command::new("node")
            .arg(Path::new(BROWSER_DIR).join("oidc_provider.mjs"))
            .arg(&cert)
            .arg(&key)
            .arg(config.to_string())
            .current_dir(BROWSER_DIR)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs (Node.js 20 or later is needed)");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("provider output");
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the provider did not start ({e}): {line:?}"));
        let issuer = ready["issuer"].as_str().expect("issuer").to_string();
        Provider {
            child,
            issuer,
            ca_file,
            dir,
        }
    }

    /// An ID token the provider signs for `client_id` and the user `sub`, valid for
    /// `expires_in` seconds (negative: already expired); `other_issuer` has a second provider
    /// with its own issuer sign it.
    pub async fn id_token(
        &self,
        client_id: &str,
        sub: &str,
        expires_in: i64,
        other_issuer: bool,
    ) -> String {
        let url = format!(
            "{}/_test/id-token?client_id={client_id}&sub={sub}&expires_in={expires_in}{}",
            self.issuer,
            if other_issuer { "&issuer=other" } else { "" }
        );
        let answer = pgtoolbox_sim::auth::oidc::fetch_json(Some(&self.ca_file), &url)
            .await
            .expect("token");
        answer["id_token"].as_str().expect("id_token").to_string()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
