use kube::api::{Api, Patch, PatchParams};
use kube::core::NamespaceResourceScope;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

use super::WriteBudget;
use crate::messages::ObjectKey;

/// Write an object's status through the `/status` subresource with a JSON merge patch,
/// under the write budget. `patch` is the merge document (e.g. `{"status": {...}}`, optionally
/// with `metadata.resourceVersion` as a precondition).
pub async fn patch_status<K>(
    client: &Client,
    budget: &WriteBudget,
    key: &ObjectKey,
    patch: &serde_json::Value,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize,
{
    let api: Api<K> = Api::namespaced(client.clone(), &key.namespace);
    merge_status(budget, &api, &key.name, patch).await
}

/// The one status write of the operator (every other door leads here): a JSON merge patch of
/// `name`'s `/status` through `api`, holding a permit of the write budget.
pub async fn merge_status<K>(
    budget: &WriteBudget,
    api: &Api<K>,
    name: &str,
    patch: &serde_json::Value,
) -> Result<K, kube::Error>
where
    K: Clone + Debug + DeserializeOwned,
{
    let _permit = budget
        .acquire()
        .await
        .map_err(|closed| kube::Error::Service(Box::new(closed)))?;
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
}

/// Reads an object as the API server has it now (a read: no write budget).
pub async fn get_object<K>(client: &Client, key: &ObjectKey) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(client.clone(), &key.namespace);
    api.get(&key.name).await
}
