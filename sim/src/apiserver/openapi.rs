//! OpenAPI v3: one document per group/version with the kinds' schemas (for `kubectl explain`)
//! and a PATCH/PUT operation per kind carrying the `fieldValidation` query parameter: that is
//! what kubectl looks for before it leaves field validation to the server, so publishing
//! schemas does not start client-side validation. The operations declare no request body
//! types, so `kubectl apply` keeps computing its patches as without a document.

use serde_json::{Map, Value, json};

use crate::apiserver::server::Server;

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
    let reg = server.registry();
    for (group, versions) in reg.groups() {
        if server.faults.is_unserved(&group) {
            continue;
        }
        for v in versions {
            if crate::apiserver::discovery::served_resources(server, &reg, &group, &v).is_empty() {
                continue;
            }
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
    let mut schemas = Map::new();
    for info in crate::apiserver::discovery::served_resources(server, &reg, &group, &version) {
        add_schema(&info, &mut schemas);
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
        "components": {"schemas": schemas},
    }))
}

/// The schema of one kind and every definition it references.
fn add_schema(info: &crate::store::resources::ResourceInfo, schemas: &mut Map<String, Value>) {
    use crate::apiserver::openapi_schemas as defs;
    let (name, def) = if info.custom {
        (defs::crd_definition_name(info), defs::crd_definition(info))
    } else {
        match defs::builtin_kind(&info.group, &info.version, &info.kind) {
            Some((name, def)) => (name.to_string(), def.clone()),
            None => return,
        }
    };
    defs::referenced(&def, defs::builtin(), schemas);
    schemas.insert(name, def);
}
