//! When the API server's answer confirms that an object does not exist.
//!
//! A 404 alone does not: kube-apiserver answers a path nothing serves (a group that is not
//! installed, a CustomResourceDefinition removed, an API behind a proxy that is away) with a
//! 404 as well, which says nothing about the object. Only the `Status` a real store writes for a
//! missing object confirms it: reason `NotFound`, with `details` naming the object, its
//! resource (plural) and its group. Anything else is an error of the read.

use kube::Resource;
use kube::api::Api;
use kube::core::Status;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// True when `status` is the API server's word that `name`, of resource `plural` in `group`
/// (empty: the core group), does not exist.
fn confirms_missing(status: &Status, group: &str, plural: &str, name: &str) -> bool {
    status.code == 404
        && status.reason == "NotFound"
        && status
            .details
            .as_ref()
            .is_some_and(|d| d.name == name && d.kind == plural && d.group == group)
}

/// [`confirms_missing`] for an object of type `K`.
pub(super) fn confirms_missing_of<K>(status: &Status, name: &str) -> bool
where
    K: Resource,
    K::DynamicType: Default,
{
    let dt = K::DynamicType::default();
    confirms_missing(status, &K::group(&dt), &K::plural(&dt), name)
}

/// `name` as the API server has it now; `None` only when its answer confirms that it does not
/// exist ([`confirms_missing`]). Any other 404 is returned as the error it is.
pub async fn get_confirmed<K>(api: &Api<K>, name: &str) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + Debug + DeserializeOwned,
    K::DynamicType: Default,
{
    match api.get(name).await {
        Ok(obj) => Ok(Some(obj)),
        Err(kube::Error::Api(status)) if confirms_missing_of::<K>(&status, name) => Ok(None),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use kube::core::response::StatusDetails;

    const RBAC: &str = "rbac.authorization.k8s.io";

    fn answer(code: u16, reason: &str, details: Option<(&str, &str, &str)>) -> Status {
        Status {
            code,
            reason: reason.into(),
            details: details.map(|(group, kind, name)| StatusDetails {
                name: name.into(),
                group: group.into(),
                kind: kind.into(),
                uid: String::new(),
                causes: Vec::new(),
                retry_after_seconds: 0,
            }),
            ..Status::default()
        }
    }

    #[test]
    fn only_a_not_found_naming_the_object_its_resource_and_group_confirms_it_missing() {
        let cases = [
            // What the store of a real server answers for a missing ClusterRole.
            (
                answer(404, "NotFound", Some((RBAC, "clusterroles", "veiw"))),
                true,
            ),
            // A path nothing serves, read by kube from a plain-text `404 page not found`.
            (answer(404, "Failed to parse error data", None), false),
            // A route a served group does not have: `the server could not find the requested
            // resource`, naming nothing.
            (answer(404, "NotFound", None), false),
            (
                answer(404, "NotFound", Some((RBAC, "clusterroles", "view"))),
                false,
            ),
            (
                answer(404, "NotFound", Some((RBAC, "roles", "veiw"))),
                false,
            ),
            (
                answer(404, "NotFound", Some(("", "clusterroles", "veiw"))),
                false,
            ),
            (
                answer(409, "NotFound", Some((RBAC, "clusterroles", "veiw"))),
                false,
            ),
        ];
        for (status, missing) in cases {
            assert_eq!(
                confirms_missing_of::<ClusterRole>(&status, "veiw"),
                missing,
                "{status:?}"
            );
        }
        // The core group is the empty one, as the server leaves it out of the details.
        let core = answer(404, "NotFound", Some(("", "configmaps", "settings")));
        assert!(confirms_missing_of::<ConfigMap>(&core, "settings"));
    }
}
