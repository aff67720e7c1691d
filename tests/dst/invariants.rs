//! The invariants, checked over a run's history: continuously (every snapshot, every request)
//! and at the end. Written from the spec (api.md, the seed's PgAccessRequest part), not from
//! `decide`: each rule is a few lines a reviewer can hold against the spec.

use std::collections::HashMap;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::transport::Who;
use crate::world::{History, ORPHAN_GRACE, ROLE, SUBJECT, Snapshot, epoch, expires_at, phase_of};

/// The longest a RoleBinding may outlive the moment it stopped being allowed, counted from the
/// end of any window in which the operator could not act (down, or refused with 403). It covers
/// a watch relist, a backoff after a burst of injected errors, and injected latency.
pub const LAG_MS: u64 = 90_000;

/// After a refused write on a request or its binding the operator retries that request with
/// its per-object backoff (`BackoffPolicy::RETRY`: doubling from 0.5 s, capped at 5 min, jitter
/// up to as much again), so the next attempt may come this long after the last refusal.
pub const RETRY_CAP_MS: u64 = 600_000;

const REQUEST_LABEL: &str = "pgtoolbox.fyannk.dev/access-request";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub detail: String,
}

pub fn violation(invariant: &'static str, detail: String) -> Violation {
    Violation { invariant, detail }
}

pub fn check(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    out.extend(grants_end_in_time(h));
    out.extend(writes_only_what_it_controls(h));
    for snap in &h.snapshots {
        out.extend(ready_agrees_with_aspects(snap));
    }
    if let Some(last) = h.snapshots.iter().rev().find(|s| s.at_ms <= h.settled_ms) {
        out.extend(converges_to_oracle(h, last));
        out.extend(crate::oracle::workloads_converge(h, last));
    }
    out.extend(quiet_end(h));
    out.extend(crate::leader::at_most_one_writer(h));
    out.extend(crate::oracle::no_secret_in_logs(h));
    out.extend(crate::oracle::no_secret_in_caches(h));
    out.extend(crate::oracle::nothing_outlives_its_object(h));
    out
}

fn at(ms: u64) -> Timestamp {
    epoch() + SignedDuration::from_millis(ms as i64)
}

fn ms_of(t: Timestamp) -> u64 {
    u64::try_from(t.duration_since(epoch()).as_millis()).unwrap_or(0)
}

pub fn name(o: &Value) -> &str {
    o["metadata"]["name"].as_str().unwrap_or_default()
}

