//! The CloudNativePG Cluster controller: PKI (a CA per Cluster, server and replication
//! certificates), credentials Secrets, the rw/ro/r Services, instance Pods `<c>-1..n` with role
//! labels, and the Cluster status (phase, instances, primaries, certificates, Ready). A requested
//! switchover (`status.targetPrimary` != `status.currentPrimary`) completes after a short delay
//! by moving the role labels, so `-rw` follows the new primary.

use std::time::Duration;

use rand::RngExt;
use rand::seq::SliceRandom;
use serde_json::{Value, json};

use super::shapes::{self, PRIMARY, REPLICA};
use super::{CLUSTERS, MANAGER_NAME, cnpg_timestamp};
use crate::apiserver::error::ApiError;
use crate::cluster::net::conditions::{self, Cond};
use crate::cluster::net::text as s;
use crate::cluster::pki::{self, Ca, Pem, Subject, Usage};
use crate::cluster::secret_data::secret_text;
use crate::cluster::{
    Component, Ctx, EventKind, Kind, Next, PODS, SECRETS, SERVICES, Tx, WorkloadFault,
};
use crate::store::objects::ObjKey;

pub const PHASE_HEALTHY: &str = "Cluster in healthy state";
pub const PHASE_SWITCHOVER: &str = "Switchover in progress";
pub const PHASE_FIRST_PRIMARY: &str = "Setting up primary";
pub const PHASE_WAITING: &str = "Waiting for the instances to become active";
/// How long a simulated switchover takes from request to the new primary.
pub const SWITCHOVER_DELAY: Duration = Duration::from_millis(300);
/// CNPG's certificate lifetime (90 days, its `CertificateDuration` default).
const CERT_DAYS: i64 = 90;

fn pki_err(e: pki::PkiError) -> ApiError {
    ApiError::internal(e.to_string())
}

/// A Pod is ready when its `Ready` condition is True (CNPG's `IsPodReady`).
pub fn pod_ready(pod: &Value) -> bool {
    crate::cluster::util::is_ready(pod)
}

/// 64 characters, 10 of them digits, no symbols: CNPG's generated passwords.
pub fn generate_password(ctx: &Ctx, length: usize, digits: usize) -> String {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const DIGITS: &[u8] = b"0123456789";
    ctx.rng(|r| {
        let mut chars: Vec<u8> = (0..length)
            .map(|i| {
                let set = if i < digits { DIGITS } else { LETTERS };
                set[r.random_range(0..set.len())]
            })
            .collect();
        chars.shuffle(r);
        String::from_utf8_lossy(&chars).into_owned()
    })
}

fn subject<'a>(cn: &'a str, ou: Option<&'a str>, now: jiff::Timestamp) -> Subject<'a> {
    // CNPG back-dates certificates five minutes against clock skew.
    let not_before = now - jiff::SignedDuration::from_mins(5);
    Subject {
        common_name: cn,
        organizational_unit: ou,
        not_before,
        not_after: not_before + jiff::SignedDuration::from_hours(24 * CERT_DAYS),
    }
}

/// Where the `CAKeyMissing` and `CAInvalid` faults keep the certificate they withhold from
/// `ca.crt`: clearing the fault restores the same CA, so the leaf certificates stay valid.
pub const WITHHELD_CA_KEY: &str = "ca.crt.withheld";

/// The `ca.crt` the `CAInvalid` fault leaves: text with no PEM certificate in it.
pub const INVALID_CA_TEXT: &str = "not a certificate (the simulated fault CAInvalid is set)\n";

/// The Cluster's CA from `<c>-ca`, made and stored first when missing; the Secret is then
/// written as the Cluster's CA faults leave it (`ca.crt` withheld or unreadable).
fn ensure_ca(ctx: &Ctx, tx: &mut Tx<'_>, c: &Value, now: jiff::Timestamp) -> Result<Ca, ApiError> {
    let ns = shapes::namespace(c);
    let secret = format!("{}-ca", shapes::name(c));
    let existing = tx.get(SECRETS, ns, &secret);
    let kept = existing.as_deref().and_then(|e| {
        let cert = secret_text(e, WITHHELD_CA_KEY).or_else(|| secret_text(e, "ca.crt"))?;
        Some(Pem {
            cert,
            key: secret_text(e, "ca.key")?,
        })
    });
    let ca = match (existing, kept) {
        (Some(existing), Some(pem)) => {
            let ca = Ca::from_pem(pem).map_err(pki_err)?;
            let data = ca_data(ctx, c, &existing["data"], &ca.pem);
            if existing.get("data") != Some(&data) {
                let mut next = (*existing).clone();
                next["data"] = data;
                tx.update(SECRETS, next)?;
            }
            ca
        }
        _ => {
            let ca = Ca::generate(
                &subject(shapes::name(c), Some(ns), now),
                &[pki::KeyUsage::KeyCertSign],
            )
            .map_err(pki_err)?;
            let mut created = shapes::ca_secret(c, &ca.pem);
            created["data"] = ca_data(ctx, c, &created["data"], &ca.pem);
            tx.create(SECRETS, ns, created)?;
            ca
        }
    };
    Ok(ca)
}

