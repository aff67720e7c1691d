//! One mutation per invariant: a real run's history, doctored so that exactly one guarantee is
//! broken, must be refused by that invariant's checker (and the untouched history accepted).
//! Without this an invariant that never fires would look like one that always holds.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::invariants::{self, LAG_MS, Violation};
use crate::transport::{Entry, Who};
use crate::world::{History, Snapshot};

const REQUEST_LABEL: &str = "pgtoolbox.fyannk.dev/access-request";

fn request(name: &str, phase: &str, ready: (&str, &str), synced: (&str, &str)) -> Arc<Value> {
    let cond = |t: &str, (status, reason): (&str, &str)| json!({"type": t, "status": status, "reason": reason, "observedGeneration": 1});
    Arc::new(json!({
        "metadata": {"name": name, "namespace": "team-a", "generation": 1, "uid": format!("u-{name}")},
        "spec": {"subject": {"kind": "User", "name": "alice"}, "clusterRole": "cnpg-viewer",
                 "expiresAt": "2031-01-01T00:00:00Z"},
        "status": {"phase": phase, "approver": "bob", "observedGeneration": 1, "conditions": [
            cond("Ready", ready),
            cond("ConfigurationValid", ("True", "AsExpected")),
            cond("RoleBindingSynced", synced),
        ]},
    }))
}

fn binding(request: &str) -> Arc<Value> {
    Arc::new(json!({
        "metadata": {"name": format!("pgar-{request}"), "namespace": "team-a",
                     "uid": format!("rb-{request}"), "creationTimestamp": "2030-01-01T00:00:00Z",
                     "labels": {REQUEST_LABEL: request}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cnpg-viewer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    }))
}

fn snapshot(at_ms: u64, requests: Vec<Arc<Value>>, bindings: Vec<Arc<Value>>) -> Snapshot {
    Snapshot {
        at_ms,
        requests,
        bindings,
        clusters: Vec::new(),
        workloads: Vec::new(),
        inputs: Vec::new(),
        pods: Vec::new(),
        jobs: Vec::new(),
        exposures: Vec::new(),
    }
}

/// A doctored history and the invariant that must refuse it.
fn mutants(real: &History) -> Vec<(&'static str, &'static str, History)> {
    let end = real.settled_ms;
    let mut out = Vec::new();

    // A denied request whose RoleBinding stays past the lag.
    let mut h = real.clone();
    let denied = request(
        "mx",
        "Denied",
        ("True", "AsExpected"),
        ("True", "AccessDenied"),
    );
    h.snapshots
        .push(snapshot(end + 1, vec![denied.clone()], vec![binding("mx")]));
    h.snapshots.push(snapshot(
        end + LAG_MS + 2,
        vec![denied],
        vec![binding("mx")],
    ));
    out.push(("grant-ends-in-time", "a denied grant kept past the lag", h));

    // The operator deletes a RoleBinding that is no request's.
    let mut h = real.clone();
    h.log.push(Entry {
        at_ms: end,
        sent_ms: end,
        who: Who::Operator(1),
        method: "DELETE".into(),
        uri: "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings/team-admins".into(),
        status: 200,
        before: Some(Arc::new(
            json!({"metadata": {"name": "team-admins", "labels": {}}}),
        )),
        after: None,
    });
    out.push((
        "writes-only-what-it-controls",
        "an unlabelled RoleBinding deleted",
        h,
    ));

    // Ready=True beside a failing aspect.
    let mut h = real.clone();
    let lying = request(
        "my",
        "Approved",
        ("True", "AsExpected"),
        ("False", "RoleBindingMissing"),
    );
    h.snapshots.insert(0, snapshot(0, vec![lying], vec![]));
    out.push((
        "ready-agrees-with-aspects",
        "Ready=True with RoleBindingSynced=False",
        h,
    ));

    // A denied request that settles as granted.
    let mut h = real.clone();
    let wrong = request(
        "mz",
        "Denied",
        ("True", "AsExpected"),
        ("True", "AccessGranted"),
    );
    if let Some(last) = h.snapshots.iter_mut().rev().find(|s| s.at_ms <= end) {
        last.requests.push(wrong);
    }
    out.push((
        "converges-to-oracle",
        "a denied request settled as AccessGranted",
        h,
    ));

    // A status write after settling.
    let mut h = real.clone();
    h.log.push(status_write(end + 1, 1));
    out.push(("quiet-end", "a status write in the quiet end", h));
    out
}

/// A status write of request r0 by operator `incarnation` at `at_ms`.
fn status_write(at_ms: u64, incarnation: u32) -> Entry {
    Entry {
        at_ms,
        sent_ms: at_ms,
        who: Who::Operator(incarnation),
        method: "PATCH".into(),
        uri: "/apis/pgtoolbox.fyannk.dev/v1alpha1/namespaces/team-a/pgaccessrequests/r0/status"
            .into(),
        status: 200,
        before: None,
        after: None,
    }
}

/// The mutant of `at-most-one-writer`: `real` with a status write by the first incarnation to
/// hold the Lease, a minute after a later incarnation took it (its own lease time has run out
/// by then). `None` when the Lease never changed hands.
fn old_leader_writes(real: &History) -> Option<History> {
    let holders: Vec<(u32, &Entry)> = real
        .log
        .iter()
        .filter(|e| crate::leader::is_lease(e) && e.is_write() && e.status < 300)
        .filter_map(|e| match e.who {
            Who::Operator(i) => Some((i, e)),
            Who::Driver => None,
        })
        .collect();
    let (first, _) = holders.first()?;
    let (_, taken) = holders.iter().find(|(i, _)| i != first)?;
    let mut h = real.clone();
    h.log.push(status_write(taken.at_ms + 60_000, *first));
    h.log.sort_by_key(|e| e.at_ms);
    Some(h)
}

fn condition(t: &str, status: &str, reason: &str) -> Value {
    json!({"type": t, "status": status, "reason": reason, "observedGeneration": 1})
}

/// A workload as stored: `kind`, its spec, and its conditions.
/// A PgAdmin's conditions when every aspect says it holds (no exposure asked for).
fn pgadmin_all_true() -> Vec<Value> {
    vec![
        condition("Ready", "True", "AsExpected"),
        condition("ConfigurationValid", "True", "AsExpected"),
        condition("WorkloadReady", "True", "AsExpected"),
        condition("ExposureReady", "True", "NotRequested"),
        condition("ServersSynced", "True", "AsExpected"),
        condition("PgAdminEgressConfined", "True", "AsExpected"),
    ]
}

fn workload(kind: &str, name: &str, spec: Value, conditions: Vec<Value>) -> Arc<Value> {
    Arc::new(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": kind,
        "metadata": {"name": name, "namespace": "team-a", "generation": 1, "uid": format!("u-{name}")},
        "spec": spec,
        "status": {"observedGeneration": 1, "conditions": conditions},
    }))
}

