//! The Deployment controller: one ReplicaSet per pod template (`<name>-<pod-template-hash>`),
//! rolled out with RollingUpdate (maxSurge / maxUnavailable) or Recreate, revisions in
//! `deployment.kubernetes.io/revision`, `ScalingReplicaSet` Events, and the status a client
//! waits on: observedGeneration, replica counts, `Available` (MinimumReplicasAvailable /
//! MinimumReplicasUnavailable), `Progressing` (NewReplicaSetCreated, FoundNewReplicaSet,
//! ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded after
//! `progressDeadlineSeconds`) and `ReplicaFailure` copied from the new ReplicaSet.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::util::{self, controller_ref, int_at, is_deleting, str_at};
use super::{Component, Ctx, DEPLOYMENTS, EventKind, Kind, Next, REPLICASETS, Tx, WorkloadFault};
use crate::apiserver::error::ApiError;
use crate::store::objects::ObjKey;

const NAME: &str = "deployment-controller";
const HASH_LABEL: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX: &str = "deployment.kubernetes.io/max-replicas";

pub struct Deployments;

/// `pod-template-hash` of a template: FNV-32a over its canonical JSON and the collision count,
/// printed as decimal and encoded with apimachinery's safe alphabet (as `ComputeHash` does).
pub fn template_hash(template: &Value, collision: Option<i64>) -> String {
    let mut data = serde_json::to_vec(template).unwrap_or_default();
    if let Some(c) = collision {
        data.extend_from_slice(&(c as u32).to_le_bytes());
    }
    util::safe_encode(&util::fnv32(&data).to_string())
}

/// `25%` of `total` rounded up (surge) or down (unavailable), or a plain number.
fn resolve(value: Option<&Value>, total: i64, round_up: bool) -> i64 {
    match value {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(pct) if round_up => (pct * total + 99) / 100,
            Some(pct) => pct * total / 100,
            None => s.parse().unwrap_or(0),
        },
        _ => {
            if round_up {
                (25 * total + 99) / 100
            } else {
                25 * total / 100
            }
        }
    }
}

/// `(maxSurge, maxUnavailable)` as `ResolveFenceposts` gives them (both 0 means 1 unavailable).
fn fenceposts(d: &Value, replicas: i64) -> (i64, i64) {
    let ru = d.pointer("/spec/strategy/rollingUpdate");
    let surge = resolve(ru.and_then(|r| r.get("maxSurge")), replicas, true);
    let unavailable = resolve(ru.and_then(|r| r.get("maxUnavailable")), replicas, false);
    if surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable)
}

fn strip_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(l) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        l.remove(HASH_LABEL);
        if l.is_empty()
            && let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut)
        {
            m.remove("labels");
        }
    }
    t
}

fn spec_replicas(rs: &Value) -> i64 {
    int_at(rs, "/spec/replicas").unwrap_or(0)
}

fn status_count(obj: &Value, field: &str) -> i64 {
    int_at(obj, &format!("/status/{field}")).unwrap_or(0)
}

fn revision(rs: &Value) -> i64 {
    str_at(
        rs,
        &format!("/metadata/annotations/{}", REVISION.replace('/', "~1")),
    )
    .and_then(|r| r.parse().ok())
    .unwrap_or(0)
}

fn name_of(obj: &Value) -> String {
    str_at(obj, "/metadata/name").unwrap_or("").to_string()
}

struct Rollout {
    d: Arc<Value>,
    replicas: i64,
    surge: i64,
}

