//! Authentication, RBAC authorization, impersonation and the escalation checks of the
//! embedded API server. Admin requests (`system:masters`) skip the store entirely.

pub mod bearer;
pub mod escalation;
pub mod identity;
pub mod impersonate;
pub mod oidc;
pub mod rbac;

pub use bearer::authenticate;
pub use identity::{Identity, token_for};
pub use rbac::{Attributes, authorize};

use crate::apiserver::error::ApiError;

/// The 403 a refused request answers, worded as a real server's.
pub fn forbidden(id: &Identity, a: &Attributes, kind_name: Option<&str>) -> ApiError {
    if let Some(path) = &a.path {
        return ApiError::forbidden(format!(
            "forbidden: User \"{}\" cannot {} path \"{path}\"",
            id.user, a.verb
        ));
    }
    let qualified = if a.group.is_empty() {
        a.resource.clone()
    } else {
        format!("{}.{}", a.resource, a.group)
    };
    let subject = match kind_name {
        Some(n) if !n.is_empty() => format!("{qualified} \"{n}\""),
        _ => qualified,
    };
    let resource = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    let scope = if a.namespace.is_empty() {
        " at the cluster scope".to_string()
    } else {
        format!(" in the namespace \"{}\"", a.namespace)
    };
    let mut e = ApiError::forbidden(format!(
        "{subject} is forbidden: User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\"{scope}",
        id.user, a.verb, a.group
    ));
    e.details = Some(Box::new(crate::apiserver::error::Details {
        name: a.name.clone(),
        group: a.group.clone(),
        kind: a.resource.clone(),
        ..Default::default()
    }));
    e
}
