//! Sign-in: the OpenID Connect authorization code flow with PKCE (S256), `state` and `nonce`
//! (crate `openidconnect`), server-side sessions behind an HttpOnly, SameSite=Lax cookie
//! (Secure when users reach the console over HTTPS), and one CSRF token per session that
//! every form carries.
//!
//! The session keeps the user's ID token: it is the bearer of every Kubernetes request made
//! for them, so the API server authenticates the person (it trusts the same issuer) and its
//! RBAC judges them. The session ends when the ID token expires.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use pgtoolbox_api::console::OidcEnv;
use pgtoolbox_sim::auth::oidc::{HttpsClientOf, https_client};

pub const SESSION_COOKIE: &str = "pgtoolbox_console_session";
pub const LOGIN_COOKIE: &str = "pgtoolbox_console_login";
/// How long a started sign-in may take at the provider.
const LOGIN_TTL_SECONDS: i64 = 600;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("the identity provider cannot be reached or answered badly: {0}")]
    Provider(String),
    #[error("the sign-in could not be completed: {0}")]
    Callback(String),
}

/// A signed-in user.
#[derive(Clone)]
pub struct Session {
    pub id_token: String,
    /// What the page calls them (name, email or subject of the ID token).
    pub display: String,
    pub expires_at: i64,
    pub csrf: String,
    /// The outcome of the last action, shown once.
    pub flash: Option<(bool, String)>,
}

struct PendingLogin {
    verifier: PkceCodeVerifier,
    nonce: Nonce,
    redirect: String,
    started: i64,
}

type Http = HttpsClientOf<Full<Bytes>>;

/// The provider's settings and what the console holds of it.
pub struct Oidc {
    env: OidcEnv,
    http: Http,
    metadata: tokio::sync::OnceCell<CoreProviderMetadata>,
    logins: Mutex<HashMap<String, PendingLogin>>,
}

pub fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// 32 random bytes, hex: session ids and CSRF tokens.
pub fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    hex::encode(bytes)
}

/// Equal without an early exit at the first differing byte.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

async fn send(
    http: Http,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, AuthError> {
    let (parts, body) = request.into_parts();
    let request = http::Request::from_parts(parts, Full::new(Bytes::from(body)));
    let response = tokio::time::timeout(std::time::Duration::from_secs(10), http.request(request))
        .await
        .map_err(|_| AuthError::Provider("timed out".into()))?
        .map_err(|e| AuthError::Provider(e.to_string()))?;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| AuthError::Provider(e.to_string()))?
        .to_bytes();
    Ok(http::Response::from_parts(parts, body.to_vec()))
}

impl Oidc {
    pub fn new(env: OidcEnv) -> Result<Self, String> {
        let http = https_client(env.ca_file.as_deref().map(Path::new))?;
        Ok(Self {
            env,
            http,
            metadata: tokio::sync::OnceCell::new(),
            logins: Mutex::new(HashMap::new()),
        })
    }

    /// Whether the provider's discovery document has been read (readiness).
    pub fn ready(&self) -> bool {
        self.metadata.initialized()
    }

    /// The provider's metadata, read once (discovery; its JWKS with it).
    pub async fn metadata(&self) -> Result<&CoreProviderMetadata, AuthError> {
        self.metadata
            .get_or_try_init(|| async {
                let issuer = IssuerUrl::new(self.env.issuer_url.clone())
                    .map_err(|e| AuthError::Provider(e.to_string()))?;
                let http = self.http.clone();
                CoreProviderMetadata::discover_async(issuer, &move |r| send(http.clone(), r))
                    .await
                    .map_err(|e| AuthError::Provider(e.to_string()))
            })
            .await
    }

