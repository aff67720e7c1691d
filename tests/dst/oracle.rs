//! The workload kinds' oracle and the log check, written from the spec (api.md, the seed's
//! tables of each kind), not from the operator's `decide`.
//!
//! For each aspect, in the kind's order, the final inputs say: it must fail with one of these
//! reasons (`Hard`), it may fail with one of these or hold (`Soft`: a fault of the simulated
//! cluster whose effect depends on whether a Pod or a Job started while it was on), or it holds.
//! Ready must then give the first `Hard` reason, a `Soft` one before it, or `AsExpected` when
//! nothing is `Hard`.

use pgtoolbox_sim::cluster::{WorkloadFault, WorkloadFaultRule};
use serde_json::Value;

use crate::invariants::{Violation, condition, name, violation};
use crate::kinds::{Exposure, Workload};
use crate::workloads::{CREDENTIALS, GRANT, STORE};
use crate::world::{History, Snapshot};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Hard(Vec<&'static str>),
    Soft(Vec<&'static str>),
    Holds,
}

use Verdict::{Hard, Holds, Soft};

fn fault_on(h: &History, fault: WorkloadFault, instance: &str) -> bool {
    h.workload_faults.iter().any(|r: &WorkloadFaultRule| {
        r.fault == fault
            && (r.selector.is_empty()
                || r.selector == format!("app.kubernetes.io/instance={instance}"))
    })
}

fn input<'a>(snap: &'a Snapshot, kind: &str, input_name: &str) -> Option<&'a Value> {
    snap.inputs
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == input_name)
        .map(|o| o.as_ref())
}

/// The credential Secret's state: missing, without the secret key, or complete.
fn credentials(snap: &Snapshot) -> Verdict {
    match input(snap, "Secret", CREDENTIALS) {
        None => Hard(vec!["SecretNotFound"]),
        Some(s) if s["data"]["ACCESS_SECRET_KEY"].is_null() => Hard(vec!["SecretKeyMissing"]),
        Some(_) => Holds,
    }
}

/// A Pod fault: ImagePullBackOff and CrashLoopBackOff act on a container as it starts (a Pod
/// already running is untouched), NotReady on a running Pod's readiness at once.
fn pods(h: &History, instance: &str) -> Verdict {
    let mut soft = Vec::new();
    if fault_on(h, WorkloadFault::ImagePullBackOff, instance) {
        soft.extend(["ImagePullFailed", "RolloutInProgress", "RolloutStuck"]);
    }
    if fault_on(h, WorkloadFault::CrashLoopBackOff, instance) {
        soft.extend([
            "CrashLoopBackOff",
            "PodNotReady",
            "RolloutInProgress",
            "RolloutStuck",
        ]);
    }
    if fault_on(h, WorkloadFault::NotReady, instance) {
        // A Pod that cannot start says why first; one that runs is not ready, and a rollout
        // waiting for it passes its progress deadline.
        soft.extend(["PodNotReady", "RolloutInProgress", "RolloutStuck"]);
        return Hard(soft);
    }
    if soft.is_empty() { Holds } else { Soft(soft) }
}

fn exposure(h: &History, obj: &Value, instance: &str) -> Verdict {
    let published = Exposure::of_spec(&obj["spec"]) != Exposure::ClusterIp;
    if published && fault_on(h, WorkloadFault::NotAdmitted, instance) {
        // An Ingress left without an address is one not observed admitted yet (Unknown).
        Soft(vec!["NotAdmitted", "Reconciling"])
    } else {
        Holds
    }
}

/// The aspects' verdicts of one workload, in the kind's order.
pub fn verdicts(h: &History, snap: &Snapshot, kind: Workload, obj: &Value) -> Vec<Verdict> {
    let instance = name(obj);
    let spec = &obj["spec"];
    let image = spec["image"].is_string();
    let has_cluster = |c: &str| snap.clusters.iter().any(|x| x == c);
    match kind {
        Workload::Console => vec![
            if image {
                Holds
            } else {
                Hard(vec!["ConsoleImageRequired"])
            },
            pods(h, instance),
            exposure(h, obj, instance),
        ],
        Workload::PgAdmin => {
            let config = if instance == "p1" {
                // Offers only the Cluster of team-b, which the grant must allow.
                if input(snap, "PgAdminAccess", GRANT).is_some() {
                    Holds
                } else {
                    Hard(vec!["GrantMissing", "NoClusterSelected"])
                }
            } else if has_cluster("c0") || has_cluster("c1") {
                Holds
            } else {
                Hard(vec!["NoClusterSelected"])
            };
            let pods = pods(h, instance);
            let mut servers = Vec::new();
            if fault_on(h, WorkloadFault::JobFailed, instance) {
                servers.push("RegistrationFailed");
            }
            if pods != Holds {
                servers.push("PgAdminNotRunning");
            }
            vec![
                config,
                pods,
                exposure(h, obj, instance),
                if servers.is_empty() {
                    Holds
                } else {
                    Soft(servers)
                },
            ]
        }
        Workload::Agent => {
            let cluster = spec["cluster"]["name"].as_str().unwrap_or_default();
            let mut config = Vec::new();
            if !has_cluster(cluster) {
                config.push("ClusterNotFound");
            }
            if input(snap, "ObjectStore", STORE).is_none() {
                config.push("ObjectStoreNotFound");
            }
            if !image {
                config.push("ImageRequired");
            }
            let openshift = spec["servingCertificate"]["provider"] == "openshift";
            let certificate = if openshift && fault_on(h, WorkloadFault::ServiceCaPaused, instance)
            {
                Soft(vec!["ServiceCAPending"])
            } else {
                Holds
            };
            let workload = match (credentials(snap), pods(h, instance)) {
                (Hard(mut a), Soft(b) | Hard(b)) => {
                    a.extend(b);
                    Hard(a)
                }
                (Hard(a), Holds) => Hard(a),
                (_, pods) => pods,
            };
            vec![
                if config.is_empty() {
                    Holds
                } else {
                    Hard(config)
                },
                certificate,
                workload,
            ]
        }
    }
}

