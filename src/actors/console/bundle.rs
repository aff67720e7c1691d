//! The instance CA bundle a console mirrors: which Clusters it selects (the Clusters index, by
//! labels) and the `ca.crt` of each one's CA Secret (read once per resourceVersion), from which
//! the pure bundle is made.

use kube::core::{Selector, SelectorExt};

use super::error::ConsoleError;
use super::reads::PastCache;
use crate::actors::{ObjectContext, ReconcileError};
use crate::api::PgToolBoxConsole;
use crate::children::{OperatorCaches, Track};
use crate::messages::{KindKey, ObjectKey};
use crate::reconcile::cluster_ca::server_ca_secret;
use crate::reconcile::console::{
    BUNDLE_LIMIT_BYTES, BundleOutcome, CaSource, ChildNames, ClusterCa, mirror_bundle,
};

/// The bundle of the selected Clusters' CAs (`clusters`: name and CA Secret, by name).
pub async fn mirror(
    caches: &OperatorCaches,
    past: &PastCache,
    client: &kube::Client,
    ns: &str,
    names: &ChildNames,
    clusters: &[(String, Option<String>)],
) -> Result<BundleOutcome, ReconcileError> {
    let mut cas = Vec::new();
    for (cluster, secret) in clusters {
        let ca = match secret {
            Some(s) => {
                past.ca(client, &caches.secrets, &ObjectKey::new(ns, s.as_str()))
                    .await?
            }
            None => CaSource::SecretNotFound,
        };
        cas.push(ClusterCa {
            cluster: cluster.clone(),
            secret: secret.clone(),
            ca,
        });
    }
    past.forget_unused(&caches.secrets);
    Ok(mirror_bundle(&names.instance_ca, &cas, BUNDLE_LIMIT_BYTES))
}

/// The selected Clusters of the console's namespace, by name, with the Secret of each one's
/// server CA (see [`server_ca_secret`]).
pub async fn selected_clusters(
    caches: &OperatorCaches,
    obj: &PgToolBoxConsole,
    owner: &KindKey,
    cx: &ObjectContext,
) -> Result<Vec<(String, Option<String>)>, ReconcileError> {
    let ns = cx.key.namespace.as_str();
    let index = caches.clusters.index();
    index.register_namespaces(owner, vec![ns.to_owned()], Track::Version);
    let Some(all) = index.in_namespace(ns) else {
        return Err(ReconcileError::other(ConsoleError::ClustersUnreadable(
            ns.to_owned(),
        )));
    };
    let selector = match &obj.spec.cluster_selector {
        Some(s) => Some(Selector::try_from(s.clone()).map_err(ReconcileError::other)?),
        None => None,
    };
    let mut selected = Vec::new();
    for (name, labels) in all {
        if selector.as_ref().is_some_and(|s| !s.matches(&labels)) {
            continue;
        }
        let key = ObjectKey::new(ns, name.as_str());
        let secret = caches
            .clusters
            .get(&cx.client, &key)
            .await?
            .map(|c| server_ca_secret(&name, &c));
        selected.push((name, secret));
    }
    Ok(selected)
}
