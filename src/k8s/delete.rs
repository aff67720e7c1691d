//! Deleting a child the operator judged, and nothing else.

use kube::Resource;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::core::NamespaceResourceScope;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

use super::WriteBudget;

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

/// True when a 404 says that this object is missing: the server names it in the details. A
/// 404 naming nothing is about the path (the group or kind is not served right now) and says
/// nothing about the object, which may well still grant what it grants.
pub(super) fn object_missing(status: &kube::core::Status, name: &str) -> bool {
    status.code == 404 && status.details.as_ref().is_some_and(|d| d.name == name)
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
        Err(kube::Error::Api(status)) if object_missing(&status, name) => Ok(Pinned::AlreadyGone),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Pinned::Changed),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use kube::core::response::StatusDetails;

    fn answer(code: u16, named: Option<&str>) -> Status {
        Status {
            code,
            reason: "NotFound".into(),
            details: named.map(|name| StatusDetails {
                name: name.into(),
                group: "rbac.authorization.k8s.io".into(),
                kind: "rolebindings".into(),
                uid: String::new(),
                causes: Vec::new(),
                retry_after_seconds: 0,
            }),
            ..Status::default()
        }
    }

    #[test]
    fn only_a_404_naming_the_object_means_it_is_gone() {
        let cases = [
            (answer(404, Some("pgar-r0")), true),
            // The group is not served: `the server could not find the requested resource`.
            (answer(404, None), false),
            (answer(404, Some("another")), false),
            (answer(409, Some("pgar-r0")), false),
        ];
        for (status, gone) in cases {
            assert_eq!(object_missing(&status, "pgar-r0"), gone, "{status:?}");
        }
    }
}