/// The Ready reasons the verdicts allow.
pub fn allowed_ready(verdicts: &[Verdict]) -> Vec<&'static str> {
    let mut allowed = Vec::new();
    for v in verdicts {
        match v {
            Hard(reasons) => {
                allowed.extend(reasons);
                return allowed;
            }
            Soft(reasons) => allowed.extend(reasons),
            Holds => {}
        }
    }
    allowed.push("AsExpected");
    allowed
}

/// Every workload converges: Ready says what its final inputs and faults allow, the first
/// failing aspect says it too, and the status is of the current generation.
pub fn workloads_converge(h: &History, snap: &Snapshot) -> Vec<Violation> {
    let mut out = Vec::new();
    for obj in &snap.workloads {
        let Some(kind) = Workload::of_kind(obj["kind"].as_str().unwrap_or_default()) else {
            continue;
        };
        let verdicts = verdicts(h, snap, kind, obj);
        let allowed = allowed_ready(&verdicts);
        let ready = condition(obj, "Ready");
        let reason = ready.and_then(|c| c["reason"].as_str()).unwrap_or("<none>");
        let status = ready.and_then(|c| c["status"].as_str()).unwrap_or("<none>");
        let ready_ok =
            allowed.contains(&reason) && ((reason == "AsExpected") == (status == "True"));
        if !ready_ok {
            out.push(violation(
                "converges-to-oracle",
                format!(
                    "{} {} says Ready {status} {reason}, expected one of {allowed:?} ({verdicts:?})",
                    kind.kind(),
                    name(obj)
                ),
            ));
        }
        let observed = obj["status"]["observedGeneration"].as_i64();
        if observed != obj["metadata"]["generation"].as_i64() {
            out.push(violation(
                "converges-to-oracle",
                format!(
                    "{} {} status is of generation {observed:?}",
                    kind.kind(),
                    name(obj)
                ),
            ));
        }
    }
    out
}

/// No Secret value (a user's credential, a generated password, a private key) in a line the
/// operator logged.
pub fn no_secret_in_logs(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    for secret in &h.secret_values {
        if let Some(line) = h.log_lines.iter().find(|l| l.contains(secret.as_str())) {
            let shown: String = line.chars().take(300).collect();
            out.push(violation(
                "no-secret-in-logs",
                format!(
                    "a Secret value ({} characters) logged: {shown}",
                    secret.len()
                ),
            ));
        }
    }
    out
}

/// No Secret value in what any incarnation's caches held when it stopped. The store of the
/// Secrets the operator writes (`ownedSecrets`) is the one place its own keys may be: an
/// agent's serving key is re-applied from it (a known gap, docs/testing.md); a value of anyone
/// else's Secret is refused there too.
pub fn no_secret_in_caches(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    for (i, dump) in h.cache_dumps.iter().enumerate() {
        let mut caches: Value = serde_json::from_str(dump).unwrap_or(Value::Null);
        let owned = caches
            .pointer_mut("/stores/ownedSecrets")
            .map(Value::take)
            .unwrap_or(Value::Null)
            .to_string();
        let rest = caches.to_string();
        for secret in &h.secret_values {
            let own = h.own_secret_values.contains(secret);
            let place = if rest.contains(secret.as_str()) {
                Some("a cache")
            } else if !own && owned.contains(secret.as_str()) {
                Some("the store of the operator's own Secrets")
            } else {
                None
            };
            if let Some(place) = place {
                out.push(violation(
                    "no-secret-in-caches",
                    format!(
                        "incarnation {}: {place} holds a Secret value ({} characters{})",
                        i + 1,
                        secret.len(),
                        if own { ", the operator's own" } else { "" }
                    ),
                ));
            }
        }
    }
    out
}

/// Once settled, whatever the operator holds per object (an actor, a hibernated entry, a
/// restart, a timer, a registration in a reference index) is of an object that still exists.
pub fn nothing_outlives_its_object(h: &History) -> Vec<Violation> {
    h.held
        .iter()
        .filter(|(kind, _, key)| !h.existing.iter().any(|(k, e)| k == kind && e == key))
        .map(|(kind, what, key)| {
            violation(
                "nothing-outlives-its-object",
                format!("a {what} of {kind} {key}, which no longer exists"),
            )
        })
        .collect()
}
