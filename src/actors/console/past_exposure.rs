//! A Route or HTTPRoute published before its kind was refused in the console's namespace is no
//! longer in the cache: it is read past the cache (only while refused) and, when it is ours and
//! no longer wanted, deleted pinned to its UID. What the read finds goes to the exposure
//! decision (`reconcile::exposure::refused_kind_outcome`).

use kube::api::{Api, DeleteParams, Preconditions};
use kube::{Client, ResourceExt};

use crate::api::ExposureKind;
use crate::children::{HttpRoute, Route};
use crate::reconcile::exposure::{PastCacheCheck, PastCacheRead};

/// Read, or delete pinned, one object of a kind; `None` for `Ingress` (always cached).
async fn read_one(
    client: &Client,
    ns: &str,
    kind: ExposureKind,
    name: &str,
) -> Result<Option<(String, Vec<String>)>, kube::Error> {
    let controllers =
        |refs: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference]| {
            refs.iter()
                .filter(|r| r.controller == Some(true))
                .map(|r| r.uid.clone())
                .collect::<Vec<_>>()
        };
    Ok(match kind {
        ExposureKind::Route => Api::<Route>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await?
            .map(|o| {
                (
                    o.uid().unwrap_or_default(),
                    controllers(o.owner_references()),
                )
            }),
        ExposureKind::HttpRoute => Api::<HttpRoute>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await?
            .map(|o| {
                (
                    o.uid().unwrap_or_default(),
                    controllers(o.owner_references()),
                )
            }),
        ExposureKind::Ingress => None,
    })
}

async fn delete_one(
    client: &Client,
    ns: &str,
    kind: ExposureKind,
    name: &str,
    params: &DeleteParams,
) -> Result<(), kube::Error> {
    match kind {
        ExposureKind::Route => {
            Api::<Route>::namespaced(client.clone(), ns)
                .delete(name, params)
                .await?;
        }
        ExposureKind::HttpRoute => {
            Api::<HttpRoute>::namespaced(client.clone(), ns)
                .delete(name, params)
                .await?;
        }
        ExposureKind::Ingress => {}
    }
    Ok(())
}

/// One read of `name` for each kind; a refused read (403) is an answer, not an error.
pub async fn read_past_cache(
    client: &Client,
    ns: &str,
    name: &str,
    owner_uid: &str,
    kinds: &[ExposureKind],
) -> Result<Vec<PastCacheCheck>, kube::Error> {
    let mut checks = Vec::new();
    for kind in kinds {
        let read = match read_one(client, ns, *kind, name).await {
            Ok(None) => PastCacheRead::NotFound,
            Ok(Some((uid, controllers))) => PastCacheRead::Found {
                uid,
                owned: controllers.iter().any(|c| c == owner_uid),
            },
            Err(kube::Error::Api(status)) if status.code == 403 => PastCacheRead::Refused,
            Err(err) => return Err(err),
        };
        checks.push(PastCacheCheck {
            kind: *kind,
            read,
            delete_refused: false,
        });
    }
    Ok(checks)
}

/// Deletes what the decision found ours and unwanted, pinned to its UID. Returns the kinds
/// whose delete was refused (403), for the decision to say so.
pub async fn delete_past_cache(
    client: &Client,
    ns: &str,
    name: &str,
    targets: &[(ExposureKind, String)],
) -> Result<Vec<ExposureKind>, kube::Error> {
    let mut refused = Vec::new();
    for (kind, uid) in targets {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match delete_one(client, ns, *kind, name, &params).await {
            Ok(()) => {}
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
            Err(kube::Error::Api(status)) if status.code == 403 => refused.push(*kind),
            Err(err) => return Err(err),
        }
    }
    Ok(refused)
}