/// True when the RoleBinding binds exactly the request's subject to its ClusterRole.
fn exact(rb: &Value) -> bool {
    let role = &rb["roleRef"];
    let subjects = rb["subjects"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    role["kind"] == "ClusterRole"
        && role["name"] == ROLE
        && subjects.len() == 1
        && subjects[0]["kind"] == "User"
        && subjects[0]["name"] == SUBJECT
}

/// Since when (ms) the binding should be gone and why, judged from this snapshot alone; `None`
/// while it may stay.
fn should_be_gone_since(rb: &Value, snap: &Snapshot) -> Option<(u64, &'static str)> {
    let request_name = rb["metadata"]["labels"][REQUEST_LABEL].as_str()?;
    let Some(request) = snap.requests.iter().find(|r| name(r) == request_name) else {
        // Deleting the request deletes an adopted grant (the garbage collector follows the
        // request's ownerReference). A binding never adopted is the known gap in docs/testing.md.
        let adopted = rb["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|o| !o.is_empty());
        return adopted.then_some((snap.at_ms, "its request is gone"));
    };
    let now = at(snap.at_ms);
    // A request created after its binding governs it from its creation on.
    let request_created = request["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .map_or(0, ms_of);
    if let Some(expiry) = expires_at(request)
        && now >= expiry
    {
        return Some((ms_of(expiry).max(request_created), "expired"));
    }
    let phase = phase_of(request);
    let approver = request["status"]["approver"].as_str().unwrap_or_default();
    if !exact(rb) {
        return Some((snap.at_ms, "drifted"));
    }
    match phase {
        "Approved" if !approver.is_empty() && approver != SUBJECT => None,
        "Approved" => Some((snap.at_ms, "self-approved or no approver")),
        "Pending" => {
            let created: Timestamp = rb["metadata"]["creationTimestamp"].as_str()?.parse().ok()?;
            let grace_end = created + SignedDuration::try_from(ORPHAN_GRACE).ok()?;
            (now >= grace_end).then(|| {
                (
                    ms_of(grace_end).max(request_created),
                    "orphaned past its grace",
                )
            })
        }
        _ => Some((snap.at_ms, "terminal phase")),
    }
}

/// RoleBindings labelled for a request that does not exist and that no request owns: the
/// garbage collector will not remove them and no request's pass sees them.
pub fn grants_without_request(h: &History) -> usize {
    let mut names: Vec<String> = Vec::new();
    for snap in h.snapshots.iter().filter(|s| s.at_ms >= h.settled_ms) {
        for rb in &snap.bindings {
            let Some(request) = rb["metadata"]["labels"][REQUEST_LABEL].as_str() else {
                continue;
            };
            if !snap.requests.iter().any(|r| name(r) == request)
                && !names.contains(&request.to_string())
            {
                names.push(request.to_string());
            }
        }
    }
    names.len()
}

/// No RoleBinding of a request outlives its expiry, denial, revocation, drift, orphan grace or
/// its request by more than [`LAG_MS`] after the operator could act again.
pub fn grants_end_in_time(h: &History) -> Vec<Violation> {
    let mut since: HashMap<String, u64> = HashMap::new();
    let mut reported: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for snap in &h.snapshots {
        let mut seen = Vec::new();
        for rb in &snap.bindings {
            let uid = rb["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let Some((bad, why)) = should_be_gone_since(rb, snap) else {
                since.remove(&uid);
                continue;
            };
            // A binding created after the moment its request stopped allowing it is due from
            // its creation on.
            let created = rb["metadata"]["creationTimestamp"]
                .as_str()
                .and_then(|t| t.parse::<Timestamp>().ok())
                .map_or(0, ms_of);
            let bad = bad.max(created);
            let first = since.get(&uid).map_or(bad, |s| (*s).min(bad));
            since.insert(uid.clone(), first);
            seen.push(uid.clone());
            let request = rb["metadata"]["labels"][REQUEST_LABEL]
                .as_str()
                .unwrap_or_default();
            let last_refusal = h
                .log
                .iter()
                .filter(|e| matches!(e.who, Who::Operator(_)) && e.status >= 403 && e.status != 404)
                .filter(|e| e.at_ms <= snap.at_ms)
                .filter(|e| {
                    e.uri.contains(&format!("/rolebindings/{}?", name(rb)))
                        || e.uri.contains(&format!("/pgaccessrequests/{request}/"))
                })
                .map(|e| e.at_ms + RETRY_CAP_MS)
                .max()
                .unwrap_or(0);
            let could_act = h
                .blocked
                .iter()
                .filter(|(from, _)| *from <= snap.at_ms)
                .map(|(_, to)| *to)
                .fold(first, u64::max)
                .max(last_refusal.saturating_sub(LAG_MS));
            if snap.at_ms > could_act + LAG_MS && !reported.contains(&uid) {
                out.push(violation(
                    "grant-ends-in-time",
                    format!(
                        "RoleBinding {} ({why}) still exists at {} ms, {} ms after it should have \
                         gone (operator able to act since {could_act} ms)",
                        name(rb),
                        snap.at_ms,
                        snap.at_ms - first
                    ),
                ));
                reported.push(uid);
            }
        }
        since.retain(|uid, _| seen.contains(uid));
    }
    out
}

/// The operator writes only what it controls: its requests' status, Events, RoleBindings of a
/// request (labelled so by the console), its Lease; it creates nothing but Events and reviews.
pub fn writes_only_what_it_controls(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in h.log.iter().filter(|e| e.is_write()) {
        let Who::Operator(incarnation) = e.who else {
            continue;
        };
        let Some(t) = e.target() else {
            out.push(violation(
                "writes-only-what-it-controls",
                format!(
                    "operator {incarnation} wrote to an unknown path {} {}",
                    e.method, e.uri
                ),
            ));
            continue;
        };
        let allowed = match (e.method.as_str(), t.plural.as_str(), t.sub.as_deref()) {
            (_, "events", None) => true,
            (_, "leases", None) => t.group == "coordination.k8s.io",
            ("POST", "selfsubjectaccessreviews" | "selfsubjectrulesreviews", None) => true,
            ("PATCH" | "PUT", plural, Some("status")) => {
                t.group == crate::kinds::GROUP && OUR_PLURALS.contains(&plural)
            }
            ("PATCH" | "PUT" | "DELETE", "rolebindings", None)
                if e.before
                    .as_ref()
                    .is_some_and(|b| b["metadata"]["labels"][REQUEST_LABEL].is_string()) =>
            {
                true
            }
            (_, _, None) => controls_write(e, &t),
            _ => false,
        };
        if !allowed {
            let labels = e.before.as_ref().map(|b| b["metadata"]["labels"].clone());
            out.push(violation(
                "writes-only-what-it-controls",
                format!(
                    "operator {incarnation} {} {} (answered {}) on an object it does not control \
                     (labels before: {labels:?})",
                    e.method, e.uri, e.status
                ),
            ));
        }
    }
    out
}

pub const OUR_PLURALS: [&str; 4] = [
    "pgaccessrequests",
    "pgtoolboxconsoles",
    "pgadmins",
    "evidenceagents",
];

/// An object the operator controls, as api.md says its children are: the managed-by label and
/// a controller ownerReference to one of its kinds.
pub fn controlled(o: &Value) -> bool {
    let managed = o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pgtoolbox-operator";
    let owned = o["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r["controller"] == true
                    && r["apiVersion"]
                        .as_str()
                        .is_some_and(|v| v.starts_with(crate::kinds::GROUP))
                    && crate::kinds::OUR_KINDS.contains(&r["kind"].as_str().unwrap_or_default())
            })
        });
    managed && owned
}

