//! A requested switchover, as `kubectl cnpg promote` asks for one: the Cluster's
//! `status.targetPrimary` names the new primary (phase `Switchover in progress`); the Cluster
//! controller then moves the role labels and `currentPrimary` (see `cluster`).

use serde_json::{Value, json};

use super::cluster::{PHASE_SWITCHOVER, pod_ready};
use super::shapes;
use super::{CLUSTERS, cnpg_timestamp};
use crate::apiserver::error::ApiError;
use crate::apiserver::ops::{self, Subresource};
use crate::apiserver::server::Server;
use crate::cluster::PODS;
use crate::cluster::net::conditions::{self, Cond};
use crate::cluster::net::text as s;

/// The field manager of the request (the cnpg kubectl plugin).
pub const REQUESTER: &str = "kubectl-cnpg";

/// The instance to promote: the first ready instance after the current primary (by serial), as
/// the switchover picks the most advanced replica.
pub fn choose_target(cluster: &Value, pods: &[&Value]) -> Result<String, String> {
    let name = shapes::name(cluster);
    let current = s(cluster, "/status/currentPrimary");
    if current.is_empty() {
        return Err(format!("cluster {name} has no primary yet"));
    }
    if current != s(cluster, "/status/targetPrimary") {
        return Err(format!("cluster {name} is already switching over"));
    }
    let mut candidates: Vec<(usize, &str)> = pods
        .iter()
        .filter(|p| s(p, "/metadata/labels/cnpg.io~1cluster") == name)
        .filter(|p| s(p, "/metadata/labels/cnpg.io~1podRole") == "instance")
        .filter(|p| pod_ready(p))
        .map(|p| s(p, "/metadata/name"))
        .filter(|n| *n != current)
        .filter_map(|n| Some((shapes::serial_of(name, n)?, n)))
        .collect();
    candidates.sort();
    candidates
        .first()
        .map(|(_, n)| n.to_string())
        .ok_or_else(|| format!("cluster {name} has no ready replica to promote"))
}

/// Request a switchover of `namespace/cluster` to `instance` (as `kubectl cnpg promote` names
/// one) or to the first ready replica; answers the instance that will become primary.
pub fn request(
    server: &Server,
    namespace: &str,
    cluster: &str,
    instance: Option<&str>,
) -> Result<String, ApiError> {
    let info = server
        .registry()
        .lookup(CLUSTERS.group, CLUSTERS.version, CLUSTERS.plural)
        .ok_or_else(|| ApiError::not_found(CLUSTERS.group, CLUSTERS.plural, cluster))?;
    let mut l = server.store.lock();
    l.set_field_manager(Some(REQUESTER.to_string()));
    let key = (namespace.to_string(), cluster.to_string());
    let obj = l
        .get(&CLUSTERS.res(), &key)
        .ok_or_else(|| ApiError::not_found(CLUSTERS.group, CLUSTERS.plural, cluster))?;
    let pods = l.list(&PODS.res(), Some(namespace));
    let pods: Vec<&Value> = pods.iter().map(|p| p.as_ref()).collect();
    let target = match instance {
        Some(wanted) => {
            if s(&obj, "/status/targetPrimary") == wanted {
                // The plugin's answer: already the primary, nothing to do.
                return Ok(wanted.to_string());
            }
            let is_instance = pods.iter().any(|p| {
                s(p, "/metadata/name") == wanted
                    && s(p, "/metadata/labels/cnpg.io~1cluster") == cluster
                    && s(p, "/metadata/labels/cnpg.io~1podRole") == "instance"
            });
            if !is_instance {
                return Err(ApiError::bad_request(format!(
                    "new primary node {wanted} not found in namespace {namespace}"
                )));
            }
            wanted.to_string()
        }
        None => choose_target(&obj, &pods).map_err(ApiError::bad_request)?,
    };
    let mut next = (*obj).clone();
    let now = jiff::Timestamp::now();
    next["status"]["targetPrimary"] = json!(target);
    next["status"]["targetPrimaryTimestamp"] = json!(cnpg_timestamp(now));
    next["status"]["phase"] = json!(PHASE_SWITCHOVER);
    next["status"]["phaseReason"] = json!(format!("Switching over to {target}"));
    next["status"]["conditions"] = conditions::set(
        obj.pointer("/status/conditions").unwrap_or(&Value::Null),
        &Cond::new("Ready", false, "ClusterIsNotReady", "Cluster Is Not Ready"),
        &crate::apiserver::ops::now_rfc3339(),
    );
    ops::update(
        server,
        &mut l,
        &info,
        namespace,
        cluster,
        next,
        Subresource::Status,
    )?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ready: bool) -> Value {
        let status = if ready { "True" } else { "False" };
        json!({"metadata": {"name": name, "labels": {"cnpg.io/cluster": "db", "cnpg.io/podRole": "instance"}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": status}]}})
    }

    #[test]
    fn the_first_ready_replica_is_promoted() {
        let c = json!({"metadata": {"name": "db"}, "status": {"currentPrimary": "db-1", "targetPrimary": "db-1"}});
        let (p1, p2, p3) = (pod("db-1", true), pod("db-2", false), pod("db-3", true));
        assert_eq!(choose_target(&c, &[&p1, &p2, &p3]), Ok("db-3".to_string()));
        assert!(
            choose_target(&c, &[&p1])
                .unwrap_err()
                .contains("no ready replica")
        );
        let busy = json!({"metadata": {"name": "db"}, "status": {"currentPrimary": "db-1", "targetPrimary": "db-2"}});
        assert!(
            choose_target(&busy, &[&p1, &p3])
                .unwrap_err()
                .contains("already switching")
        );
        let fresh = json!({"metadata": {"name": "db"}});
        assert!(
            choose_target(&fresh, &[&p1])
                .unwrap_err()
                .contains("no primary")
        );
    }
}
