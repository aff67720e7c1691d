//! The HTTP server: routes, the per-user Kubernetes client, health, metrics, and a graceful
//! stop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::{ConnectInfo, Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use pgtoolbox_api::console::{CALLBACK_PATH, Env, HEALTHZ_PATH, METRICS_PATH, READYZ_PATH};
use pgtoolbox_operator::cli::access::{AccessCommand, RequestArgs, act, parse_duration};
use serde::Deserialize;

use crate::addr::ProxyTrust;
use crate::auth::{
    LOGIN_COOKIE, Oidc, SESSION_COOKIE, Session, Sessions, cookie, now, same, set_cookie,
};
use crate::html::{self, Chrome};

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

#[derive(Default)]
struct Counters {
    sign_ins: AtomicU64,
    sign_in_failures: AtomicU64,
    actions_done: AtomicU64,
    actions_refused: AtomicU64,
    csrf_refused: AtomicU64,
}

/// The console's state.
pub struct Console {
    env: Env,
    oidc: Option<Oidc>,
    sessions: Sessions,
    trust: ProxyTrust,
    /// Where the API server is, without any credentials: each request adds its user's.
    kube_base: kube::Config,
    counters: Counters,
}

impl Console {
    pub fn new(env: Env, mut kube_base: kube::Config) -> Result<Self, ConsoleError> {
        let oidc = match &env.oidc {
            Some(o) => Some(Oidc::new(o.clone()).map_err(ConsoleError::Config)?),
            None => None,
        };
        let trust = ProxyTrust::new(env.trust_x_forwarded_for, &env.trusted_proxies)
            .map_err(ConsoleError::Config)?;
        if trust.enabled && trust.proxies.is_empty() {
            tracing::warn!(
                "X-Forwarded-For trust is granted but no trusted proxy CIDR is given: it is believed from no one"
            );
        }
        // Never the ServiceAccount's token (or a kubeconfig's user): only the signed-in
        // user's ID token is ever sent.
        kube_base.auth_info = kube::config::AuthInfo::default();
        Ok(Self {
            env,
            oidc,
            sessions: Sessions::default(),
            trust,
            kube_base,
            counters: Counters::default(),
        })
    }

    /// A client that authenticates as the session's user (their ID token as the bearer).
    fn user_client(&self, session: &Session) -> Result<kube::Client, String> {
        let mut config = self.kube_base.clone();
        config.auth_info.token = Some(session.id_token.clone().into());
        kube::Client::try_from(config).map_err(|e| e.to_string())
    }

    fn secure(&self, headers: &HeaderMap) -> bool {
        self.base_url(headers).starts_with("https://")
    }

    /// The URL users reach the console at: `CONSOLE_PUBLIC_URL`, else this request's Host
    /// (https when a trusted proxy says so).
    fn base_url(&self, headers: &HeaderMap) -> String {
        if let Some(url) = &self.env.public_url {
            return url.clone();
        }
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        format!("http://{host}")
    }

    fn session(&self, headers: &HeaderMap) -> Option<(String, Session)> {
        let id = cookie(headers, SESSION_COOKIE)?;
        let session = self.sessions.get(&id)?;
        Some((id, session))
    }

