//! What the offered set is decided from, read from the shared caches: the Clusters (with their
//! labels and server CA Secret) of the PgAdmin's namespace and of each namespace it names, the PgAdminAccesses of
//! those namespaces, the Poolers its endpoints name and the DatabaseRoles of the registered
//! Clusters. Each read registers this PgAdmin as a user first, so a Cluster, grant, Pooler or
//! role appearing, changing or going wakes exactly the PgAdmins that read it.

use kube::Client;

use crate::api::PgAdminSpec;
use crate::children::{OperatorCaches, Track};
use crate::messages::{KindKey, ObjectKey};
use crate::reconcile::cluster_ca::server_ca_secret;
use crate::reconcile::optional_api::{Availability, OptionalApi, ProbeResult};
use crate::reconcile::pgadmin::selector_matches;
use crate::reconcile::pgadmin::{
    ClusterFacts, Referenced, RoleFacts, grant_facts, pooler_facts, role_facts,
};

/// The namespaces whose Clusters and grants the spec reads.
fn namespaces(namespace: &str, spec: &PgAdminSpec) -> (Vec<String>, Vec<String>) {
    let mut cluster_ns: Vec<String> = spec
        .cross_namespace_cluster_refs
        .iter()
        .map(|r| r.namespace.clone())
        .collect();
    let grant_ns: Vec<String> = cluster_ns
        .iter()
        .filter(|n| *n != namespace)
        .cloned()
        .collect();
    if spec.cluster_selector.is_some() {
        cluster_ns.push(namespace.to_owned());
    }
    cluster_ns.sort();
    cluster_ns.dedup();
    (cluster_ns, grant_ns)
}

pub async fn read_referenced(
    caches: &OperatorCaches,
    client: &Client,
    owner: &KindKey,
    namespace: &str,
    spec: &PgAdminSpec,
    apis: &ProbeResult,
) -> Result<Referenced, kube::Error> {
    let (cluster_ns, grant_ns) = namespaces(namespace, spec);
    let mut out = Referenced::default();

    let clusters = caches.clusters.index();
    clusters.register_namespaces(owner, cluster_ns.clone(), Track::Existence);
    let mut read = Vec::new();
    for ns in &cluster_ns {
        let Some(objects) = clusters.in_namespace(ns) else {
            out.clusters_unreadable.push(ns.clone());
            continue;
        };
        for (name, labels) in objects {
            // In the PgAdmin's own namespace only the selected Clusters can be offered: the
            // others are neither read nor followed (their status churns; a label change that
            // selects one still wakes the PgAdmin through the namespace registration).
            if ns == namespace
                && let Some(selector) = &spec.cluster_selector
                && !selector_matches(selector, &labels)
            {
                continue;
            }
            // Each Cluster's server CA Secret is named in the Cluster: a change rewrites the
            // servers' CA files.
            let key = ObjectKey::new(ns.as_str(), name.as_str());
            let Some(value) = caches.clusters.get(client, &key).await? else {
                continue;
            };
            read.push(key);
            out.clusters.push(ClusterFacts {
                namespace: ns.clone(),
                ca_secret: server_ca_secret(&name, &value),
                name,
                labels,
            });
        }
    }
    clusters.register(owner, read, Track::Version);

    let accesses = &caches.pgadmin_accesses;
    accesses
        .index()
        .register_namespaces(owner, grant_ns.clone(), Track::Version);
    for ns in &grant_ns {
        for (name, _) in accesses.index().in_namespace(ns).unwrap_or_default() {
            let key = ObjectKey::new(ns.as_str(), name.as_str());
            if let Some(value) = accesses.get(client, &key).await? {
                out.grants.extend(grant_facts(&value));
            }
        }
    }

    // Poolers named by the endpoints, in each Cluster namespace where the API is readable.
    let pooler_names: Vec<&str> = spec
        .endpoints
        .iter()
        .filter_map(|e| e.strip_prefix("pooler:"))
        .collect();
    let mut pooler_keys = Vec::new();
    for ns in &cluster_ns {
        if apis.availability(OptionalApi::Poolers, ns) != Availability::On {
            continue;
        }
        pooler_keys.extend(pooler_names.iter().map(|p| ObjectKey::new(ns.as_str(), *p)));
    }
    let poolers = &caches.poolers;
    poolers
        .index()
        .register(owner, pooler_keys.clone(), Track::Version);
    for key in &pooler_keys {
        if let Some(value) = poolers.get(client, key).await? {
            out.poolers.extend(pooler_facts(&value));
        }
    }
    Ok(out)
}

/// The DatabaseRoles of the namespaces of the registered Clusters where the API is readable.
pub async fn read_roles(
    caches: &OperatorCaches,
    client: &Client,
    owner: &KindKey,
    registered: &[(String, String)],
    offer: bool,
    apis: &ProbeResult,
) -> Result<Vec<RoleFacts>, kube::Error> {
    let mut namespaces: Vec<String> = registered
        .iter()
        .map(|(ns, _)| ns.clone())
        .filter(|ns| offer && apis.availability(OptionalApi::DatabaseRoles, ns) == Availability::On)
        .collect();
    namespaces.dedup();
    let roles = &caches.database_roles;
    roles
        .index()
        .register_namespaces(owner, namespaces.clone(), Track::Version);
    let mut out = Vec::new();
    for ns in &namespaces {
        for (name, _) in roles.index().in_namespace(ns).unwrap_or_default() {
            let key = ObjectKey::new(ns.as_str(), name.as_str());
            if let Some(value) = roles.get(client, &key).await? {
                out.extend(role_facts(&value));
            }
        }
    }
    Ok(out)
}
