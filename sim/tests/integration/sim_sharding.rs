//! KEP-5866 sharded list and watch: behind the `ShardedListAndWatch` gate, complementary
//! `shardSelector` ranges split a collection into disjoint parts whose union is all of it, for
//! paged lists and for watches (initial events, replay and live), on uid and on namespace;
//! with the gate off the parameter is ignored, as an older server ignores it.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use pgtoolbox_sim::shard::fnv1a64;
use pgtoolbox_sim::{FeatureGates, SimConfig};
use serde_json::{Value, json};

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_protobuf::blocking;
use crate::sim_support::{namespace, raw, start_with};

const NAMESPACES: usize = 20;
const PER_NAMESPACE: usize = 10;

fn gated(on: bool) -> SimConfig {
    let mut config = SimConfig::default();
    let gates = if on { "ShardedListAndWatch=true" } else { "" };
    FeatureGates::parse(gates)
        .expect("gates")
        .apply(&mut config);
    config
}

/// The lower (`[0, 2^63)`) or upper (`[2^63, 2^64)`) half of the hash space of `field`.
fn half(field: &str, lower: bool) -> String {
    let (start, end) = if lower {
        ("0x0000000000000000", "0x8000000000000000")
    } else {
        ("0x8000000000000000", "0x10000000000000000")
    };
    format!("shardRange(object.metadata.{field}, '{start}', '{end}')")
}

/// Percent-encoding of a query value (the selector holds quotes, spaces, `|` and commas).
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn key(obj: &Value) -> String {
    let meta = &obj["metadata"];
    format!(
        "{}/{}",
        meta["namespace"].as_str().unwrap_or(""),
        meta["name"].as_str().unwrap_or("")
    )
}

fn cm(name: &str, parity: usize) -> ConfigMap {
    let parity = if parity.is_multiple_of(2) {
        "even"
    } else {
        "odd"
    };
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"parity": parity}}}))
        .expect("configmap")
}

/// `PER_NAMESPACE` ConfigMaps named `prefix-N` in each of the test's namespaces.
async fn create_all(client: &kube::Client, prefix: &str) {
    for n in 0..NAMESPACES {
        let ns = format!("shard-{n}");
        namespace(client, &ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
        for i in 0..PER_NAMESPACE {
            api.create(&PostParams::default(), &cm(&format!("{prefix}-{i}"), i))
                .await
                .expect("created");
        }
    }
}

/// Every ConfigMap of a list paged 37 at a time, with each page's `shardInfo` and the version.
async fn list(client: &kube::Client, params: &str) -> (BTreeSet<String>, Vec<Value>, String) {
    let (mut keys, mut infos, mut next) = (BTreeSet::new(), Vec::new(), String::new());
    loop {
        let path = format!("/api/v1/configmaps?limit=37&continue={next}{params}");
        let (code, page) = raw(client, "GET", &path, "application/json", vec![]).await;
        assert_eq!(code, 200, "{path}: {page}");
        keys.extend(page["items"].as_array().expect("items").iter().map(key));
        infos.push(page["metadata"]["shardInfo"].clone());
        next = encode(page["metadata"]["continue"].as_str().unwrap_or(""));
        if next.is_empty() {
            let rv = page["metadata"]["resourceVersion"].as_str().expect("rv");
            return (keys, infos, rv.to_string());
        }
    }
}

/// Starts a watch of every ConfigMap; its events are read once its timeout ends it (long
/// enough for the test's writes meanwhile, so that it sees all of them).
async fn watch(client: &kube::Client, params: &str) -> kube::client::Body {
    let path = format!("/api/v1/configmaps?watch=true&timeoutSeconds=5{params}");
    let req = axum::http::Request::get(path)
        .body(kube::client::Body::empty())
        .expect("request");
    let resp = client.send(req).await.expect("watch starts");
    assert_eq!(resp.status(), 200);
    resp.into_body()
}

/// A watch with `params` of each half of the hash space, on uid then on namespace (lower half
/// first).
async fn watch_halves(client: &kube::Client, params: &str) -> Vec<kube::client::Body> {
    let mut watches = Vec::new();
    for field in ["uid", "namespace"] {
        for lower in [true, false] {
            let shard = format!("&shardSelector={}", encode(&half(field, lower)));
            watches.push(watch(client, &format!("{params}{shard}")).await);
        }
    }
    watches
}

/// The objects a finished watch reported ADDED, and whether it sent a BOOKMARK.
async fn added(body: kube::client::Body) -> (BTreeSet<String>, bool) {
    let bytes = body.collect_bytes().await.expect("watch body");
    let mut keys = BTreeSet::new();
    let mut bookmark = false;
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let event: Value = serde_json::from_slice(line).expect("event JSON");
        match event["type"].as_str() {
            Some("ADDED") => assert!(keys.insert(key(&event["object"])), "added twice"),
            Some("BOOKMARK") => bookmark = true,
            other => panic!("unexpected {other:?}: {event}"),
        }
    }
    (keys, bookmark)
}