/// A write of an object (not a status) is the operator's when the object was controlled
/// before (any attempt) and is after (a write that succeeded). The one exception is its own
/// CA Secret, in its namespace, which no object owns.
fn controls_write(e: &crate::transport::Entry, t: &crate::transport::PathTarget) -> bool {
    if t.plural == "secrets"
        && t.namespace.as_deref() == Some(crate::workloads::OPERATOR_NS)
        && (t.name.is_none()
            || t.name.as_deref()
                == Some(pgtoolbox_operator::testing::actors::evidence_agent::CA_SECRET_NAME))
    {
        return true;
    }
    let before_ok = e.before.as_deref().is_none_or(controlled);
    let after_ok = !(200..300).contains(&e.status)
        || e.method == "DELETE"
        || e.after.as_deref().is_some_and(controlled);
    before_ok && after_ok
}

pub fn condition<'a>(request: &'a Value, type_: &str) -> Option<&'a Value> {
    request["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// `Ready` agrees with the aspects of the same stored status, in the order the spec gives for
/// the object's kind: it is `True` only when every aspect is, and copies the first that is not
/// when that one is current; a failed pass may say `ReconcileError` instead.
pub fn ready_agrees_with_aspects(snap: &Snapshot) -> Vec<Violation> {
    let mut out = Vec::new();
    let objects = snap.requests.iter().map(|r| ("PgAccessRequest", r)).chain(
        snap.workloads
            .iter()
            .map(|w| (w["kind"].as_str().unwrap_or_default(), w)),
    );
    for (kind, r) in objects {
        let Some(ready) = condition(r, "Ready") else {
            continue;
        };
        let generation = r["metadata"]["generation"].as_i64();
        let aspects: Vec<Option<&Value>> = crate::kinds::aspects(kind)
            .iter()
            .map(|a| condition(r, a))
            .collect();
        let state = |c: &Value| (c["status"].clone(), c["reason"].clone());
        let wrong = if ready["reason"] == "ReconcileError" {
            (ready["status"] != "False").then(|| "ReconcileError must be False".to_string())
        } else if ready["reason"] == "ReconciliationPaused" {
            // A pause stands for the aspects (the oracle checks it is one at the end).
            (ready["status"] != "Unknown")
                .then(|| "ReconciliationPaused must be Unknown".to_string())
        } else if ready["status"] == "True" {
            aspects
                .iter()
                .any(|a| a.is_none_or(|a| a["status"] != "True"))
                .then(|| "Ready=True while an aspect is not True".to_string())
        } else {
            match aspects.iter().flatten().find(|a| a["status"] != "True") {
                Some(a) if a["observedGeneration"].as_i64() == generation => {
                    (state(ready) != state(a)).then(|| {
                        format!(
                            "Ready {:?} does not copy the first failing aspect {} {:?}",
                            state(ready),
                            a["type"],
                            state(a)
                        )
                    })
                }
                Some(_) => None, // a stale aspect: Ready says it is reconciling
                None if aspects
                    .iter()
                    .all(|a| a.is_some_and(|a| a["observedGeneration"].as_i64() == generation)) =>
                {
                    Some(format!(
                        "Ready {:?} while every aspect is True and current",
                        state(ready)
                    ))
                }
                None => None,
            }
        };
        if let Some(detail) = wrong {
            out.push(violation(
                "ready-agrees-with-aspects",
                format!("{kind} {} at {} ms: {detail}", name(r), snap.at_ms),
            ));
        }
    }
    out
}

/// What an independent reading of the spec expects each request to say once settled, from its
/// final inputs (phase, approver, expiry, bindings, Cluster) and what the schedule did to it.
pub fn expected_reasons(h: &History, snap: &Snapshot, request: &Value) -> Vec<&'static str> {
    let now = at(snap.at_ms);
    let expired = expires_at(request).is_some_and(|e| now >= e);
    let approver = request["status"]["approver"].as_str().unwrap_or_default();
    let r = name(request).to_string();
    let exact_binding = snap
        .bindings
        .iter()
        .any(|rb| rb["metadata"]["labels"][REQUEST_LABEL] == r.as_str() && exact(rb));
    let tampered = h.tampered.contains(&r);
    let bound = h.bound.contains(&r);
    match phase_of(request) {
        "Denied" => vec!["AccessDenied"],
        "Revoked" if approver == SUBJECT => vec!["SelfApprovalRefused"],
        "Revoked" => vec!["AccessRevoked"],
        "Expired" => vec!["AccessExpired"],
        // Past its expiry or approved by its own subject, a request cannot rest Approved.
        "Approved" if expired || approver == SUBJECT || approver.is_empty() => vec![],
        "Approved" if exact_binding => vec!["AccessGranted"],
        "Approved" => {
            let mut v = vec!["RoleBindingMissing"];
            if tampered {
                v.push("RoleBindingDrifted");
            }
            v
        }
        "Pending" if expired => vec![],
        "Pending" => {
            let mut v = vec!["AwaitingDecision"];
            if bound {
                v.push("RoleBindingOrphaned");
            }
            if tampered {
                v.push("RoleBindingDrifted");
            }
            v
        }
        _ => vec![],
    }
}

