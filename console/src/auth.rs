//! Sign-in: the OpenID Connect authorization code flow with PKCE (S256), `state` and `nonce`
//! (crate `openidconnect`), server-side sessions behind an HttpOnly, SameSite=Lax cookie
//! (Secure when users reach the console over HTTPS), and one CSRF token per session that
//! every form carries.
//!
//! The session keeps the user's ID token: it is the bearer of every Kubernetes request made
//! for them, so the API server authenticates the person (it trusts the same issuer) and its
//! RBAC judges them. When the provider issued a refresh token, a session whose ID token is about
//! to expire gets a new one (verified like the first, same subject); otherwise, or when the
//! refresh is refused, the session ends with its ID token. Signing out ends the provider's
//! session too when its discovery document offers RP-initiated logout (`end_session_endpoint`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreIdToken};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, LogoutRequest, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, PostLogoutRedirectUrl,
    ProviderMetadataWithLogout, RedirectUrl, RefreshToken, Scope, TokenResponse,
};
use pgtoolbox_api::console::OidcEnv;
use pgtoolbox_sim::auth::oidc::{HttpsClientOf, https_client};

pub const SESSION_COOKIE: &str = "pgtoolbox_console_session";
pub const LOGIN_COOKIE: &str = "pgtoolbox_console_login";
/// How long a started sign-in may take at the provider.
const LOGIN_TTL_SECONDS: i64 = 600;
/// A session with a refresh token gets a new ID token once its own has less than this left.
pub const REFRESH_BEFORE_SECONDS: i64 = 60;
/// How long after its ID token expired a session with a refresh token is kept for a refresh
/// (a person who comes back within this keeps their session; later they sign in again).
pub const REFRESH_GRACE_SECONDS: i64 = 8 * 3600;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("the identity provider cannot be reached or answered badly: {0}")]
    Provider(String),
    #[error("the sign-in could not be completed: {0}")]
    Callback(String),
    #[error("the session could not be renewed: {0}")]
    Refresh(String),
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
    /// The provider's refresh token, when it issued one.
    pub refresh_token: Option<String>,
    /// The ID token's subject: a refreshed token must name the same person.
    pub subject: String,
    /// The sign-in's nonce: a refreshed token may repeat it, never carry another.
    pub nonce: String,
}

impl Session {
    /// Until when the session is kept: its ID token's expiry, or with a refresh token that
    /// plus [`REFRESH_GRACE_SECONDS`].
    pub fn kept_until(&self) -> i64 {
        if self.refresh_token.is_some() {
            self.expires_at + REFRESH_GRACE_SECONDS
        } else {
            self.expires_at
        }
    }

    /// Whether the ID token should be renewed now.
    pub fn due_for_refresh(&self, now: i64) -> bool {
        self.refresh_token.is_some()
            && self.expires_at - now < REFRESH_BEFORE_SECONDS
            && self.kept_until() > now
    }
}

struct PendingLogin {
    verifier: PkceCodeVerifier,
    nonce: Nonce,
    redirect: String,
    started: i64,
}

type Http = HttpsClientOf<Full<Bytes>>;