impl Rollout {
    /// Set a ReplicaSet's replicas (and the annotations the controller keeps on it).
    fn scale(&self, tx: &mut Tx<'_>, rs: &Value, to: i64) -> Result<Arc<Value>, ApiError> {
        let from = spec_replicas(rs);
        let mut next = rs.clone();
        next["spec"]["replicas"] = json!(to);
        let ann = &mut next["metadata"]["annotations"];
        if !ann.is_object() {
            *ann = json!({});
        }
        ann[DESIRED] = json!(self.replicas.to_string());
        ann[MAX] = json!((self.replicas + self.surge).to_string());
        let stored = tx.update(REPLICASETS, next)?;
        if from != to {
            let (verb, name) = (if to > from { "up" } else { "down" }, name_of(rs));
            tx.event(
                &self.d,
                EventKind::Normal,
                "ScalingReplicaSet",
                &format!("Scaled {verb} replica set {name} from {from} to {to}"),
                None,
            )?;
        }
        Ok(stored)
    }

    fn create_rs(
        &self,
        tx: &mut Tx<'_>,
        hash: &str,
        revision: i64,
        replicas: i64,
    ) -> Result<Arc<Value>, ApiError> {
        let d = &self.d;
        let name = format!("{}-{hash}", name_of(d));
        let mut template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
        if !template["metadata"].is_object() {
            template["metadata"] = json!({});
        }
        if !template["metadata"]["labels"].is_object() {
            template["metadata"]["labels"] = json!({});
        }
        template["metadata"]["labels"][HASH_LABEL] = json!(hash);
        let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
        if !selector["matchLabels"].is_object() {
            selector["matchLabels"] = json!({});
        }
        selector["matchLabels"][HASH_LABEL] = json!(hash);
        let mut spec = json!({"replicas": replicas, "selector": selector, "template": template});
        if let Some(m) = d.pointer("/spec/minReadySeconds") {
            spec["minReadySeconds"] = m.clone();
        }
        let body = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "labels": template["metadata"]["labels"].clone(),
                "annotations": {
                    REVISION: revision.to_string(),
                    DESIRED: self.replicas.to_string(),
                    MAX: (self.replicas + self.surge).to_string(),
                },
                "ownerReferences": [controller_ref(d, "apps/v1", "Deployment")],
            },
            "spec": spec,
        });
        let ns = str_at(d, "/metadata/namespace").unwrap_or("").to_string();
        let rs = tx.create(REPLICASETS, &ns, body)?;
        if replicas > 0 {
            tx.event(
                d,
                EventKind::Normal,
                "ScalingReplicaSet",
                &format!("Scaled up replica set {name} from 0 to {replicas}"),
                None,
            )?;
        }
        Ok(rs)
    }
}

