//! Schemas published on `/openapi/v3`: the built-in kinds' from k8s-openapi's schemars
//! implementations (Kubernetes' own published definitions, `$ref` siblings folded into
//! `allOf` as the API server publishes them), custom resources' from their CRD version.

use std::sync::OnceLock;

use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, authorization::v1 as authz,
    batch::v1 as batch, coordination::v1 as coordination, core::v1 as core, events::v1 as events,
    networking::v1 as networking, rbac::v1 as rbac,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::store::resources::ResourceInfo;

/// Definition names of the built-in kinds, with their group, version and kind.
const KINDS: &[(&str, &str, &str, &str)] = &[
    ("io.k8s.api.core.v1.Namespace", "", "v1", "Namespace"),
    ("io.k8s.api.core.v1.Secret", "", "v1", "Secret"),
    ("io.k8s.api.core.v1.ConfigMap", "", "v1", "ConfigMap"),
    ("io.k8s.api.core.v1.Service", "", "v1", "Service"),
    (
        "io.k8s.api.core.v1.ServiceAccount",
        "",
        "v1",
        "ServiceAccount",
    ),
    ("io.k8s.api.core.v1.Pod", "", "v1", "Pod"),
    ("io.k8s.api.core.v1.Event", "", "v1", "Event"),
    ("io.k8s.api.core.v1.Node", "", "v1", "Node"),
    ("io.k8s.api.core.v1.Endpoints", "", "v1", "Endpoints"),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaim",
        "",
        "v1",
        "PersistentVolumeClaim",
    ),
    (
        "io.k8s.api.core.v1.PersistentVolume",
        "",
        "v1",
        "PersistentVolume",
    ),
    (
        "io.k8s.api.core.v1.ResourceQuota",
        "",
        "v1",
        "ResourceQuota",
    ),
    ("io.k8s.api.apps.v1.Deployment", "apps", "v1", "Deployment"),
    (
        "io.k8s.api.apps.v1.StatefulSet",
        "apps",
        "v1",
        "StatefulSet",
    ),
    ("io.k8s.api.apps.v1.DaemonSet", "apps", "v1", "DaemonSet"),
    ("io.k8s.api.apps.v1.ReplicaSet", "apps", "v1", "ReplicaSet"),
    ("io.k8s.api.batch.v1.Job", "batch", "v1", "Job"),
    ("io.k8s.api.batch.v1.CronJob", "batch", "v1", "CronJob"),
    (
        "io.k8s.api.rbac.v1.Role",
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
    ),
    (
        "io.k8s.api.rbac.v1.RoleBinding",
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
    ),
    (
        "io.k8s.api.rbac.v1.ClusterRole",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
    ),
    (
        "io.k8s.api.rbac.v1.ClusterRoleBinding",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
    ),
    (
        "io.k8s.api.networking.v1.NetworkPolicy",
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
    ),
    (
        "io.k8s.api.networking.v1.Ingress",
        "networking.k8s.io",
        "v1",
        "Ingress",
    ),
    (
        "io.k8s.api.networking.v1.IngressClass",
        "networking.k8s.io",
        "v1",
        "IngressClass",
    ),
    (
        "io.k8s.api.coordination.v1.Lease",
        "coordination.k8s.io",
        "v1",
        "Lease",
    ),
    ("io.k8s.api.events.v1.Event", "events.k8s.io", "v1", "Event"),
    (
        "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    ),
];

