//! Creating a child without ever merging into somebody else's object.
//!
//! Server-side apply creates an object when its name is free and merges into it otherwise, with
//! no create-only precondition (kubernetes/kubernetes#116156). Reading first leaves a window: a
//! foreign object created between the read and the apply would be taken over. So a child the
//! cache does not hold is created with POST, which fails with 409 AlreadyExists when the name is
//! taken; the creation's claim on its fields is turned into the apply manager's before the
//! first apply that changes the child.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The one field manager of every write the operator makes to a child.
pub const FIELD_MANAGER: &str = "pgtoolbox-operator";

/// How many times the adoption is retried when another writer changed the object in between.
const ADOPT_ATTEMPTS: usize = 3;

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
    #[error("kubernetes API: {}", crate::conditions::readable(.0))]
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
/// defaults included, and server-side apply counts that entry as another owner: it would keep a
/// field later dropped from the desired object. So before the first apply that changes a
/// child, that entry becomes our `Apply` entry (guarded by the resourceVersion), and the apply
/// then releases what it no longer sets. A creation costs one write; a change costs a read and
/// this write only while the creation entry is there (at most once per child).
///
/// The entry is adopted whole: which of its fields were desired at creation is not known any
/// more, and its other fields are the defaults the API server fills in at decoding, which it
/// fills in again when the apply releases them. Fields a registry sets after decoding (a Job's
/// generated selector, a Service's cluster IP) are never in it.
///
/// A create-only apply would need no entry to adopt: there is no such precondition. A uid in an
/// apply configuration fails on an absent object (kube-apiserver's
/// `TestCreateOnApplyFailsWithUID`), and a resourceVersion on one is answered differently per
/// resource (kubernetes/kubernetes#106745).
pub(super) async fn adopt_creation<C>(api: &Api<C>, name: &str) -> Result<(), kube::Error>
where
    C: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    for _ in 0..ADOPT_ATTEMPTS {
        // Gone meanwhile: the apply creates it, owned by the Apply entry alone.
        let Some(current) = api.get_opt(name).await? else {
            return Ok(());
        };
        let Some(entries) = adopted_entries(current.managed_fields()) else {
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
            // Another writer changed it in between: read it again.
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(err) => return Err(err),
        }
    }
    // Another writer kept winning: the apply still writes the desired fields; only a field
    // dropped from the desired object would linger. Not worth failing the pass for.
    tracing::warn!(name, "the creation of a child was not adopted as applied");
    Ok(())
}

/// The entries with our creation's `Update` entry turned into our `Apply` entry (merged into
/// it when there is one already: one manager has one entry per operation); `None` when there is
/// no creation entry to turn.
fn adopted_entries(entries: &[ManagedFieldsEntry]) -> Option<Vec<ManagedFieldsEntry>> {
    let ours = |e: &ManagedFieldsEntry, operation: &str| {
        e.manager.as_deref() == Some(FIELD_MANAGER)
            && e.operation.as_deref() == Some(operation)
            && e.subresource.as_deref().unwrap_or("").is_empty()
    };
    let position = entries.iter().position(|e| ours(e, "Update"))?;
    let mut adopted = entries.to_vec();
    let mut creation = adopted.remove(position);
    match adopted.iter_mut().find(|e| ours(e, "Apply")) {
        Some(apply) => {
            if let (Some(into), Some(from)) = (apply.fields_v1.as_mut(), creation.fields_v1.take())
            {
                union_into(&mut into.0, from.0);
            }
        }
        None => {
            creation.operation = Some("Apply".into());
            adopted.insert(position, creation);
        }
    }
    Some(adopted)
}

/// Adds the fields of the `FieldsV1` set `from` to `into`.
fn union_into(into: &mut Value, from: Value) {
    let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) else {
        return;
    };
    for (key, sub) in from {
        match into.get_mut(&key) {
            Some(existing) => union_into(existing, sub),
            None => {
                into.insert(key, sub);
            }
        }
    }
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
    fn only_our_creation_entry_becomes_the_apply_entry() {
        let entries = vec![
            entry("kube-controller-manager", "Update", None),
            entry(FIELD_MANAGER, "Update", Some("status")),
            entry(FIELD_MANAGER, "Update", None),
        ];
        let adopted = adopted_entries(&entries).expect("our creation entry turns");
        assert_eq!(
            operations(&adopted),
            vec![
                ("kube-controller-manager", "Update"),
                (FIELD_MANAGER, "Update"),
                (FIELD_MANAGER, "Apply"),
            ]
        );
        assert_eq!(adopted[1].subresource.as_deref(), Some("status"));
        assert!(adopted_entries(&[entry("kubectl", "Update", None)]).is_none());
        assert!(adopted_entries(&[entry(FIELD_MANAGER, "Apply", None)]).is_none());
    }

    #[test]
    fn a_creation_entry_beside_our_apply_entry_is_merged_into_it() {
        let with_fields = |manager: &str, operation: &str, fields: Value| ManagedFieldsEntry {
            fields_v1: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(
                fields,
            )),
            ..entry(manager, operation, None)
        };
        let entries = vec![
            with_fields(FIELD_MANAGER, "Apply", json!({"f:data": {"f:a": {}}})),
            with_fields(
                FIELD_MANAGER,
                "Update",
                json!({"f:data": {"f:b": {}}, "f:metadata": {}}),
            ),
        ];
        let adopted = adopted_entries(&entries).expect("our creation entry turns");
        assert_eq!(operations(&adopted), vec![(FIELD_MANAGER, "Apply")]);
        assert_eq!(
            adopted[0].fields_v1.as_ref().map(|f| &f.0),
            Some(&json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {}}))
        );
    }
}