/// The client discovery makes: authorization endpoint set, token and user-info endpoints as
/// the provider lists them.
type Client = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// The provider's settings and what the console holds of it.
pub struct Oidc {
    env: OidcEnv,
    http: Http,
    metadata: tokio::sync::OnceCell<ProviderMetadataWithLogout>,
    logins: Mutex<HashMap<String, PendingLogin>>,
    /// One refresh at a time: a rotated refresh token must not be spent twice.
    refreshing: tokio::sync::Mutex<()>,
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
            refreshing: tokio::sync::Mutex::new(()),
        })
    }

    /// Whether the provider's discovery document has been read (readiness).
    pub fn ready(&self) -> bool {
        self.metadata.initialized()
    }

    /// The provider's metadata, read once (discovery; its JWKS with it).
    pub async fn metadata(&self) -> Result<&ProviderMetadataWithLogout, AuthError> {
        self.metadata
            .get_or_try_init(|| async {
                let issuer = IssuerUrl::new(self.env.issuer_url.clone())
                    .map_err(|e| AuthError::Provider(e.to_string()))?;
                let http = self.http.clone();
                ProviderMetadataWithLogout::discover_async(issuer, &move |r| send(http.clone(), r))
                    .await
                    .map_err(|e| AuthError::Provider(e.to_string()))
            })
            .await
    }

    async fn client(&self, redirect: &str) -> Result<Client, AuthError> {
        let redirect = RedirectUrl::new(redirect.to_string())
            .map_err(|e| AuthError::Callback(e.to_string()))?;
        Ok(self.base_client().await?.set_redirect_uri(redirect))
    }

    /// The client without a redirect (refreshes need none).
    async fn base_client(&self) -> Result<Client, AuthError> {
        let metadata = self.metadata().await?.clone();
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.env.client_id.clone()),
            Some(ClientSecret::new(self.env.client_secret.clone())),
        ))
    }

    /// A new ID token for `session` with its refresh token (one refresh at a time; a session
    /// another request renewed meanwhile is answered as it is). The new token is verified as
    /// the first (signature, issuer, audience, expiry), must name the same subject and carry
    /// no nonce but the sign-in's.
    pub async fn refresh(&self, sessions: &Sessions, id: &str) -> Result<Session, AuthError> {
        let _one = self.refreshing.lock().await;
        let session = sessions
            .get_kept(id)
            .ok_or_else(|| AuthError::Refresh("the session is gone".into()))?;
        let Some(refresh) = session
            .refresh_token
            .clone()
            .filter(|_| session.due_for_refresh(now()))
        else {
            return Ok(session);
        };
        let client = self.base_client().await?;
        let http = self.http.clone();
        let refresh = RefreshToken::new(refresh);
        let token = client
            .exchange_refresh_token(&refresh)
            .map_err(|e| AuthError::Refresh(e.to_string()))?
            .request_async(&move |r| send(http.clone(), r))
            .await
            .map_err(|e| AuthError::Refresh(format!("token endpoint: {e}")))?;
        let id_token = token
            .id_token()
            .ok_or_else(|| AuthError::Refresh("the provider returned no ID token".into()))?;
        let first = session.nonce.clone();
        let claims = id_token
            .claims(&client.id_token_verifier(), |n: Option<&Nonce>| match n {
                Some(n) if !same(n.secret(), &first) => Err("nonce mismatch".to_string()),
                _ => Ok(()),
            })
            .map_err(|e| AuthError::Refresh(format!("ID token: {e}")))?;
        if claims.subject().as_str() != session.subject {
            return Err(AuthError::Refresh(
                "the new ID token names another subject".into(),
            ));
        }
        let renewed = Session {
            id_token: id_token.to_string(),
            display: display_name(claims),
            expires_at: claims.expiration().timestamp(),
            refresh_token: token
                .refresh_token()
                .map(|r| r.secret().clone())
                .or(session.refresh_token.clone()),
            ..session
        };
        sessions.replace(id, renewed.clone());
        Ok(renewed)
    }

    /// Where to send the browser to end its session at the provider, when the provider
    /// offers RP-initiated logout: its `end_session_endpoint` with the ID token as the hint
    /// and `post_logout` as the way back.
    pub fn end_session_url(&self, id_token: &str, post_logout: &str) -> Option<String> {
        let endpoint = self
            .metadata
            .get()?
            .additional_metadata()
            .end_session_endpoint
            .clone()?;
        let hint: CoreIdToken = id_token.parse().ok()?;
        let back = PostLogoutRedirectUrl::new(post_logout.to_string()).ok()?;
        Some(
            LogoutRequest::from(endpoint)
                .set_id_token_hint(&hint)
                .set_client_id(ClientId::new(self.env.client_id.clone()))
                .set_post_logout_redirect_uri(back)
                .http_get_url()
                .to_string(),
        )
    }

    /// The origin of the provider's `end_session_endpoint` (the sign-out form posts lead
    /// there), once the metadata is read.
    pub fn end_session_origin(&self) -> Option<String> {
        let endpoint = self
            .metadata
            .get()?
            .additional_metadata()
            .end_session_endpoint
            .as_ref()?
            .url()
            .origin();
        endpoint.is_tuple().then(|| endpoint.ascii_serialization())
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
        let id_token = token
            .id_token()
            .ok_or_else(|| AuthError::Callback("the provider returned no ID token".into()))?;
        let claims = id_token
            .claims(&client.id_token_verifier(), &pending.nonce)
            .map_err(|e| AuthError::Callback(format!("ID token: {e}")))?;
        Ok(Session {
            id_token: id_token.to_string(),
            display: display_name(claims),
            expires_at: claims.expiration().timestamp(),
            csrf: random_token(),
            flash: None,
            refresh_token: token.refresh_token().map(|r| r.secret().clone()),
            subject: claims.subject().as_str().to_string(),
            nonce: pending.nonce.secret().clone(),
        })
    }
}

