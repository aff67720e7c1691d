//! Server-side sharded watches (KEP-5866, issue 30): where the API server offers
//! `shardSelector`, a member placing objects by namespace asks it for the hashes of its share's
//! namespaces only, so the events of the others' objects never reach it. The caches still
//! keep only the share themselves: the selector only narrows what arrives.

use std::sync::{Arc, PoisonError, RwLock};
use std::task::{Context, Poll};

use axum::http::{Request, Response, Uri};
use futures::future::BoxFuture;
use kube::Client;
use kube::client::Body;
use tower_service::Service;

use crate::metrics::client_layer::{kube_verb, resource_path};
use crate::ring::{Ownership, fnv1a64};

/// The namespace-hash ranges a member's watches ask the API server for: at all times at least
/// the share of every cache and kind that reads them (see [`ShardSelector::include`]).
#[derive(Debug)]
pub struct ShardSelector {
    /// The namespaces watched (`WATCH_NAMESPACES`): a share's are among them.
    namespaces: Vec<String>,
    /// `None`: no selector (everything).
    ranges: RwLock<Option<Vec<(u128, u128)>>>,
}

impl ShardSelector {
    /// Asks for everything until a share is set; shares are of `namespaces`.
    pub fn new(namespaces: Vec<String>) -> Self {
        Self {
            namespaces,
            ranges: RwLock::new(None),
        }
    }

    /// Asks for `share`'s ranges alone (once everything reading the watches holds it).
    pub fn set(&self, share: &Ownership) {
        let ranges = share.namespace_ranges(&self.namespaces);
        *self.ranges.write().unwrap_or_else(PoisonError::into_inner) = ranges;
    }

    /// Also asks for `share`'s ranges: before a share is handed out, so a watch listing again
    /// for it gets its objects while the previous share's readers still get theirs.
    pub fn include(&self, share: &Ownership) {
        let added = share.namespace_ranges(&self.namespaces);
        let mut ranges = self.ranges.write().unwrap_or_else(PoisonError::into_inner);
        *ranges = match (ranges.take(), added) {
            (Some(mut held), Some(added)) => {
                held.extend(added);
                Some(merge(held))
            }
            _ => None,
        };
    }

    /// The `shardSelector` value, `None` for everything.
    pub fn selector(&self) -> Option<String> {
        let ranges = self.ranges.read().unwrap_or_else(PoisonError::into_inner);
        ranges.as_deref().map(selector_of)
    }

    /// The `shardSelector` of a collection in `namespace`: the one range of its hash where it
    /// is asked for, else the empty range. The same objects as [`ShardSelector::selector`],
    /// in one term rather than one per namespace of the share.
    pub fn selector_in(&self, namespace: &str) -> Option<String> {
        let ranges = self.ranges.read().unwrap_or_else(PoisonError::into_inner);
        let ranges = ranges.as_deref()?;
        let hash = u128::from(fnv1a64(namespace.as_bytes()));
        let asked = ranges
            .iter()
            .any(|(start, end)| (*start..*end).contains(&hash));
        Some(selector_of(&if asked {
            vec![(hash, hash + 1)]
        } else {
            Vec::new()
        }))
    }
}

/// The namespace a collection path is in: `a` for `/api/v1/namespaces/a/pods` or
/// `/apis/apps/v1/namespaces/a/deployments`, `None` for a cluster-wide one.
fn collection_namespace(path: &str) -> Option<&str> {
    match resource_path(path)? {
        (Some(namespace), rest) if rest.len() == 1 => Some(namespace),
        _ => None,
    }
}

/// Sorted, overlapping and adjacent ranges joined.
fn merge(mut ranges: Vec<(u128, u128)>) -> Vec<(u128, u128)> {
    ranges.sort_unstable();
    let mut merged: Vec<(u128, u128)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// KEP-5866's form: `shardRange(object.metadata.namespace, '0x…', '0x…')` terms joined by
/// `||`; no range at all is the empty range (nothing).
pub fn selector_of(ranges: &[(u128, u128)]) -> String {
    let term = |(start, end): &(u128, u128)| {
        format!("shardRange(object.metadata.namespace, '{start:#x}', '{end:#x}')")
    };
    if ranges.is_empty() {
        return term(&(0, 0));
    }
    ranges.iter().map(term).collect::<Vec<_>>().join(" || ")
}

/// A client whose lists and watches carry `selector`'s current value (read per request: a
/// watch started again after a share changed asks for the new ranges). Every other request
/// goes through unchanged.
pub fn sharded_client(client: &Client, selector: Arc<ShardSelector>) -> Client {
    let service = AddShardSelector {
        inner: client.clone(),
        selector,
    };
    Client::new(service, client.default_namespace())
}

#[derive(Clone)]
struct AddShardSelector {
    inner: Client,
    selector: Arc<ShardSelector>,
}

impl Service<Request<Body>> for AddShardSelector {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, kube::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // `Client::send` waits for the inner client's readiness itself.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        let verb = kube_verb(
            request.method(),
            request.uri().path(),
            request.uri().query(),
        );
        let selector = || match collection_namespace(request.uri().path()) {
            Some(namespace) => self.selector.selector_in(namespace),
            None => self.selector.selector(),
        };
        if matches!(verb, "list" | "watch")
            && let Some(selector) = selector()
            && let Some(uri) = with_query(request.uri(), "shardSelector", &selector)
        {
            *request.uri_mut() = uri;
        }
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(request).await })
    }
}

