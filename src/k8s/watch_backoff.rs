//! The backoff of every watch. kube's `default_backoff` resets on any item the watcher yields,
//! and the watcher yields `Init` before each list, so a list that keeps failing (an API the
//! cluster does not serve, such as the Databases of an older CloudNativePG) was retried about
//! once a second for ever. Here only progress (an object, the end of a list) resets it; the
//! policy is otherwise kube's own (0.8 s, doubling to 30 s, jittered).

use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, DefaultBackoff};

/// `events` (a watcher's stream) with kube's default backoff after each error, reset only by
/// progress. An error is passed on at once; the wait comes before the next item is asked for.
pub fn backoff_until_progress<K, S>(
    events: S,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static
where
    K: Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
{
    with_backoff(events, DefaultBackoff::default())
}

fn with_backoff<K, S, B>(
    events: S,
    backoff: B,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static
where
    K: Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    B: Backoff + 'static,
{
    let state = (events.boxed(), backoff, None::<Duration>);
    futures::stream::unfold(state, |(mut events, mut backoff, wait)| async move {
        if let Some(wait) = wait {
            tokio::time::sleep(wait).await;
        }
        let item = events.next().await?;
        let wait = match &item {
            Err(_) => backoff.next(),
            Ok(watcher::Event::Init) => None,
            Ok(_) => {
                backoff.reset();
                None
            }
        };
        Some((item, (events, backoff, wait)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    /// 1 s, 2 s, 4 s ... without jitter, so the waits can be asserted.
    struct Doubling(u64);

    impl Iterator for Doubling {
        type Item = Duration;
        fn next(&mut self) -> Option<Duration> {
            let wait = Duration::from_secs(1 << self.0);
            self.0 += 1;
            Some(wait)
        }
    }

    impl Backoff for Doubling {
        fn reset(&mut self) {
            self.0 = 0;
        }
    }

    fn failed() -> Result<watcher::Event<()>, watcher::Error> {
        Err(watcher::Error::NoResourceVersion)
    }

    #[tokio::test(start_paused = true)]
    async fn a_list_that_keeps_failing_waits_longer_each_time_and_progress_resets_it() {
        use watcher::Event::{Apply, Init, InitDone};
        let items = vec![
            Ok(Init),
            failed(),
            Ok(Init),
            failed(),
            Ok(Init),
            failed(),
            // The API is served at last: a list goes through.
            Ok(Init),
            Ok(InitDone),
            Ok(Apply(())),
            failed(),
            Ok(Init),
        ];
        let start = Instant::now();
        let seen: Vec<(u64, bool)> = with_backoff(futures::stream::iter(items), Doubling(0))
            .map(|item| (start.elapsed().as_secs(), item.is_err()))
            .collect()
            .await;
        assert_eq!(
            seen,
            vec![
                (0, false),
                (0, true),
                // `Init` does not reset: 1 s, then 2 s, then 4 s.
                (1, false),
                (1, true),
                (3, false),
                (3, true),
                (7, false),
                (7, false),
                (7, false),
                (7, true),
                // Reset by the list that went through: 1 s again.
                (8, false),
            ]
        );
    }
}

/// The watches the operator starts go through this backoff: a list answered 404 for a minute is
/// retried a handful of times, not once a second.
#[cfg(test)]
mod wiring_tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use axum::body::Body;
    use axum::http::{Request, Response};
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use kube::runtime::watcher;

    use crate::children::{ChildStore, our_owner};
    use crate::k8s::WatchScope;

    /// An API server that serves nothing: every request is a 404, counted.
    #[derive(Clone, Default)]
    struct NotServed(Arc<AtomicUsize>);

    impl tower_service::Service<Request<kube::client::Body>> for NotServed {
        type Response = Response<Body>;
        type Error = std::io::Error;
        type Future = futures::future::Ready<Result<Response<Body>, std::io::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<kube::client::Body>) -> Self::Future {
            self.0.fetch_add(1, Ordering::SeqCst);
            let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "message": "the server could not find the requested resource", "reason": "NotFound", "code": 404});
            let answer = Response::builder()
                .status(404)
                .header("content-type", "application/json")
                .body(Body::from(status.to_string()))
                .map_err(std::io::Error::other);
            futures::future::ready(answer)
        }
    }

    async fn lists_in_a_minute(start: impl FnOnce(kube::Client)) -> usize {
        let server = NotServed::default();
        start(kube::Client::new(server.clone(), "default"));
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        server.0.load(Ordering::SeqCst)
    }

    #[tokio::test(start_paused = true)]
    async fn the_children_stores_and_the_kind_watches_back_off_from_a_resource_not_served() {
        let store_lists = lists_in_a_minute(|client| {
            let store = Arc::new(ChildStore::<ConfigMap>::new("ConfigMaps", our_owner()));
            let wakeups = store.watch(&client, &WatchScope::All, watcher::Config::default());
            tokio::spawn(futures::stream::select_all(wakeups).for_each(|_| async {}));
        })
        .await;
        let kind_lists = lists_in_a_minute(|client| {
            let restarts = super::super::Restarts::default();
            let events = super::super::watch::watch_events(
                Api::<ConfigMap>::all(client),
                Default::default(),
                restarts.subscribe(),
                super::super::FirstList::Now,
            );
            tokio::spawn(events.for_each(|_| async {}));
        })
        .await;
        // 0.8 s doubling (jittered) reaches a minute in about six tries; kube's default,
        // reset by every `Init`, tried about sixty times.
        assert!(
            store_lists <= 10,
            "children store listed {store_lists} times"
        );
        assert!(kind_lists <= 10, "kind watch listed {kind_lists} times");
    }
}
