//! Which lists server-side apply merges element by element, and by which keys: the
//! `x-kubernetes-list-type: map` / `x-kubernetes-list-map-keys` markers of Kubernetes' published
//! OpenAPI for the built-in kinds (a table of the fields that carry them), and of the CRD schema
//! for custom resources. Every other list is atomic.

use serde_json::Value;

use crate::store::resources::ResourceInfo;

const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// Map keys of the built-in list at `names` (field names from the root, no element segments).
fn builtin_keys(names: &[&str]) -> Option<&'static [&'static str]> {
    let (last, parents) = names.split_last()?;
    let parent = parents.last().copied().unwrap_or("");
    let in_container = CONTAINER_LISTS.contains(&parent);
    let in_pod_spec = parent == "spec";
    Some(match *last {
        "ownerReferences" if names == ["metadata", "ownerReferences"] => &["uid"],
        "containers" | "initContainers" | "ephemeralContainers" => &["name"],
        "env" if in_container => &["name"],
        "ports" if in_container => &["containerPort", "protocol"],
        "volumeMounts" if in_container => &["mountPath"],
        "volumeDevices" if in_container => &["devicePath"],
        "resizePolicy" if in_container => &["resourceName"],
        "ports" if names == ["spec", "ports"] => &["port", "protocol"],
        "volumes" if in_pod_spec => &["name"],
        "imagePullSecrets" => &["name"],
        "hostAliases" => &["ip"],
        "topologySpreadConstraints" => &["topologyKey", "whenUnsatisfiable"],
        "schedulingGates" | "resourceClaims" if in_pod_spec => &["name"],
        "conditions" => &["type"],
        _ => return None,
    })
}

/// The map keys of the list at `names` of an object of `info`, or `None` for an atomic list.
pub fn keys_of(info: &ResourceInfo, names: &[&str]) -> Option<Vec<String>> {
    if !info.custom {
        return builtin_keys(names).map(|k| k.iter().map(|s| s.to_string()).collect());
    }
    if names == ["metadata", "ownerReferences"] {
        return Some(vec!["uid".into()]);
    }
    let mut node = info.schema.as_ref()?.root();
    for (i, name) in names.iter().enumerate() {
        node = node.pointer(&format!("/properties/{}", escape(name)))?;
        if i + 1 < names.len()
            && node.get("type").and_then(Value::as_str) == Some("array")
            && let Some(items) = node.get("items")
        {
            node = items;
        }
    }
    if node.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<String> = node
        .get("x-kubernetes-list-map-keys")?
        .as_array()?
        .iter()
        .filter_map(|k| k.as_str().map(str::to_string))
        .collect();
    (!keys.is_empty()).then_some(keys)
}

fn escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// The FieldsV1 element segment of `item` (`k:{"containerPort":80,"protocol":"TCP"}`), keys
/// sorted; a missing `protocol` key is its published default, TCP.
pub fn element_segment(keys: &[String], item: &Value) -> Option<String> {
    let mut sorted: Vec<&String> = keys.iter().collect();
    sorted.sort();
    let mut parts = Vec::new();
    for k in sorted {
        let v = match item.get(k.as_str()) {
            Some(v) => v.clone(),
            None if k == "protocol" => Value::String("TCP".into()),
            None => return None,
        };
        parts.push(format!("{}:{}", Value::String(k.clone()), v));
    }
    Some(format!("k:{{{}}}", parts.join(",")))
}

/// Is this path segment a list element (`k:{...}` of a map list, `v:...` of a set) rather
/// than a field name?
pub fn is_element(seg: &str) -> bool {
    seg.starts_with("k:{") || seg.starts_with("v:")
}

/// Is the list at `names` a set (`x-kubernetes-list-type: set`): `metadata.finalizers` for
/// every kind, and what a CRD schema marks so?
pub fn is_set(info: &ResourceInfo, names: &[&str]) -> bool {
    if names == ["metadata", "finalizers"] {
        return true;
    }
    if !info.custom {
        return false;
    }
    let Some(mut node) = info.schema.as_ref().map(|s| s.root()) else {
        return false;
    };
    for (i, name) in names.iter().enumerate() {
        match node.pointer(&format!("/properties/{}", escape(name))) {
            Some(n) => node = n,
            None => return false,
        }
        if i + 1 < names.len()
            && node.get("type").and_then(Value::as_str) == Some("array")
            && let Some(items) = node.get("items")
        {
            node = items;
        }
    }
    node.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("set")
}

/// The FieldsV1 segment of a set element (`v:"example.com/finalizer"`).
pub fn set_segment(item: &Value) -> String {
    format!("v:{item}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::resources;

    #[test]
    fn built_in_lists_have_the_published_keys() {
        let deploy = resources::builtins()
            .into_iter()
            .find(|i| i.kind == "Deployment")
            .unwrap();
        let containers = ["spec", "template", "spec", "containers"];
        assert_eq!(
            keys_of(&deploy, &containers),
            Some(vec!["name".to_string()])
        );
        let ports = ["spec", "template", "spec", "containers", "ports"];
        assert_eq!(
            keys_of(&deploy, &ports),
            Some(vec!["containerPort".to_string(), "protocol".to_string()])
        );
        assert_eq!(
            keys_of(&deploy, &["spec", "template", "spec", "volumes"]),
            Some(vec!["name".to_string()])
        );
        assert_eq!(
            keys_of(&deploy, &["spec", "template", "spec", "tolerations"]),
            None
        );
        assert_eq!(
            element_segment(
                &["protocol".into(), "containerPort".into()],
                &json!({"containerPort": 80})
            ),
            Some(r#"k:{"containerPort":80,"protocol":"TCP"}"#.to_string())
        );
    }

    #[test]
    fn custom_resources_read_the_schema_markers() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                            "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
                        "tags": {"type": "array", "items": {"type": "string"}}}}}}}}]}});
        let info = resources::from_crd(&crd).unwrap().remove(0);
        assert_eq!(
            keys_of(&info, &["spec", "items"]),
            Some(vec!["id".to_string()])
        );
        assert_eq!(keys_of(&info, &["spec", "tags"]), None);
    }
}
