//! Deleting a child the operator judged, and nothing else.

use kube::Resource;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::core::NamespaceResourceScope;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

use super::WriteBudget;
use super::missing::confirms_missing_of;

/// What became of a write pinned to the version that was judged (a deletion, an adoption).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pinned {
    /// The API server accepted the write.
    Done,
    /// It was already gone.
    AlreadyGone,
    /// It changed (or was replaced under the same name) since it was judged: left alone; its
    /// watch event brings a fresh judgement.
    Changed,
}

/// Deletes `name` only if it still has the `uid` and `resource_version` that were judged.
pub async fn delete_pinned<K>(
    api: &Api<K>,
    budget: &WriteBudget,
    name: &str,
    uid: Option<String>,
    resource_version: Option<String>,
) -> Result<Pinned, kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + Debug + DeserializeOwned,
    K::DynamicType: Default,
{
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version,
        }),
        ..DeleteParams::background()
    };
    let _permit = budget
        .acquire()
        .await
        .map_err(|closed| kube::Error::Service(Box::new(closed)))?;
    match api.delete(name, &params).await {
        Ok(_) => Ok(Pinned::Done),
        // Only the server's word that it is missing: a 404 for a path not served says nothing
        // about the object, which may well still grant what it grants.
        Err(kube::Error::Api(status)) if confirms_missing_of::<K>(&status, name) => {
            Ok(Pinned::AlreadyGone)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Pinned::Changed),
        Err(err) => Err(err),
    }
}
