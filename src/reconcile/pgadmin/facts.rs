//! Reading the referenced objects (pure): a Cluster, a PgAdminAccess, a Pooler or a
//! DatabaseRole as the API serves it (JSON) becomes the facts the offered set is decided from.

use serde_json::Value;

#[cfg(test)]
use super::offered::ClusterFacts;
use super::offered::{GrantFacts, PoolerFacts, RoleFacts};

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn key(v: &Value) -> Option<(String, String)> {
    Some((
        text(v, "/metadata/namespace")?.to_owned(),
        text(v, "/metadata/name")?.to_owned(),
    ))
}

#[cfg(test)]
pub fn cluster_facts(v: &Value) -> Option<ClusterFacts> {
    let (namespace, name) = key(v)?;
    let labels = v
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    Some(ClusterFacts {
        namespace,
        ca_secret: crate::reconcile::cluster_ca::server_ca_secret(&name, v),
        name,
        labels,
    })
}

pub fn grant_facts(v: &Value) -> Option<GrantFacts> {
    let (namespace, name) = key(v)?;
    let pgadmin = (
        text(v, "/spec/pgAdmin/namespace")?.to_owned(),
        text(v, "/spec/pgAdmin/name")?.to_owned(),
    );
    let clusters = v
        .pointer("/spec/clusters")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| Some(c.as_str()?.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    Some(GrantFacts {
        namespace,
        name,
        pgadmin,
        clusters,
    })
}

pub fn pooler_facts(v: &Value) -> Option<PoolerFacts> {
    let (namespace, name) = key(v)?;
    Some(PoolerFacts {
        namespace,
        name,
        cluster: text(v, "/spec/cluster/name")?.to_owned(),
    })
}

pub fn role_facts(v: &Value) -> Option<RoleFacts> {
    let (namespace, name) = key(v)?;
    Some(RoleFacts {
        cluster: text(v, "/spec/cluster/name")?.to_owned(),
        role: text(v, "/spec/name").unwrap_or(&name).to_owned(),
        namespace,
        name,
        login: v.pointer("/spec/login").and_then(Value::as_bool) == Some(true),
        applied: v.pointer("/status/applied").and_then(Value::as_bool) == Some(true),
        password_secret: text(v, "/status/password/secretName").map(str::to_owned),
    })
}
