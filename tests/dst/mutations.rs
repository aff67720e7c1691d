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
        who: Who::Operator(1),
        method: "DELETE".into(),
        uri: "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings/team-admins".into(),
        status: 200,
        before: Some(Arc::new(
            json!({"metadata": {"name": "team-admins", "labels": {}}}),
        )),
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
    h.log.push(Entry {
        at_ms: end + 1,
        who: Who::Operator(1),
        method: "PATCH".into(),
        uri: "/apis/pgtoolbox.fyannk.dev/v1alpha1/namespaces/team-a/pgaccessrequests/r0/status"
            .into(),
        status: 200,
        before: None,
    });
    out.push(("quiet-end", "a status write in the quiet end", h));
    out
}

/// True when the real history passes and every mutant is refused by its own invariant.
pub fn all_detected(crds: &str) -> bool {
    let seed = 7;
    let (real, found) = crate::run_seed(seed, crate::world::Options::default().steps, crds);
    let mut ok = true;
    if !found.is_empty() {
        eprintln!(
            "mutation base seed {seed} fails on its own: {:?}",
            found.first()
        );
        ok = false;
    }
    for (invariant, what, h) in mutants(&real) {
        let found: Vec<Violation> = invariants::check(&h);
        if !found.iter().any(|v| v.invariant == invariant) {
            eprintln!("MUTANT SURVIVED: {what} was not refused by {invariant}");
            ok = false;
        }
    }
    if ok {
        println!("dst: every invariant refuses its mutant (5 mutants)");
    }
    ok
}
