//! Shaping stored objects for the client: full objects, `PartialObjectMetadata`, or a
//! `meta.k8s.io/v1 Table`; lists are written straight into bytes to keep 10k-item lists cheap.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::apiserver::wire::Shape;
use crate::store::resources::ResourceInfo;

/// The object as stored, with the apiVersion of the version it is read through.
pub fn full<'a>(info: &ResourceInfo, obj: &'a Value) -> Cow<'a, Value> {
    if crate::store::events::is_events_api(info) {
        return Cow::Owned(crate::store::events::from_core(obj));
    }
    if crate::store::hpa::is_v1(info) {
        return Cow::Owned(crate::store::hpa::v2_to_v1(obj));
    }
    let want = info.api_version();
    if obj.get("apiVersion").and_then(Value::as_str) == Some(want.as_str()) {
        Cow::Borrowed(obj)
    } else {
        let mut o = obj.clone();
        o["apiVersion"] = json!(want);
        Cow::Owned(o)
    }
}

pub fn metadata_only(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

pub fn object(info: &ResourceInfo, obj: &Value, shape: Shape) -> Value {
    match shape {
        Shape::Full => full(info, obj).into_owned(),
        Shape::Metadata => metadata_only(obj),
        Shape::Table => table(info, &[obj], None, None),
    }
}

fn table(info: &ResourceInfo, objs: &[&Value], rv: Option<u64>, next: Option<&str>) -> Value {
    let builtin = (!info.custom)
        .then(|| {
            crate::apiserver::printers::render(
                &info.group,
                &info.kind,
                objs,
                jiff::Timestamp::now(),
            )
        })
        .flatten();
    let mut t = builtin
        .unwrap_or_else(|| crate::apiserver::table::render_table(&info.printer_columns, objs));
    if !t["metadata"].is_object() {
        t["metadata"] = json!({});
    }
    if let Some(rv) = rv {
        t["metadata"]["resourceVersion"] = json!(rv.to_string());
    }
    if let Some(c) = next {
        t["metadata"]["continue"] = json!(c);
    }
    t
}

/// A list answer as bytes. `shard` is the shard selector the items were chosen by, echoed in
/// `metadata.shardInfo` of full and metadata lists (a Table is left without it: what reads
/// tables, `kubectl get`, sends no shard selector).
pub fn list(
    info: &ResourceInfo,
    items: &[Arc<Value>],
    rv: u64,
    next: Option<&str>,
    remaining: Option<usize>,
    shard: Option<&str>,
    shape: Shape,
) -> Vec<u8> {
    if shape == Shape::Table {
        let objs: Vec<&Value> = items.iter().map(|a| a.as_ref()).collect();
        return serde_json::to_vec(&table(info, &objs, Some(rv), next)).unwrap_or_default();
    }
    let (kind, api_version) = match shape {
        Shape::Metadata => (
            "PartialObjectMetadataList".to_string(),
            "meta.k8s.io/v1".to_string(),
        ),
        _ => (format!("{}List", info.kind), info.api_version()),
    };
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = next {
        meta["continue"] = json!(c);
    }
    if let Some(n) = remaining {
        meta["remainingItemCount"] = json!(n);
    }
    if let Some(selector) = shard {
        meta["shardInfo"] = json!({"selector": selector});
    }
    let head = json!({"kind": kind, "apiVersion": api_version, "metadata": meta});
    let mut out = serde_json::to_vec(&head).unwrap_or_default();
    // Replace the closing brace of the head with the items array.
    out.pop();
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let written = match shape {
            Shape::Metadata => serde_json::to_writer(&mut out, &metadata_only(item)),
            _ => serde_json::to_writer(&mut out, full(info, item).as_ref()),
        };
        if written.is_err() {
            out.extend_from_slice(b"null");
        }
    }
    out.extend_from_slice(b"]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::resources::builtins;

    #[test]
    fn lists_are_valid_json_with_items() {
        let infos = builtins();
        let cm = infos.iter().find(|i| i.plural == "configmaps").unwrap();
        let items = vec![Arc::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
        )];
        let bytes = list(cm, &items, 7, Some("tok"), Some(3), None, Shape::Full);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["kind"], "ConfigMapList");
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert_eq!(v["metadata"]["continue"], "tok");
        assert_eq!(v["items"][0]["metadata"]["name"], "a");
        let meta: Value =
            serde_json::from_slice(&list(cm, &items, 7, None, None, Some("s"), Shape::Metadata))
                .unwrap();
        assert_eq!(meta["kind"], "PartialObjectMetadataList");
        assert_eq!(meta["items"][0]["kind"], "PartialObjectMetadata");
        assert_eq!(meta["metadata"]["shardInfo"]["selector"], "s");
        assert!(v["metadata"].get("shardInfo").is_none());
    }
}
