//! Watch streams: newline-delimited `{"type","object"}` events, resumed from the history,
//! with bookmarks, timeouts, 410 Gone and the drop-all fault.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::apiserver::error::ApiError;
use crate::apiserver::filter::Filter;
use crate::apiserver::render;
use crate::apiserver::server::Server;
use crate::apiserver::wire::Shape;
use crate::store::objects::{Event, EventType};
use crate::store::resources::ResourceInfo;

fn line(kind: &str, object: &Value) -> Bytes {
    let mut out = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

fn gone_line(message: String) -> Bytes {
    line("ERROR", &ApiError::gone(message).to_status())
}

struct Watcher {
    info: Arc<ResourceInfo>,
    /// Storage key of the kind (events.k8s.io Events share core storage).
    res: crate::store::objects::ResKey,
    namespace: Option<String>,
    filter: Filter,
    shape: Shape,
}

impl Watcher {
    fn wants(&self, e: &Event) -> bool {
        self.in_scope(e) && self.filter.matches(&e.object)
    }

    /// The event type this watcher sees: an object entering the selection is ADDED, one
    /// leaving it DELETED, as a real server reports a filtered watch.
    fn translate(&self, e: &Event) -> Option<EventType> {
        if !self.wants(e) {
            let left = e.kind == EventType::Modified
                && self.in_scope(e)
                && e.previous.as_ref().is_some_and(|p| self.filter.matches(p));
            return left.then_some(EventType::Deleted);
        }
        match (e.kind, &e.previous) {
            (EventType::Modified, Some(p)) if !self.filter.matches(p) => Some(EventType::Added),
            (kind, _) => Some(kind),
        }
    }

    fn in_scope(&self, e: &Event) -> bool {
        e.res == self.res && self.namespace.as_ref().is_none_or(|ns| *ns == e.namespace)
    }

    fn render(&self, kind: EventType, obj: &Value) -> Bytes {
        let shaped = match self.shape {
            Shape::Metadata => render::metadata_only(obj),
            // `kubectl get -w`: every event carries a one-row Table.
            Shape::Table => render::object(&self.info, obj, Shape::Table),
            Shape::Full => render::full(&self.info, obj).into_owned(),
        };
        line(kind.as_str(), &shaped)
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let (kind, api_version) = match self.shape {
            Shape::Metadata => (
                "PartialObjectMetadata".to_string(),
                "meta.k8s.io/v1".to_string(),
            ),
            Shape::Table => ("Table".to_string(), "meta.k8s.io/v1".to_string()),
            Shape::Full => (self.info.kind.clone(), self.info.api_version()),
        };
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(
            "BOOKMARK",
            &json!({"kind": kind, "apiVersion": api_version, "metadata": meta}),
        )
    }
}

fn streaming(rx: mpsc::Receiver<Bytes>) -> Response {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Start a watch; the answer streams until timeout, a dropped client, or a fault ends it.
pub fn start(
    server: Arc<Server>,
    info: Arc<ResourceInfo>,
    namespace: Option<String>,
    query: &HashMap<String, String>,
    shape: Shape,
) -> Result<Response, ApiError> {
    let filter = Filter::from_query(query, &info, server.config.sharded_list_and_watch)?;
    if filter.shard_selector().is_some() {
        server
            .stats
            .count_shard_selected(&format!("watch {}", info.group_resource()));
    }
    let bookmarks = crate::apiserver::wire::query_bool(query, "allowWatchBookmarks");
    let send_initial = crate::apiserver::wire::query_bool(query, "sendInitialEvents");
    let timeout = match query.get("timeoutSeconds") {
        Some(t) => Duration::from_secs(
            t.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {t:?}")))?,
        ),
        None => server.config.max_watch,
    };
    let from = query
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or("");
    let from_rv = match from {
        "" | "0" => None,
        v => Some(
            v.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {v:?}")))?,
        ),
    };
    let watcher = Watcher {
        res: crate::apiserver::ops::res_key(&info),
        info: info.clone(),
        namespace: namespace.clone(),
        filter,
        shape,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(1024);

    if server.faults.take_forced_gone() {
        let msg = format!(
            "too old resource version: {} (forced by the sim)",
            from_rv.unwrap_or(0)
        );
        // Ends the stream right after the error, as a real server does.
        let _ = tx.try_send(gone_line(msg));
        return Ok(streaming(rx));
    }

    let res = crate::apiserver::ops::res_key(&info);
    let (initial, live, start_rv) = {
        let l = server.store.lock();
        let start_rv = l.current_rv();
        let initial: Vec<Bytes> = match from_rv {
            Some(rv) if !send_initial => match l.events_since(rv) {
                Ok(events) => events
                    .iter()
                    .filter_map(|e| watcher.translate(e).map(|k| watcher.render(k, &e.object)))
                    .collect(),
                Err(too_old) => {
                    let msg = format!(
                        "too old resource version: {} ({})",
                        too_old.requested, too_old.oldest
                    );
                    let _ = tx.try_send(gone_line(msg));
                    return Ok(streaming(rx));
                }
            },
            _ => {
                let scope = if info.namespaced {
                    namespace.as_deref()
                } else {
                    None
                };
                l.list(&res, scope)
                    .iter()
                    .filter(|o| watcher.filter.matches(o))
                    .map(|o| watcher.render(EventType::Added, o))
                    .collect()
            }
        };
        (initial, server.store.subscribe_locked(&l), start_rv)
    };
    let initial_end = send_initial.then_some(start_rv);
    let drops = server.faults.watch_drops();
    let bookmark_every = server.config.bookmark_interval;
    tokio::spawn(pump(
        watcher,
        tx,
        initial,
        initial_end,
        live,
        start_rv,
        drops,
        timeout,
        bookmarks.then_some(bookmark_every),
    ));
    Ok(streaming(rx))
}

#[allow(clippy::too_many_arguments)]
async fn pump(
    watcher: Watcher,
    tx: mpsc::Sender<Bytes>,
    initial: Vec<Bytes>,
    initial_end: Option<u64>,
    mut live: broadcast::Receiver<Arc<Event>>,
    mut last_rv: u64,
    mut drops: broadcast::Receiver<()>,
    timeout: Duration,
    bookmarks: Option<Duration>,
) {
    for b in initial {
        if tx.send(b).await.is_err() {
            return;
        }
    }
    if let Some(rv) = initial_end
        && tx.send(watcher.bookmark(rv, true)).await.is_err()
    {
        return;
    }
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut ticker = tokio::time::interval(bookmarks.unwrap_or(Duration::from_secs(3600)));
    ticker.tick().await;
    loop {
        // A fixed priority rather than tokio's random pick: a seeded in-process sim must answer
        // the same inputs with the same stream (a deadline and a bookmark tick can be due at once).
        tokio::select! {
            biased;
            _ = &mut deadline => return,
            _ = drops.recv() => return,
            _ = tx.closed() => return,
            _ = ticker.tick(), if bookmarks.is_some() => {
                if tx.send(watcher.bookmark(last_rv, false)).await.is_err() {
                    return;
                }
            }
            got = live.recv() => match got {
                Ok(e) => {
                    if e.rv <= last_rv {
                        continue;
                    }
                    last_rv = e.rv;
                    if let Some(kind) = watcher.translate(&e)
                        && tx.send(watcher.render(kind, &e.object)).await.is_err()
                    {
                        return;
                    }
                }
                // A watcher too slow for the change stream is closed without an error, as the
                // real watch cache closes an unresponsive watcher: the client watches again from
                // the last version it saw and gets the rest from the history (410 only if that
                // is compacted meanwhile), rather than being made to list everything again.
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}
