//! The operator's log, captured per schedule, and the Secret values that must never be in it.

use std::io::Write;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use pgtoolbox_sim::InProcessSim;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// What the operator (and the kube client under it) logged, as a production subscriber would
/// format it, at debug level.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

impl Captured {
    /// A subscriber for the schedule's thread: the operator's and kube's events with their
    /// spans' fields; the sim's own lines are not the operator's.
    pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(
                "warn,pgtoolbox_operator=debug,kube_client=debug,kube_runtime=debug,pgtoolbox_sim=off",
            ))
            .with_writer(self.clone())
            .with_ansi(false)
            .without_time()
            .finish()
    }

    pub fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// A key whose value is a secret: passwords, private keys, credentials (certificates and user
/// names are public).
fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    !key.ends_with(".crt")
        && ["password", "key", "secret", "pgpass", "token"]
            .iter()
            .any(|k| key.contains(k))
        && key != "access_key_id"
}

/// The pieces of a value that would give it away: the value itself (decoded and as stored),
/// and for a PEM block each long line of its body.
fn telltales(decoded: &str, stored: &str) -> Vec<String> {
    let mut out = Vec::new();
    if decoded.contains("-----BEGIN") {
        out.extend(
            decoded
                .lines()
                .filter(|l| !l.starts_with("-----") && l.len() >= 40)
                .map(str::to_string),
        );
    } else if decoded.len() >= 8 {
        out.push(decoded.to_string());
    }
    if stored.len() >= 16 {
        out.push(stored.to_string());
    }
    out
}

/// Every secret value of every Secret of the sim (user credentials, the sim's generated
/// passwords and CA keys, the operator's CA and serving keys).
pub fn secret_values(sim: &InProcessSim) -> Vec<String> {
    secret_values_of(sim, |_| true)
}

/// The secret values of the Secrets the operator writes: its children (label managed-by) and
/// its CA in its own namespace.
pub fn own_secret_values(sim: &InProcessSim) -> Vec<String> {
    secret_values_of(sim, |s| {
        s["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pgtoolbox-operator"
            || (s["metadata"]["namespace"] == crate::workloads::OPERATOR_NS
                && s["metadata"]["name"]
                    == pgtoolbox_operator::testing::actors::evidence_agent::CA_SECRET_NAME)
    })
}

fn secret_values_of(sim: &InProcessSim, pick: impl Fn(&serde_json::Value) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for secret in sim.objects("", "secrets").into_iter().filter(|s| pick(s)) {
        let Some(data) = secret["data"].as_object() else {
            continue;
        };
        for (_, value) in data.iter().filter(|(k, _)| secret_key(k)) {
            let Some(stored) = value.as_str() else {
                continue;
            };
            let decoded = STANDARD
                .decode(stored)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            out.extend(telltales(&decoded, stored));
        }
    }
    out.sort();
    out.dedup();
    out
}