/// Every built-in definition (kinds and what they reference), generated once.
pub fn builtin() -> &'static Map<String, Value> {
    static DEFS: OnceLock<Map<String, Value>> = OnceLock::new();
    DEFS.get_or_init(|| {
        let mut generator = SchemaSettings::openapi3().into_generator();
        generator.subschema_for::<core::Namespace>();
        generator.subschema_for::<core::Secret>();
        generator.subschema_for::<core::ConfigMap>();
        generator.subschema_for::<core::Service>();
        generator.subschema_for::<core::ServiceAccount>();
        generator.subschema_for::<core::Pod>();
        generator.subschema_for::<core::Event>();
        generator.subschema_for::<core::Node>();
        generator.subschema_for::<core::Endpoints>();
        generator.subschema_for::<core::PersistentVolumeClaim>();
        generator.subschema_for::<core::PersistentVolume>();
        generator.subschema_for::<core::ResourceQuota>();
        generator.subschema_for::<apps::Deployment>();
        generator.subschema_for::<apps::StatefulSet>();
        generator.subschema_for::<apps::DaemonSet>();
        generator.subschema_for::<apps::ReplicaSet>();
        generator.subschema_for::<batch::Job>();
        generator.subschema_for::<batch::CronJob>();
        generator.subschema_for::<rbac::Role>();
        generator.subschema_for::<rbac::RoleBinding>();
        generator.subschema_for::<rbac::ClusterRole>();
        generator.subschema_for::<rbac::ClusterRoleBinding>();
        generator.subschema_for::<networking::NetworkPolicy>();
        generator.subschema_for::<networking::Ingress>();
        generator.subschema_for::<networking::IngressClass>();
        generator.subschema_for::<coordination::Lease>();
        generator.subschema_for::<events::Event>();
        generator.subschema_for::<authz::SelfSubjectAccessReview>();
        generator.subschema_for::<admission::ValidatingAdmissionPolicy>();
        generator.subschema_for::<admission::ValidatingAdmissionPolicyBinding>();
        generator.subschema_for::<apiextensions::CustomResourceDefinition>();
        let mut defs = generator.take_definitions(true);
        for (name, group, version, kind) in KINDS {
            if let Some(Value::Object(def)) = defs.get_mut(*name) {
                def.insert(
                    "x-kubernetes-group-version-kind".into(),
                    gvk(group, version, kind),
                );
            }
        }
        defs
    })
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "version": version, "kind": kind}])
}

/// The definition name the API server gives a custom resource (`io.cnpg.postgresql.v1.Cluster`).
pub fn crd_definition_name(info: &ResourceInfo) -> String {
    let reversed: Vec<&str> = info.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), info.version, info.kind)
}

/// The published schema of a custom resource version, with its kind extension.
pub fn crd_definition(info: &ResourceInfo) -> Value {
    let mut schema = info
        .schema
        .as_ref()
        .map(|s| s.root().clone())
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if let Some(m) = schema.as_object_mut() {
        let props = m.entry("properties").or_insert_with(|| json!({}));
        if let Some(p) = props.as_object_mut() {
            p.insert("apiVersion".into(), json!({"type": "string",
                "description": "APIVersion defines the versioned schema of this representation of an object."}));
            p.insert("kind".into(), json!({"type": "string",
                "description": "Kind is a string value representing the REST resource this object represents."}));
            p.insert("metadata".into(), json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
                "description": "Standard object's metadata."}));
        }
        m.insert(
            "x-kubernetes-group-version-kind".into(),
            gvk(&info.group, &info.version, &info.kind),
        );
    }
    schema
}

