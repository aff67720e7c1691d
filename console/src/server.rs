//! The HTTP server: routes, the per-user Kubernetes client, health, metrics, and a graceful
//! stop.

use std::net::SocketAddr;
use std::sync::Arc;

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
use crate::metrics::Metrics;
use crate::tls::TlsChecker;
use crate::{backups, logs};

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

/// The console's state.
pub struct Console {
    pub(crate) env: Env,
    oidc: Option<Oidc>,
    sessions: Sessions,
    trust: ProxyTrust,
    /// Where the API server is, without any credentials: each request adds its user's.
    kube_base: kube::Config,
    metrics: Metrics,
    tls: TlsChecker,
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
            metrics: Metrics::new(),
            tls: TlsChecker::default(),
        })
    }

    /// The Clusters' TLS checker (a handle: clones share its answers and its test mapping).
    pub fn tls_checker(&self) -> &TlsChecker {
        &self.tls
    }

    /// A client that authenticates as the session's user (their ID token as the bearer).
    pub(crate) fn user_client(&self, session: &Session) -> Result<kube::Client, String> {
        let mut config = self.kube_base.clone();
        config.auth_info.token = Some(session.id_token.clone().into());
        kube::Client::try_from(config).map_err(|e| e.to_string())
    }

    pub(crate) fn secure(&self, headers: &HeaderMap) -> bool {
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

    pub(crate) fn session(&self, headers: &HeaderMap) -> Option<(String, Session)> {
        let id = cookie(headers, SESSION_COOKIE)?;
        let session = self.sessions.get(&id)?;
        Some((id, session))
    }

    pub(crate) fn chrome<'a>(
        &'a self,
        session: Option<&'a Session>,
        active: &'a str,
    ) -> Chrome<'a> {
        Chrome {
            user: session.map(|s| s.display.as_str()),
            csrf: session.map(|s| s.csrf.as_str()),
            namespace: &self.env.namespace,
            active,
            drills: self.env.restore_drills,
            pod_logs: self.env.pod_logs,
        }
    }

    pub(crate) fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    pub(crate) fn oidc(&self) -> Option<&Oidc> {
        self.oidc.as_ref()
    }

    fn metrics_text(&self) -> Result<String, std::fmt::Error> {
        self.metrics.text(self.sessions.len(), self.ready())
    }

    fn ready(&self) -> bool {
        self.oidc.as_ref().is_none_or(Oidc::ready)
    }
}

pub(crate) type Shared = Arc<Console>;

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
            .route("/backups", get(backups_page))
    } else {
        app.fallback(not_configured)
    };
    let app = if console.oidc.is_some() && console.env.pod_logs {
        app.route("/logs", get(logs_index))
            .route("/logs/{pod}", get(logs_page))
    } else {
        app
    };
    let app = if console.oidc.is_some() && console.env.restore_drills {
        crate::drills::routes(app)
    } else {
        app
    };
    app.layer(axum::middleware::from_fn_with_state(
        console.clone(),
        crate::session_end::renew,
    ))
    .with_state(console)
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
    match c.metrics_text() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                pgtoolbox_api::OPENMETRICS_CONTENT_TYPE,
            )],
            text,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn style() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        [html::STYLESHEET, crate::backups::STYLE, crate::logs::STYLE].concat(),
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