/// The CA Secret's `data` (`stored`, other keys kept) as the Cluster's CA faults leave it:
/// `ca.crt` the certificate of `pem`, withheld, or unreadable.
fn ca_data(ctx: &Ctx, c: &Value, stored: &Value, pem: &Pem) -> Value {
    use crate::cluster::secret_data::base64_encode;
    let mut data = stored.as_object().cloned().unwrap_or_default();
    data.remove(WITHHELD_CA_KEY);
    data.remove("ca.crt");
    let cert = json!(base64_encode(pem.cert.as_bytes()));
    if ctx.fault(WorkloadFault::CaKeyMissing, c) {
        data.insert(WITHHELD_CA_KEY.into(), cert);
    } else if ctx.fault(WorkloadFault::CaInvalid, c) {
        data.insert(WITHHELD_CA_KEY.into(), cert);
        let text = base64_encode(INVALID_CA_TEXT.as_bytes());
        data.insert("ca.crt".into(), json!(text));
    } else {
        data.insert("ca.crt".into(), cert);
    }
    Value::Object(data)
}

/// A leaf certificate Secret the Cluster needs.
struct Leaf<'a> {
    secret: &'a str,
    common_name: &'a str,
    names: &'a [String],
    usage: Usage,
}

fn ensure_leaf(
    tx: &mut Tx<'_>,
    c: &Value,
    ca: &Ca,
    leaf: &Leaf<'_>,
    now: jiff::Timestamp,
) -> Result<(), ApiError> {
    let ns = shapes::namespace(c);
    if tx.get(SECRETS, ns, leaf.secret).is_some() {
        return Ok(());
    }
    let pem = ca
        .issue(
            &subject(leaf.common_name, None, now),
            leaf.names,
            leaf.usage,
        )
        .map_err(pki_err)?;
    tx.create(SECRETS, ns, shapes::tls_secret(c, leaf.secret, &pem))?;
    Ok(())
}

/// `status.certificates` with each Secret's expiration as CNPG prints it.
fn certificates(tx: &Tx<'_>, c: &Value) -> Value {
    let ns = shapes::namespace(c);
    let n = shapes::name(c);
    let (ca, server, repl) = (
        format!("{n}-ca"),
        format!("{n}-server"),
        format!("{n}-replication"),
    );
    let mut expirations = serde_json::Map::new();
    for (secret, key) in [(&ca, "ca.crt"), (&server, "tls.crt"), (&repl, "tls.crt")] {
        if let Some(sec) = tx.get(SECRETS, ns, secret)
            && let Some(pem) = secret_text(&sec, key)
            && let Ok(t) = pki::not_after(&pem)
        {
            expirations.insert(secret.clone(), json!(pki::go_time_string(t)));
        }
    }
    json!({
        "serverCASecret": ca,
        "clientCASecret": ca,
        "serverTLSSecret": server,
        "replicationTLSSecret": repl,
        "serverAltDNSNames": c.pointer("/spec/certificates/serverAltDNSNames").cloned().unwrap_or(json!(null)),
        "expirations": expirations,
    })
}

/// The Ready condition as CNPG derives it from the phase.
fn ready_condition(phase: &str) -> Cond<'static> {
    if phase == PHASE_HEALTHY {
        Cond::new("Ready", true, "ClusterIsReady", "Cluster is Ready")
    } else {
        Cond::new("Ready", false, "ClusterIsNotReady", "Cluster Is Not Ready")
    }
}