fn assert_split(lower: &BTreeSet<String>, upper: &BTreeSet<String>, all: &BTreeSet<String>) {
    assert!(lower.is_disjoint(upper), "the halves overlap");
    assert_eq!(&(lower | upper), all, "the halves miss objects");
    assert!(!lower.is_empty() && !upper.is_empty(), "a half is empty");
}

#[tokio::test]
async fn complementary_shards_split_paged_lists_and_watches() {
    let (_sim, client) = start_with(gated(true)).await;
    let (_, _, before) = list(&client, "").await;
    let initial = "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
                   &allowWatchBookmarks=true";
    // Watches of each half: one replaying the creations from the version before them, one
    // started after them (initial events); both then see the live creations below.
    let mut replays = watch_halves(&client, &format!("&resourceVersion={before}")).await;
    create_all(&client, "cm").await;
    let mut initials = watch_halves(&client, initial).await;
    create_all(&client, "live").await;
    let (all, infos, _) = list(&client, "").await;
    assert!(all.len() >= 2 * NAMESPACES * PER_NAMESPACE, "{}", all.len());
    assert!(
        infos.iter().all(Value::is_null),
        "an unsharded list has no shardInfo"
    );
    let created: BTreeSet<String> = all
        .iter()
        .filter(|k| k.starts_with("shard-"))
        .cloned()
        .collect();

    for field in ["uid", "namespace"] {
        let mut halves = Vec::new();
        for lower in [true, false] {
            let selector = half(field, lower);
            let (keys, infos, _) =
                list(&client, &format!("&shardSelector={}", encode(&selector))).await;
            // Every page, the last included, echoes the selector as sent.
            assert!(infos.len() > 1, "the list is paged");
            for info in &infos {
                assert_eq!(info, &json!({"selector": selector}));
            }
            halves.push(keys);
        }
        assert_split(&halves[0], &halves[1], &all);

        // The label and the shard selector both hold.
        let even = |keys: &BTreeSet<String>| -> BTreeSet<String> {
            keys.iter()
                .filter(|k| k.starts_with("shard-") && k.ends_with(['0', '2', '4', '6', '8']))
                .cloned()
                .collect()
        };
        let params = format!(
            "&labelSelector=parity%3Deven&shardSelector={}",
            encode(&half(field, true))
        );
        assert_eq!(list(&client, &params).await.0, even(&halves[0]));

        // Watches send the events of their half only; the initial-events one ends its
        // initial events with a bookmark. The replay saw only the creations, later objects
        // too, so its halves are checked against the objects this test created.
        let (lower, _) = added(replays.remove(0)).await;
        let (upper, _) = added(replays.remove(0)).await;
        assert_split(&lower, &upper, &created);
        assert_eq!(lower, &halves[0] & &created, "{field} replay");
        let (lower, marked) = added(initials.remove(0)).await;
        let (upper, _) = added(initials.remove(0)).await;
        assert!(marked, "the initial events end with a bookmark");
        assert_split(&lower, &upper, &all);
        assert_eq!(lower, halves[0], "{field} watch and list agree");
    }
}

