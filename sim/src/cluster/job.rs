//! The Job controller: runs `parallelism` Pods at a time until `completions` succeeded, then
//! `SuccessCriteriaMet` and `Complete` (reason CompletionsReached, `completionTime`, a
//! `Completed` Event); past `backoffLimit` failures, `FailureTarget` and `Failed` (reason
//! BackoffLimitExceeded, a `BackoffLimitExceeded` Event) and its running Pods are deleted.
//! Failed Pods are replaced after the controller's exponential back-off (10 s doubling).

use std::time::Duration;

use serde_json::{Value, json};

use super::replicaset::{owned_pods, pod_from_template};
use super::util::{self, condition_true, int_at, is_deleting, is_ready, str_at};
use super::{Component, Ctx, EventKind, JOBS, Kind, Next, PODS};
use crate::apiserver::error::ApiError;
use crate::store::objects::ObjKey;

const NAME: &str = "job-controller";
const BACKOFF: Duration = Duration::from_secs(10);
const BACKOFF_CAP: Duration = Duration::from_secs(360);
const COMPLETED: &str = "Reached expected number of succeeded pods";
const BACKOFF_EXCEEDED: &str = "Job has reached the specified backoff limit";

pub struct Jobs;

/// Failures the Job has seen: failed Pods, plus container restarts under `OnFailure`.
fn failures(pods: &[std::sync::Arc<Value>]) -> i64 {
    pods.iter()
        .map(|p| {
            let failed = i64::from(util::phase(p) == "Failed");
            let restarts: i64 = p
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                .sum();
            let on_failure = str_at(p, "/spec/restartPolicy") == Some("OnFailure");
            failed + if on_failure { restarts } else { 0 }
        })
        .sum()
}

/// When the most recent Pod failure happened, for the back-off.
fn last_failure(pods: &[std::sync::Arc<Value>]) -> Option<String> {
    pods.iter()
        .filter(|p| util::phase(p) == "Failed")
        .filter_map(|p| {
            p.pointer("/status/containerStatuses/0/state/terminated/finishedAt")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .max()
}

impl Component for Jobs {
    fn name(&self) -> &'static str {
        NAME
    }

    fn primary(&self) -> Kind {
        JOBS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![PODS]
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(NAME);
        let Some(job) = tx.get_key(JOBS, key) else {
            return Ok(Next::Done);
        };
        if is_deleting(&job) || condition_true(&job, "Complete") || condition_true(&job, "Failed") {
            return Ok(Next::Done);
        }
        if job.pointer("/spec/suspend") == Some(&json!(true)) {
            return Ok(Next::Done);
        }
        let all = owned_pods(&tx, &job, true);
        let active: Vec<_> = all
            .iter()
            .filter(|p| !util::is_terminal(p) && !is_deleting(p))
            .cloned()
            .collect();
        let succeeded = all.iter().filter(|p| util::phase(p) == "Succeeded").count() as i64;
        let failed = failures(&all);
        let completions = int_at(&job, "/spec/completions");
        let parallelism = int_at(&job, "/spec/parallelism").unwrap_or(1);
        let backoff_limit = int_at(&job, "/spec/backoffLimit").unwrap_or(6);
        let now = ctx.clock.rfc3339();
        let mut status = job.get("status").cloned().unwrap_or(json!({}));
        if !status.is_object() {
            status = json!({});
        }
        if status.get("startTime").is_none() {
            status["startTime"] = json!(now);
        }
        let probe = [("lastProbeTime", json!(now))];
        let mut wake = Next::Done;
        let mut active_now = active.len() as i64;
        let done = match completions {
            Some(c) => succeeded >= c,
            None => succeeded > 0 && active.is_empty(),
        };
        if failed > backoff_limit {
            for p in &active {
                let (ns, name) = super::key_of(p);
                tx.delete(PODS, &ns, &name)?;
            }
            active_now = 0;
            util::set_condition(
                &mut status,
                "FailureTarget",
                "True",
                "BackoffLimitExceeded",
                BACKOFF_EXCEEDED,
                &now,
                &probe,
            );
            util::set_condition(
                &mut status,
                "Failed",
                "True",
                "BackoffLimitExceeded",
                BACKOFF_EXCEEDED,
                &now,
                &probe,
            );
            tx.event(
                &job,
                EventKind::Warning,
                "BackoffLimitExceeded",
                BACKOFF_EXCEEDED,
                None,
            )?;
        } else if done {
            util::set_condition(
                &mut status,
                "SuccessCriteriaMet",
                "True",
                "CompletionsReached",
                COMPLETED,
                &now,
                &probe,
            );
            util::set_condition(
                &mut status,
                "Complete",
                "True",
                "CompletionsReached",
                COMPLETED,
                &now,
                &probe,
            );
            status["completionTime"] = json!(now);
            tx.event(&job, EventKind::Normal, "Completed", "Job completed", None)?;
        } else {
            let remaining = match completions {
                Some(c) => c - succeeded,
                None => i64::from(succeeded == 0) * parallelism,
            };
            let want = parallelism.min(remaining).max(0);
            if active_now < want {
                let delay = if failed > 0 {
                    let backoff = BACKOFF
                        .saturating_mul(1 << (failed - 1).clamp(0, 6))
                        .min(BACKOFF_CAP);
                    let since = last_failure(&all)
                        .map(|t| ctx.clock.since(&t))
                        .unwrap_or(backoff);
                    backoff.saturating_sub(since)
                } else {
                    Duration::ZERO
                };
                if delay > Duration::ZERO {
                    wake = Next::After(delay);
                } else {
                    let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
                    for _ in 0..(want - active_now) {
                        let mut body = pod_from_template(&job, &template, "batch/v1", "Job");
                        let job_name = key.1.clone();
                        let labels = &mut body["metadata"]["labels"];
                        if !labels.is_object() {
                            *labels = json!({});
                        }
                        if labels.get("batch.kubernetes.io/job-name").is_none() {
                            labels["batch.kubernetes.io/job-name"] = json!(job_name);
                            labels["job-name"] = json!(job_name);
                        }
                        match tx.create(PODS, &key.0, body) {
                            Ok(pod) => {
                                let name = str_at(&pod, "/metadata/name").unwrap_or("").to_string();
                                tx.event(
                                    &job,
                                    EventKind::Normal,
                                    "SuccessfulCreate",
                                    &format!("Created pod: {name}"),
                                    None,
                                )?;
                                active_now += 1;
                            }
                            Err(e) => {
                                tx.event(
                                    &job,
                                    EventKind::Warning,
                                    "FailedCreate",
                                    &format!("Error creating: {}", e.message),
                                    None,
                                )?;
                                wake = Next::After(Duration::from_secs(1));
                                break;
                            }
                        }
                    }
                }
            }
        }
        util::put_count(&mut status, "active", active_now);
        let ready = active.iter().filter(|p| is_ready(p)).count() as i64;
        status["ready"] = json!(if active_now == 0 { 0 } else { ready });
        util::put_count(&mut status, "succeeded", succeeded);
        util::put_count(&mut status, "failed", failed);
        status["uncountedTerminatedPods"] = json!({});
        let mut next = (*job).clone();
        next["status"] = status;
        tx.update_status(JOBS, next)?;
        Ok(wake)
    }
}
