//! The instance CA bundle a console mirrors: which Clusters it selects (the Clusters index, by
//! labels), the `ca.crt` of each one's CA Secret (read once per resourceVersion), the pure
//! bundle, and `InstanceCABundleComplete` with `status.instanceCABundle`.

use kube::core::{Selector, SelectorExt};
use serde_json::Value;

use super::reads::PastCache;
use super::reconciler::ConsoleError;
use crate::actors::{ObjectContext, ReconcileError};
use crate::api::{PgToolBoxConsole, PgToolBoxConsoleStatus};
use crate::children::{OperatorCaches, Track};
use crate::conditions::reasons::common;
use crate::conditions::{ConditionType, PassFacts, StatusField, Verdict};
use crate::messages::{KindKey, ObjectKey};
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

/// The selected Clusters of the console's namespace, by name, with the CA Secret each
/// reports (`status.certificates.serverCASecret`).
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
            .and_then(|c| server_ca_secret(&c));
        selected.push((name, secret));
    }
    Ok(selected)
}

/// InstanceCABundleComplete and status.instanceCABundle: present only while mirroring.
pub fn bundle_facts(
    facts: PassFacts,
    bundle: Option<&BundleOutcome>,
    foreign: bool,
    names: &ChildNames,
    valid: bool,
    stored: &PgToolBoxConsoleStatus,
) -> Result<PassFacts, ReconcileError> {
    let e = ReconcileError::other;
    let Some(bundle) = bundle else {
        return facts
            .without_advisory(ConditionType::InstanceCABundleComplete)
            .and_then(|f| {
                f.with_status_field(
                    StatusField::InstanceCaBundle,
                    &None::<crate::api::InstanceCaBundleStatus>,
                    &stored.instance_ca_bundle,
                )
            })
            .map_err(e);
    };
    if !valid {
        return Ok(facts);
    }
    let verdict = if foreign {
        Verdict::fails(
            common::RESOURCE_NOT_OWNED,
            format!(
                "ConfigMap {} exists and is not controlled by this PgToolBoxConsole: the instance CA bundle is not mirrored into it",
                names.instance_ca
            ),
        )
    } else {
        bundle.verdict.clone()
    };
    facts
        .with_advisory(ConditionType::InstanceCABundleComplete, verdict)
        .and_then(|f| {
            f.with_status_field(
                StatusField::InstanceCaBundle,
                &Some(bundle.status.clone()),
                &stored.instance_ca_bundle,
            )
        })
        .map_err(e)
}

fn server_ca_secret(cluster: &Value) -> Option<String> {
    cluster
        .pointer("/status/certificates/serverCASecret")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}
