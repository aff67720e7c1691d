//! The in-process transport: a `kube::Client` over a tower service that hands each request to
//! the sim's router on the same runtime (no sockets), recording who asked what and the answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{Request, Response};
use pgtoolbox_sim::InProcessSim;
use serde_json::Value;

/// Who sent a request: an operator process (by incarnation) or the schedule's driver (the
/// console and the users).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Who {
    Operator(u32),
    Driver,
}

/// One answered request.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Virtual milliseconds since the schedule started, when answered.
    pub at_ms: u64,
    /// When sent (before any injected latency).
    pub sent_ms: u64,
    pub who: Who,
    pub method: String,
    pub uri: String,
    pub status: u16,
    /// For an operator's update, patch or delete: the object as stored just before.
    pub before: Option<Arc<Value>>,
    /// For an operator's create, update or patch: the object the server answered with.
    pub after: Option<Arc<Value>>,
}

impl Entry {
    pub fn is_write(&self) -> bool {
        !matches!(self.method.as_str(), "GET" | "HEAD")
    }

    /// `(group, plural, namespace, name, subresource)` of an object path.
    pub fn target(&self) -> Option<PathTarget> {
        PathTarget::parse(&self.uri)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathTarget {
    pub group: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
}

impl PathTarget {
    pub fn parse(uri: &str) -> Option<Self> {
        let path = uri.split('?').next()?;
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (group, rest) = match segs.as_slice() {
            ["api", _v, rest @ ..] => ("", rest),
            ["apis", g, _v, rest @ ..] => (*g, rest),
            _ => return None,
        };
        let own = |s: &&str| s.to_string();
        let (namespace, rest) = match rest {
            ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
            rest => (None, rest),
        };
        let (plural, name, sub) = match rest {
            [p] => (p, None, None),
            [p, n] => (p, Some(own(n)), None),
            [p, n, s] => (p, Some(own(n)), Some(own(s))),
            _ => return None,
        };
        Some(Self {
            group: group.to_string(),
            plural: plural.to_string(),
            namespace,
            name,
            sub,
        })
    }
}

#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Entry>>>);

impl Log {
    pub fn push(&self, entry: Entry) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(entry);
    }

    pub fn entries(&self) -> Vec<Entry> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// One process's connection to the API server; `alive` false models the process gone (every
/// request it still makes fails as a refused connection would).
#[derive(Clone)]
pub struct Transport {
    pub sim: InProcessSim,
    pub who: Who,
    pub alive: Arc<AtomicBool>,
    pub log: Log,
    pub start: tokio::time::Instant,
    /// Until when (virtual ms since the start) its requests are held, unsent: the process cut
    /// off from the API server for a while, its requests landing late once that heals.
    pub held_until: Arc<AtomicU64>,
}

impl Transport {
    pub fn client(self) -> kube::Client {
        kube::Client::new(self, "default")
    }
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, std::io::Error>> + Send>>;

impl tower_service::Service<Request<kube::client::Body>> for Transport {
    type Response = Response<Body>;
    type Error = std::io::Error;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<kube::client::Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            loop {
                let now = this.start.elapsed().as_millis() as u64;
                let until = this.held_until.load(Ordering::SeqCst);
                if now >= until {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(until - now)).await;
            }
            if !this.alive.load(Ordering::SeqCst) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    "the process is gone",
                ));
            }
            let sent_ms = this.start.elapsed().as_millis() as u64;
            let (parts, body) = req.into_parts();
            let method = parts.method.to_string();
            let uri = parts.uri.to_string();
            let before = match this.who {
                Who::Operator(_) if matches!(method.as_str(), "PUT" | "PATCH" | "DELETE") => {
                    PathTarget::parse(&uri).and_then(|t| {
                        this.sim.object(
                            &t.group,
                            &t.plural,
                            t.namespace.as_deref().unwrap_or_default(),
                            t.name.as_deref()?,
                        )
                    })
                }
                _ => None,
            };
            let response = this
                .sim
                .handle(Request::from_parts(parts, Body::new(body)))
                .await;
            let (response, after) = match this.who {
                Who::Operator(_) if matches!(method.as_str(), "POST" | "PUT" | "PATCH") => {
                    answered(response).await
                }
                _ => (response, None),
            };
            this.log.push(Entry {
                at_ms: this.start.elapsed().as_millis() as u64,
                sent_ms,
                who: this.who,
                method,
                uri,
                status: response.status().as_u16(),
                before,
                after,
            });
            Ok(response)
        })
    }
}

/// The answer's object (a write's answer is one JSON document, never a stream), and the
/// answer rebuilt for the client.
async fn answered(response: Response<Body>) -> (Response<Body>, Option<Arc<Value>>) {
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 << 20).await else {
        return (Response::from_parts(parts, Body::empty()), None);
    };
    let after = serde_json::from_slice::<Value>(&bytes).ok().map(Arc::new);
    (Response::from_parts(parts, Body::from(bytes)), after)
}
