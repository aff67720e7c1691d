//! A tower layer for the kube `Client` that counts every API request (and every write) by
//! Kubernetes verb, so no call site has to remember to.

use std::task::{Context, Poll};

use axum::http::{Method, Request};
use tower_layer::Layer;
use tower_service::Service;

use super::OperatorMetrics;

/// The Kubernetes verb of a request, from its method, path and query.
pub fn kube_verb(method: &Method, path: &str, query: Option<&str>) -> &'static str {
    let query_has = |key: &str| {
        query.is_some_and(|q| {
            q.split('&')
                .any(|pair| pair == format!("{key}=true") || pair == format!("{key}=1"))
        })
    };
    match *method {
        Method::GET if query_has("watch") => "watch",
        Method::GET if names_an_object(path) => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if names_an_object(path) => "delete",
        Method::DELETE => "deletecollection",
        _ => "other",
    }
}

/// Whether a resource path ends at a named object (or one of its subresources) rather than
/// at a collection: `/api/v1/namespaces/a/secrets/s` names one, `/api/v1/namespaces/a/secrets`
/// does not. `/api/v1/namespaces/a` names the namespace itself.
fn names_an_object(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    // Skip `api/v1` or `apis/<group>/<version>`.
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        Some(&"apis") => segments.get(3..),
        _ => None,
    };
    let Some(rest) = rest else { return false };
    let rest = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    rest.len() >= 2
}

/// Wraps the client's HTTP service; see [`OperatorMetrics::client_layer`].
#[derive(Clone, Debug)]
pub struct CountRequestsLayer {
    metrics: OperatorMetrics,
}

impl<S> Layer<S> for CountRequestsLayer {
    type Service = CountRequests<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CountRequests {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct CountRequests<S> {
    inner: S,
    metrics: OperatorMetrics,
}

impl<S, B> Service<Request<B>> for CountRequests<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let uri = request.uri();
        let verb = kube_verb(request.method(), uri.path(), uri.query());
        self.metrics.api_request(verb);
        if !matches!(verb, "get" | "list" | "watch") {
            self.metrics.api_write(verb);
        }
        self.inner.call(request)
    }
}

impl OperatorMetrics {
    /// The layer to add to the operator's client:
    /// `ClientBuilder::try_from(config)?.with_layer(&metrics.client_layer()).build()`.
    pub fn client_layer(&self) -> CountRequestsLayer {
        CountRequestsLayer {
            metrics: self.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_follow_the_api_server() {
        let cases = [
            (Method::GET, "/api/v1/namespaces/a/secrets", None, "list"),
            (
                Method::GET,
                "/api/v1/namespaces/a/secrets",
                Some("watch=true&resourceVersion=5"),
                "watch",
            ),
            (Method::GET, "/api/v1/namespaces/a/secrets/s", None, "get"),
            (Method::GET, "/api/v1/namespaces/a", None, "get"),
            (Method::GET, "/api/v1/namespaces", None, "list"),
            (
                Method::GET,
                "/apis/apps/v1/deployments",
                Some("limit=500"),
                "list",
            ),
            (
                Method::GET,
                "/apis/pgtoolbox.fyannk.dev/v1alpha1/namespaces/a/pgadmins/x/status",
                None,
                "get",
            ),
            (
                Method::PATCH,
                "/apis/pgtoolbox.fyannk.dev/v1alpha1/namespaces/a/pgadmins/x/status",
                None,
                "patch",
            ),
            (
                Method::POST,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                None,
                "create",
            ),
            (
                Method::PUT,
                "/apis/apps/v1/namespaces/a/deployments/d",
                None,
                "update",
            ),
            (
                Method::DELETE,
                "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings/r",
                None,
                "delete",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/a/pods",
                None,
                "deletecollection",
            ),
        ];
        for (method, path, query, verb) in cases {
            assert_eq!(kube_verb(&method, path, query), verb, "{method} {path}");
        }
    }
}
