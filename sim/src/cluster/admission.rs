//! What the API server itself does for the simulated cluster when an object is created or
//! deleted (its admission plugins and registry strategies), active only with controllers on:
//! - Services get a `clusterIP` from `10.96.0.0/12` (the service IP allocator);
//! - PersistentVolumeClaims without a class get the default StorageClass (DefaultStorageClass);
//! - Routes without a host get `<name>-<namespace>.<router domain>` (OpenShift's host allocator);
//! - Jobs get their generated selector and labels (`batch.kubernetes.io/controller-uid`, ...);
//! - ResourceQuota refuses what would exceed a quota of the namespace (403 `exceeded quota`);
//! - deleting a Pod that runs on a Node is graceful: `deletionTimestamp` now + grace, the kubelet
//!   removes it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rand::RngExt;
use serde_json::{Value, json};

use super::Ctx;
use super::quota;
use super::util::{is_terminal, str_at};
use crate::apiserver::error::ApiError;
use crate::apiserver::ops::{meta_str, now_rfc3339};
use crate::apiserver::server::ClusterAdmission;
use crate::store::objects::{EventType, Locked, ObjKey, ResKey};
use crate::store::resources::ResourceInfo;

/// Allocated Service IPs (never released: the /12 holds a million).
#[derive(Default)]
pub struct State {
    service_ips: Mutex<HashSet<String>>,
}

/// Registered on the server once the controllers run (`Cluster::setup`); without it the
/// server admits everything unchanged.
impl ClusterAdmission for Ctx {
    fn admit_create(
        &self,
        l: &Locked<'_>,
        info: &ResourceInfo,
        namespace: &str,
        body: &mut Value,
    ) -> Result<(), ApiError> {
        admit_create(self, l, info, namespace, body)
    }

    fn graceful_delete(
        &self,
        l: &mut Locked<'_>,
        info: &ResourceInfo,
        res: &ResKey,
        key: &ObjKey,
        old: &Arc<Value>,
        grace_period_seconds: Option<i64>,
    ) -> Option<Arc<Value>> {
        graceful_pod_delete(l, info, res, key, old, grace_period_seconds)
    }
}

/// Mutate and admit `body` (already named, with uid) before it is stored.
fn admit_create(
    ctx: &Ctx,
    l: &Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    body: &mut Value,
) -> Result<(), ApiError> {
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "services") => allocate_cluster_ip(ctx, body),
        ("", "persistentvolumeclaims") => default_storage_class(l, body),
        ("batch", "jobs") => job_selector(body),
        ("route.openshift.io", "routes") => super::net::router::allocate_host(namespace, body),
        _ => {}
    }
    if info.namespaced {
        quota::admit(l, info, namespace, body)?;
    }
    Ok(())
}

fn allocate_cluster_ip(ctx: &Ctx, body: &mut Value) {
    let spec = &mut body["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if kind == "ExternalName" {
        return;
    }
    let given = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .map(str::to_string);
    match given.as_deref() {
        Some("None") => {
            spec["clusterIPs"] = json!(["None"]);
        }
        Some(ip) if !ip.is_empty() => {
            spec["clusterIPs"] = json!([ip]);
            ctx.admission
                .service_ips
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(ip.to_string());
        }
        _ => {
            let mut used = ctx
                .admission
                .service_ips
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let ip = loop {
                // 10.96.0.0/12 without the network address and 10.96.0.1 (the kubernetes Service)
                // and 10.96.0.10 (cluster DNS).
                let n: u32 = ctx.rng_for("service-ip-allocator", |r| {
                    r.random_range(11..(1u32 << 20) - 1)
                });
                let ip = format!("10.{}.{}.{}", 96 + (n >> 16), (n >> 8) & 0xff, n & 0xff);
                if !used.contains(&ip) {
                    break ip;
                }
            };
            used.insert(ip.clone());
            spec["clusterIP"] = json!(ip);
            spec["clusterIPs"] = json!([ip]);
        }
    }
    if spec.get("ipFamilies").is_none() {
        spec["ipFamilies"] = json!(["IPv4"]);
    }
    if spec.get("ipFamilyPolicy").is_none() {
        spec["ipFamilyPolicy"] = json!("SingleStack");
    }
}

fn default_storage_class(l: &Locked<'_>, body: &mut Value) {
    if body.pointer("/spec/storageClassName").is_some() {
        return;
    }
    let classes = l.list(&("storage.k8s.io".into(), "storageclasses".into()), None);
    let default = classes.iter().find(|c| {
        str_at(
            c,
            "/metadata/annotations/storageclass.kubernetes.io~1is-default-class",
        ) == Some("true")
    });
    if let Some(sc) = default.and_then(|c| meta_str(c, "name")) {
        body["spec"]["storageClassName"] = json!(sc);
    }
}

/// The selector and labels the Job strategy generates unless `manualSelector` is set.
fn job_selector(body: &mut Value) {
    if body.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let uid = meta_str(body, "uid").unwrap_or("").to_string();
    let name = meta_str(body, "name").unwrap_or("").to_string();
    if body.pointer("/spec/selector").is_none() {
        body["spec"]["selector"] =
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    }
    let tmpl = &mut body["spec"]["template"];
    if !tmpl.is_object() {
        *tmpl = json!({});
    }
    if !tmpl["metadata"].is_object() {
        tmpl["metadata"] = json!({});
    }
    if !tmpl["metadata"]["labels"].is_object() {
        tmpl["metadata"]["labels"] = json!({});
    }
    let labels = &mut tmpl["metadata"]["labels"];
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ] {
        if labels.get(k).is_none() {
            labels[k] = json!(v);
        }
    }
}

/// Graceful deletion of a Pod on a Node: mark it (deletionTimestamp = now + grace) and let the
/// kubelet remove it. `None` when the ordinary deletion applies (not running anywhere, already
/// terminal, grace 0; with controllers off the server never asks). A repeated delete of a
/// terminating Pod changes nothing unless it asks for grace 0.
fn graceful_pod_delete(
    l: &mut Locked<'_>,
    info: &ResourceInfo,
    res: &ResKey,
    key: &ObjKey,
    old: &Arc<Value>,
    grace_period_seconds: Option<i64>,
) -> Option<Arc<Value>> {
    if !(info.group.is_empty() && info.plural == "pods") {
        return None;
    }
    if str_at(old, "/spec/nodeName").is_none() || is_terminal(old) {
        return None;
    }
    let grace = grace_period_seconds
        .or_else(|| {
            old.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30);
    if grace <= 0 {
        return None;
    }
    if old.pointer("/metadata/deletionTimestamp").is_some() {
        return Some(old.clone());
    }
    let at = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(grace))
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| now_rfc3339());
    let mut marked = (**old).clone();
    marked["metadata"]["deletionTimestamp"] = json!(at);
    marked["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
    if let Some(g) = old.pointer("/metadata/generation").and_then(Value::as_i64) {
        marked["metadata"]["generation"] = json!(g + 1);
    }
    let rv = l.next_rv();
    marked["metadata"]["resourceVersion"] = json!(rv.to_string());
    Some(l.put(res, key.clone(), marked, rv, EventType::Modified))
}