impl Component for Deployments {
    fn name(&self) -> &'static str {
        NAME
    }

    fn primary(&self) -> Kind {
        DEPLOYMENTS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![REPLICASETS]
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(NAME);
        let Some(d) = tx.get_key(DEPLOYMENTS, key) else {
            return Ok(Next::Done);
        };
        if is_deleting(&d) {
            return Ok(Next::Done);
        }
        let replicas = int_at(&d, "/spec/replicas").unwrap_or(1);
        let recreate = str_at(&d, "/spec/strategy/type") == Some("Recreate");
        let (surge, unavailable) = if recreate {
            (0, 0)
        } else {
            fenceposts(&d, replicas)
        };
        let paused = d.pointer("/spec/paused") == Some(&json!(true));
        let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let uid = str_at(&d, "/metadata/uid").unwrap_or("").to_string();
        let mut all: Vec<Arc<Value>> = tx
            .dependents(&uid, REPLICASETS)
            .into_iter()
            .filter(|rs| super::controller_of(rs, DEPLOYMENTS).is_some())
            .collect();
        all.sort_by_key(|rs| {
            str_at(rs, "/metadata/creationTimestamp")
                .unwrap_or("")
                .to_string()
        });
        let position = all.iter().position(|rs| {
            strip_hash(rs.pointer("/spec/template").unwrap_or(&Value::Null)) == template
        });
        let mut new_rs = position.map(|i| all.remove(i));
        let mut olds = all;
        let max_rev = olds.iter().map(|r| revision(r)).max().unwrap_or(0);
        let ro = Rollout {
            d: d.clone(),
            replicas,
            surge,
        };
        let now = ctx.clock.rfc3339();
        let mut status = d.get("status").cloned().unwrap_or(json!({}));
        if !status.is_object() {
            status = json!({});
        }
        let previous = status.clone();
        let mut created: Option<String> = None;
        let collision = int_at(&d, "/status/collisionCount");

        if !paused {
            let old_total: i64 = olds.iter().map(|r| spec_replicas(r)).sum();
            let old_pods_left = olds.iter().any(|r| {
                !super::replicaset::owned_pods(&tx, r, false).is_empty()
                    || status_count(r, "replicas") > 0
            });
            if new_rs.is_none() && (!recreate || (old_total == 0 && !old_pods_left)) {
                let hash = template_hash(&template, collision);
                let start = if recreate || old_total == 0 {
                    replicas
                } else {
                    (replicas + surge - old_total).clamp(0, replicas)
                };
                match ro.create_rs(&mut tx, &hash, max_rev + 1, start) {
                    Ok(rs) => {
                        created = Some(name_of(&rs));
                        new_rs = Some(rs);
                    }
                    Err(e) if e.code == 409 => {
                        // A ReplicaSet of that name with another template: hash again.
                        status["collisionCount"] = json!(collision.unwrap_or(0) + 1);
                        let mut next = (*d).clone();
                        next["status"] = status;
                        tx.update_status(DEPLOYMENTS, next)?;
                        return Ok(Next::After(Duration::from_millis(10)));
                    }
                    Err(e) => return Err(e),
                }
            } else if let Some(rs) = new_rs.clone()
                && revision(&rs) <= max_rev
            {
                // A template seen before is current again (rollback): it becomes the newest revision.
                let mut next = (*rs).clone();
                next["metadata"]["annotations"][REVISION] = json!((max_rev + 1).to_string());
                new_rs = Some(tx.update(REPLICASETS, next)?);
            }
            if recreate {
                for old in olds.iter_mut() {
                    if spec_replicas(old) > 0 {
                        *old = ro.scale(&mut tx, old, 0)?;
                    }
                }
                if let Some(rs) = new_rs.clone()
                    && !old_pods_left
                    && spec_replicas(&rs) != replicas
                {
                    new_rs = Some(ro.scale(&mut tx, &rs, replicas)?);
                }
            } else if let Some(rs) = new_rs.clone() {
                // Scale the new ReplicaSet up within maxSurge.
                let total: i64 = old_total + spec_replicas(&rs);
                let current = spec_replicas(&rs);
                let target = if current > replicas {
                    replicas
                } else {
                    current + (replicas + surge - total).min(replicas - current).max(0)
                };
                let rs = if target != current {
                    ro.scale(&mut tx, &rs, target)?
                } else {
                    rs
                };
                // Scale old ones down within maxUnavailable: unhealthy replicas first.
                let min_available = replicas - unavailable;
                let new_unavailable = spec_replicas(&rs) - status_count(&rs, "availableReplicas");
                let total = spec_replicas(&rs) + olds.iter().map(|r| spec_replicas(r)).sum::<i64>();
                let mut budget = (total - min_available - new_unavailable).max(0);
                for old in olds.iter_mut() {
                    let unhealthy = spec_replicas(old) - status_count(old, "availableReplicas");
                    let cut = unhealthy.min(budget).max(0);
                    if cut > 0 {
                        *old = ro.scale(&mut tx, old, spec_replicas(old) - cut)?;
                        budget -= cut;
                    }
                }
                let available: i64 = status_count(&rs, "availableReplicas")
                    + olds
                        .iter()
                        .map(|r| status_count(r, "availableReplicas"))
                        .sum::<i64>();
                let mut down = (available - min_available).max(0).min(budget);
                for old in olds.iter_mut() {
                    let cut = spec_replicas(old).min(down);
                    if cut > 0 {
                        *old = ro.scale(&mut tx, old, spec_replicas(old) - cut)?;
                        down -= cut;
                    }
                }
                new_rs = Some(rs);
            }
            // Old revisions beyond revisionHistoryLimit go once they are empty.
            let limit = int_at(&d, "/spec/revisionHistoryLimit")
                .unwrap_or(10)
                .max(0) as usize;
            let empty: Vec<Arc<Value>> = olds
                .iter()
                .filter(|r| spec_replicas(r) == 0 && status_count(r, "replicas") == 0)
                .cloned()
                .collect();
            if empty.len() > limit {
                for r in empty.iter().take(empty.len() - limit) {
                    let (ns, name) = super::key_of(r);
                    tx.delete(REPLICASETS, &ns, &name)?;
                    olds.retain(|o| name_of(o) != name);
                }
            }
        }

        // The Deployment carries the revision of its newest ReplicaSet.
        let d = match &new_rs {
            Some(rs)
                if str_at(
                    &d,
                    &format!("/metadata/annotations/{}", REVISION.replace('/', "~1")),
                ) != Some(&revision(rs).to_string()) =>
            {
                let mut next = (*d).clone();
                if !next["metadata"]["annotations"].is_object() {
                    next["metadata"]["annotations"] = json!({});
                }
                next["metadata"]["annotations"][REVISION] = json!(revision(rs).to_string());
                tx.update(DEPLOYMENTS, next)?
            }
            _ => d,
        };

        // Status.
        let every: Vec<&Arc<Value>> = new_rs.iter().chain(olds.iter()).collect();
        let sum = |f: &str| every.iter().map(|r| status_count(r, f)).sum::<i64>();
        let total = sum("replicas");
        let updated = new_rs
            .as_ref()
            .map(|r| status_count(r, "replicas"))
            .unwrap_or(0);
        let ready = sum("readyReplicas");
        let available = sum("availableReplicas");
        let generation = int_at(&d, "/metadata/generation").unwrap_or(1);
        status["observedGeneration"] = json!(generation);
        util::put_count(&mut status, "replicas", total);
        util::put_count(&mut status, "updatedReplicas", updated);
        util::put_count(&mut status, "readyReplicas", ready);
        util::put_count(&mut status, "availableReplicas", available);
        util::put_count(
            &mut status,
            "unavailableReplicas",
            (replicas - available).max(0),
        );
        let times = |now: &str| [("lastUpdateTime", json!(now))];
        let min_needed = if recreate {
            replicas
        } else {
            replicas - unavailable.min(replicas)
        };
        if available >= min_needed {
            util::set_condition(
                &mut status,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                &now,
                &times(&now),
            );
        } else {
            util::set_condition(
                &mut status,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                &now,
                &times(&now),
            );
        }
        let rs_name = new_rs.as_ref().map(|r| name_of(r)).unwrap_or_default();
        let complete = updated == replicas && total == replicas && available == replicas;
        let stuck_fault = ctx.fault(WorkloadFault::ProgressDeadlineExceeded, &d);
        let deadline = int_at(&d, "/spec/progressDeadlineSeconds").unwrap_or(600);
        let before = |f: &str| previous.get(f).and_then(Value::as_i64).unwrap_or(0);
        let progressed = created.is_some()
            || updated > before("updatedReplicas")
            || ready > before("readyReplicas")
            || available > before("availableReplicas")
            || (total - updated) < before("replicas") - before("updatedReplicas");
        let mut next_wake = Next::Done;
        if let Some(name) = &created {
            util::set_condition(
                &mut status,
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                &format!("Created new replica set \"{name}\""),
                &now,
                &times(&now),
            );
        } else if complete && !stuck_fault {
            util::set_condition(
                &mut status,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
                &now,
                &times(&now),
            );
        } else if stuck_fault || timed_out(ctx, &status, deadline) {
            util::set_condition(
                &mut status,
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                &format!("ReplicaSet \"{rs_name}\" has timed out progressing."),
                &now,
                &times(&now),
            );
        } else if progressed || util::status_condition(&status, "Progressing").is_none() {
            let reason = if util::status_condition(&status, "Progressing").is_none() {
                "FoundNewReplicaSet"
            } else {
                "ReplicaSetUpdated"
            };
            let msg = if reason == "FoundNewReplicaSet" {
                format!("Found new replica set \"{rs_name}\"")
            } else {
                format!("ReplicaSet \"{rs_name}\" is progressing.")
            };
            force_condition(&mut status, "Progressing", "True", reason, &msg, &now);
        }
        let timed_out_already = util::status_condition(&status, "Progressing")
            .and_then(|c| c.get("reason"))
            .and_then(Value::as_str)
            == Some("ProgressDeadlineExceeded");
        // Wake when the deadline would pass; once exceeded, only a change wakes it again.
        if !complete && deadline > 0 && !stuck_fault && !timed_out_already {
            let since = util::status_condition(&status, "Progressing")
                .and_then(|c| c.get("lastUpdateTime"))
                .and_then(Value::as_str)
                .map(|t| ctx.clock.since(t))
                .unwrap_or_default();
            let limit = Duration::from_secs(deadline as u64);
            next_wake = Next::After(limit.saturating_sub(since) + Duration::from_millis(500));
        }
        match new_rs
            .as_ref()
            .and_then(|r| util::condition(r, "ReplicaFailure"))
        {
            Some(f) => {
                let msg = f.get("message").and_then(Value::as_str).unwrap_or("");
                util::set_condition(
                    &mut status,
                    "ReplicaFailure",
                    "True",
                    "FailedCreate",
                    msg,
                    &now,
                    &times(&now),
                );
            }
            None => util::remove_condition(&mut status, "ReplicaFailure"),
        }
        let mut next = (*d).clone();
        next["status"] = status;
        tx.update_status(DEPLOYMENTS, next)?;
        Ok(next_wake)
    }
}