fn operator_write(at_ms: u64, method: &str, uri: &str, before: Value, after: Value) -> Entry {
    Entry {
        at_ms,
        sent_ms: at_ms,
        who: Who::Operator(1),
        method: method.into(),
        uri: uri.into(),
        status: 200,
        before: (!before.is_null()).then(|| Arc::new(before)),
        after: (!after.is_null()).then(|| Arc::new(after)),
    }
}

/// The settled snapshot with Cluster `c0` and PgAdmin `p0` as given (its Pods too, when given).
fn settle_p0(h: &mut History, p0: Arc<Value>, pod: Option<Arc<Value>>) {
    let end = h.settled_ms;
    let Some(i) = h.snapshots.iter().rposition(|s| s.at_ms <= end) else {
        return;
    };
    let snap = &mut h.snapshots[i];
    snap.clusters.push("c0".into());
    snap.workloads.retain(|w| w["metadata"]["name"] != "p0");
    snap.workloads.push(p0);
    if let Some(pod) = pod {
        snap.pods
            .retain(|p| p["metadata"]["labels"]["app.kubernetes.io/instance"] != "p0");
        snap.pods.push(pod);
    }
}

/// A running console `kx` with `spec`: Ready, with its aspects and the `advisories` given.
fn console(spec: Value, advisories: Vec<Value>) -> Arc<Value> {
    let mut conditions = vec![
        condition("Ready", "True", "AsExpected"),
        condition("ConfigurationValid", "True", "AsExpected"),
        condition("WorkloadReady", "True", "AsExpected"),
        condition("ExposureReady", "True", "AsExpected"),
    ];
    conditions.extend(advisories);
    workload("PgToolBoxConsole", "kx", spec, conditions)
}

