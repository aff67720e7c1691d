//! Impersonation (`kubectl --as`, `--as-group`): the requester needs `impersonate` on the
//! user (or the ServiceAccount) and on each group; the request then runs as that identity.

use axum::http::HeaderMap;

use super::identity::{Identity, service_account};
use super::rbac::{Attributes, authorize};
use crate::apiserver::error::ApiError;
use crate::apiserver::server::Server;

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// The identity a request acts as: `requester`, or whom it impersonates when allowed.
pub fn resolve(
    server: &Server,
    requester: Identity,
    headers: &HeaderMap,
) -> Result<Identity, ApiError> {
    let users = values(headers, "impersonate-user");
    let groups = values(headers, "impersonate-group");
    let Some(user) = users.first().copied() else {
        if groups.is_empty() {
            return Ok(requester);
        }
        return Err(ApiError::bad_request(
            "requested [Impersonate-Group] without impersonating a user",
        ));
    };
    let mut checks = vec![match service_account(user) {
        Some((ns, name)) => Attributes {
            name: name.into(),
            ..Attributes::resource("impersonate", "", "serviceaccounts", ns)
        },
        None => Attributes {
            name: user.into(),
            ..Attributes::resource("impersonate", "", "users", "")
        },
    }];
    for g in &groups {
        checks.push(Attributes {
            name: g.to_string(),
            ..Attributes::resource("impersonate", "", "groups", "")
        });
    }
    for a in &checks {
        if !authorize(server, &requester, a) {
            return Err(super::forbidden(&requester, a, Some(&a.name)));
        }
    }
    let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    Ok(Identity::new(user, &groups))
}