/// Progressing stopped moving for longer than the deadline.
fn timed_out(ctx: &Ctx, status: &Value, deadline: i64) -> bool {
    let Some(c) = util::status_condition(status, "Progressing") else {
        return false;
    };
    if c.get("reason").and_then(Value::as_str) == Some("ProgressDeadlineExceeded") {
        return true;
    }
    if c.get("reason").and_then(Value::as_str) == Some("NewReplicaSetAvailable") {
        return false;
    }
    let from = c
        .get("lastUpdateTime")
        .and_then(Value::as_str)
        .unwrap_or("");
    ctx.clock.since(from) > Duration::from_secs(deadline.max(0) as u64)
}

/// Progress always moves `lastUpdateTime` (the deadline counts from the last progress).
fn force_condition(
    status: &mut Value,
    kind: &str,
    state: &str,
    reason: &str,
    msg: &str,
    now: &str,
) {
    let keep = util::status_condition(status, kind)
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(state))
        .and_then(|c| c.get("lastTransitionTime").cloned());
    util::remove_condition(status, kind);
    util::set_condition(
        status,
        kind,
        state,
        reason,
        msg,
        now,
        &[("lastUpdateTime", json!(now))],
    );
    if let Some(t) = keep
        && let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut)
        && let Some(c) = list.last_mut()
    {
        c["lastTransitionTime"] = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenceposts_round_like_the_controller() {
        let d = json!({"spec": {}});
        assert_eq!(fenceposts(&d, 3), (1, 0));
        assert_eq!(fenceposts(&d, 10), (3, 2));
        assert_eq!(fenceposts(&d, 1), (1, 0));
        let zero = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}}});
        assert_eq!(fenceposts(&zero, 4), (0, 1));
    }

    #[test]
    fn template_hashes_are_stable_safe_and_collision_aware() {
        let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}});
        let h = template_hash(&t, None);
        assert_eq!(h, template_hash(&t, None));
        assert_ne!(h, template_hash(&t, Some(1)));
        assert!(h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
        let mut labelled = t.clone();
        labelled["metadata"]["labels"][HASH_LABEL] = json!(h);
        assert_eq!(strip_hash(&labelled), t);
    }
}
