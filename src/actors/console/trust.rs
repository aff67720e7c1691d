//! What the trust analysis reads from the caches: the namespace's other NetworkPolicies and
//! the console Pods as it sees them (address, Node, grant, deletion).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::ResourceExt;

use crate::actors::ReconcileError;
use crate::children::OperatorCaches;
use crate::messages::ObjectKey;
use crate::reconcile::console::{ConsolePod, TRUST_ANNOTATION, pod_address};

/// The namespace's NetworkPolicies other than the console's own. Those the operator made
/// (other consoles' ingress policies) are whole in the owned-children cache; only the others
/// are read, once per resourceVersion.
pub async fn other_policies(
    caches: &OperatorCaches,
    ns: &str,
    ours: &str,
    client: &kube::Client,
) -> Result<Vec<NetworkPolicy>, ReconcileError> {
    let contents = &caches.namespace_network_policies;
    let names = contents.index().in_namespace(ns).unwrap_or_default();
    let mut policies = Vec::new();
    for (name, _) in names.into_iter().filter(|(n, _)| n != ours) {
        let key = ObjectKey::new(ns, name.as_str());
        if let Some(cached) = caches.network_policies.get(&key) {
            policies.push(cached.as_ref().clone());
        } else if let Some(value) = contents.get(client, &key).await?
            && let Ok(policy) = serde_json::from_value::<NetworkPolicy>(value.as_ref().clone())
        {
            policies.push(policy);
        }
    }
    Ok(policies)
}

pub fn console_pod(pod: &Pod) -> ConsolePod {
    let name = pod.name_any();
    let address = pod_address(pod);
    ConsolePod {
        grant: pod.annotations().get(TRUST_ANNOTATION).cloned(),
        deleting_since: pod
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        name,
        address,
    }
}
