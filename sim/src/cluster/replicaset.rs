//! The ReplicaSet controller: keeps `spec.replicas` Pods of the template (owned by the
//! ReplicaSet), records `SuccessfulCreate` / `SuccessfulDelete` / `FailedCreate` Events, and
//! writes status (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas,
//! observedGeneration, and `ReplicaFailure` `FailedCreate` while a Pod create is refused).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::util::{self, controller_ref, int_at, is_deleting, is_ready, is_terminal, str_at};
use super::{Component, Ctx, EventKind, Kind, Next, PODS, REPLICASETS, Tx};
use crate::apiserver::error::ApiError;
use crate::store::objects::ObjKey;

const NAME: &str = "replicaset-controller";
/// After a refused create, try again this much later (the real controller's rate limiter).
const RETRY: Duration = Duration::from_secs(1);
/// The controller creates at most this many Pods per sync.
const BURST: i64 = 500;

pub struct ReplicaSets;

/// Live Pods owned by `owner` (by uid), not finished and not being deleted.
pub fn owned_pods(tx: &Tx<'_>, owner: &Value, include_finished: bool) -> Vec<Arc<Value>> {
    let uid = str_at(owner, "/metadata/uid").unwrap_or("");
    let mut pods: Vec<Arc<Value>> = tx
        .dependents(uid, PODS)
        .into_iter()
        .filter(|p| include_finished || (!is_terminal(p) && !is_deleting(p)))
        .collect();
    pods.sort_by_key(|a| super::key_of(a));
    pods
}

/// Ready for at least `minReadySeconds`.
pub fn is_available(ctx: &Ctx, pod: &Value, min_ready: i64) -> bool {
    if !is_ready(pod) {
        return false;
    }
    if min_ready <= 0 {
        return true;
    }
    let since = util::condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .unwrap_or("");
    ctx.clock.since(since) >= Duration::from_secs(min_ready as u64)
}

/// A Pod of the template, owned by `owner`.
pub fn pod_from_template(owner: &Value, template: &Value, api_version: &str, kind: &str) -> Value {
    let name = str_at(owner, "/metadata/name").unwrap_or("");
    let mut meta = template.get("metadata").cloned().unwrap_or(json!({}));
    if !meta.is_object() {
        meta = json!({});
    }
    meta["generateName"] = json!(format!("{name}-"));
    meta["ownerReferences"] = json!([controller_ref(owner, api_version, kind)]);
    if let Some(m) = meta.as_object_mut() {
        m.remove("name");
        m.remove("namespace");
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    })
}

/// Which surplus Pods go first: unscheduled, then not running, not ready, then the newest.
fn deletion_rank(pod: &Value) -> (u8, u8, u8, std::cmp::Reverse<String>) {
    let scheduled = u8::from(str_at(pod, "/spec/nodeName").is_some());
    let running = u8::from(util::phase(pod) == "Running");
    let ready = u8::from(is_ready(pod));
    let created = str_at(pod, "/metadata/creationTimestamp")
        .unwrap_or("")
        .to_string();
    (scheduled, running, ready, std::cmp::Reverse(created))
}

impl Component for ReplicaSets {
    fn name(&self) -> &'static str {
        NAME
    }

    fn primary(&self) -> Kind {
        REPLICASETS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![PODS]
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(NAME);
        let Some(rs) = tx.get_key(REPLICASETS, key) else {
            return Ok(Next::Done);
        };
        if is_deleting(&rs) {
            return Ok(Next::Done);
        }
        let want = int_at(&rs, "/spec/replicas").unwrap_or(1);
        let min_ready = int_at(&rs, "/spec/minReadySeconds").unwrap_or(0);
        let mut pods = owned_pods(&tx, &rs, false);
        let mut failure: Option<String> = None;
        let diff = pods.len() as i64 - want;
        if diff < 0 {
            let template = rs.pointer("/spec/template").cloned().unwrap_or(json!({}));
            for _ in 0..(-diff).min(BURST) {
                let body = pod_from_template(&rs, &template, "apps/v1", "ReplicaSet");
                match tx.create(PODS, &key.0, body) {
                    Ok(pod) => {
                        let name = str_at(&pod, "/metadata/name").unwrap_or("").to_string();
                        tx.event(
                            &rs,
                            EventKind::Normal,
                            "SuccessfulCreate",
                            &format!("Created pod: {name}"),
                            None,
                        )?;
                        pods.push(pod);
                    }
                    Err(e) => {
                        tx.event(
                            &rs,
                            EventKind::Warning,
                            "FailedCreate",
                            &format!("Error creating: {}", e.message),
                            None,
                        )?;
                        failure = Some(e.message);
                        break;
                    }
                }
            }
        } else if diff > 0 {
            let mut ranked = pods.clone();
            ranked.sort_by_key(|p| deletion_rank(p));
            for victim in ranked.into_iter().take(diff as usize) {
                let (ns, name) = super::key_of(&victim);
                if tx.delete(PODS, &ns, &name).is_ok() {
                    tx.event(
                        &rs,
                        EventKind::Normal,
                        "SuccessfulDelete",
                        &format!("Deleted pod: {name}"),
                        None,
                    )?;
                }
                pods.retain(|p| super::key_of(p) != (ns.clone(), name.clone()));
            }
        }
        let selector = rs.pointer("/spec/selector");
        let labelled = pods
            .iter()
            .filter(|p| util::selector_matches(selector, &util::labels(p)))
            .count() as i64;
        let ready = pods.iter().filter(|p| is_ready(p)).count() as i64;
        let available = pods
            .iter()
            .filter(|p| is_available(ctx, p, min_ready))
            .count() as i64;
        let mut next = (*rs).clone();
        let mut status = next.get("status").cloned().unwrap_or(json!({}));
        if !status.is_object() {
            status = json!({});
        }
        status["replicas"] = json!(pods.len());
        util::put_count(&mut status, "fullyLabeledReplicas", labelled);
        util::put_count(&mut status, "readyReplicas", ready);
        util::put_count(&mut status, "availableReplicas", available);
        status["observedGeneration"] = json!(int_at(&rs, "/metadata/generation").unwrap_or(1));
        let now = ctx.clock.rfc3339();
        match &failure {
            Some(message) => util::set_condition(
                &mut status,
                "ReplicaFailure",
                "True",
                "FailedCreate",
                message,
                &now,
                &[],
            ),
            None => util::remove_condition(&mut status, "ReplicaFailure"),
        }
        if status
            .get("conditions")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
            && let Some(m) = status.as_object_mut()
        {
            m.remove("conditions");
        }
        next["status"] = status;
        tx.update_status(REPLICASETS, next)?;
        if failure.is_some() {
            return Ok(Next::After(RETRY));
        }
        // Pods ready but not yet available for minReadySeconds: look again when they will be.
        if ready > available {
            return Ok(Next::After(Duration::from_secs(min_ready.max(1) as u64)));
        }
        Ok(Next::Done)
    }
}
