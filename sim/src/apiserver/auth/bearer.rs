//! Bearer tokens to identities: the sim's own tokens, OpenID Connect ID tokens of the
//! configured issuer, and ServiceAccount tokens (see `super::identity` for the forms).

use base64::Engine;
use serde_json::Value;

use super::identity::{Identity, TOKEN_PREFIX, b64, service_account};
use crate::apiserver::error::ApiError;
use crate::apiserver::server::Server;

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
        let groups = crate::store::meta::string_list(&claims, "groups");
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
    use crate::apiserver::auth::identity::{AUTHENTICATED, token_for};

    #[test]
    fn issued_tokens_round_trip_and_garbage_is_401() {
        let server = Server::new(
            crate::apiserver::config::SimConfig::default(),
            "127.0.0.1:0".into(),
        );
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
