//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/<g>`, and resource lists.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::ResourceInfo;
use crate::server::Server;
use crate::wire::json_response;

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
        if crate::subresource::serves(server, i, "scale") {
            out.push(json!({"name": format!("{}/scale", i.plural), "singularName": "", "namespaced": i.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
        if crate::subresource::serves(server, i, "token") {
            out.push(json!({"name": format!("{}/token", i.plural), "singularName": "", "namespaced": i.namespaced,
                "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]}));
        }
        if crate::subresource::serves(server, i, "eviction") {
            out.push(json!({"name": format!("{}/eviction", i.plural), "singularName": "", "namespaced": i.namespaced,
                "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}));
        }
        if crate::subresource::serves(server, i, "log") {
            out.push(json!({"name": format!("{}/log", i.plural), "singularName": "", "namespaced": i.namespaced,
                "kind": "Pod", "verbs": ["get"]}));
        }
    }
    out
}

/// The kinds of a group/version that are not hidden by a `GROUP/RESOURCE` unserve entry.
pub fn served_resources(
    server: &Server,
    reg: &crate::server::Registry,
    group: &str,
    version: &str,
) -> Vec<std::sync::Arc<crate::resources::ResourceInfo>> {
    let mut all = reg.resources(group, version);
    all.retain(|i| !server.faults.is_unserved_resource(&i.group, &i.plural));
    all
}

/// Aggregated discovery is not produced: clients that ask for it accept the plain documents,
/// which always carry `Content-Type: application/json`.
pub fn answer(
    server: &Server,
    what: Discovery,
    _headers: &HeaderMap,
) -> Result<Response, ApiError> {
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
