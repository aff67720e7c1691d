//! The HTTP server: the routes, the sign-in and access-request handlers, health, metrics, and
//! a graceful stop (the state is `state.rs`, what handlers answer with `respond.rs`).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pgtoolbox_api::console::{CALLBACK_PATH, HEALTHZ_PATH, METRICS_PATH, READYZ_PATH};
use pgtoolbox_operator::cli::access::{AccessCommand, RequestArgs, act, parse_duration};
use serde::Deserialize;

use crate::auth::{LOGIN_COOKIE, SESSION_COOKIE, cookie, now, set_cookie};
use crate::html;
use crate::respond::{
    CsrfToken, SignedPost, html_response, redirect_with_cookies, sign_in_page, user_page,
};
use crate::state::{Console, ConsoleError, Shared};
use crate::{backups, logs};

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

async fn clusters_page(State(c): State<Shared>, headers: HeaderMap) -> Response {
    user_page(&c, &headers, "Clusters", "clusters", |client, _| async {
        let views = match client {
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
        html::clusters(&views, &c.env.namespace)
    })
    .await
}

async fn access_page(State(c): State<Shared>, headers: HeaderMap) -> Response {
    // A reference the body's future may take along.
    let c = &*c;
    user_page(
        c,
        &headers,
        "Access requests",
        "access",
        |client, session| async move {
            let requests = match client {
                Ok(client) => crate::views::access_requests(&client, &c.env.namespace).await,
                Err(e) => Err(e),
            };
            html::access(&requests, &c.env.namespace, &session.csrf)
        },
    )
    .await
}

/// `GET /backups`: each selected Cluster's Backups and ScheduledBackups, read as the user.
async fn backups_page(State(c): State<Shared>, headers: HeaderMap) -> Response {
    user_page(&c, &headers, "Backups", "backups", |client, _| async {
        let ns = &c.env.namespace;
        let page = match client {
            Ok(client) => backups::read(&client, ns, c.env.cluster_selector.as_deref()).await,
            Err(e) => Err(e),
        };
        backups::render(&page, ns)
    })
    .await
}

/// `GET /logs` (routed only while pod logs are on): the selected Clusters' instances.
async fn logs_index(State(c): State<Shared>, headers: HeaderMap) -> Response {
    user_page(&c, &headers, "Pod logs", "logs", |client, _| async {
        let ns = &c.env.namespace;
        let found = match client {
            Ok(client) => logs::instances(&client, ns, c.env.cluster_selector.as_deref()).await,
            Err(e) => Err(e),
        };
        logs::render_index(&found, ns)
    })
    .await
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