/// The phase and phase reason CNPG registers for these facts.
pub fn phase_of(
    cluster: &str,
    current: &str,
    target: &str,
    ready: usize,
    wanted: usize,
) -> (&'static str, String) {
    if current.is_empty() {
        let first = shapes::instance_name(cluster, 1);
        (
            PHASE_FIRST_PRIMARY,
            format!("Creating primary instance {first}"),
        )
    } else if target != current {
        (PHASE_SWITCHOVER, format!("Switching over to {target}"))
    } else if ready < wanted {
        (
            PHASE_WAITING,
            "Some instances are not yet active. Please wait.".to_string(),
        )
    } else {
        (PHASE_HEALTHY, String::new())
    }
}

/// `status.instancesReportedState`: what each running instance manager reports.
fn reported_state(pods: &[Value], primary: &str, timeline: i64) -> Value {
    let mut out = serde_json::Map::new();
    for p in pods.iter().filter(|p| pod_ready(p)) {
        let name = s(p, "/metadata/name");
        let mut state = json!({"isPrimary": name == primary, "timeLineID": timeline});
        if let Some(ip) = p.pointer("/status/podIP") {
            state["ip"] = ip.clone();
        }
        out.insert(name.to_string(), state);
    }
    Value::Object(out)
}

/// `status.instancesStatus`: instance names by `healthy` (ready), `failed` (ended) and
/// `replicating` (any other active Pod), as CNPG's `ListStatusPods` sorts them.
fn instances_status(pods: &[Value]) -> Value {
    let mut by_state = serde_json::Map::new();
    for p in pods {
        let state = if pod_ready(p) {
            "healthy"
        } else if matches!(s(p, "/status/phase"), "Succeeded" | "Failed") {
            "failed"
        } else {
            "replicating"
        };
        let list = by_state.entry(state).or_insert_with(|| json!([]));
        if let Some(a) = list.as_array_mut() {
            a.push(json!(s(p, "/metadata/name")));
        }
    }
    Value::Object(by_state)
}

/// Set `fields` into `status`; empty strings and nulls remove a field (Go's `omitempty`).
fn merge_status(status: &mut Value, fields: &Value) {
    if let (Some(st), Some(f)) = (status.as_object_mut(), fields.as_object()) {
        for (k, v) in f {
            if v.is_null() || v.as_str() == Some("") {
                st.remove(k);
            } else {
                st.insert(k.clone(), v.clone());
            }
        }
    }
}

pub struct ClusterController;

impl ClusterController {
    fn ensure_children(ctx: &Ctx, tx: &mut Tx<'_>, c: &Value) -> Result<(), ApiError> {
        let now = ctx.clock.now();
        let ns = shapes::namespace(c).to_string();
        let n = shapes::name(c).to_string();
        let ca = ensure_ca(ctx, tx, c, now)?;
        let rw = format!("{n}-rw");
        let alt = shapes::alt_dns_names(c);
        let server = format!("{n}-server");
        let leaf = Leaf {
            secret: &server,
            common_name: &rw,
            names: &alt,
            usage: Usage::Server,
        };
        ensure_leaf(tx, c, &ca, &leaf, now)?;
        let repl = format!("{n}-replication");
        let leaf = Leaf {
            secret: &repl,
            common_name: shapes::STREAMING_REPLICA_USER,
            names: &[],
            usage: Usage::Client,
        };
        ensure_leaf(tx, c, &ca, &leaf, now)?;
        if tx.get(SECRETS, &ns, &format!("{n}-app")).is_none() {
            let (db, owner) = shapes::app_database(c);
            let pw = generate_password(ctx, 64, 10);
            let secret =
                shapes::credentials_secret(c, &format!("{n}-app"), &db, &owner, &pw, "app");
            tx.create(SECRETS, &ns, secret)?;
        }
        let superuser = c
            .pointer("/spec/enableSuperuserAccess")
            .and_then(Value::as_bool)
            == Some(true);
        if superuser && tx.get(SECRETS, &ns, &format!("{n}-superuser")).is_none() {
            let pw = generate_password(ctx, 64, 10);
            let secret = shapes::credentials_secret(
                c,
                &format!("{n}-superuser"),
                "*",
                "postgres",
                &pw,
                "superuser",
            );
            tx.create(SECRETS, &ns, secret)?;
        }
        for suffix in ["rw", "ro", "r"] {
            if tx.get(SERVICES, &ns, &format!("{n}-{suffix}")).is_none() {
                tx.create(SERVICES, &ns, shapes::service(c, suffix))?;
            }
        }
        Ok(())
    }

