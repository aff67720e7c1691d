//! Creating a child without ever merging into somebody else's object.
//!
//! Server-side apply creates an object when its name is free and merges into it otherwise, with
//! no create-only precondition (kubernetes/kubernetes#116156). Reading first leaves a window: a
//! foreign object created between the read and the apply would be taken over. So a child the
//! cache does not hold is created with POST, which fails with 409 AlreadyExists when the name is
//! taken; it is then applied, and the creation's own claim on its fields released.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::applier::FIELD_MANAGER;

/// How many times the release is retried when another writer changed the object in between.
const RELEASE_ATTEMPTS: usize = 3;

/// What a create attempt found.
pub(super) enum Creation<C> {
    /// Created by POST; its fields still belong to the creation's `Update` entry.
    Created(C),
    /// The name was taken: the object holding it, to be judged by its owner.
    Taken(C),
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("{kind} {name} existed when created and was gone when read; retried on the next pass")]
    Vanished { kind: String, name: String },
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

/// Creates `object` under `name` unless the name is taken.
pub(super) async fn create_or_find<C>(
    api: &Api<C>,
    name: &str,
    object: &C,
) -> Result<Creation<C>, CreateError>
where
    C: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match api.create(&params, object).await {
        Ok(created) => Ok(Creation::Created(created)),
        Err(kube::Error::Api(status)) if status.code == 409 => match api.get_opt(name).await? {
            Some(taken) => Ok(Creation::Taken(taken)),
            None => Err(CreateError::Vanished {
                kind: C::kind(&()).into_owned(),
                name: name.into(),
            }),
        },
        Err(err) => Err(err.into()),
    }
}

/// A POST is recorded as an `Update` entry of our manager owning every field it set, server
/// defaults included. Server-side apply keeps a field dropped from the desired object while any
/// other entry owns it, and that entry counts as another. Once the child has been applied (our
/// `Apply` entry owns exactly the desired fields), the creation's entry is removed (guarded by
/// the resourceVersion), leaving the child as an apply would have created it.
pub(super) async fn release_creation_entry<C>(
    api: &Api<C>,
    name: &str,
    mut current: C,
) -> Result<(), kube::Error>
where
    C: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    for _ in 0..RELEASE_ATTEMPTS {
        let Some(entries) = without_creation_entry(current.managed_fields()) else {
            return Ok(());
        };
        let patch = json!({
            "metadata": {
                "resourceVersion": current.resource_version(),
                "managedFields": entries,
            }
        });
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                match api.get_opt(name).await? {
                    Some(fresh) => current = fresh,
                    // Deleted meanwhile: nothing left to release.
                    None => return Ok(()),
                }
            }
            Err(err) => return Err(err),
        }
    }
    // Another writer kept winning: the child stays ours; only a field later dropped from the
    // desired object would linger. Not worth failing the pass for.
    tracing::warn!(
        name,
        "the creation's field ownership of a child was not released"
    );
    Ok(())
}

/// The entries without our creation's `Update` entry; `None` when there is none, or when it is
/// the only one (an apply always leaves its own entry beside it).
fn without_creation_entry(entries: &[ManagedFieldsEntry]) -> Option<Vec<ManagedFieldsEntry>> {
    let creation = |e: &ManagedFieldsEntry| {
        e.manager.as_deref() == Some(FIELD_MANAGER)
            && e.operation.as_deref() == Some("Update")
            && e.subresource.as_deref().unwrap_or("").is_empty()
    };
    let kept: Vec<_> = entries.iter().filter(|e| !creation(e)).cloned().collect();
    (kept.len() < entries.len() && !kept.is_empty()).then_some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(manager: &str, operation: &str, subresource: Option<&str>) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: subresource.map(Into::into),
            api_version: Some("v1".into()),
            fields_type: Some("FieldsV1".into()),
            ..Default::default()
        }
    }

    fn operations(entries: &[ManagedFieldsEntry]) -> Vec<(&str, &str)> {
        entries
            .iter()
            .map(|e| {
                (
                    e.manager.as_deref().unwrap_or(""),
                    e.operation.as_deref().unwrap_or(""),
                )
            })
            .collect()
    }

    #[test]
    fn only_our_creation_entry_is_released() {
        let entries = vec![
            entry("kube-controller-manager", "Update", None),
            entry(FIELD_MANAGER, "Update", Some("status")),
            entry(FIELD_MANAGER, "Update", None),
            entry(FIELD_MANAGER, "Apply", None),
        ];
        let kept = without_creation_entry(&entries).expect("our creation entry goes");
        assert_eq!(
            operations(&kept),
            vec![
                ("kube-controller-manager", "Update"),
                (FIELD_MANAGER, "Update"),
                (FIELD_MANAGER, "Apply"),
            ]
        );
        assert_eq!(kept[1].subresource.as_deref(), Some("status"));
    }

    #[test]
    fn nothing_to_release_without_our_creation_entry_or_beside_no_other() {
        assert!(without_creation_entry(&[]).is_none());
        assert!(without_creation_entry(&[entry(FIELD_MANAGER, "Apply", None)]).is_none());
        assert!(without_creation_entry(&[entry("kubectl", "Update", None)]).is_none());
        assert!(
            without_creation_entry(&[entry(FIELD_MANAGER, "Update", None)]).is_none(),
            "an empty list would not clear managedFields on a real server"
        );
    }
}