/// Every request converges: its RoleBindingSynced reason is one the oracle allows, its
/// ConfigurationValid follows its Cluster, and its status is of its current generation.
pub fn converges_to_oracle(h: &History, snap: &Snapshot) -> Vec<Violation> {
    let mut out = Vec::new();
    for r in &snap.requests {
        let expected = expected_reasons(h, snap, r);
        let got = condition(r, "RoleBindingSynced")
            .and_then(|c| c["reason"].as_str())
            .unwrap_or("<none>");
        if !expected.contains(&got) {
            out.push(violation(
                "converges-to-oracle",
                format!(
                    "{} (phase {}) says {got}, expected one of {expected:?}",
                    name(r),
                    phase_of(r)
                ),
            ));
        }
        let cluster_ok = match r["spec"]["cluster"].as_str() {
            Some(c) => snap.clusters.iter().any(|x| x == c),
            None => true,
        };
        let config = condition(r, "ConfigurationValid")
            .and_then(|c| c["reason"].as_str())
            .unwrap_or("<none>");
        let config_expected = if cluster_ok {
            "AsExpected"
        } else {
            "ClusterNotFound"
        };
        if config != config_expected {
            out.push(violation(
                "converges-to-oracle",
                format!(
                    "{} ConfigurationValid says {config}, expected {config_expected}",
                    name(r)
                ),
            ));
        }
        let observed = r["status"]["observedGeneration"].as_i64();
        if observed != r["metadata"]["generation"].as_i64() {
            out.push(violation(
                "converges-to-oracle",
                format!("{} status is of generation {observed:?}", name(r)),
            ));
        }
    }
    out
}

/// Once settled, the operator writes nothing until something it waits for comes due. A
/// workload left crash-looping or failing its image pulls is the exception: its Pods retry
/// for ever (back-off, error, back-off), and its status message and Events follow them.
pub fn quiet_end(h: &History) -> Vec<Violation> {
    let looping: Vec<String> = h
        .workload_faults
        .iter()
        .filter(|r| {
            use pgtoolbox_sim::cluster::WorkloadFault::{CrashLoopBackOff, ImagePullBackOff};
            matches!(r.fault, CrashLoopBackOff | ImagePullBackOff)
        })
        .map(|r| {
            r.selector
                .strip_prefix("app.kubernetes.io/instance=")
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let follows_a_loop = |uri: &str| {
        looping.iter().any(|w| {
            w.is_empty()
                || uri.contains(&format!("/{w}/status"))
                || uri.contains(&format!("/events/{w}."))
        })
    };
    h.log
        .iter()
        .filter(|e| matches!(e.who, Who::Operator(_)) && e.is_write())
        .filter(|e| !crate::leader::is_lease(e))
        .filter(|e| e.at_ms > h.settled_ms && e.at_ms <= h.quiet_until_ms)
        .filter(|e| !follows_a_loop(&e.uri))
        .map(|e| {
            violation(
                "quiet-end",
                format!(
                    "{} {} at {} ms, after settling at {} ms",
                    e.method, e.uri, e.at_ms, h.settled_ms
                ),
            )
        })
        .collect()
}