    /// Create missing instances, remove those above `spec.instances`, and label each with its
    /// role (the current primary, or the first instance while there is none).
    fn ensure_pods(tx: &mut Tx<'_>, c: &Value, primary: &str) -> Result<Vec<Value>, ApiError> {
        let ns = shapes::namespace(c).to_string();
        let n = shapes::name(c).to_string();
        let wanted = shapes::instances(c);
        for serial in 1..=wanted {
            let pod = shapes::instance_name(&n, serial);
            if tx.get(PODS, &ns, &pod).is_none() {
                let role = if pod == primary { PRIMARY } else { REPLICA };
                tx.create(PODS, &ns, shapes::instance_pod(c, serial, role))?;
                // The operator's Events for a new instance (bootstrap of the first, then replicas).
                let message = if role == PRIMARY && c.pointer("/status/currentPrimary").is_none() {
                    "Primary instance (initdb)".to_string()
                } else {
                    format!("Creating instance {pod}")
                };
                tx.event(c, EventKind::Normal, "CreatingInstance", &message, None)?;
            }
        }
        let mut pods = Vec::new();
        for pod in tx.list(PODS, Some(&ns)) {
            if s(&pod, "/metadata/labels/cnpg.io~1cluster") != n
                || s(&pod, "/metadata/labels/cnpg.io~1podRole") != "instance"
            {
                continue;
            }
            let name = s(&pod, "/metadata/name").to_string();
            let serial = shapes::serial_of(&n, &name).unwrap_or(0);
            if serial > wanted && name != primary {
                if pod.pointer("/metadata/deletionTimestamp").is_none() {
                    tx.delete(PODS, &ns, &name)?;
                }
                continue;
            }
            let role = if name == primary { PRIMARY } else { REPLICA };
            let pod = if s(&pod, "/metadata/labels/cnpg.io~1instanceRole") != role
                || s(&pod, "/metadata/labels/role") != role
            {
                let mut next = (*pod).clone();
                next["metadata"]["labels"][shapes::INSTANCE_ROLE_LABEL] = json!(role);
                next["metadata"]["labels"][shapes::ROLE_LABEL] = json!(role);
                tx.update(PODS, next)?
            } else {
                pod
            };
            pods.push((*pod).clone());
        }
        pods.sort_by_key(|p| shapes::serial_of(&n, s(p, "/metadata/name")).unwrap_or(0));
        Ok(pods)
    }
}

