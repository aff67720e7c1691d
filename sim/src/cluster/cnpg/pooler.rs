//! The CloudNativePG Pooler controller: a PgBouncer Deployment and Service named after the
//! Pooler, labelled and selected as CNPG does, and the Pooler status (`instances` from the
//! Deployment, phase `active`, the Secrets it uses with their resourceVersions); `inactive` with
//! `Cluster "<name>" not found` while its Cluster is missing.

use serde_json::{Value, json};

use super::shapes::{self, CLUSTER_LABEL, MANAGER};
use super::{CLUSTERS, MANAGER_NAME, POOLERS};
use crate::apiserver::error::ApiError;
use crate::cluster::net::text as s;
use crate::cluster::{Component, Ctx, DEPLOYMENTS, Kind, Next, SECRETS, SERVICES, key_of};
use crate::store::objects::{Event, ObjKey};

pub const POOLER_LABEL: &str = "cnpg.io/poolerName";
pub const PGBOUNCER_IMAGE: &str = "ghcr.io/cloudnative-pg/pgbouncer:1.25.1";

fn labels(pooler: &Value, cluster: &str) -> Value {
    json!({
        POOLER_LABEL: shapes::name(pooler),
        CLUSTER_LABEL: cluster,
        shapes::POD_ROLE_LABEL: "pooler",
        "app.kubernetes.io/name": "postgresql",
        "app.kubernetes.io/instance": cluster,
        "app.kubernetes.io/component": "pooler",
        "app.kubernetes.io/managed-by": MANAGER,
    })
}

/// The PgBouncer Deployment of a Pooler.
pub fn deployment(pooler: &Value, cluster: &str) -> Value {
    let replicas = pooler
        .pointer("/spec/instances")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": shapes::name(pooler), "namespace": shapes::namespace(pooler),
            "labels": labels(pooler, cluster), "ownerReferences": [shapes::owner_ref(pooler)],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {POOLER_LABEL: shapes::name(pooler)}},
            "template": {
                "metadata": {"labels": labels(pooler, cluster)},
                "spec": {
                    "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                    "name": "pgbouncer",
                    "image": PGBOUNCER_IMAGE,
                    "securityContext": shapes::restricted_container_context(),
                    "ports": [
                        {"name": "pgbouncer", "containerPort": shapes::PORT, "protocol": "TCP"},
                        {"name": "metrics", "containerPort": 9127, "protocol": "TCP"},
                    ],
                }]},
            },
        },
    })
}

/// The Service of a Pooler (same name, selecting its PgBouncer Pods).
pub fn service(pooler: &Value, cluster: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": shapes::name(pooler), "namespace": shapes::namespace(pooler),
            "labels": labels(pooler, cluster), "ownerReferences": [shapes::owner_ref(pooler)],
        },
        "spec": {
            "type": "ClusterIP",
            "ports": [{"name": "pgbouncer", "port": shapes::PORT, "targetPort": "pgbouncer", "protocol": "TCP"}],
            "selector": {POOLER_LABEL: shapes::name(pooler)},
        },
    })
}

pub struct PoolerController;

impl Component for PoolerController {
    fn name(&self) -> &'static str {
        MANAGER_NAME
    }

    fn primary(&self) -> Kind {
        POOLERS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![DEPLOYMENTS, CLUSTERS]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if CLUSTERS.is(&event.res) {
            let cluster = key_of(&event.object);
            let l = ctx.server.store.lock();
            return l
                .list(&POOLERS.res(), Some(&cluster.0))
                .iter()
                .filter(|p| s(p, "/spec/cluster/name") == cluster.1)
                .map(|p| key_of(p))
                .collect();
        }
        crate::cluster::default_map(POOLERS, ctx, event)
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(pooler) = tx.get_key(POOLERS, key) else {
            return Ok(Next::Done);
        };
        let cluster = s(&pooler, "/spec/cluster/name").to_string();
        if pooler.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok(Next::Done);
        }
        if tx.get(CLUSTERS, &key.0, &cluster).is_none() {
            // Without its Cluster nothing is rendered: the Pooler waits, inactive.
            let mut status = pooler.get("status").cloned().unwrap_or_else(|| json!({}));
            status["phase"] = json!("inactive");
            status["phaseReason"] = json!(format!("Cluster {cluster:?} not found"));
            if pooler.get("status") != Some(&status) {
                let mut next = (*pooler).clone();
                next["status"] = status;
                tx.update_status(POOLERS, next)?;
            }
            return Ok(Next::Done);
        }
        if tx.get(SERVICES, &key.0, &key.1).is_none() {
            tx.create(SERVICES, &key.0, service(&pooler, &cluster))?;
        }
        let deploy = match tx.get(DEPLOYMENTS, &key.0, &key.1) {
            Some(d) => d,
            None => tx.create(DEPLOYMENTS, &key.0, deployment(&pooler, &cluster))?,
        };
        let version = |name: &str| {
            let rv = tx
                .get(SECRETS, &key.0, name)
                .and_then(|sec| {
                    sec.pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_default();
            json!({"name": name, "version": rv})
        };
        let secrets = json!({
            "serverCA": version(&format!("{cluster}-ca")),
            "serverTLS": version(&format!("{cluster}-server")),
            "clientCA": version(&format!("{cluster}-ca")),
        });
        let mut status = pooler.get("status").cloned().unwrap_or_else(|| json!({}));
        status["secrets"] = secrets;
        status["instances"] = json!(
            deploy
                .pointer("/status/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        );
        status["phase"] = json!("active");
        if let Some(m) = status.as_object_mut() {
            m.remove("phaseReason");
        }
        status["image"] = json!(PGBOUNCER_IMAGE);
        if pooler.get("status") != Some(&status) {
            let mut next = (*pooler).clone();
            next["status"] = status;
            tx.update_status(POOLERS, next)?;
        }
        Ok(Next::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pooler_service_selects_its_pgbouncer_pods_by_pooler_name() {
        let p = json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Pooler",
            "metadata": {"namespace": "a", "name": "db-pooler-rw", "uid": "u"}, "spec": {"instances": 2}});
        let svc = service(&p, "db");
        assert_eq!(
            svc["spec"]["selector"],
            json!({"cnpg.io/poolerName": "db-pooler-rw"})
        );
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], "pgbouncer");
        let d = deployment(&p, "db");
        assert_eq!(d["spec"]["replicas"], 2);
        assert_eq!(
            d["spec"]["template"]["metadata"]["labels"]["cnpg.io/podRole"],
            "pooler"
        );
        assert_eq!(d["metadata"]["ownerReferences"][0]["kind"], "Pooler");
    }
}
