//! A tower layer for the kube `Client` that counts every API request (and every write) by
//! Kubernetes verb, and every error answer by verb, resource and code, so no call site has to
//! remember to.

use std::task::{Context, Poll};

use axum::http::{Method, Request, Response, Uri};
use futures::FutureExt;
use futures::future::BoxFuture;
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

/// A resource path split after `api/v1` or `apis/<group>/<version>`: the namespace it is in,
/// when it goes on past `namespaces/<name>`, and the segments from the resource on
/// (`/api/v1/namespaces/a` is the namespace `a` itself: no namespace, `["namespaces", "a"]`).
/// `None` for a path under neither root.
pub(crate) fn resource_path(path: &str) -> Option<(Option<&str>, Vec<&str>)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..)?,
        Some(&"apis") => segments.get(3..)?,
        _ => return None,
    };
    Some(match rest {
        ["namespaces", namespace, tail @ ..] if !tail.is_empty() => {
            (Some(*namespace), tail.to_vec())
        }
        other => (None, other.to_vec()),
    })
}

/// Whether a resource path ends at a named object (or one of its subresources) rather than
/// at a collection: `/api/v1/namespaces/a/secrets/s` names one, `/api/v1/namespaces/a/secrets`
/// does not. `/api/v1/namespaces/a` names the namespace itself.
fn names_an_object(path: &str) -> bool {
    resource_path(path).is_some_and(|(_, rest)| rest.len() >= 2)
}

/// The resource a path names, as its plural: `deployments` for
/// `/apis/apps/v1/namespaces/a/deployments/d`, `namespaces` for `/api/v1/namespaces/a`,
/// `discovery` for a group's or version's own path.
pub fn kube_resource(path: &str) -> &str {
    resource_path(path)
        .and_then(|(_, rest)| rest.first().copied())
        .filter(|r| !r.is_empty())
        .unwrap_or("discovery")
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

impl<S, B, RB> Service<Request<B>> for CountRequests<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

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
        // Only an error answer reads the path again; the `Uri` clone shares its bytes.
        let uri = uri.clone();
        let metrics = self.metrics.clone();
        self.inner
            .call(request)
            .map(move |result| {
                let code = match &result {
                    Ok(response) if response.status().as_u16() < 400 => None,
                    Ok(response) => Some(response.status().as_u16().to_string()),
                    Err(_) => Some("transport".to_owned()),
                };
                if let Some(code) = code {
                    count_error(&metrics, verb, &uri, &code);
                }
                result
            })
            .boxed()
    }
}

fn count_error(metrics: &OperatorMetrics, verb: &str, uri: &Uri, code: &str) {
    metrics.api_error(verb, kube_resource(uri.path()), code);
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

    #[test]
    fn resources_are_the_plural_the_path_names() {
        let cases = [
            ("/api/v1/namespaces/a/secrets/s", "secrets"),
            ("/api/v1/namespaces/a", "namespaces"),
            ("/api/v1/namespaces", "namespaces"),
            ("/apis/apps/v1/deployments", "deployments"),
            ("/apis/route.openshift.io/v1/namespaces/a/routes", "routes"),
            (
                "/apis/pgtoolbox.fyannk.dev/v1alpha1/namespaces/a/pgadmins/x/status",
                "pgadmins",
            ),
            ("/apis/route.openshift.io/v1", "discovery"),
            ("/version", "discovery"),
        ];
        for (path, resource) in cases {
            assert_eq!(kube_resource(path), resource, "{path}");
        }
    }

    #[tokio::test]
    async fn error_answers_are_counted_by_verb_resource_and_code() {
        let metrics = OperatorMetrics::new();
        let answer = |code: u16| {
            tower_service_fn(move |_request: Request<()>| async move {
                Ok::<_, std::convert::Infallible>(
                    Response::builder().status(code).body(()).unwrap(),
                )
            })
        };
        let list = || {
            Request::get("/apis/route.openshift.io/v1/namespaces/a/routes")
                .body(())
                .unwrap()
        };
        let mut refused = metrics.client_layer().layer(answer(403));
        refused.call(list()).await.unwrap();
        refused.call(list()).await.unwrap();
        let mut fine = metrics.client_layer().layer(answer(200));
        fine.call(list()).await.unwrap();
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(
                r#"pgtoolbox_api_errors_total{verb="list",resource="routes",code="403"} 2"#
            ),
            "{text}"
        );
        assert!(!text.contains(r#"code="200""#), "{text}");
    }

    /// A service from a closure (tower's `service_fn`, without the dependency).
    fn tower_service_fn<F, Fut, Req, Res, E>(f: F) -> FnService<F>
    where
        F: FnMut(Req) -> Fut,
        Fut: std::future::Future<Output = Result<Res, E>>,
    {
        FnService(f)
    }

    struct FnService<F>(F);

    impl<F, Fut, Req, Res, E> Service<Req> for FnService<F>
    where
        F: FnMut(Req) -> Fut,
        Fut: std::future::Future<Output = Result<Res, E>>,
    {
        type Response = Res;
        type Error = E;
        type Future = Fut;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), E>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Req) -> Fut {
            (self.0)(request)
        }
    }
}
