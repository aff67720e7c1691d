//! A Route or HTTPRoute published before its API was refused in the namespace is no longer in
//! the cache: one read past the cache per pass, for the kinds refused there, and the delete of
//! one the decision says to remove (pinned to its uid). The rule itself is the exposure module's.

use std::fmt::Debug;

use kube::api::Api;
use kube::core::NamespaceResourceScope;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use crate::api::ExposureKind;
use crate::children::{Applier, ChildOwner, HttpRoute, Route};
use crate::k8s::WriteBudget;
use crate::reconcile::exposure::{PastCacheCheck, PastCacheRead};

async fn read<K>(
    client: &Client,
    owner: &ChildOwner,
    name: &str,
) -> Result<PastCacheRead, kube::Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(client.clone(), &owner.key.namespace);
    match api.get_metadata_opt(name).await {
        Ok(None) => Ok(PastCacheRead::NotFound),
        Ok(Some(found)) => Ok(PastCacheRead::Found {
            uid: found.metadata.uid.clone().unwrap_or_default(),
            owned: found
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.controller == Some(true) && r.uid == owner.reference.uid),
        }),
        Err(kube::Error::Api(status)) if status.code == 403 => Ok(PastCacheRead::Refused),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(PastCacheRead::NotFound),
        Err(err) => Err(err),
    }
}

/// The reads past the cache of `kinds` under the child's name.
pub async fn read_past_cache(
    client: &Client,
    owner: &ChildOwner,
    name: &str,
    kinds: &[ExposureKind],
) -> Result<Vec<PastCacheCheck>, kube::Error> {
    let mut checks = Vec::new();
    for kind in kinds {
        let read = match kind {
            ExposureKind::Route => read::<Route>(client, owner, name).await?,
            ExposureKind::HttpRoute => read::<HttpRoute>(client, owner, name).await?,
            ExposureKind::Ingress => continue,
        };
        checks.push(PastCacheCheck {
            kind: *kind,
            read,
            delete_refused: false,
        });
    }
    Ok(checks)
}

/// Deletes what was found past the cache, pinned to its uid; `false` when the API server
/// refused the delete (403), so the decision says it may remain.
pub async fn delete_past_cache(
    client: &Client,
    writes: &WriteBudget,
    owner: &ChildOwner,
    name: &str,
    kind: ExposureKind,
    uid: &str,
) -> Result<bool, kube::Error> {
    let ns = owner.key.namespace.as_str();
    let applier = Applier { client, writes };
    match kind {
        ExposureKind::Route => {
            let api = Api::<Route>::namespaced(client.clone(), ns);
            applier.delete_uncached(&api, name, uid).await
        }
        ExposureKind::HttpRoute => {
            let api = Api::<HttpRoute>::namespaced(client.clone(), ns);
            applier.delete_uncached(&api, name, uid).await
        }
        ExposureKind::Ingress => Ok(true),
    }
}