/// What the page calls the person: the ID token's name, else email, else subject.
fn display_name(claims: &openidconnect::core::CoreIdTokenClaims) -> String {
    claims
        .name()
        .and_then(|n| n.get(None))
        .map(|n| n.as_str().to_string())
        .or_else(|| claims.email().map(|e| e.as_str().to_string()))
        .unwrap_or_else(|| claims.subject().as_str().to_string())
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
        map.retain(|_, s| s.kept_until() > now);
        map.insert(id.clone(), session);
        id
    }

    /// The live session of `id` (its ID token not expired); one past
    /// [`Session::kept_until`] is removed.
    pub fn get(&self, id: &str) -> Option<Session> {
        self.get_kept(id).filter(|s| s.expires_at > now())
    }

    /// The session of `id`, even with an expired ID token while it may still be refreshed.
    pub fn get_kept(&self, id: &str) -> Option<Session> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(id) {
            Some(s) if s.kept_until() > now() => Some(s.clone()),
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    /// Puts a renewed session in place (not if it was removed meanwhile: signed out). Its
    /// flash, set by a request that ran during the refresh, is kept.
    pub fn replace(&self, id: &str, session: Session) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = map.get_mut(id) {
            let flash = s.flash.take();
            *s = Session { flash, ..session };
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
            refresh_token: None,
            subject: "s".into(),
            nonce: "n".into(),
        });
        let dead = sessions.insert(Session {
            id_token: "t".into(),
            display: "b".into(),
            expires_at: now() - 1,
            csrf: "c".into(),
            flash: None,
            refresh_token: None,
            subject: "s".into(),
            nonce: "n".into(),
        });
        assert!(sessions.get(&live).is_some());
        assert!(sessions.get(&dead).is_none());
        sessions.remove(&live);
        assert!(sessions.get(&live).is_none());
    }

    #[test]
    fn a_session_with_a_refresh_token_waits_for_its_renewal() {
        let sessions = Sessions::default();
        let session = |expires_at, refresh_token: Option<&str>| Session {
            id_token: "t".into(),
            display: "a".into(),
            expires_at,
            csrf: "c".into(),
            flash: None,
            refresh_token: refresh_token.map(str::to_string),
            subject: "s".into(),
            nonce: "n".into(),
        };
        let now = now();
        // Expired, refreshable: not served, but kept for its renewal.
        let id = sessions.insert(session(now - 1, Some("r")));
        assert!(sessions.get(&id).is_none());
        let kept = sessions.get_kept(&id).expect("kept for a refresh");
        assert!(kept.due_for_refresh(now));
        sessions.set_flash(&id, Some((true, "done".into())));
        sessions.replace(&id, session(now + 300, Some("r2")));
        let renewed = sessions.get(&id).expect("served again");
        assert_eq!(renewed.refresh_token.as_deref(), Some("r2"));
        assert_eq!(
            renewed.flash,
            Some((true, "done".into())),
            "the flash survives"
        );
        assert!(!renewed.due_for_refresh(now), "five minutes left: not yet");
        assert!(session(now + 30, Some("r")).due_for_refresh(now));
        assert!(
            !session(now + 30, None).due_for_refresh(now),
            "nothing to renew with"
        );
        // Past the grace: gone.
        let old = sessions.insert(session(now - REFRESH_GRACE_SECONDS - 1, Some("r")));
        assert!(sessions.get_kept(&old).is_none());
        // A signed-out session is not brought back by a late renewal.
        sessions.remove(&id);
        sessions.replace(&id, session(now + 300, Some("r3")));
        assert!(sessions.get_kept(&id).is_none());
    }
}
