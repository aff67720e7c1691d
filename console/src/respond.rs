//! What every page handler answers with: HTML with the security headers, redirects that set
//! cookies, the sign-in page, a signed-in user's page; and `SignedPost`, the one extractor every
//! form goes through.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Form};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::auth::{Session, same};
use crate::html;
use crate::state::{Console, Shared};

/// A page of the signed-in user (the sign-in page without a session): `title`, under the menu
/// entry `active`, its body built by `body` with the user's own client (`Err` saying why when
/// none can be made) and session, after the message the last form left, which it clears.
pub(crate) async fn user_page<F, Fut>(
    c: &Console,
    headers: &HeaderMap,
    title: &str,
    active: &str,
    body: F,
) -> Response
where
    F: FnOnce(Result<kube::Client, String>, Session) -> Fut,
    Fut: std::future::Future<Output = String>,
{
    let Some((id, session)) = c.session(headers) else {
        return sign_in_page(c);
    };
    c.sessions.set_flash(&id, None);
    let flash = html::flash(session.flash.as_ref());
    let client = c.user_client(&session);
    let inner = body(client, session.clone()).await;
    html_response(
        StatusCode::OK,
        html::page(
            title,
            &c.chrome(Some(&session), active),
            &format!("{flash}{inner}"),
        ),
    )
}

pub(crate) fn html_response(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    security_headers(h);
    r
}

fn security_headers(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

pub(crate) fn redirect_with_cookies(to: &str, cookies: &[String]) -> Response {
    let mut r = Redirect::to(to).into_response();
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(c) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    security_headers(r.headers_mut());
    r
}

pub(crate) fn sign_in_page(c: &Console) -> Response {
    html_response(
        StatusCode::OK,
        html::page("Sign in", &c.chrome(None, ""), &html::sign_in()),
    )
}

/// A form post of a signed-in session whose CSRF token is the session's, with the client
/// address the decision is logged with. Every form handler takes its form through this, so
/// none can skip the check: without a session the post is sent home, with a wrong token it is
/// refused (403).
pub(crate) struct SignedPost<T> {
    pub(crate) id: String,
    pub(crate) session: Session,
    pub(crate) client: std::net::IpAddr,
    pub(crate) forwarded: bool,
    pub(crate) form: T,
}

/// A form carrying the session's CSRF token.
pub(crate) trait CsrfToken {
    fn csrf(&self) -> &str;
}

impl<T> axum::extract::FromRequest<Shared> for SignedPost<T>
where
    T: serde::de::DeserializeOwned + CsrfToken + Send,
{
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, c: &Shared) -> Result<Self, Response> {
        use axum::extract::FromRequestParts;
        let (mut parts, body) = req.into_parts();
        let ConnectInfo(peer) = ConnectInfo::<SocketAddr>::from_request_parts(&mut parts, c)
            .await
            .map_err(IntoResponse::into_response)?;
        let headers = parts.headers.clone();
        let Form(form) =
            Form::<T>::from_request(axum::extract::Request::from_parts(parts, body), c)
                .await
                .map_err(IntoResponse::into_response)?;
        let Some((id, session)) = c.session(&headers) else {
            return Err(redirect_with_cookies("/", &[]));
        };
        if !same(&session.csrf, form.csrf()) {
            c.metrics.csrf_refused.inc();
            return Err(html_response(
                StatusCode::FORBIDDEN,
                html::page(
                    "Refused",
                    &c.chrome(Some(&session), ""),
                    &html::error_page(
                        "This form was not sent from a page of this console (CSRF check failed).",
                    ),
                ),
            ));
        }
        let (client, forwarded) = c.trust.client(peer, &headers);
        Ok(SignedPost {
            id,
            session,
            client,
            forwarded,
            form,
        })
    }
}