    fn chrome<'a>(&'a self, session: Option<&'a Session>, active: &'a str) -> Chrome<'a> {
        Chrome {
            user: session.map(|s| s.display.as_str()),
            csrf: session.map(|s| s.csrf.as_str()),
            namespace: &self.env.namespace,
            active,
        }
    }

    fn metrics_text(&self) -> String {
        let c = &self.counters;
        let ready = u8::from(self.ready());
        format!(
            "# HELP pgtoolbox_console_sign_ins_total Completed sign-ins.\n# TYPE pgtoolbox_console_sign_ins_total counter\npgtoolbox_console_sign_ins_total {}\n# HELP pgtoolbox_console_sign_in_failures_total Sign-ins that could not be completed.\n# TYPE pgtoolbox_console_sign_in_failures_total counter\npgtoolbox_console_sign_in_failures_total {}\n# HELP pgtoolbox_console_actions_total Access-request actions, by outcome.\n# TYPE pgtoolbox_console_actions_total counter\npgtoolbox_console_actions_total{{outcome=\"done\"}} {}\npgtoolbox_console_actions_total{{outcome=\"refused\"}} {}\n# HELP pgtoolbox_console_csrf_refused_total Form posts refused for a missing or wrong CSRF token.\n# TYPE pgtoolbox_console_csrf_refused_total counter\npgtoolbox_console_csrf_refused_total {}\n# HELP pgtoolbox_console_sessions Signed-in sessions held.\n# TYPE pgtoolbox_console_sessions gauge\npgtoolbox_console_sessions {}\n# HELP pgtoolbox_console_ready Whether the console is ready (its identity provider's metadata read).\n# TYPE pgtoolbox_console_ready gauge\npgtoolbox_console_ready {ready}\n",
            c.sign_ins.load(Ordering::Relaxed),
            c.sign_in_failures.load(Ordering::Relaxed),
            c.actions_done.load(Ordering::Relaxed),
            c.actions_refused.load(Ordering::Relaxed),
            c.csrf_refused.load(Ordering::Relaxed),
            self.sessions.len(),
        )
    }

    fn ready(&self) -> bool {
        self.oidc.as_ref().is_none_or(Oidc::ready)
    }
}

type Shared = Arc<Console>;

fn html_response(status: StatusCode, body: String) -> Response {
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

fn redirect_with_cookies(to: &str, cookies: &[String]) -> Response {
    let mut r = Redirect::to(to).into_response();
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(c) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    security_headers(r.headers_mut());
    r
}

/// The router, for `serve` and the tests.
pub fn router(console: Shared) -> Router {
    let app = Router::new()
        .route(HEALTHZ_PATH, get(|| async { "ok" }))
        .route(READYZ_PATH, get(readyz))
        .route(METRICS_PATH, get(metrics))
        .route("/style.css", get(style));
    let app = if console.oidc.is_some() {
        app.route("/", get(clusters_page))
            .route("/access", get(access_page))
            .route("/access/request", post(request_access))
            .route("/access/{name}/{verb}", post(decide))
            .route("/login", get(login))
            .route(CALLBACK_PATH, get(callback))
            .route("/logout", post(logout))
    } else {
        app.fallback(not_configured)
    };
    app.with_state(console)
}

async fn readyz(State(c): State<Shared>) -> Response {
    if c.ready() {
        "ok".into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "the identity provider's metadata is not read yet",
        )
            .into_response()
    }
}

async fn metrics(State(c): State<Shared>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        c.metrics_text(),
    )
        .into_response()
}

async fn style() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        html::STYLESHEET,
    )
        .into_response()
}

async fn not_configured(State(c): State<Shared>) -> Response {
    html_response(
        StatusCode::NOT_FOUND,
        html::page(
            "Sign-in not configured",
            &c.chrome(None, ""),
            &html::not_configured(),
        ),
    )
}

fn sign_in_page(c: &Console) -> Response {
    html_response(
        StatusCode::OK,
        html::page("Sign in", &c.chrome(None, ""), &html::sign_in()),
    )
}

async fn clusters_page(State(c): State<Shared>, headers: HeaderMap) -> Response {
    let Some((id, session)) = c.session(&headers) else {
        return sign_in_page(&c);
    };
    let views = match c.user_client(&session) {
        Ok(client) => {
            crate::views::clusters(
                &client,
                &c.env.namespace,
                &c.env.name,
                c.env.cluster_selector.as_deref(),
                c.env.instance_ca_file.as_deref(),
            )
            .await
        }
        Err(e) => Err(e),
    };
    c.sessions.set_flash(&id, None);
    let body = format!(
        "{}{}",
        html::flash(session.flash.as_ref()),
        html::clusters(&views, &c.env.namespace)
    );
    html_response(
        StatusCode::OK,
        html::page("Clusters", &c.chrome(Some(&session), "clusters"), &body),
    )
}

