//! `InstanceCABundleComplete` and the mirrored bundle (pure): the `ca.crt` of each selected
//! Cluster's `status.certificates.serverCASecret`, certificates deduplicated, in Cluster name
//! order, into `<name>-instance-ca` key `ca.crt`, up to what a ConfigMap holds.

use std::collections::BTreeSet;

use crate::api::{InstanceCaBundleStatus, MissingInstanceCa};
use crate::conditions::Verdict;
use crate::conditions::reasons::{common, console};

/// The key of the mirrored bundle, and of the CA in a CNPG CA Secret.
pub const CA_KEY: &str = "ca.crt";

/// What a ConfigMap holds (1 MiB), less room for its metadata.
pub const BUNDLE_LIMIT_BYTES: usize = 1024 * 1024 - 16 * 1024;

const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
const END: &str = "-----END CERTIFICATE-----";

/// One selected Cluster's server CA as the caches and the Secret read found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterCa {
    pub cluster: String,
    /// `status.certificates.serverCASecret`; `None` while CloudNativePG has not reported it.
    pub secret: Option<String>,
    pub ca: CaSource,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaSource {
    SecretNotFound,
    /// The Secret has no `ca.crt`.
    KeyMissing,
    /// The `ca.crt` text.
    Text(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleOutcome {
    /// The ConfigMap's `ca.crt`: every distinct certificate, one PEM block each.
    pub bundle: String,
    pub status: InstanceCaBundleStatus,
    pub verdict: Verdict,
}

/// The PEM certificate blocks of a text, normalised (trimmed lines, `\n` endings), in order.
pub fn pem_certificates(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines().map(str::trim) {
        match (&mut current, line) {
            // A BEGIN inside a block starts over: the block before it was truncated, and the
            // certificates after it still count (as Go's `pem.Decode` reads them).
            (_, BEGIN) => current = Some(Vec::new()),
            (Some(body), END) => {
                let body = std::mem::take(body);
                current = None;
                if !body.is_empty() && body.iter().all(|l| is_base64_line(l)) {
                    blocks.push(format!("{BEGIN}\n{}\n{END}\n", body.join("\n")));
                }
            }
            (Some(body), l) if !l.is_empty() => body.push(l),
            _ => {}
        }
    }
    blocks
}

fn is_base64_line(line: &str) -> bool {
    line.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')
}

fn missing(cluster: &ClusterCa, reason: &str) -> MissingInstanceCa {
    MissingInstanceCa {
        cluster: cluster.cluster.clone(),
        secret: cluster.secret.clone(),
        reason: reason.to_owned(),
    }
}

/// The bundle for `clusters` (any order; they are taken by name) into ConfigMap `config_map`,
/// with `limit` bytes of room.
pub fn mirror_bundle(config_map: &str, clusters: &[ClusterCa], limit: usize) -> BundleOutcome {
    let mut sorted: Vec<&ClusterCa> = clusters.iter().collect();
    sorted.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    let mut seen = BTreeSet::new();
    let mut bundle = String::new();
    let mut included = 0;
    let mut missed = Vec::new();
    let mut full = false;
    for cluster in sorted {
        let text = match (&cluster.secret, &cluster.ca) {
            (None, _) | (_, CaSource::SecretNotFound) => {
                missed.push(missing(cluster, common::SECRET_NOT_FOUND.as_str()));
                continue;
            }
            (_, CaSource::KeyMissing) => {
                missed.push(missing(cluster, common::SECRET_KEY_MISSING.as_str()));
                continue;
            }
            (Some(_), CaSource::Text(text)) => text,
        };
        let certificates = pem_certificates(text);
        if certificates.is_empty() {
            missed.push(missing(cluster, console::INSTANCE_CA_INVALID.as_str()));
            continue;
        }
        // Distinct and not yet in the bundle: a Secret may repeat a certificate too.
        let mut new: Vec<&String> = Vec::new();
        for c in &certificates {
            if !seen.contains(c.as_str()) && !new.contains(&c) {
                new.push(c);
            }
        }
        let grows: usize = new.iter().map(|c| c.len()).sum();
        if full || bundle.len() + grows > limit {
            full = true;
            missed.push(missing(cluster, console::INSTANCE_CA_BUNDLE_FULL.as_str()));
            continue;
        }
        for c in new {
            bundle.push_str(c);
            seen.insert(c.clone());
        }
        included += 1;
    }
    let verdict = verdict(config_map, clusters.len(), included, &missed);
    BundleOutcome {
        bundle,
        status: InstanceCaBundleStatus {
            config_map: Some(config_map.to_owned()),
            clusters: included,
            missing: missed,
        },
        verdict,
    }
}

fn verdict(
    config_map: &str,
    selected: usize,
    included: i32,
    missed: &[MissingInstanceCa],
) -> Verdict {
    if selected == 0 {
        return Verdict::holds(
            common::AS_EXPECTED,
            format!("no Cluster is selected; ConfigMap {config_map} holds no CA"),
        );
    }
    if missed.is_empty() {
        return Verdict::holds(
            common::AS_EXPECTED,
            format!(
                "the server CA of every selected Cluster ({included}) is in ConfigMap {config_map}"
            ),
        );
    }
    let each: Vec<String> = missed
        .iter()
        .map(|m| match &m.secret {
            Some(secret) => format!("{} ({}: {})", m.cluster, secret, m.reason),
            None => format!("{} (no serverCASecret reported: {})", m.cluster, m.reason),
        })
        .collect();
    Verdict::fails(
        console::INSTANCE_CA_MISSING,
        format!(
            "{} of {selected} selected Clusters are not verifiable in the console, their server CA is not in ConfigMap {config_map}: {}",
            missed.len(),
            each.join(", ")
        ),
    )
}