impl Component for ClusterController {
    fn name(&self) -> &'static str {
        MANAGER_NAME
    }

    fn primary(&self) -> Kind {
        CLUSTERS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![PODS, SECRETS, SERVICES]
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(c) = tx.get_key(CLUSTERS, key) else {
            return Ok(Next::Done);
        };
        if c.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok(Next::Done);
        }
        Self::ensure_children(ctx, &mut tx, &c)?;
        let n = shapes::name(&c).to_string();
        let mut current = s(&c, "/status/currentPrimary").to_string();
        let target = match s(&c, "/status/targetPrimary") {
            "" => shapes::instance_name(&n, 1),
            t => t.to_string(),
        };
        let mut current_ts = s(&c, "/status/currentPrimaryTimestamp").to_string();
        let target_ts = match s(&c, "/status/targetPrimaryTimestamp") {
            "" => cnpg_timestamp(ctx.clock.now()),
            t => t.to_string(),
        };
        let mut next = Next::Done;
        let mut timeline = c
            .pointer("/status/timelineID")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        // The labelled primary: the current one, or the first target while bootstrapping.
        let labelled = if current.is_empty() {
            target.clone()
        } else {
            current.clone()
        };
        let mut pods = Self::ensure_pods(&mut tx, &c, &labelled)?;
        let ready = |name: &str, pods: &[Value]| {
            pods.iter()
                .any(|p| s(p, "/metadata/name") == name && pod_ready(p))
        };
        if current.is_empty() {
            if ready(&target, &pods) {
                current = target.clone();
                current_ts = cnpg_timestamp(ctx.clock.now());
            }
        } else if target != current {
            let waited = ctx.clock.since(&target_ts);
            if waited >= SWITCHOVER_DELAY && ready(&target, &pods) {
                current = target.clone();
                current_ts = cnpg_timestamp(ctx.clock.now());
                // The promoted replica starts a new timeline.
                timeline += 1;
                pods = Self::ensure_pods(&mut tx, &c, &current)?;
            } else {
                next = Next::After(
                    SWITCHOVER_DELAY
                        .saturating_sub(waited)
                        .max(Duration::from_millis(50)),
                );
            }
        }
        let wanted = shapes::instances(&c);
        let ready_names: Vec<String> = pods
            .iter()
            .filter(|p| pod_ready(p))
            .map(|p| s(p, "/metadata/name").to_string())
            .collect();
        let (phase, phase_reason) = phase_of(&n, &current, &target, ready_names.len(), wanted);
        let names: Vec<Value> = pods.iter().map(|p| json!(s(p, "/metadata/name"))).collect();
        let latest = pods
            .iter()
            .filter_map(|p| shapes::serial_of(&n, s(p, "/metadata/name")))
            .max()
            .unwrap_or(0)
            .max(
                c.pointer("/status/latestGeneratedNode")
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as usize,
            );
        let now = ctx.clock.rfc3339();
        let prev = c.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut status = prev.clone();
        let fields = json!({
            "instances": pods.len(),
            "readyInstances": ready_names.len(),
            "instanceNames": names,
            "instancesStatus": instances_status(&pods),
            "latestGeneratedNode": latest,
            "currentPrimary": current,
            "currentPrimaryTimestamp": current_ts,
            "targetPrimary": target,
            "targetPrimaryTimestamp": target_ts,
            "writeService": format!("{n}-rw"),
            "readService": format!("{n}-r"),
            "phase": phase,
            "phaseReason": phase_reason,
            "timelineID": timeline,
            "instancesReportedState": reported_state(&pods, &current, timeline),
            "certificates": certificates(&tx, &c),
            "selector": format!("cnpg.io/cluster={n},cnpg.io/podRole=instance"),
            "image": shapes::image(&c),
            "conditions": conditions::set(prev.get("conditions").unwrap_or(&Value::Null), &ready_condition(phase), &now),
        });
        merge_status(&mut status, &fields);
        if c.get("status") != Some(&status) {
            let mut obj = (*c).clone();
            obj["status"] = status;
            tx.update_status(CLUSTERS, obj)?;
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_follows_the_phase_with_cnpgs_reasons() {
        let ok = ready_condition(PHASE_HEALTHY);
        assert_eq!(
            (ok.status, ok.reason, ok.message.as_str()),
            (true, "ClusterIsReady", "Cluster is Ready")
        );
        let not = ready_condition(PHASE_SWITCHOVER);
        assert_eq!(
            (not.status, not.reason, not.message.as_str()),
            (false, "ClusterIsNotReady", "Cluster Is Not Ready")
        );
    }

    #[test]
    fn phases_and_reasons_as_cnpg_registers_them() {
        assert_eq!(
            phase_of("db", "", "db-1", 0, 3),
            (
                PHASE_FIRST_PRIMARY,
                "Creating primary instance db-1".to_string()
            )
        );
        assert_eq!(
            phase_of("db", "db-1", "db-1", 2, 3),
            (
                PHASE_WAITING,
                "Some instances are not yet active. Please wait.".to_string()
            )
        );
        assert_eq!(
            phase_of("db", "db-1", "db-2", 3, 3),
            (PHASE_SWITCHOVER, "Switching over to db-2".to_string())
        );
        assert_eq!(
            phase_of("db", "db-1", "db-1", 3, 3),
            (PHASE_HEALTHY, String::new())
        );
    }

    #[test]
    fn instances_are_grouped_as_cnpg_lists_them_and_empty_fields_are_omitted() {
        let ready = json!({"metadata": {"name": "db-1"}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        let pending = json!({"metadata": {"name": "db-2"}, "status": {"phase": "Pending"}});
        let failed = json!({"metadata": {"name": "db-3"}, "status": {"phase": "Failed"}});
        assert_eq!(
            instances_status(&[ready, pending, failed]),
            json!({"healthy": ["db-1"], "replicating": ["db-2"], "failed": ["db-3"]})
        );
        let mut status = json!({"phaseReason": "old", "phase": "x"});
        merge_status(
            &mut status,
            &json!({"phaseReason": "", "phase": "y", "image": null}),
        );
        assert_eq!(status, json!({"phase": "y"}));
    }

    #[test]
    fn a_pod_is_ready_when_its_ready_condition_is_true() {
        let p = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(pod_ready(&p));
        let not = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}});
        assert!(!pod_ready(&not));
        assert!(!pod_ready(&json!({})));
    }
}