async fn access_page(State(c): State<Shared>, headers: HeaderMap) -> Response {
    let Some((id, session)) = c.session(&headers) else {
        return sign_in_page(&c);
    };
    let requests = match c.user_client(&session) {
        Ok(client) => crate::views::access_requests(&client, &c.env.namespace).await,
        Err(e) => Err(e),
    };
    c.sessions.set_flash(&id, None);
    let body = format!(
        "{}{}",
        html::flash(session.flash.as_ref()),
        html::access(&requests, &c.env.namespace, &session.csrf)
    );
    html_response(
        StatusCode::OK,
        html::page(
            "Access requests",
            &c.chrome(Some(&session), "access"),
            &body,
        ),
    )
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

#[derive(Deserialize)]
struct RequestForm {
    #[serde(default)]
    csrf: String,
    name: String,
    role: String,
    duration: String,
    #[serde(default)]
    reason: String,
    /// How many distinct approvers the request asks for (the namespace's access policy may
    /// require more than one); absent: one.
    #[serde(default)]
    approvals: Option<i32>,
}

/// The session of a form post whose CSRF token is the session's; else the refusal.
fn checked(
    c: &Console,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<(String, Session), Box<Response>> {
    let Some((id, session)) = c.session(headers) else {
        return Err(Box::new(redirect_with_cookies("/", &[])));
    };
    if !same(&session.csrf, csrf) {
        c.counters.csrf_refused.fetch_add(1, Ordering::Relaxed);
        return Err(Box::new(html_response(
            StatusCode::FORBIDDEN,
            html::page(
                "Refused",
                &c.chrome(Some(&session), ""),
                &html::error_page(
                    "This form was not sent from a page of this console (CSRF check failed).",
                ),
            ),
        )));
    }
    Ok((id, session))
}

async fn run_action(
    c: &Console,
    id: &str,
    session: &Session,
    client_addr: std::net::IpAddr,
    forwarded: bool,
    what: &str,
    command: AccessCommand,
) {
    let outcome = match c.user_client(session) {
        Ok(client) => act(client, &c.env.namespace, &command)
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    match &outcome {
        Ok(message) => {
            c.counters.actions_done.fetch_add(1, Ordering::Relaxed);
            tracing::info!(user = %session.display, client = %client_addr, forwarded, action = what, outcome = %message.trim(), "access-request action done");
        }
        Err(reason) => {
            c.counters.actions_refused.fetch_add(1, Ordering::Relaxed);
            tracing::info!(user = %session.display, client = %client_addr, forwarded, action = what, %reason, "access-request action refused");
        }
    }
    let flash = match outcome {
        Ok(m) => (true, m.trim().to_string()),
        Err(e) => (false, format!("Refused: {e}")),
    };
    c.sessions.set_flash(id, Some(flash));
}

async fn decide(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((name, verb)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    let (id, session) = match checked(&c, &headers, &form.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let command = match verb.as_str() {
        "approve" => AccessCommand::Approve { name },
        "deny" => AccessCommand::Deny { name },
        "revoke" => AccessCommand::Revoke { name },
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let (addr, forwarded) = c.trust.client(peer, &headers);
    run_action(&c, &id, &session, addr, forwarded, &verb, command).await;
    redirect_with_cookies("/access", &[])
}

async fn request_access(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<RequestForm>,
) -> Response {
    let (id, session) = match checked(&c, &headers, &form.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let duration = match parse_duration(form.duration.trim()) {
        Ok(d) => d,
        Err(e) => {
            c.sessions
                .set_flash(&id, Some((false, format!("For how long: {e}"))));
            return redirect_with_cookies("/access", &[]);
        }
    };
    let command = AccessCommand::Request(RequestArgs {
        name: form.name.trim().to_string(),
        role: form.role.trim().to_string(),
        duration,
        approvals: form.approvals.unwrap_or(1).clamp(1, 8),
        cluster: None,
        reason: Some(form.reason.trim().to_string()).filter(|r| !r.is_empty()),
        user: None,
        group: None,
        service_account: None,
    });
    let (addr, forwarded) = c.trust.client(peer, &headers);
    run_action(&c, &id, &session, addr, forwarded, "request", command).await;
    redirect_with_cookies("/access", &[])
}

async fn login(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let Some(oidc) = &c.oidc else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let redirect = format!("{}{CALLBACK_PATH}", c.base_url(&headers));
    match oidc.begin(&redirect).await {
        Ok((url, state)) => {
            let (addr, forwarded) = c.trust.client(peer, &headers);
            tracing::info!(client = %addr, forwarded, "sign-in started");
            redirect_with_cookies(
                &url,
                &[set_cookie(LOGIN_COOKIE, &state, c.secure(&headers), 600)],
            )
        }
        Err(e) => html_response(
            StatusCode::BAD_GATEWAY,
            html::page(
                "Sign in",
                &c.chrome(None, ""),
                &html::error_page(&e.to_string()),
            ),
        ),
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

async fn callback(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let Some(oidc) = &c.oidc else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let (addr, forwarded) = c.trust.client(peer, &headers);
    let secure = c.secure(&headers);
    let clear_login = set_cookie(LOGIN_COOKIE, "", secure, 0);
    let result = match (&q.code, &q.state, &q.error) {
        (_, _, Some(error)) => Err(format!(
            "the identity provider refused: {error} {}",
            q.error_description.as_deref().unwrap_or("")
        )),
        (Some(code), Some(state), None) => oidc
            .complete(state, cookie(&headers, LOGIN_COOKIE).as_deref(), code)
            .await
            .map_err(|e| e.to_string()),
        _ => Err("the identity provider sent no code".into()),
    };
    match result {
        Ok(session) => {
            c.counters.sign_ins.fetch_add(1, Ordering::Relaxed);
            tracing::info!(user = %session.display, client = %addr, forwarded, "signed in");
            let max_age = (session.expires_at - now()).max(0);
            let id = c.sessions.insert(session);
            redirect_with_cookies(
                "/",
                &[
                    clear_login,
                    set_cookie(SESSION_COOKIE, &id, secure, max_age),
                ],
            )
        }
        Err(e) => {
            c.counters.sign_in_failures.fetch_add(1, Ordering::Relaxed);
            tracing::info!(client = %addr, forwarded, reason = %e, "sign-in refused");
            let mut r = html_response(
                StatusCode::UNAUTHORIZED,
                html::page("Sign in", &c.chrome(None, ""), &html::error_page(&e)),
            );
            if let Ok(v) = HeaderValue::from_str(&clear_login) {
                r.headers_mut().append(header::SET_COOKIE, v);
            }
            r
        }
    }
}

async fn logout(
    State(c): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    let (id, session) = match checked(&c, &headers, &form.csrf) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    c.sessions.remove(&id);
    let (addr, forwarded) = c.trust.client(peer, &headers);
    tracing::info!(user = %session.display, client = %addr, forwarded, "signed out");
    redirect_with_cookies(
        "/",
        &[set_cookie(SESSION_COOKIE, "", c.secure(&headers), 0)],
    )
}

/// Serves until `shutdown` resolves, then finishes the requests in flight. The provider's
/// metadata is read in the background (readiness waits for it), retried with a growing pause.
pub async fn serve(
    console: Console,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ConsoleError> {
    let console = Arc::new(console);
    if console.oidc.is_some() {
        let c = console.clone();
        tokio::spawn(async move {
            let mut pause = std::time::Duration::from_millis(200);
            while let Some(oidc) = &c.oidc {
                match oidc.metadata().await {
                    Ok(_) => {
                        tracing::info!("identity provider metadata read; ready");
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "identity provider not reachable yet; retrying");
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(std::time::Duration::from_secs(30));
                    }
                }
            }
        });
    } else {
        tracing::warn!(
            "sign-in is not configured: only the health endpoints and a notice are served"
        );
    }
    let app = router(console);
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await?;
    Ok(())
}