/// Mutants of a workload schedule's history, one per guarantee the workload kinds add.
fn workload_mutants(real: &History) -> Vec<(&'static str, &'static str, History)> {
    let end = real.settled_ms;
    let mut out = Vec::new();
    let last =
        |h: &mut History| -> Option<usize> { h.snapshots.iter().rposition(|s| s.at_ms <= end) };

    // An agent's Ready copies ConfigurationValid though the certificate is the first to fail.
    let mut h = real.clone();
    let agent = workload(
        "EvidenceAgent",
        "ex",
        json!({"cluster": {"name": "c0"}}),
        vec![
            condition("Ready", "False", "ClusterNotFound"),
            condition("ConfigurationValid", "True", "AsExpected"),
            condition("ServingCertificateReady", "False", "ServiceCAPending"),
            condition("WorkloadReady", "True", "AsExpected"),
        ],
    );
    h.snapshots.insert(
        0,
        Snapshot {
            workloads: vec![agent],
            ..snapshot(0, vec![], vec![])
        },
    );
    out.push((
        "ready-agrees-with-aspects",
        "an EvidenceAgent's Ready skipping its first failing aspect",
        h,
    ));

    // A console without an image (and no default) settles Ready.
    let mut h = real.clone();
    let ready = workload(
        "PgToolBoxConsole",
        "kx",
        json!({"exposure": {"type": "clusterIP"}}),
        vec![
            condition("Ready", "True", "AsExpected"),
            condition("ConfigurationValid", "True", "AsExpected"),
            condition("WorkloadReady", "True", "AsExpected"),
            condition("ExposureReady", "True", "NotRequested"),
        ],
    );
    if let Some(i) = last(&mut h) {
        h.snapshots[i].workloads.push(ready);
    }
    out.push((
        "converges-to-oracle",
        "a console without an image settled Ready",
        h,
    ));

    // A console whose hostname is refused still served at its URL (the refusal stated).
    let mut h = real.clone();
    let mut served = (*workload(
        "PgToolBoxConsole",
        "kx",
        json!({"image": "docker.io/library/app:1.0",
               "exposure": {"type": "route", "hostname": "kx.apps.example.org"}}),
        vec![
            condition("Ready", "False", "HostnameNotAllowed"),
            condition("ConfigurationValid", "False", "HostnameNotAllowed"),
            condition("ExposureReady", "False", "HostnameNotAllowed"),
            condition("Stalled", "True", "HostnameNotAllowed"),
        ],
    ))
    .clone();
    served["status"]["url"] = json!("https://kx.apps.example.org");
    if let Some(i) = last(&mut h) {
        h.snapshots[i].workloads.push(Arc::new(served));
    }
    out.push((
        "exposure-withdrawn",
        "a console with a refused hostname kept its URL",
        h,
    ));

    // A paused PgAdmin whose Ready still says what a pass judged.
    let mut h = real.clone();
    let mut paused = (*workload(
        "PgAdmin",
        "p0",
        json!({"exposure": {"type": "clusterIP"}, "clusterSelector": {"matchLabels": {"team": "a"}}}),
        pgadmin_all_true(),
    ))
    .clone();
    paused["metadata"]["annotations"] =
        json!({pgtoolbox_operator::api::RECONCILE_ANNOTATION: "skip"});
    settle_p0(&mut h, Arc::new(paused), None);
    out.push((
        "converges-to-oracle",
        "a paused PgAdmin said Ready=True, not ReconciliationPaused",
        h,
    ));

    // A PgAdmin with every input valid and no fault left on that never becomes Ready.
    let mut h = real.clone();
    h.workload_faults.clear();
    let stuck = workload(
        "PgAdmin",
        "p0",
        json!({"exposure": {"type": "clusterIP"}, "clusterSelector": {"matchLabels": {"team": "a"}}}),
        vec![
            condition("Ready", "False", "RolloutInProgress"),
            condition("ConfigurationValid", "True", "AsExpected"),
            condition("WorkloadReady", "False", "RolloutInProgress"),
        ],
    );
    settle_p0(&mut h, stuck, None);
    out.push((
        "converges-to-oracle",
        "a PgAdmin with valid inputs and no fault settled not Ready",
        h,
    ));

    // A Pod running since before ImagePullBackOff went on is untouched by it: a PgAdmin that
    // says ImagePullFailed over it is wrong (the oracle reads when the Pod started).
    let mut h = real.clone();
    let rule = pgtoolbox_sim::cluster::WorkloadFaultRule {
        namespace: "team-a".into(),
        selector: "app.kubernetes.io/instance=p0".into(),
        fault: pgtoolbox_sim::cluster::WorkloadFault::ImagePullBackOff,
    };
    h.workload_faults = vec![rule.clone()];
    h.fault_since = vec![(rule, 60_000)];
    let failing = workload(
        "PgAdmin",
        "p0",
        json!({"exposure": {"type": "clusterIP"}, "clusterSelector": {"matchLabels": {"team": "a"}}}),
        vec![
            condition("Ready", "False", "ImagePullFailed"),
            condition("ConfigurationValid", "True", "AsExpected"),
            condition("WorkloadReady", "False", "ImagePullFailed"),
        ],
    );
    let running = Arc::new(json!({
        "metadata": {"name": "p0-pgadmin-1", "namespace": "team-a",
            "labels": {"app.kubernetes.io/instance": "p0"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "p0-pgadmin-1"}]},
        "status": {"containerStatuses": [
            {"name": "pgadmin", "state": {"running": {"startedAt": "2030-01-01T00:00:30Z"}}}
        ]},
    }));
    settle_p0(&mut h, failing, Some(running));
    out.push((
        "converges-to-oracle",
        "a PgAdmin whose Pod ran since before its image-pull fault settled ImagePullFailed",
        h,
    ));

    // A running PgAdmin whose extra egress rule reaches any address, said to be confined.
    let mut h = real.clone();
    h.workload_faults.clear();
    h.fault_since.clear();
    let confined = workload(
        "PgAdmin",
        "p0",
        json!({"exposure": {"type": "clusterIP"}, "clusterSelector": {"matchLabels": {"team": "a"}},
            "egress": {"extraRules": [{"ports": [{"port": 636}]}]}}),
        pgadmin_all_true(),
    );
    settle_p0(&mut h, confined, None);
    out.push((
        "converges-to-oracle",
        "a PgAdmin egressing to any address said to be confined",
        h,
    ));

    // A console mirroring the CA of a Cluster whose CA Secret is left without `ca.crt`, said
    // to have every CA.
    let mut h = real.clone();
    h.workload_faults = vec![pgtoolbox_sim::cluster::WorkloadFaultRule {
        namespace: "team-a".into(),
        selector: format!("{}=c0", crate::workloads::CLUSTER_LABEL),
        fault: pgtoolbox_sim::cluster::WorkloadFault::CaKeyMissing,
    }];
    h.fault_since.clear();
    let complete = console(
        json!({"image": "app:1", "exposure": {"type": "clusterIP"}}),
        vec![condition("InstanceCABundleComplete", "True", "AsExpected")],
    );
    settle_p0(&mut h, complete, None);
    out.push((
        "converges-to-oracle",
        "a console said to mirror a CA its Cluster's Secret lacks",
        h,
    ));

    // A console admitting the Pod network, said to be confined.
    let mut h = real.clone();
    h.workload_faults.clear();
    h.fault_since.clear();
    let confined = console(
        json!({"image": "app:1", "exposure": {"type": "route", "hostname": "kx.example.com",
            "networkPolicy": {"from": [{"ipBlock": {"cidr": "10.244.0.0/16"}}]}}}),
        vec![
            condition("InstanceCABundleComplete", "True", "AsExpected"),
            condition("ExposureConfined", "True", "AsExpected"),
        ],
    );
    settle_p0(&mut h, confined, None);
    out.push((
        "converges-to-oracle",
        "a console admitting the Pod network said to be confined",
        h,
    ));

    // A PgAdmin whose settings objects CloudNativePG leaves unapplied, settled Ready.
    let mut h = real.clone();
    let rule = pgtoolbox_sim::cluster::WorkloadFaultRule {
        namespace: "team-a".into(),
        selector: "app.kubernetes.io/instance=p0".into(),
        fault: pgtoolbox_sim::cluster::WorkloadFault::NotApplied,
    };
    h.workload_faults = vec![rule.clone()];
    h.faults_ever = vec![rule.clone()];
    h.fault_since = vec![(rule, 0)];
    let ready = workload(
        "PgAdmin",
        "p0",
        json!({"exposure": {"type": "clusterIP"}, "clusterSelector": {"matchLabels": {"team": "a"}},
            "configDatabase": {"cluster": "c0"}}),
        pgadmin_all_true(),
    );
    settle_p0(&mut h, ready, None);
    out.push((
        "converges-to-oracle",
        "a PgAdmin whose settings objects are unapplied settled Ready",
        h,
    ));

    // A PgAdmin with a settings database whose upgrade backup is held by its Job: said to be
    // backing up though the Job failed; said to be backing up though a fault failing the Job
    // was on since before it was created (the history alone says it failed); said to have
    // failed though no backup Job is there.
    let backup_fault = pgtoolbox_sim::cluster::WorkloadFaultRule {
        namespace: "team-a".into(),
        selector: format!(
            "{},app.kubernetes.io/instance=p0",
            crate::workloads::BACKUP_JOBS
        ),
        fault: pgtoolbox_sim::cluster::WorkloadFault::JobFailed,
    };
    let failed = json!({"conditions": [{"type": "Failed", "status": "True",
        "reason": "BackoffLimitExceeded"}]});
    for (what, said, job_status, fault) in [
        (
            "a PgAdmin whose backup Job failed, said to be backing up",
            "UpgradeBackupRunning",
            Some(failed),
            false,
        ),
        (
            "a PgAdmin whose backup Job met a failing fault from its start, said to be backing up",
            "UpgradeBackupRunning",
            Some(json!({"active": 1})),
            true,
        ),
        (
            "a PgAdmin said to have failed its upgrade backup without a backup Job",
            "UpgradeBackupFailed",
            None,
            false,
        ),
    ] {
        let mut h = real.clone();
        h.workload_faults.clear();
        h.fault_since.clear();
        h.faults_ever.clear();
        if fault {
            h.workload_faults.push(backup_fault.clone());
            h.faults_ever.push(backup_fault.clone());
            h.fault_since.push((backup_fault.clone(), 1_000));
        }
        let p0 = workload(
            "PgAdmin",
            "p0",
            json!({"exposure": {"type": "clusterIP"}, "clusterSelector": {"matchLabels": {"team": "a"}},
                "configDatabase": {"cluster": "c0"}, "image": "docker.io/dpage/pgadmin4:9.11"}),
            vec![
                condition("Ready", "False", said),
                condition("ConfigurationValid", "True", "AsExpected"),
                condition("WorkloadReady", "False", said),
            ],
        );
        settle_p0(&mut h, p0, None);
        if let (Some(status), Some(i)) = (job_status, last(&mut h)) {
            let job = pgtoolbox_operator::testing::reconcile::pgadmin::upgrade_backup_job_name(
                "p0",
                "docker.io/dpage/pgadmin4:9.11",
                None,
            );
            h.snapshots[i].jobs.push(Arc::new(json!({
                "metadata": {"name": job, "namespace": "team-a",
                    "creationTimestamp": "2030-01-01T00:00:05Z",
                    "labels": {"app.kubernetes.io/instance": "p0",
                        "app.kubernetes.io/component": "pgadmin-upgrade-backup"}},
                "status": status,
            })));
        }
        out.push(("converges-to-oracle", what, h));
    }

    // The operator patches the user's credential Secret.
    let mut h = real.clone();
    h.log.push(operator_write(
        end,
        "PATCH",
        "/api/v1/namespaces/team-a/secrets/store-s3?fieldManager=pgtoolbox-operator",
        json!({"metadata": {"name": "store-s3", "labels": {}}}),
        json!({"metadata": {"name": "store-s3", "labels": {}}}),
    ));
    out.push((
        "writes-only-what-it-controls",
        "the user's Secret patched",
        h,
    ));

    // The operator creates a Deployment no object of its kinds controls.
    let mut h = real.clone();
    h.log.push(operator_write(
        end,
        "POST",
        "/apis/apps/v1/namespaces/team-a/deployments",
        Value::Null,
        json!({"metadata": {"name": "k0-console",
            "labels": {"app.kubernetes.io/managed-by": "pgtoolbox-operator"}}}),
    ));
    out.push((
        "writes-only-what-it-controls",
        "a child created without its controller ownerReference",
        h,
    ));

    // A Secret value in a log line.
    let mut h = real.clone();
    if let Some(secret) = h.secret_values.first().cloned() {
        h.log_lines.push(format!(
            "DEBUG pgtoolbox_operator: read secret value={secret}"
        ));
    }
    out.push(("no-secret-in-logs", "a Secret value logged", h));

    // A user's credential in a cache (an ObjectStore read with its Secret's data inlined), and
    // in the store of the operator's own Secrets; the operator's own key kept whole in that
    // store (as its serving keys were before the store kept them only as judged).
    let credential = crate::workloads::credential(crate::mutations::WORKLOAD_BASE, 1);
    let own_key = real.own_secret_values.first().cloned().unwrap_or_default();
    for (what, entry) in [
        (
            "a Secret value in a cache",
            json!({"read": {"objectStores": [{"data": {"ACCESS_SECRET_KEY": credential}}]}}),
        ),
        (
            "a user's Secret value in the store of the operator's own Secrets",
            json!({"stores": {"ownedSecrets": [{"stringData": credential}]}}),
        ),
        (
            "the operator's own key in the store of its own Secrets",
            json!({"stores": {"ownedSecrets": [{"data": {"tls.key": own_key}}]}}),
        ),
    ] {
        let mut h = real.clone();
        h.cache_dumps.push(entry.to_string());
        out.push(("no-secret-in-caches", what, h));
    }
    // A user's credential in a kind supervisor's copy of an object (say, pasted into an
    // annotation of an agent).
    let mut h = real.clone();
    h.supervisor_copies
        .push(json!({"metadata": {"annotations": {"note": credential}}}).to_string());
    out.push((
        "no-secret-in-caches",
        "a Secret value in a kind supervisor's copy of an object",
        h,
    ));

    // A timer kept for a deleted agent.
    let mut h = real.clone();
    h.held
        .push(("EvidenceAgent".into(), "armed timer", "team-a/gone".into()));
    out.push((
        "nothing-outlives-its-object",
        "a timer of a deleted object",
        h,
    ));
    out
}

