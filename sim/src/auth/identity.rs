//! Who a request comes from: bearer tokens to users, groups and ServiceAccounts.
//!
//! - No `Authorization` header: the sim's own kubeconfig, the admin (`system:masters`).
//! - `sim-user.<base64url JSON {"user","groups"}>`: a kubeconfig `/_sim/kubeconfig` issued.
//! - An OpenID Connect ID token of the configured issuer (`super::oidc`), as kube-apiserver's
//!   `--oidc-*` flags authenticate it.
//! - A ServiceAccount token from `serviceaccounts/<name>/token`: the ServiceAccount, while it
//!   exists with the same uid and the token has not expired.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::server::Server;

pub const ADMIN_USER: &str = "system:sim";
pub const MASTERS: &str = "system:masters";
pub const AUTHENTICATED: &str = "system:authenticated";
const SA_PREFIX: &str = "system:serviceaccount:";
const TOKEN_PREFIX: &str = "sim-user.";

/// An authenticated identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
    /// The user's uid, when the authenticator knows one (a ServiceAccount's).
    pub uid: Option<String>,
    /// Extra attributes (`authentication.kubernetes.io/credential-id` of a token).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Identity {
    pub fn admin() -> Self {
        Self {
            user: ADMIN_USER.into(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
            uid: None,
            extra: BTreeMap::new(),
        }
    }

    /// A user with its groups as a real authenticator completes them: ServiceAccounts get
    /// `system:serviceaccounts` and `system:serviceaccounts:<ns>`, everyone
    /// `system:authenticated`.
    pub fn new(user: &str, groups: &[String]) -> Self {
        let mut all: Vec<String> = groups.to_vec();
        let mut add = |g: String| {
            if !all.contains(&g) {
                all.push(g);
            }
        };
        if let Some((ns, _)) = service_account(user) {
            add("system:serviceaccounts".into());
            add(format!("system:serviceaccounts:{ns}"));
        }
        add(AUTHENTICATED.into());
        Self {
            user: user.into(),
            groups: all,
            uid: None,
            extra: BTreeMap::new(),
        }
    }

    /// The `userInfo` of a SelfSubjectReview (and of an admission request): `uid` and `extra`
    /// only when set, as the API's `omitempty` fields.
    pub fn user_info(&self) -> Value {
        let mut info = json!({"username": self.user, "groups": self.groups});
        if let Some(uid) = &self.uid {
            info["uid"] = json!(uid);
        }
        if !self.extra.is_empty() {
            info["extra"] = json!(self.extra);
        }
        info
    }

    /// Members of `system:masters` pass every check, as on a real server.
    pub fn is_admin(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// `(namespace, name)` of a `system:serviceaccount:<ns>:<name>` user.
pub fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SA_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// The bearer token a `/_sim/kubeconfig` for this identity carries.
pub fn token_for(user: &str, groups: &[String]) -> String {
    let claims = json!({"user": user, "groups": groups});
    format!("{TOKEN_PREFIX}{}", b64().encode(claims.to_string()))
}

/// The identity of a bearer token, or 401.
pub fn authenticate(server: &Server, authorization: Option<&str>) -> Result<Identity, ApiError> {
    let Some(value) = authorization else {
        return Ok(Identity::admin());
    };
    let token = value
        .strip_prefix("Bearer ")
        .map(str::trim)
        .ok_or_else(ApiError::unauthorized)?;
    if let Some(encoded) = token.strip_prefix(TOKEN_PREFIX) {
        let claims: Value = b64()
            .decode(encoded)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(ApiError::unauthorized)?;
        let user = claims["user"].as_str().ok_or_else(ApiError::unauthorized)?;
        let groups: Vec<String> = claims["groups"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        return Ok(Identity::new(user, &groups));
    }
    if let Some(oidc) = server.oidc.get()
        && super::oidc::unverified_issuer(token).as_deref() == Some(oidc.issuer_url())
    {
        return oidc
            .authenticate(token, jiff::Timestamp::now().as_second())
            .map_err(|e| {
                tracing::info!(error = %e, "bearer token refused");
                ApiError::unauthorized()
            });
    }
    service_account_token(server, token).ok_or_else(ApiError::unauthorized)
}

/// A TokenRequest JWT: its subject, while the ServiceAccount it names lives on with the same
/// uid and the token is within its lifetime.
fn service_account_token(server: &Server, token: &str) -> Option<Identity> {
    let mut parts = token.split('.');
    let (_, payload) = (parts.next()?, parts.next()?);
    let claims: Value = serde_json::from_slice(&b64().decode(payload).ok()?).ok()?;
    let user = claims["sub"].as_str()?;
    let (ns, name) = service_account(user)?;
    if claims["exp"].as_i64()? <= jiff::Timestamp::now().as_second() {
        return None;
    }
    let key = ("".to_string(), "serviceaccounts".to_string());
    let sa = server
        .store
        .lock()
        .get(&key, &(ns.to_string(), name.to_string()))?;
    let uid = claims
        .pointer("/kubernetes.io/serviceaccount/uid")
        .and_then(Value::as_str);
    let sa_uid = sa.pointer("/metadata/uid").and_then(Value::as_str);
    if uid != sa_uid {
        return None;
    }
    // The ServiceAccount token authenticator names the ServiceAccount's uid and the token's
    // id (`JTI=<jti>`) as the credential.
    let mut id = Identity::new(user, &[]);
    id.uid = sa_uid.map(str::to_string);
    if let Some(jti) = claims["jti"].as_str() {
        id.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec![format!("JTI={jti}")],
        );
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_users_get_their_groups() {
        let id = Identity::new("system:serviceaccount:ops:op", &["extra".into()]);
        assert_eq!(
            id.groups,
            vec![
                "extra",
                "system:serviceaccounts",
                "system:serviceaccounts:ops",
                "system:authenticated"
            ]
        );
        assert!(!id.is_admin());
        assert_eq!(service_account("system:serviceaccount:a:b:c"), None);
        assert_eq!(service_account("alice"), None);
    }

    #[test]
    fn issued_tokens_round_trip_and_garbage_is_401() {
        let server = Server::new(crate::config::SimConfig::default(), "127.0.0.1:0".into());
        let token = token_for("alice", &["dev".into()]);
        let id = authenticate(&server, Some(&format!("Bearer {token}"))).unwrap();
        assert_eq!(id.user, "alice");
        assert_eq!(id.groups, vec!["dev", AUTHENTICATED]);
        assert!(authenticate(&server, None).unwrap().is_admin());
        assert_eq!(
            authenticate(&server, Some("Bearer nonsense"))
                .unwrap_err()
                .code,
            401
        );
        assert_eq!(
            authenticate(&server, Some("Basic x")).unwrap_err().code,
            401
        );
    }
}
