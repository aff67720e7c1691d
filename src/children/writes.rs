//! The applier's single-object writes, for objects no child store caches (Secrets, whose
//! contents are never kept; CloudNativePG objects read as `DynamicObject`; a Route or HTTPRoute
//! published before its API was refused; the status of our own objects in a namespace no
//! longer watched): each takes its write-budget permit for the one request it makes, as every
//! other write of the operator does. Each is given the `Api` to write through (made from the
//! applier's client): it names the namespace and, for a `DynamicObject`, the resource.

use std::fmt::Debug;

use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::applier::Applier;
use super::create::FIELD_MANAGER;
use crate::k8s::WriteBudgetClosed;

/// What the single-object writes ask of a kind (typed or `DynamicObject`).
pub trait WritableKind: Resource + Clone + Debug + Serialize + DeserializeOwned {}

impl<K> WritableKind for K where K: Resource + Clone + Debug + Serialize + DeserializeOwned {}

/// True when `err` is the write budget closing (the operator stopping), not the API's answer.
pub fn budget_closed(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Service(source) if source.is::<WriteBudgetClosed>())
}

impl Applier<'_> {
    /// Creates `object` with POST, never merging into an object that already holds its name:
    /// `Ok(false)` when one does (409), which is left as it is.
    pub async fn create_once<K: WritableKind>(
        &self,
        api: &Api<K>,
        object: &K,
    ) -> Result<bool, kube::Error> {
        let _permit = self.permit().await?;
        match api.create(&PostParams::default(), object).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Server-side applies `object` (the whole of what this manager owns of `name`, forced)
    /// under [`FIELD_MANAGER`]; the object as the server answered.
    pub async fn apply_object<K, P>(
        &self,
        api: &Api<K>,
        name: &str,
        object: &P,
    ) -> Result<K, kube::Error>
    where
        K: WritableKind,
        P: Serialize + Debug,
    {
        let _permit = self.permit().await?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        api.patch(name, &params, &Patch::Apply(object)).await
    }

    /// Deletes `name` if it is still the object of `uid` that was judged (no cache holds it, so
    /// there is no resourceVersion to pin). `Ok(true)`: it is gone, deleted now or already
    /// (404), or replaced under the same name (409: the one judged is gone); `Ok(false)`: the
    /// API server refused the delete (403), so the object may remain.
    pub async fn delete_uncached<K: WritableKind>(
        &self,
        api: &Api<K>,
        name: &str,
        uid: &str,
    ) -> Result<bool, kube::Error> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let _permit = self.permit().await?;
        match api.delete(name, &params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 403 => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Writes the status of `name` through the `/status` subresource with the JSON merge patch
    /// `patch` (which may carry `metadata.resourceVersion` as a precondition).
    pub async fn merge_status<K: WritableKind>(
        &self,
        api: &Api<K>,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<K, kube::Error> {
        crate::k8s::merge_status(self.writes, api, name, patch).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_closed_budget_counts_as_closed() {
        assert!(budget_closed(&kube::Error::Service(Box::new(
            WriteBudgetClosed
        ))));
        let io = std::io::Error::other("connection reset");
        assert!(!budget_closed(&kube::Error::Service(Box::new(io))));
        assert!(!budget_closed(&kube::Error::Api(Box::default())));
    }
}