/// Runs `seed` as a mutation base; false (and says why) when it fails on its own.
fn base(seed: u64, crds: &str) -> (History, bool) {
    let (real, found) = crate::run_seed(seed, crate::world::Options::default().steps, crds);
    if !found.is_empty() {
        eprintln!(
            "mutation base seed {seed} fails on its own: {:?}",
            found.first()
        );
    }
    let ok = found.is_empty();
    (real, ok)
}

/// Seeds of the real histories the mutants are made from: a PgAccessRequest schedule, a
/// workload schedule, and a PgAccessRequest schedule with two replicas.
const ACCESS_BASE: u64 = 7;
pub const WORKLOAD_BASE: u64 = crate::WORKLOAD_SEEDS + 8;
/// A two-replica schedule in which the Lease changes hands.
const LEADER_BASE: u64 = 3;

/// True when the real histories pass and every mutant is refused by its own invariant.
pub fn all_detected(crds: &str) -> bool {
    let (real, mut ok) = base(ACCESS_BASE, crds);
    let (workload_real, workload_ok) = base(WORKLOAD_BASE, crds);
    ok &= workload_ok;
    // The real history passes no-secret-in-caches with a serving certificate Secret cached:
    // the store of the operator's own Secrets was looked at, not empty.
    let serving_cached = workload_real.cache_dumps.iter().any(|dump| {
        serde_json::from_str::<Value>(dump)
            .ok()
            .and_then(|d| d.pointer("/stores/ownedSecrets").cloned())
            .and_then(|s| s.as_array().cloned())
            .is_some_and(|secrets| secrets.iter().any(|s| s["data"]["tls.key"].is_string()))
    });
    if !serving_cached {
        eprintln!("mutation base seed {WORKLOAD_BASE} never cached a serving certificate Secret");
        ok = false;
    }
    if workload_real.secret_values.is_empty()
        || workload_real.own_secret_values.is_empty()
        || workload_real.log_lines.is_empty()
        || workload_real.held.is_empty()
        || workload_real.cache_dumps.is_empty()
        || workload_real.supervisor_copies.is_empty()
        || !workload_real
            .secret_values
            .contains(&crate::workloads::credential(WORKLOAD_BASE, 1))
    {
        eprintln!(
            "mutation base seed {WORKLOAD_BASE} has no Secret value, none of the operator's own, no log line, no census, no cache dump or no supervisor copy"
        );
        ok = false;
    }
    let (leader_real, leader_ok) = base(LEADER_BASE, crds);
    ok &= leader_ok;
    let old_leader = old_leader_writes(&leader_real);
    if old_leader.is_none() {
        eprintln!("mutation base seed {LEADER_BASE} has no change of leader");
        ok = false;
    }
    let all: Vec<_> = mutants(&real)
        .into_iter()
        .chain(workload_mutants(&workload_real))
        .chain(old_leader.map(|h| {
            (
                "at-most-one-writer",
                "an old leader's write after its lease ran out",
                h,
            )
        }))
        .collect();
    let count = all.len();
    for (invariant, what, h) in all {
        let found: Vec<Violation> = invariants::check(&h);
        if !found.iter().any(|v| v.invariant == invariant) {
            eprintln!("MUTANT SURVIVED: {what} was not refused by {invariant}");
            ok = false;
        }
    }
    if ok {
        println!("dst: every invariant refuses its mutant ({count} mutants)");
    }
    ok
}