/// The definitions a `$ref` in `value` needs, gathered transitively from `all`.
pub fn referenced(value: &Value, all: &Map<String, Value>, out: &mut Map<String, Value>) {
    match value {
        Value::Object(m) => {
            if let Some(name) = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
                && !out.contains_key(name)
                && let Some(def) = all.get(name)
            {
                out.insert(name.to_string(), def.clone());
                referenced(def, all, out);
            }
            for v in m.values() {
                referenced(v, all, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                referenced(v, all, out);
            }
        }
        _ => {}
    }
}

/// The built-in definition of a kind, by group/version/kind.
pub fn builtin_kind(
    group: &str,
    version: &str,
    kind: &str,
) -> Option<(&'static str, &'static Value)> {
    let (name, ..) = KINDS
        .iter()
        .find(|(_, g, v, k)| *g == group && *v == version && *k == kind)?;
    builtin().get(*name).map(|d| (*name, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_carry_their_gvk_and_resolvable_refs() {
        let (name, deploy) = builtin_kind("apps", "v1", "Deployment").unwrap();
        assert_eq!(name, "io.k8s.api.apps.v1.Deployment");
        assert_eq!(
            deploy["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        let mut needed = Map::new();
        referenced(deploy, builtin(), &mut needed);
        assert!(needed.contains_key("io.k8s.api.core.v1.PodSpec"));
        assert!(needed.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        // `$ref` never has siblings (descriptions go beside an allOf).
        let spec = &deploy["properties"]["spec"];
        assert!(spec.get("$ref").is_none(), "{spec}");
        for (n, ..) in KINDS {
            assert!(builtin().contains_key(*n), "{n}");
        }
    }
}

/// Follow `$ref` (also behind a one-element `allOf`) to the schema it names.
fn resolve<'a>(schema: &'a Value, all: &'a Map<String, Value>) -> &'a Value {
    let mut node = schema;
    for _ in 0..8 {
        let target = node
            .get("$ref")
            .or_else(|| node.pointer("/allOf/0/$ref"))
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .and_then(|name| all.get(name));
        match target {
            Some(t) => node = t,
            None => break,
        }
    }
    node
}

/// Remove the fields of `value` its schema does not know, returning their paths
/// (`spec.template.spec.containers[0].foo`) as the strict decoder names them.
fn prune_unknown(
    schema: &Value,
    all: &Map<String, Value>,
    value: &mut Value,
    path: &mut String,
    out: &mut Vec<String>,
) {
    // Scalars need no schema lookup at all (most fields of an object).
    if !value.is_object() && !value.is_array() {
        return;
    }
    let schema = resolve(schema, all);
    let len = path.len();
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let mut unknown = Vec::new();
            for (k, v) in map.iter_mut() {
                let Some(s) = props.and_then(|p| p.get(k)).or(additional) else {
                    if props.is_some() {
                        unknown.push(k.clone());
                    }
                    continue;
                };
                push_field(path, k);
                prune_unknown(s, all, v, path, out);
                path.truncate(len);
            }
            for k in unknown {
                map.remove(&k);
                out.push(join(path, &k));
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, v) in items.iter_mut().enumerate() {
                    path.push_str(&format!("[{i}]"));
                    prune_unknown(item_schema, all, v, path, out);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

fn push_field(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// As the API server's decoder reads a built-in kind: unknown fields are dropped; the paths
/// returned let `fieldValidation=Strict` refuse them. Events (stored in two shapes) and CRDs
/// (open-ended JSON schemas) are left as sent.
pub fn prune_builtin(info: &ResourceInfo, obj: &mut Value) -> Vec<String> {
    if info.custom || info.plural == "events" || info.kind == "CustomResourceDefinition" {
        return Vec::new();
    }
    let Some((_, def)) = builtin_kind(&info.group, &info.version, &info.kind) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    prune_unknown(def, builtin(), obj, &mut String::new(), &mut out);
    out
}

#[cfg(test)]
mod prune_tests {
    use super::*;
    use crate::store::resources;

    #[test]
    fn unknown_fields_of_built_in_kinds_are_dropped_and_named() {
        let info = resources::builtins()
            .into_iter()
            .find(|i| i.kind == "Deployment")
            .unwrap();
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "labels": {"a": "b"}, "bogus": 1},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i", "foo": true,
                "resources": {"limits": {"cpu": "1"}}}]}}, "strategy": {"rollingUpdate": {"maxSurge": "25%"}}},
            "extra": "x"});
        let mut got = prune_builtin(&info, &mut d);
        got.sort();
        assert_eq!(
            got,
            vec![
                "extra",
                "metadata.bogus",
                "spec.template.spec.containers[0].foo"
            ]
        );
        assert!(d.get("extra").is_none());
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            "1"
        );
        assert_eq!(d["metadata"]["labels"]["a"], "b");
        let cm = resources::builtins()
            .into_iter()
            .find(|i| i.kind == "ConfigMap")
            .unwrap();
        let mut ok = json!({"metadata": {"name": "c", "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {}}}]},
            "data": {"k": "v"}, "binaryData": {"b": "AA=="}, "immutable": true});
        assert!(prune_builtin(&cm, &mut ok).is_empty());
    }
}
