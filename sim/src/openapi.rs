//! A minimal OpenAPI v3 index: one document per group/version listing a PATCH operation per
//! kind with the `fieldValidation` query parameter. That is what kubectl looks for before it
//! leaves field validation to the server; without it `kubectl create -f` insists on
//! downloading schemas. No schemas are published (`components` stays empty).

use serde_json::{Map, Value, json};

use crate::server::Server;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the index of group/version documents.
pub fn index(server: &Server) -> Value {
    let mut paths = Map::new();
    for (group, versions) in server.registry().groups() {
        if server.faults.is_unserved(&group) {
            continue;
        }
        for v in versions {
            let p = gv_path(&group, &v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// `/openapi/v3/<api|apis/g>/<v>`: one PATCH operation per kind, or `None` if not served.
pub fn group_version(server: &Server, path: &str) -> Option<Value> {
    let (group, version) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), v.to_string()),
        ["apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    if server.faults.is_unserved(&group) {
        return None;
    }
    let reg = server.registry();
    if !reg.serves_version(&group, &version) {
        return None;
    }
    let mut paths = Map::new();
    let prefix = format!("/{}", gv_path(&group, &version));
    for info in reg.resources(&group, &version) {
        if info.create_only {
            continue;
        }
        let item = if info.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", info.plural)
        } else {
            format!("{prefix}/{}/{{name}}", info.plural)
        };
        let gvk = json!({"group": info.group, "version": info.version, "kind": info.kind});
        let op = json!({
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}}],
            "responses": {"200": {"description": "OK"}},
        });
        paths.insert(item, json!({"patch": op, "put": op}));
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (sim)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}
