//! How a session ends, and how it does not: a middleware that renews the ID token of a session
//! with a refresh token before any handler reads the session (so every Kubernetes request of
//! the page carries the new token), and the sign-out's way to the provider (RP-initiated
//! logout), whose origin the pages' `form-action` must then allow.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::auth::{SESSION_COOKIE, cookie, now, set_cookie};
use crate::state::Shared;

/// Renews the session's ID token when it is due (see `Session::due_for_refresh`); a refused
/// refresh ends the session. A renewed session's cookie is set again to live as long as the
/// session is kept. Answers also allow the sign-out form to lead to the provider's
/// `end_session_endpoint`.
pub(crate) async fn renew(State(c): State<Shared>, request: Request, next: Next) -> Response {
    let mut renewed_cookie = None;
    if let (Some(oidc), Some(id)) = (c.oidc(), cookie(request.headers(), SESSION_COOKIE))
        && c.sessions()
            .get_kept(&id)
            .is_some_and(|s| s.due_for_refresh(now()))
    {
        let secure = c.secure(request.headers());
        match oidc.refresh(c.sessions(), &id).await {
            Ok(session) => {
                tracing::info!(user = %session.display, "ID token renewed with the refresh token");
                let max_age = (session.kept_until() - now()).max(0);
                renewed_cookie = Some(set_cookie(SESSION_COOKIE, &id, secure, max_age));
            }
            Err(e) => {
                tracing::info!(reason = %e, "session ended: its ID token could not be renewed");
                c.sessions().remove(&id);
                renewed_cookie = Some(set_cookie(SESSION_COOKIE, "", secure, 0));
            }
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if let Some(v) = renewed_cookie.and_then(|v| HeaderValue::from_str(&v).ok()) {
        headers.append(header::SET_COOKIE, v);
    }
    if let Some(origin) = c.oidc().and_then(|o| o.end_session_origin())
        && let Some(csp) = headers
            .get(header::CONTENT_SECURITY_POLICY)
            .and_then(|v| v.to_str().ok())
            .map(|v| allow_form_action(v, &origin))
        && let Ok(v) = HeaderValue::from_str(&csp)
    {
        headers.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    response
}

/// The policy with `origin` added to `form-action` (a form's redirect is checked against it:
/// the sign-out form ends at the provider).
pub fn allow_form_action(policy: &str, origin: &str) -> String {
    policy
        .split(';')
        .map(|d| {
            let d = d.trim();
            if d.starts_with("form-action ") {
                format!("{d} {origin}")
            } else {
                d.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_is_added_to_form_action_only() {
        assert_eq!(
            allow_form_action(
                "default-src 'none'; form-action 'self'; frame-ancestors 'none'",
                "https://id.example.org"
            ),
            "default-src 'none'; form-action 'self' https://id.example.org; frame-ancestors 'none'"
        );
    }
}
