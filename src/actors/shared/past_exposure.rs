//! A Route or HTTPRoute published before its API was refused in the namespace is no longer in
//! the cache. One reader for every kind that exposes: it reads them past the cache (metadata
//! only), deletes the ones the exposure decision removes through the applier (pinned to their
//! UID, under the write budget), and remembers a refused delete so that the next pass's decision
//! sees it, instead of this pass deciding twice. The rule itself is `reconcile::exposure`'s.

use std::fmt::Debug;
use std::time::Duration;

use dashmap::DashMap;
use kube::api::Api;
use kube::core::NamespaceResourceScope;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::api::ExposureKind;
use crate::children::{Applier, ChildOwner, HttpRoute, Route};
use crate::messages::ObjectKey;
use crate::reconcile::exposure::{PastCacheCheck, PastCacheRead};
use crate::reconcile::remembered::refusal_remembered;

/// A delete past the cache the API server refused.
#[derive(Clone, Debug)]
struct RefusedDelete {
    kind: ExposureKind,
    uid: String,
    generation: i64,
    at: Instant,
}

/// The reads and deletes past the cache of one kind's objects, and the deletes refused.
#[derive(Debug, Default)]
pub struct PastExposure {
    refused: DashMap<ObjectKey, Vec<RefusedDelete>>,
}

/// The object whose exposure is read: its child's name and its generation (a refused delete is
/// remembered for that generation, until `recheck_long`).
pub struct Exposed<'a> {
    pub owner: &'a ChildOwner,
    pub name: &'a str,
    pub generation: i64,
}

impl Exposed<'_> {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.owner.key.namespace, self.owner.key.name.as_str())
    }
}

impl PastExposure {
    /// One metadata read of the child's name for each of `kinds` (Routes, HTTPRoutes whose API
    /// is refused in the namespace); a refused read (403) is an answer, not an error. A delete
    /// of the object found that was refused earlier, and is still remembered, is said so.
    pub async fn read(
        &self,
        client: &Client,
        of: &Exposed<'_>,
        kinds: &[ExposureKind],
        recheck_long: Duration,
    ) -> Result<Vec<PastCacheCheck>, kube::Error> {
        let mut checks = Vec::new();
        for kind in kinds {
            let read = match kind {
                ExposureKind::Route => read::<Route>(client, of).await?,
                ExposureKind::HttpRoute => read::<HttpRoute>(client, of).await?,
                ExposureKind::Ingress => continue,
            };
            let delete_refused = match &read {
                PastCacheRead::Found { uid, .. } => self.remembered(of, *kind, uid, recheck_long),
                _ => false,
            };
            checks.push(PastCacheCheck {
                kind: *kind,
                read,
                delete_refused,
            });
        }
        Ok(checks)
    }

    /// Deletes what the decision removes, pinned to its UID. `true` when the API server refused
    /// one (403): it is remembered, and the caller runs the next pass to decide with it.
    pub async fn withdraw(
        &self,
        applier: &Applier<'_>,
        of: &Exposed<'_>,
        deletes: &[(ExposureKind, String)],
    ) -> Result<bool, kube::Error> {
        let ns = of.owner.key.namespace.as_str();
        let mut refused = Vec::new();
        for (kind, uid) in deletes {
            let deleted = match kind {
                ExposureKind::Route => {
                    let api = Api::<Route>::namespaced(applier.client.clone(), ns);
                    applier.delete_uncached(&api, of.name, uid).await?
                }
                ExposureKind::HttpRoute => {
                    let api = Api::<HttpRoute>::namespaced(applier.client.clone(), ns);
                    applier.delete_uncached(&api, of.name, uid).await?
                }
                ExposureKind::Ingress => true,
            };
            if !deleted {
                refused.push(RefusedDelete {
                    kind: *kind,
                    uid: uid.clone(),
                    generation: of.generation,
                    at: Instant::now(),
                });
            }
        }
        if refused.is_empty() {
            return Ok(false);
        }
        let mut entry = self.refused.entry(of.key()).or_default();
        entry.retain(|r| !refused.iter().any(|n| n.kind == r.kind));
        entry.extend(refused);
        Ok(true)
    }

    /// The object is gone: nothing of it is remembered.
    pub fn forget(&self, key: &ObjectKey) {
        self.refused.remove(key);
    }

    fn remembered(
        &self,
        of: &Exposed<'_>,
        kind: ExposureKind,
        uid: &str,
        recheck_long: Duration,
    ) -> bool {
        self.refused.get(&of.key()).is_some_and(|refused| {
            refused.iter().any(|r| {
                r.kind == kind
                    && r.uid == uid
                    && refusal_remembered(r.generation, of.generation, r.at.elapsed(), recheck_long)
            })
        })
    }
}

async fn read<K>(client: &Client, of: &Exposed<'_>) -> Result<PastCacheRead, kube::Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(client.clone(), &of.owner.key.namespace);
    match api.get_metadata_opt(of.name).await {
        Ok(None) => Ok(PastCacheRead::NotFound),
        Ok(Some(found)) => Ok(PastCacheRead::Found {
            uid: found.metadata.uid.clone().unwrap_or_default(),
            owned: found
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.controller == Some(true) && r.uid == of.owner.reference.uid),
        }),
        Err(kube::Error::Api(status)) if status.code == 403 => Ok(PastCacheRead::Refused),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(PastCacheRead::NotFound),
        Err(err) => Err(err),
    }
}
