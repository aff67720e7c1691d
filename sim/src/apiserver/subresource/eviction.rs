//! `pods/eviction` (`kubectl drain`): deletes a Pod unless the one PodDisruptionBudget selecting
//! it forbids the disruption, as the API server's eviction handler decides it from the budget's
//! status. No disruption controller runs in the sim, so a budget nobody has written a status
//! for is "still being processed" and refuses every eviction of its Pods, as on a cluster whose
//! controller has not caught up.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::Call;
use super::scale::selector_string;
use crate::apiserver::error::{ApiError, Cause, Details};
use crate::apiserver::ops::{self, DeleteOpts, Subresource, meta_str, res_key};
use crate::store::objects::Locked;
use crate::store::selector::LabelSelector;

const REFUSED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

fn too_many_requests(cause: String) -> ApiError {
    let mut e = ApiError::new(429, "TooManyRequests", REFUSED);
    e.details = Some(Box::new(Details {
        causes: vec![Cause {
            reason: "DisruptionBudget".into(),
            message: cause,
            field: String::new(),
        }],
        ..Default::default()
    }));
    e
}

fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The budgets of the Pod's namespace whose selector matches its labels; an empty selector
/// matches nothing here.
fn budgets_of(l: &Locked<'_>, pod: &Value, namespace: &str) -> Vec<Value> {
    let labels = labels_of(pod);
    if labels.is_empty() {
        return Vec::new();
    }
    let res = ("policy".to_string(), "poddisruptionbudgets".to_string());
    l.list(&res, Some(namespace))
        .into_iter()
        .filter(|pdb| {
            let text = pdb
                .pointer("/spec/selector")
                .map(selector_string)
                .unwrap_or_default();
            LabelSelector::parse(&text).is_ok_and(|sel| !sel.is_empty() && sel.matches(&labels))
        })
        .map(|pdb| pdb.as_ref().clone())
        .collect()
}

fn int_at(obj: &Value, path: &str) -> i64 {
    obj.pointer(path).and_then(Value::as_i64).unwrap_or(0)
}

/// Check the budget allows one more disruption and record it in its status.
fn check_and_decrement(
    call: &Call<'_>,
    l: &mut Locked<'_>,
    mut pdb: Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    let name = meta_str(&pdb, "name").unwrap_or("").to_string();
    if int_at(&pdb, "/status/observedGeneration") < int_at(&pdb, "/metadata/generation") {
        return Err(too_many_requests(format!(
            "The disruption budget {name} is still being processed by the server."
        )));
    }
    let allowed = int_at(&pdb, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden(format!(
            "poddisruptionbudgets.policy \"{name}\" is forbidden: pdb disruptions allowed is negative"
        )));
    }
    if allowed == 0 {
        return Err(too_many_requests(format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            int_at(&pdb, "/status/desiredHealthy"),
            int_at(&pdb, "/status/currentHealthy")
        )));
    }
    if dry_run {
        return Ok(());
    }
    pdb["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if !pdb["status"]["disruptedPods"].is_object() {
        pdb["status"]["disruptedPods"] = json!({});
    }
    pdb["status"]["disruptedPods"][call.name] = json!(ops::now_rfc3339());
    let info = call
        .server
        .registry()
        .lookup("policy", "v1", "poddisruptionbudgets")
        .ok_or_else(|| ApiError::internal("poddisruptionbudgets are not served"))?;
    ops::update(
        call.server,
        l,
        &info,
        call.namespace,
        &name,
        pdb,
        Subresource::Status,
    )?;
    Ok(())
}

pub fn create(
    call: &Call<'_>,
    l: &mut Locked<'_>,
    eviction: &Value,
) -> Result<(StatusCode, Value), ApiError> {
    let key = (call.namespace.to_string(), call.name.to_string());
    let pod = l
        .get(&res_key(call.info), &key)
        .ok_or_else(|| ApiError::not_found("", "pods", call.name))?;
    let opts = eviction
        .get("deleteOptions")
        .map(DeleteOpts::from_body)
        .unwrap_or_default();
    let success =
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"});
    let delete = |l: &mut Locked<'_>| -> Result<(), ApiError> {
        if !opts.dry_run {
            ops::delete(call.server, l, call.info, call.namespace, call.name, &opts)?;
        }
        Ok(())
    };
    // A terminal Pod has already caused its disruption: no budget is consulted.
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        delete(l)?;
        return Ok((StatusCode::CREATED, success));
    }
    let budgets = budgets_of(l, &pod, call.namespace);
    match budgets.as_slice() {
        [] => {}
        [pdb] => check_and_decrement(call, l, pdb.clone(), opts.dry_run)?,
        _ => {
            let message = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";
            return Ok((
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                       "status": "Failure", "message": message, "code": 500}),
            ));
        }
    }
    delete(l)?;
    Ok((StatusCode::CREATED, success))
}
