//! Creating a child without ever merging into somebody else's object.
//!
//! Server-side apply creates an object when its name is free and merges into it otherwise, with
//! no create-only precondition (kubernetes/kubernetes#116156). Reading first leaves a window: a
//! foreign object created between the read and the apply would be taken over. So a child the
//! cache does not hold is created with POST, which fails with 409 AlreadyExists when the name is
//! taken; the creation's claim on its fields is then turned into the apply manager's.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::applier::FIELD_MANAGER;

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
/// defaults included, and server-side apply counts that entry as another owner (it would keep a
/// field later dropped from the desired object). So the creation is adopted in one more write:
/// that entry becomes our `Apply` entry, owning only the fields of `desired` (what an apply of
/// it would own), guarded by the resourceVersion. The child is then as server-side apply would
/// have created it, in two writes instead of POST, apply and release.
///
/// A create-only apply would need one: there is no such precondition. A uid in an apply
/// configuration fails on an absent object (kube-apiserver's `TestCreateOnApplyFailsWithUID`),
/// and a resourceVersion on one is answered differently per resource
/// (kubernetes/kubernetes#106745).
pub(super) async fn adopt_creation<C>(
    api: &Api<C>,
    name: &str,
    mut current: C,
    desired: &Value,
) -> Result<C, kube::Error>
where
    C: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    for _ in 0..ADOPT_ATTEMPTS {
        let Some(entries) = adopted_entries(current.managed_fields(), desired) else {
            return Ok(current);
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
            Ok(adopted) => return Ok(adopted),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                match api.get_opt(name).await? {
                    Some(fresh) => current = fresh,
                    // Deleted meanwhile: the next pass creates it again.
                    None => return Ok(current),
                }
            }
            Err(err) => return Err(err),
        }
    }
    // Another writer kept winning: the child stays ours; only a field later dropped from the
    // desired object would linger. Not worth failing the pass for.
    tracing::warn!(name, "the creation of a child was not adopted as applied");
    Ok(current)
}

/// The entries with our creation's `Update` entry turned into our `Apply` entry over the fields
/// of `desired`; `None` when there is no creation entry to turn.
fn adopted_entries(
    entries: &[ManagedFieldsEntry],
    desired: &Value,
) -> Option<Vec<ManagedFieldsEntry>> {
    let creation = |e: &ManagedFieldsEntry| {
        e.manager.as_deref() == Some(FIELD_MANAGER)
            && e.operation.as_deref() == Some("Update")
            && e.subresource.as_deref().unwrap_or("").is_empty()
    };
    let position = entries.iter().position(creation)?;
    let mut adopted = entries.to_vec();
    let entry = &mut adopted[position];
    entry.operation = Some("Apply".into());
    if let Some(fields) = entry.fields_v1.as_mut() {
        fields.0 = owned_within(&fields.0, desired);
    }
    Some(adopted)
}

/// The part of a `FieldsV1` set that names fields present in `object`: `f:` a field, `k:` a list
/// element matched on the key fields `object`'s element has (a server-defaulted key field is
/// absent there), `v:` a set value, `i:` a list index, `.` the node itself.
fn owned_within(fields: &Value, object: &Value) -> Value {
    let Some(fields) = fields.as_object() else {
        return fields.clone();
    };
    let mut kept = serde_json::Map::new();
    for (key, sub) in fields {
        let within = if key == "." {
            Some(sub.clone())
        } else if let Some(field) = key.strip_prefix("f:") {
            object.get(field).map(|value| owned_within(sub, value))
        } else if let Some(element_key) = key.strip_prefix("k:") {
            element_by_key(object, element_key).map(|element| owned_within(sub, element))
        } else if let Some(value) = key.strip_prefix("v:") {
            let value: Option<Value> = serde_json::from_str(value).ok();
            let present = value.is_some_and(|v| object.as_array().is_some_and(|a| a.contains(&v)));
            present.then(|| sub.clone())
        } else if let Some(index) = key.strip_prefix("i:") {
            let element = index.parse::<usize>().ok().and_then(|i| object.get(i));
            element.map(|element| owned_within(sub, element))
        } else {
            None
        };
        if let Some(within) = within {
            kept.insert(key.clone(), within);
        }
    }
    Value::Object(kept)
}

/// The element of the list `object` whose key fields, where it has them, equal `key`'s.
fn element_by_key<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    let key: serde_json::Map<String, Value> = serde_json::from_str(key).ok()?;
    object.as_array()?.iter().find(|element| {
        let mut shared = key
            .iter()
            .filter_map(|(k, v)| element.get(k).map(|e| e == v));
        let first = shared.next();
        first == Some(true) && shared.all(|same| same)
    })
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
        let adopted = adopted_entries(&entries, &json!({})).expect("our creation entry turns");
        assert_eq!(
            operations(&adopted),
            vec![
                ("kube-controller-manager", "Update"),
                (FIELD_MANAGER, "Update"),
                (FIELD_MANAGER, "Apply"),
            ]
        );
        assert_eq!(adopted[1].subresource.as_deref(), Some("status"));
        assert!(adopted_entries(&[entry("kubectl", "Update", None)], &json!({})).is_none());
        assert!(adopted_entries(&[entry(FIELD_MANAGER, "Apply", None)], &json!({})).is_none());
    }

    #[test]
    fn the_adopted_entry_owns_what_was_desired_not_the_server_defaults() {
        let created = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:progressDeadlineSeconds": {},
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {
                        ".": {}, "f:image": {}, "f:name": {}, "f:terminationMessagePath": {},
                        "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}, "f:protocol": {}
                        }},
                        "f:args": {}
                    },
                    "k:{\"name\":\"gone\"}": {".": {}, "f:name": {}}
                }}},
                "f:finalizers": {"v:\"a\"": {}, "v:\"b\"": {}}
            }
        });
        let desired = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "replicas": 1,
                "template": {"spec": {"containers": [
                    {"name": "web", "image": "i", "ports": [{"containerPort": 8080}], "args": ["x"]}
                ]}},
                "finalizers": ["a"]
            }
        });
        assert_eq!(
            owned_within(&created, &desired),
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"web\"}": {
                            ".": {}, "f:image": {}, "f:name": {},
                            "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
                                ".": {}, "f:containerPort": {}
                            }},
                            "f:args": {}
                        }
                    }}},
                    "f:finalizers": {"v:\"a\"": {}}
                }
            })
        );
    }
}
