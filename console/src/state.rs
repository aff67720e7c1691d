//! The console's state, shared by every request: its environment, the identity provider, the
//! sessions, the proxy trust, the metrics and the TLS checker; and the per-user client.

use std::sync::Arc;

use axum::http::{HeaderMap, header};
use pgtoolbox_api::console::Env;

use crate::addr::ProxyTrust;
use crate::auth::{Oidc, SESSION_COOKIE, Session, Sessions, cookie};
use crate::html::Chrome;
use crate::metrics::Metrics;
use crate::tls::TlsChecker;

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
    pub(crate) oidc: Option<Oidc>,
    pub(crate) sessions: Sessions,
    pub(crate) trust: ProxyTrust,
    /// Where the API server is, without any credentials: each request adds its user's.
    kube_base: kube::Config,
    pub(crate) metrics: Metrics,
    pub(crate) tls: TlsChecker,
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
    pub(crate) fn base_url(&self, headers: &HeaderMap) -> String {
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

    pub(crate) fn metrics_text(&self) -> Result<String, std::fmt::Error> {
        self.metrics.text(self.sessions.len(), self.ready())
    }

    pub(crate) fn ready(&self) -> bool {
        self.oidc.as_ref().is_none_or(Oidc::ready)
    }
}

pub(crate) type Shared = Arc<Console>;