    async fn client(
        &self,
        redirect: &str,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        AuthError,
    > {
        let metadata = self.metadata().await?.clone();
        let redirect = RedirectUrl::new(redirect.to_string())
            .map_err(|e| AuthError::Callback(e.to_string()))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.env.client_id.clone()),
            Some(ClientSecret::new(self.env.client_secret.clone())),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a sign-in: the provider's URL to send the browser to, and the `state` the
    /// browser's login cookie binds the callback to.
    pub async fn begin(&self, redirect: &str) -> Result<(String, String), AuthError> {
        let client = self.client(redirect).await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .add_scope(Scope::new("profile".into()))
            .add_scope(Scope::new("groups".into()))
            .set_pkce_challenge(challenge)
            .url();
        let mut logins = self.logins.lock().unwrap_or_else(|p| p.into_inner());
        let now = now();
        logins.retain(|_, l| now - l.started < LOGIN_TTL_SECONDS);
        logins.insert(
            state.secret().clone(),
            PendingLogin {
                verifier,
                nonce,
                redirect: redirect.to_string(),
                started: now,
            },
        );
        Ok((url.to_string(), state.secret().clone()))
    }

    /// Completes a sign-in: `state` must be the one this browser started (its login cookie),
    /// the code is exchanged with the PKCE verifier, the ID token verified (signature, issuer,
    /// audience, expiry, nonce).
    pub async fn complete(
        &self,
        state: &str,
        cookie_state: Option<&str>,
        code: &str,
    ) -> Result<Session, AuthError> {
        if !cookie_state.is_some_and(|c| same(c, state)) {
            return Err(AuthError::Callback(
                "this sign-in was not started from this browser".into(),
            ));
        }
        let pending = self
            .logins
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(state)
            .filter(|l| now() - l.started < LOGIN_TTL_SECONDS)
            .ok_or_else(|| AuthError::Callback("unknown or expired sign-in".into()))?;
        let client = self.client(&pending.redirect).await?;
        let http = self.http.clone();
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| AuthError::Provider(e.to_string()))?
            .set_pkce_verifier(pending.verifier)
            .request_async(&move |r| send(http.clone(), r))
            .await
            .map_err(|e| AuthError::Callback(format!("token exchange: {e}")))?;
        let _ = token.access_token();
        let id_token = token
            .id_token()
            .ok_or_else(|| AuthError::Callback("the provider returned no ID token".into()))?;
        let claims = id_token
            .claims(&client.id_token_verifier(), &pending.nonce)
            .map_err(|e| AuthError::Callback(format!("ID token: {e}")))?;
        let display = claims
            .name()
            .and_then(|n| n.get(None))
            .map(|n| n.as_str().to_string())
            .or_else(|| claims.email().map(|e| e.as_str().to_string()))
            .unwrap_or_else(|| claims.subject().as_str().to_string());
        Ok(Session {
            id_token: id_token.to_string(),
            display,
            expires_at: claims.expiration().timestamp(),
            csrf: random_token(),
            flash: None,
        })
    }
}

/// The signed-in users, by session id.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    pub fn insert(&self, session: Session) -> String {
        let id = random_token();
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let now = now();
        map.retain(|_, s| s.expires_at > now);
        map.insert(id.clone(), session);
        id
    }

    /// The live session of `id`; an expired one is removed.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(id) {
            Some(s) if s.expires_at > now() => Some(s.clone()),
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    pub fn remove(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// Sets (or, with `None`, takes) the message shown once on the next page.
    pub fn set_flash(&self, id: &str, flash: Option<(bool, String)>) {
        if let Some(s) = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(id)
        {
            s.flash = flash;
        }
    }

    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A cookie's value from the request's `Cookie` headers.
pub fn cookie(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax (the provider's redirect back is a top-level
/// GET that must carry the login cookie), Secure over HTTPS; `max_age` 0 deletes it.
pub fn set_cookie(name: &str, value: &str, secure: bool, max_age: i64) -> String {
    format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{}",
        if secure { "; Secure" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_and_written_safely() {
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::COOKIE,
            "a=1; pgtoolbox_console_session=xyz".parse().unwrap(),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE).as_deref(), Some("xyz"));
        assert_eq!(cookie(&h, "b"), None);
        let c = set_cookie(SESSION_COOKIE, "v", true, 60);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Lax") && c.ends_with("Secure"));
        assert!(!set_cookie(SESSION_COOKIE, "v", false, 60).contains("Secure"));
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
        assert_ne!(random_token(), random_token());
    }

    #[test]
    fn expired_sessions_are_gone() {
        let sessions = Sessions::default();
        let live = sessions.insert(Session {
            id_token: "t".into(),
            display: "a".into(),
            expires_at: now() + 60,
            csrf: "c".into(),
            flash: None,
        });
        let dead = sessions.insert(Session {
            id_token: "t".into(),
            display: "b".into(),
            expires_at: now() - 1,
            csrf: "c".into(),
            flash: None,
        });
        assert!(sessions.get(&live).is_some());
        assert!(sessions.get(&dead).is_none());
        sessions.remove(&live);
        assert!(sessions.get(&live).is_none());
    }
}
