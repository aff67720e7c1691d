//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/<g>`, and resource lists.

use axum::http::header::{ACCEPT, CONTENT_TYPE, VARY};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::apiserver::error::ApiError;
use crate::apiserver::server::Server;
use crate::apiserver::wire::json_response;
use crate::store::resources::ResourceInfo;

pub enum Discovery {
    Version,
    Api,
    Apis,
    Group(String),
    /// `(group, version)`; the core group is empty.
    Resources(String, String),
}

/// Kubernetes release the sim reports; kubectl only checks that it parses.
const VERSION: (&str, &str) = ("1", "32");

fn group_doc(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(json!({}))})
}

fn resource_docs(server: &Server, infos: &[std::sync::Arc<ResourceInfo>]) -> Vec<Value> {
    let mut out = Vec::new();
    for i in infos {
        let mut r = json!({
            "name": i.plural, "singularName": i.singular, "namespaced": i.namespaced,
            "kind": i.kind, "verbs": i.verbs,
        });
        if !i.short_names.is_empty() {
            r["shortNames"] = json!(i.short_names);
        }
        if !i.categories.is_empty() {
            r["categories"] = json!(i.categories);
        }
        out.push(r);
        if i.status_subresource {
            out.push(json!({"name": format!("{}/status", i.plural), "singularName": "", "namespaced": i.namespaced,
                "kind": i.kind, "verbs": ["get", "patch", "update"]}));
        }
        if crate::apiserver::subresource::serves(server, i, "scale") {
            out.push(json!({"name": format!("{}/scale", i.plural), "singularName": "", "namespaced": i.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
        if crate::apiserver::subresource::serves(server, i, "token") {
            out.push(json!({"name": format!("{}/token", i.plural), "singularName": "", "namespaced": i.namespaced,
                "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]}));
        }
        if crate::apiserver::subresource::serves(server, i, "eviction") {
            out.push(json!({"name": format!("{}/eviction", i.plural), "singularName": "", "namespaced": i.namespaced,
                "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}));
        }
        if crate::apiserver::subresource::serves(server, i, "log") {
            out.push(json!({"name": format!("{}/log", i.plural), "singularName": "", "namespaced": i.namespaced,
                "kind": "Pod", "verbs": ["get"]}));
        }
    }
    out
}

/// The kinds of a group/version that are not hidden by a `GROUP/RESOURCE` unserve entry.
pub fn served_resources(
    server: &Server,
    reg: &crate::store::registry::Registry,
    group: &str,
    version: &str,
) -> Vec<std::sync::Arc<crate::store::resources::ResourceInfo>> {
    let mut all = reg.resources(group, version);
    all.retain(|i| !server.faults.is_unserved_resource(&i.group, &i.plural));
    all
}

/// The aggregated discovery version (`v2` or `v2beta1`) the `Accept` header asks for, when its
/// first JSON media type is `application/json;g=apidiscovery.k8s.io;v=V;as=APIGroupDiscoveryList`
/// (1.30-era clients send v2, then v2beta1, then plain JSON). Protobuf entries are skipped:
/// the sim answers JSON only.
fn aggregated_version(headers: &HeaderMap) -> Option<&'static str> {
    let accept = headers.get(ACCEPT)?.to_str().ok()?;
    for media in accept.split(',') {
        let mut parts = media.split(';').map(str::trim);
        let base = parts.next().unwrap_or_default();
        if base != "application/json" && base != "application/*" && base != "*/*" {
            continue;
        }
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let param = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        if param("as").is_none() && param("g").is_none() {
            return None; // the plain document comes first
        }
        if param("g") == Some(AGGREGATED_GROUP) && param("as") == Some("APIGroupDiscoveryList") {
            match param("v") {
                Some("v2") => return Some("v2"),
                Some("v2beta1") => return Some("v2beta1"),
                _ => {}
            }
        }
    }
    None
}

const AGGREGATED_GROUP: &str = "apidiscovery.k8s.io";

/// One kind of a group/version as aggregated discovery lists it (`APIResourceDiscovery`), its
/// subresources inside.
fn aggregated_resource(server: &Server, i: &ResourceInfo) -> Value {
    let own = json!({"group": i.group, "version": i.version, "kind": i.kind});
    let mut subresources = Vec::new();
    let mut sub = |name: &str, kind: Value, verbs: &[&str]| {
        subresources.push(json!({"subresource": name, "responseKind": kind, "verbs": verbs}));
    };
    if i.status_subresource {
        sub("status", own.clone(), &["get", "patch", "update"]);
    }
    if crate::apiserver::subresource::serves(server, i, "scale") {
        let scale = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
        sub("scale", scale, &["get", "patch", "update"]);
    }
    if crate::apiserver::subresource::serves(server, i, "token") {
        let token =
            json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"});
        sub("token", token, &["create"]);
    }
    if crate::apiserver::subresource::serves(server, i, "eviction") {
        let eviction = json!({"group": "policy", "version": "v1", "kind": "Eviction"});
        sub("eviction", eviction, &["create"]);
    }
    if crate::apiserver::subresource::serves(server, i, "log") {
        sub(
            "log",
            json!({"group": "", "version": "v1", "kind": "Pod"}),
            &["get"],
        );
    }
    let mut r = json!({
        "resource": i.plural,
        "responseKind": own,
        "scope": if i.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": i.singular,
        "verbs": i.verbs,
    });
    if !i.short_names.is_empty() {
        r["shortNames"] = json!(i.short_names);
    }
    if !i.categories.is_empty() {
        r["categories"] = json!(i.categories);
    }
    if !subresources.is_empty() {
        r["subresources"] = json!(subresources);
    }
    r
}

/// A version of a group and its served kinds.
type VersionKinds = (String, Vec<std::sync::Arc<ResourceInfo>>);

/// The `APIGroupDiscoveryList` of `/api` (`core`) or `/apis`: every served group with its
/// versions (preferred first) and their kinds.
fn aggregated(server: &Server, core: bool, version: &str) -> Value {
    let reg = server.registry();
    let groups: Vec<(String, Vec<String>)> = reg
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core && !server.faults.is_unserved(g))
        .collect();
    let per_version: Vec<(String, Vec<VersionKinds>)> = groups
        .into_iter()
        .map(|(g, versions)| {
            let vs = versions
                .into_iter()
                .map(|v| {
                    let infos = served_resources(server, &reg, &g, &v);
                    (v, infos)
                })
                .collect();
            (g, vs)
        })
        .collect();
    // `serves` reads the store, which CRD registration locks before the registry.
    drop(reg);
    let items: Vec<Value> = per_version
        .into_iter()
        .map(|(g, versions)| {
            let versions: Vec<Value> = versions
                .into_iter()
                .map(|(v, infos)| {
                    let resources: Vec<Value> = infos
                        .iter()
                        .map(|i| aggregated_resource(server, i))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let mut metadata = json!({"creationTimestamp": null});
            if !g.is_empty() {
                metadata["name"] = json!(g);
            }
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("{AGGREGATED_GROUP}/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// `/api` and `/apis` answer aggregated discovery (`APIGroupDiscoveryList`, v2 or v2beta1)
/// to a client that asks for it, with that media type as `Content-Type`; everything else is
/// the plain documents, `Content-Type: application/json`.
pub fn answer(server: &Server, what: Discovery, headers: &HeaderMap) -> Result<Response, ApiError> {
    if matches!(what, Discovery::Api | Discovery::Apis)
        && let Some(version) = aggregated_version(headers)
    {
        let body = aggregated(server, matches!(what, Discovery::Api), version);
        let content_type =
            format!("application/json;g={AGGREGATED_GROUP};v={version};as=APIGroupDiscoveryList");
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        return Ok((
            StatusCode::OK,
            [(CONTENT_TYPE, content_type), (VARY, "Accept".to_string())],
            bytes,
        )
            .into_response());
    }
    let reg = server.registry();
    let served = |g: &str| !server.faults.is_unserved(g);
    let body = match what {
        Discovery::Version => json!({
            "major": VERSION.0, "minor": VERSION.1, "gitVersion": format!("v{}.{}.0-sim", VERSION.0, VERSION.1),
            "gitCommit": "sim", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.23", "compiler": "gc", "platform": "linux/amd64",
        }),
        Discovery::Api => json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server.address}],
        }),
        Discovery::Apis => {
            let groups: Vec<Value> = reg
                .groups()
                .into_iter()
                .filter(|(g, _)| !g.is_empty() && served(g))
                .map(|(g, v)| group_doc(&g, &v))
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        Discovery::Group(g) => {
            let versions = reg
                .groups()
                .into_iter()
                .find(|(name, _)| *name == g && served(name))
                .map(|(_, v)| v);
            let versions = versions.ok_or_else(ApiError::not_found_path)?;
            let mut doc = group_doc(&g, &versions);
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            doc
        }
        Discovery::Resources(g, v) => {
            if !served(&g) || !reg.serves_version(&g, &v) {
                return Err(ApiError::not_found_path());
            }
            let gv = if g.is_empty() {
                v.clone()
            } else {
                format!("{g}/{v}")
            };
            let infos = served_resources(server, &reg, &g, &v);
            // `serves` reads the store, which CRD registration locks before the registry.
            drop(reg);
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                   "resources": resource_docs(server, &infos)})
        }
    };
    Ok(json_response(StatusCode::OK, &body))
}