#[tokio::test]
async fn with_the_gate_off_the_shard_selector_is_ignored() {
    let (_sim, client) = start_with(gated(false)).await;
    create_all(&client, "cm").await;
    let (all, _, _) = list(&client, "").await;
    let shard = format!("&shardSelector={}", encode(&half("uid", true)));
    let (keys, infos, rv) = list(&client, &shard).await;
    assert_eq!(keys, all);
    assert!(infos.iter().all(Value::is_null), "no shardInfo: {infos:?}");
    // Even a malformed selector: the server does not know the parameter.
    let (code, _) = raw(
        &client,
        "GET",
        "/api/v1/configmaps?shardSelector=nonsense",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let initial = "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    let watched = watch(&client, &format!("{initial}&resourceVersion={rv}{shard}")).await;
    assert_eq!(added(watched).await.0, all);
}

#[tokio::test]
async fn a_malformed_shard_selector_is_a_bad_request() {
    let (_sim, client) = start_with(gated(true)).await;
    for path in [
        "/api/v1/configmaps",
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/configmaps?watch=true",
    ] {
        let sep = if path.contains('?') { '&' } else { '?' };
        let bad = encode("shardRange(object.metadata.name, '0x0', '0x1')");
        let path = format!("{path}{sep}shardSelector={bad}");
        let (code, status) = raw(&client, "GET", &path, "application/json", vec![]).await;
        assert_eq!(code, 400, "{path}: {status}");
        assert_eq!(status["reason"], "BadRequest");
        let message = status["message"].as_str().unwrap_or("");
        assert!(message.starts_with("invalid shardSelector: "), "{message}");
    }
}

/// kubectl as an independent client: `get --raw` of one shard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_one_shard_raw() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let (sim, client) = start_with(gated(true)).await;
    create_all(&client, "cm").await;
    let selector = format!("{} || {}", half("uid", true), half("uid", false));
    let lower = half("uid", true);
    let (everything, _, _) = list(&client, "").await;
    let (lower_keys, _, _) = list(&client, &format!("&shardSelector={}", encode(&lower))).await;
    let k = Kubectl::for_sim(&sim);
    blocking(move || {
        let get = |selector: &str| -> Value {
            let path = format!("/api/v1/configmaps?shardSelector={}", encode(selector));
            serde_json::from_str(&k.ok(&["get", "--raw", &path])).expect("list JSON")
        };
        let keys = |list: &Value| -> BTreeSet<String> {
            list["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(key)
                .collect()
        };
        let one = get(&lower);
        assert_eq!(one["metadata"]["shardInfo"]["selector"], lower);
        assert_eq!(keys(&one), lower_keys);
        // Checked against the hash itself too: every uid listed hashes into the lower half.
        let items = one["items"].as_array().expect("items");
        assert!(!items.is_empty() && items.len() < everything.len());
        for item in items {
            let uid = item["metadata"]["uid"].as_str().expect("uid");
            assert!(
                fnv1a64(uid.as_bytes()) < 1 << 63,
                "{uid} is not in the lower half"
            );
        }
        // Two terms joined by `||` cover the whole hash space.
        let both = get(&selector);
        assert_eq!(both["metadata"]["shardInfo"]["selector"], selector);
        assert_eq!(keys(&both), everything);
        let bad = format!(
            "/api/v1/configmaps?shardSelector={}",
            encode("shardRange(object.metadata.uid, '0x2', '0x1')")
        );
        k.refused(&["get", "--raw", &bad], "invalid shardSelector");
    })
    .await;
}