pub(crate) fn sign_in_page(c: &Console) -> Response {
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
                &c.tls,
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

/// `GET /backups`: each selected Cluster's Backups and ScheduledBackups, read as the user.
async fn backups_page(State(c): State<Shared>, headers: HeaderMap) -> Response {
    let Some((_, session)) = c.session(&headers) else {
        return sign_in_page(&c);
    };
    let page = match c.user_client(&session) {
        Ok(client) => {
            backups::read(&client, &c.env.namespace, c.env.cluster_selector.as_deref()).await
        }
        Err(e) => Err(e),
    };
    html_response(
        StatusCode::OK,
        html::page(
            "Backups",
            &c.chrome(Some(&session), "backups"),
            &backups::render(&page, &c.env.namespace),
        ),
    )
}

/// `GET /logs` (routed only while pod logs are on): the selected Clusters' instances.
async fn logs_index(State(c): State<Shared>, headers: HeaderMap) -> Response {
    let Some((_, session)) = c.session(&headers) else {
        return sign_in_page(&c);
    };
    let found = match c.user_client(&session) {
        Ok(client) => {
            logs::instances(&client, &c.env.namespace, c.env.cluster_selector.as_deref()).await
        }
        Err(e) => Err(e),
    };
    html_response(
        StatusCode::OK,
        html::page(
            "Pod logs",
            &c.chrome(Some(&session), "logs"),
            &logs::render_index(&found, &c.env.namespace),
        ),
    )
}

#[derive(Deserialize)]
struct TailQuery {
    lines: Option<i64>,
}

/// `GET /logs/{pod}`: the last lines of an instance of a selected Cluster (as the user reads
/// the Clusters), read as the user; anything else is 404 without asking for a log.
async fn logs_page(
    State(c): State<Shared>,
    Path(pod): Path<String>,
    Query(q): Query<TailQuery>,
    headers: HeaderMap,
) -> Response {
    let Some((_, session)) = c.session(&headers) else {
        return sign_in_page(&c);
    };
    let chrome = c.chrome(Some(&session), "logs");
    let ns = &c.env.namespace;
    let client = match c.user_client(&session) {
        Ok(client) => client,
        Err(e) => {
            let body = logs::render_index(&Err(e), ns);
            return html_response(StatusCode::OK, html::page("Pod logs", &chrome, &body));
        }
    };
    let found = logs::instances(&client, ns, c.env.cluster_selector.as_deref()).await;
    let cluster = match &found {
        Ok(found) => logs::cluster_of(found, &pod).map(str::to_string),
        Err(_) => None,
    };
    let Some(cluster) = cluster else {
        let body = match found {
            Err(e) => logs::render_index(&Err(e), ns),
            Ok(_) => html::error_page(&format!(
                "{pod} is not an instance of a cluster this console shows."
            )),
        };
        return html_response(
            StatusCode::NOT_FOUND,
            html::page("Pod logs", &chrome, &body),
        );
    };
    let lines = logs::lines_wanted(q.lines);
    let log = logs::tail(&client, ns, &pod, lines).await;
    if let Err(why) = &log {
        tracing::info!(user = %session.display, pod = %pod, reason = %why, "pod logs refused");
    }
    let body = logs::render_tail(ns, &cluster, &pod, lines, &log);
    html_response(StatusCode::OK, html::page(&pod, &chrome, &body))
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

impl CsrfToken for CsrfForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

impl CsrfToken for RequestForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

async fn run_action<T>(c: &Console, post: &SignedPost<T>, what: &str, command: AccessCommand) {
    let SignedPost {
        id,
        session,
        client: client_addr,
        forwarded,
        ..
    } = post;
    let outcome = match c.user_client(session) {
        Ok(client) => act(client, &c.env.namespace, &command)
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    match &outcome {
        Ok(message) => {
            c.metrics.action(true);
            tracing::info!(user = %session.display, client = %client_addr, forwarded, action = what, outcome = %message.trim(), "access-request action done");
        }
        Err(reason) => {
            c.metrics.action(false);
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
    Path((name, verb)): Path<(String, String)>,
    post: SignedPost<CsrfForm>,
) -> Response {
    let command = match verb.as_str() {
        "approve" => AccessCommand::Approve { name },
        "deny" => AccessCommand::Deny { name },
        "revoke" => AccessCommand::Revoke { name },
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    run_action(&c, &post, &verb, command).await;
    redirect_with_cookies("/access", &[])
}

async fn request_access(State(c): State<Shared>, post: SignedPost<RequestForm>) -> Response {
    let form = &post.form;
    let duration = match parse_duration(form.duration.trim()) {
        Ok(d) => d,
        Err(e) => {
            c.sessions
                .set_flash(&post.id, Some((false, format!("For how long: {e}"))));
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
    run_action(&c, &post, "request", command).await;
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
            c.metrics.sign_ins.inc();
            tracing::info!(user = %session.display, client = %addr, forwarded, "signed in");
            let max_age = (session.kept_until() - now()).max(0);
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
            c.metrics.sign_in_failures.inc();
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
    headers: HeaderMap,
    post: SignedPost<CsrfForm>,
) -> Response {
    c.sessions.remove(&post.id);
    // Ends the provider's session too when it offers RP-initiated logout; back here after.
    let back = format!("{}/", c.base_url(&headers));
    let provider = c
        .oidc
        .as_ref()
        .and_then(|o| o.end_session_url(&post.session.id_token, &back));
    tracing::info!(user = %post.session.display, client = %post.client, forwarded = post.forwarded, at_provider = provider.is_some(), "signed out");
    redirect_with_cookies(
        provider.as_deref().unwrap_or("/"),
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