/// `uri` with `key=value` added to its query (`None`: the result is not a valid URI).
fn with_query(uri: &Uri, key: &str, value: &str) -> Option<Uri> {
    let pair: String = form_urlencoded::Serializer::new(String::new())
        .append_pair(key, value)
        .finish();
    let path_and_query = match uri.query() {
        Some(query) if !query.is_empty() => format!("{}?{query}&{pair}", uri.path()),
        _ => format!("{}?{pair}", uri.path()),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// Whether the API server filters lists by `shardSelector`: a list asking for every namespace
/// hash answers with `metadata.shardInfo` only where it does (an older server, or one without
/// the `ShardedListAndWatch` gate, ignores the parameter). `path` is a collection the operator
/// may list, e.g. one of its kinds.
pub async fn server_filters(client: &Client, path: &str) -> Result<bool, kube::Error> {
    let everything = selector_of(&[(0, 1u128 << 64)]);
    let uri = format!("{path}?limit=1");
    let Some(uri) = uri
        .parse::<Uri>()
        .ok()
        .and_then(|uri| with_query(&uri, "shardSelector", &everything))
    else {
        return Ok(false);
    };
    let request = Request::get(uri)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    let list: serde_json::Value = client.request(request).await?;
    Ok(list.pointer("/metadata/shardInfo/selector").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::{Placement, Ring};
    use std::collections::BTreeSet;

    fn member(me: &str, all: &[&str]) -> Ownership {
        let members: BTreeSet<String> = all.iter().map(|m| m.to_string()).collect();
        Ownership::placed(
            Ring::Members {
                me: me.into(),
                members,
            },
            Placement::Namespace,
        )
    }

    fn namespaces() -> Vec<String> {
        (0..40).map(|n| format!("team-{n}")).collect()
    }

    #[test]
    fn the_selector_names_the_hashes_of_the_shares_namespaces_in_kep_5866_form() {
        let selector = ShardSelector::new(vec!["a".into()]);
        assert_eq!(selector.selector(), None, "everything until told");
        selector.set(&Ownership::placed(
            Ring::Static { index: 0, total: 1 },
            Placement::Namespace,
        ));
        let hash = fnv1a64(b"a");
        assert_eq!(hash, 0xaf63_dc4c_8601_ec8c);
        assert_eq!(
            selector.selector().as_deref(),
            Some(
                "shardRange(object.metadata.namespace, '0xaf63dc4c8601ec8c', \
                 '0xaf63dc4c8601ec8d')"
            )
        );
        selector.set(&Ownership::placed(Ring::Nothing, Placement::Namespace));
        assert_eq!(
            selector.selector().as_deref(),
            Some("shardRange(object.metadata.namespace, '0x0', '0x0')")
        );
        // Placed by object: no range says the share.
        selector.set(&Ownership::single(Ring::Static { index: 0, total: 2 }));
        assert_eq!(selector.selector(), None);
    }

    #[test]
    fn including_a_share_asks_for_both_until_set_to_it_alone() {
        let (before, after) = (member("a", &["a", "b", "c"]), member("a", &["a", "b"]));
        let ranges = |share: &Ownership| share.namespace_ranges(&namespaces()).unwrap_or_default();
        let selector = ShardSelector::new(namespaces());
        selector.set(&before);
        selector.include(&after);
        let union = merge([ranges(&before), ranges(&after)].concat());
        assert_eq!(selector.selector(), Some(selector_of(&union)));
        // A member leaving only adds to a share: the union is the newer share.
        assert_eq!(union, ranges(&after));
        assert!(ranges(&before).len() < ranges(&after).len());
        selector.set(&after);
        assert_eq!(selector.selector(), Some(selector_of(&ranges(&after))));
        // Everything included is everything.
        selector.include(&Ownership::default());
        assert_eq!(selector.selector(), None);
    }

    #[test]
    fn a_namespaced_collection_asks_for_its_own_namespace_only() {
        let share = member("a", &["a", "b"]);
        let selector = ShardSelector::new(namespaces());
        assert_eq!(
            selector.selector_in("team-1"),
            None,
            "everything until told"
        );
        selector.set(&share);
        for namespace in namespaces() {
            let hash = u128::from(fnv1a64(namespace.as_bytes()));
            let expected = if share.owns_object("PgAdmin", &namespace, "x") {
                selector_of(&[(hash, hash + 1)])
            } else {
                selector_of(&[])
            };
            assert_eq!(selector.selector_in(&namespace), Some(expected));
        }
        assert_eq!(
            collection_namespace("/apis/apps/v1/namespaces/team-1/deployments"),
            Some("team-1")
        );
        assert_eq!(
            collection_namespace("/api/v1/namespaces/team-1/pods"),
            Some("team-1")
        );
        assert_eq!(collection_namespace("/api/v1/pods"), None);
        assert_eq!(collection_namespace("/api/v1/namespaces/team-1"), None);
        assert_eq!(
            collection_namespace("/api/v1/namespaces/team-1/pods/p"),
            None
        );
    }

    #[test]
    fn disjoint_and_overlapping_ranges_merge_in_order() {
        assert_eq!(
            merge(vec![(8, 9), (0, 2), (2, 4), (3, 5)]),
            vec![(0, 5), (8, 9)]
        );
        assert_eq!(merge(Vec::new()), Vec::new());
    }

    #[test]
    fn the_selector_is_added_to_the_query_url_encoded() {
        let uri: Uri = "/api/v1/pods?watch=true&resourceVersion=5".parse().unwrap();
        let with = with_query(&uri, "shardSelector", "shardRange(a, '0x0', '0x1')").unwrap();
        assert_eq!(
            with.to_string(),
            "/api/v1/pods?watch=true&resourceVersion=5&shardSelector=\
             shardRange%28a%2C+%270x0%27%2C+%270x1%27%29"
        );
        let bare: Uri = "/api/v1/pods".parse().unwrap();
        assert_eq!(
            with_query(&bare, "k", "v").unwrap().to_string(),
            "/api/v1/pods?k=v"
        );
    }
}
