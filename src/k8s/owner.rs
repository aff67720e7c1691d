//! Adding an owner to an object the operator does not control, and nothing else.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::core::NamespaceResourceScope;
use serde::de::DeserializeOwned;

use super::{Pinned, WriteBudget};

/// Adds `owner` to the object's ownerReferences (strategic merge, keyed by uid), only if the
/// object is still at `resource_version`. Gone or changed since it was judged is not an error:
/// its watch event brings the next judgement.
pub async fn add_owner_pinned<K>(
    api: &Api<K>,
    budget: &WriteBudget,
    name: &str,
    resource_version: Option<&str>,
    owner: &OwnerReference,
) -> Result<Pinned, kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + Debug + DeserializeOwned,
    K::DynamicType: Default,
{
    let patch = serde_json::json!({"metadata": {
        "resourceVersion": resource_version,
        "ownerReferences": [owner],
    }});
    let _permit = budget
        .acquire()
        .await
        .map_err(|closed| kube::Error::Service(Box::new(closed)))?;
    match api
        .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
    {
        Ok(_) => Ok(Pinned::Done),
        Err(kube::Error::Api(status))
            if super::missing::confirms_missing_of::<K>(&status, name) =>
        {
            Ok(Pinned::AlreadyGone)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Pinned::Changed),
        Err(err) => Err(err),
    }
}
