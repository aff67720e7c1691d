//! What the trust analysis reads beyond the children stores: the namespace's other
//! NetworkPolicies (the console Pods are read as `reconcile::console::ConsolePod::of` sees them).

use k8s_openapi::api::networking::v1::NetworkPolicy;

use crate::actors::ReconcileError;
use crate::children::OperatorCaches;
use crate::messages::ObjectKey;

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
        if let Some(cached) = caches.network_policies.get_whole(&key) {
            policies.push(cached.as_ref().clone());
        } else if let Some(value) = contents.get(client, &key).await?
            && let Ok(policy) = serde_json::from_value::<NetworkPolicy>(value.as_ref().clone())
        {
            policies.push(policy);
        }
    }
    Ok(policies)
}
