//! The three patch formats the API server accepts besides server-side apply.
//!
//! Merge patch (RFC 7386) and JSON patch (RFC 6902) come from the `json_patch` crate; strategic
//! merge patch is ours: maps merge, `null` deletes, and lists merge by their patch merge key for
//! the built-in fields kubectl touches (a small table below); every other list is replaced.

use serde_json::{Map, Value};

/// A kind's API group (`""` for core) and kind, to pick the strategic merge rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            kind: kind.into(),
        }
    }

    /// Kubernetes' own groups: the ones whose Go types carry patch merge keys.
    fn is_built_in(&self) -> bool {
        let g = self.group.as_str();
        g.is_empty() || !g.contains('.') || g.ends_with(".k8s.io")
    }
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// RFC 6902 JSON patch, applied atomically (nothing changes when an operation fails). The
/// crate's own undo does not restore every failed `move`, and panics when it cannot undo one
/// (both found by `sim/src/fuzz_tests.rs`), so the patch is applied, without undo, to a copy.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), String> {
    let ops: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| format!("invalid JSON patch: {e}"))?;
    let mut patched = target.clone();
    json_patch::patch_unsafe(&mut patched, &ops).map_err(|e| e.to_string())?;
    *target = patched;
    Ok(())
}

/// Strategic merge patch as kubectl sends it (`apply`, `patch`, `edit` on built-in kinds).
///
/// For kinds outside Kubernetes' own groups only the metadata rules apply, so it behaves as a
/// merge patch that also understands the `$patch` directives.
pub fn strategic_merge_patch(
    target: &mut Value,
    patch: &Value,
    gk: &GroupKind,
) -> Result<(), String> {
    let Value::Object(patch) = patch else {
        return Err("strategic merge patch must be a JSON object".into());
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let ctx = Ctx { gk };
    let mut path = Vec::new();
    match merge_map(&ctx, target, patch, &mut path)? {
        MapOutcome::Keep => Ok(()),
        MapOutcome::Delete => Err("$patch: delete is not allowed at the top level".into()),
    }
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";

/// How a list field merges, as declared by `patchStrategy` / `patchMergeKey` upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListStrategy {
    Replace,
    MergeByKey(&'static str),
    MergePrimitives,
}

struct Ctx<'a> {
    gk: &'a GroupKind,
}

const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

impl Ctx<'_> {
    /// The merge strategy for the list at `path` (field names from the object root, no indices).
    fn list_strategy(&self, path: &[String]) -> ListStrategy {
        let names: Vec<&str> = path.iter().map(String::as_str).collect();
        match names.as_slice() {
            ["metadata", "finalizers"] => return ListStrategy::MergePrimitives,
            ["metadata", "ownerReferences"] => return ListStrategy::MergeByKey("uid"),
            _ => {}
        }
        if !self.gk.is_built_in() {
            return ListStrategy::Replace;
        }
        let Some((last, parents)) = names.split_last() else {
            return ListStrategy::Replace;
        };
        let parent = parents.last().copied().unwrap_or("");
        let in_container = CONTAINER_LISTS.contains(&parent);
        let key = match *last {
            "containers" | "initContainers" | "ephemeralContainers" => "name",
            "env" if in_container => "name",
            "ports" if in_container => "containerPort",
            "ports" if self.gk.kind == "Service" && names == ["spec", "ports"] => "port",
            "volumeMounts" if in_container => "mountPath",
            "volumeDevices" if in_container => "devicePath",
            "resizePolicy" if in_container => "resourceName",
            "volumes" if parent == "spec" => "name",
            "imagePullSecrets" => "name",
            "hostAliases" => "ip",
            "topologySpreadConstraints" => "topologyKey",
            "schedulingGates" | "resourceClaims" if parent == "spec" => "name",
            "conditions" => "type",
            "secrets" if self.gk.kind == "ServiceAccount" => "name",
            _ => return ListStrategy::Replace,
        };
        ListStrategy::MergeByKey(key)
    }
}

enum MapOutcome {
    Keep,
    Delete,
}

fn directive_of(map: &Map<String, Value>) -> Result<Option<&str>, String> {
    match map.get(DIRECTIVE) {
        None => Ok(None),
        Some(Value::String(d)) if matches!(d.as_str(), "replace" | "delete" | "merge") => {
            Ok(Some(d))
        }
        Some(other) => Err(format!("unknown patch type: {other} in map")),
    }
}

/// Merges `patch` into the map at `target`; `Delete` asks the caller to remove the map itself.
fn merge_map(
    ctx: &Ctx,
    target: &mut Value,
    patch: &Map<String, Value>,
    path: &mut Vec<String>,
) -> Result<MapOutcome, String> {
    match directive_of(patch)? {
        Some("delete") => return Ok(MapOutcome::Delete),
        Some("replace") => {
            let mut fresh = Value::Object(Map::new());
            let mut rest = patch.clone();
            rest.remove(DIRECTIVE);
            merge_map(ctx, &mut fresh, &rest, path)?;
            *target = fresh;
            return Ok(MapOutcome::Keep);
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(original) = target else {
        return Ok(MapOutcome::Keep);
    };
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let Value::Array(keys) = retain else {
            return Err(format!("{RETAIN_KEYS} must be a list of strings"));
        };
        let keep: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
        original.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_PRIMITIVE) {
            let Value::Array(doomed) = value else {
                return Err(format!("{key} must be a list"));
            };
            if let Some(Value::Array(list)) = original.get_mut(field) {
                list.retain(|item| !doomed.contains(item));
            }
        }
    }
    // `$setElementOrder` interleaves with the live order, so remember it before merging.
    let mut live_orders: Vec<(String, Vec<Value>)> = Vec::new();
    for key in patch.keys() {
        if let Some(field) = key.strip_prefix(SET_ORDER) {
            path.push(field.to_string());
            let strategy = ctx.list_strategy(path);
            path.pop();
            let live = match original.get(field) {
                Some(Value::Array(list)) => list
                    .iter()
                    .filter_map(|item| identity(item, strategy))
                    .collect(),
                _ => Vec::new(),
            };
            live_orders.push((field.to_string(), live));
        }
    }
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            original.remove(key);
            continue;
        }
        path.push(key.clone());
        let slot = original.entry(key.clone()).or_insert(Value::Null);
        let deleted = merge_value(ctx, slot, value, path)?;
        path.pop();
        if deleted {
            original.remove(key);
        }
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(SET_ORDER) {
            let Value::Array(order) = value else {
                return Err(format!("{key} must be a list"));
            };
            path.push(field.to_string());
            let strategy = ctx.list_strategy(path);
            path.pop();
            let live = live_orders
                .iter()
                .find(|(name, _)| name == field)
                .map(|(_, live)| live.as_slice())
                .unwrap_or_default();
            if let Some(Value::Array(list)) = original.get_mut(field) {
                reorder(list, order, live, strategy);
            }
        }
    }
    Ok(MapOutcome::Keep)
}

/// Merges one field value; returns true when the field must be removed from its parent.
fn merge_value(
    ctx: &Ctx,
    slot: &mut Value,
    patch: &Value,
    path: &mut Vec<String>,
) -> Result<bool, String> {
    match patch {
        Value::Object(patch_map) => {
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            Ok(matches!(
                merge_map(ctx, slot, patch_map, path)?,
                MapOutcome::Delete
            ))
        }
        Value::Array(patch_list) => {
            let strategy = ctx.list_strategy(path);
            let mut list = match std::mem::take(slot) {
                Value::Array(list) if strategy != ListStrategy::Replace => list,
                _ => Vec::new(),
            };
            merge_list(ctx, &mut list, patch_list, strategy, path)?;
            *slot = Value::Array(list);
            Ok(false)
        }
        scalar => {
            *slot = scalar.clone();
            Ok(false)
        }
    }
}

fn merge_list(
    ctx: &Ctx,
    list: &mut Vec<Value>,
    patch: &[Value],
    strategy: ListStrategy,
    path: &mut Vec<String>,
) -> Result<(), String> {
    let replaces = patch.iter().any(|item| {
        item.as_object()
            .is_some_and(|m| m.get(DIRECTIVE).and_then(Value::as_str) == Some("replace"))
    });
    if replaces {
        list.clear();
    }
    match strategy {
        ListStrategy::MergeByKey(key) => {
            for item in patch {
                let Value::Object(item_map) = item else {
                    return Err(format!(
                        "{}: list item {item} is not an object",
                        path.join(".")
                    ));
                };
                if item_map.len() == 1 && item_map.contains_key(DIRECTIVE) {
                    continue;
                }
                let Some(wanted) = item_map.get(key) else {
                    return Err(format!(
                        "map: {item} does not contain declared merge key: {key}"
                    ));
                };
                let existing = list.iter().position(|e| e.get(key) == Some(wanted));
                match (directive_of(item_map)?, existing) {
                    (Some("delete"), Some(at)) => {
                        list.remove(at);
                    }
                    (Some("delete"), None) => {}
                    (_, Some(at)) => {
                        if matches!(
                            merge_map(ctx, &mut list[at], item_map, path)?,
                            MapOutcome::Delete
                        ) {
                            list.remove(at);
                        }
                    }
                    (_, None) => {
                        let mut fresh = Value::Object(Map::new());
                        merge_map(ctx, &mut fresh, item_map, path)?;
                        list.push(fresh);
                    }
                }
            }
        }
        ListStrategy::MergePrimitives => {
            for item in patch {
                if item.is_object() {
                    continue;
                }
                if !list.contains(item) {
                    list.push(item.clone());
                }
            }
        }
        ListStrategy::Replace => {
            for item in patch {
                let is_directive = item.as_object().is_some_and(|m| m.contains_key(DIRECTIVE));
                if is_directive && item.as_object().is_some_and(|m| m.len() == 1) {
                    continue;
                }
                let mut fresh = Value::Null;
                merge_value(ctx, &mut fresh, item, path)?;
                list.push(fresh);
            }
        }
    }
    Ok(())
}

/// What identifies a list element: its merge key value, or the element itself.
fn identity(item: &Value, strategy: ListStrategy) -> Option<Value> {
    match strategy {
        ListStrategy::MergeByKey(key) => item.get(key).cloned(),
        _ => Some(item.clone()),
    }
}

/// Applies `$setElementOrder` as upstream does: elements named in `order` take that order,
/// the others keep theirs, and the two runs interleave by their positions in the live list.
fn reorder(list: &mut Vec<Value>, order: &[Value], live: &[Value], strategy: ListStrategy) {
    let wanted: Vec<Value> = order
        .iter()
        .filter_map(|item| identity(item, strategy))
        .collect();
    let position = |ids: &[Value], item: &Value| {
        identity(item, strategy).and_then(|id| ids.iter().position(|x| *x == id))
    };
    let (mut ordered, others): (Vec<Value>, Vec<Value>) = std::mem::take(list)
        .into_iter()
        .partition(|item| position(&wanted, item).is_some());
    ordered.sort_by_key(|item| position(&wanted, item));
    let (mut left, mut right) = (
        ordered.into_iter().peekable(),
        others.into_iter().peekable(),
    );
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => matches!(
                (position(live, l), position(live, r)),
                (Some(li), Some(ri)) if li < ri
            ),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_left { left.next() } else { right.next() };
        list.extend(next);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod() -> GroupKind {
        GroupKind::new("", "Pod")
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge_patch(&mut target, &json!({"a": "z", "c": {"f": null}, "l": [3]}));
        assert_eq!(target, json!({"a": "z", "c": {"d": "e"}, "l": [3]}));
    }

    #[test]
    fn json_patch_applies_and_fails_atomically() {
        let mut target = json!({"spec": {"replicas": 1}, "metadata": {"labels": {"a": "b"}}});
        json_patch(
            &mut target,
            &json!([
                {"op": "replace", "path": "/spec/replicas", "value": 3},
                {"op": "add", "path": "/metadata/labels/c", "value": "d"},
                {"op": "test", "path": "/spec/replicas", "value": 3}
            ]),
        )
        .unwrap();
        assert_eq!(
            target,
            json!({"spec": {"replicas": 3}, "metadata": {"labels": {"a": "b", "c": "d"}}})
        );
        let before = target.clone();
        let failing = json!([
            {"op": "replace", "path": "/spec/replicas", "value": 5},
            {"op": "test", "path": "/spec/replicas", "value": 4}
        ]);
        assert!(json_patch(&mut target, &failing).is_err());
        assert_eq!(target, before);
        let err = json_patch(&mut target, &json!({"op": "add"})).unwrap_err();
        assert!(err.contains("invalid JSON patch"), "{err}");
    }

    #[test]
    fn strategic_merge_patch_cases() {
        // (name, kind, original, patch, expected)
        let cases: Vec<(&str, GroupKind, Value, Value, Value)> = vec![
            (
                "containers merge by name, env by name, null deletes a key",
                pod(),
                json!({"spec": {"containers": [
                    {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                    {"name": "b", "image": "b:1", "tty": true}
                ]}}),
                json!({"spec": {"containers": [
                    {"name": "b", "image": "b:2", "tty": null},
                    {"name": "a", "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]},
                    {"name": "c", "image": "c:1"}
                ]}}),
                json!({"spec": {"containers": [
                    {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]},
                    {"name": "b", "image": "b:2"},
                    {"name": "c", "image": "c:1"}
                ]}}),
            ),
            (
                "$patch: delete removes a keyed element",
                GroupKind::new("apps", "Deployment"),
                json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}}),
                json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}}}),
                json!({"spec": {"template": {"spec": {"containers": [{"name": "b"}]}}}}),
            ),
            (
                "$patch: replace element replaces the whole list",
                pod(),
                json!({"spec": {"volumes": [{"name": "a"}, {"name": "b"}]}}),
                json!({"spec": {"volumes": [{"$patch": "replace"}, {"name": "c", "emptyDir": {}}]}}),
                json!({"spec": {"volumes": [{"name": "c", "emptyDir": {}}]}}),
            ),
            (
                "$patch: replace on a map replaces the map",
                pod(),
                json!({"spec": {"nodeSelector": {"a": "1", "b": "2"}}}),
                json!({"spec": {"nodeSelector": {"$patch": "replace", "c": "3"}}}),
                json!({"spec": {"nodeSelector": {"c": "3"}}}),
            ),
            (
                "$patch: delete on a map removes it",
                pod(),
                json!({"spec": {"nodeSelector": {"a": "1"}, "x": 1}}),
                json!({"spec": {"nodeSelector": {"$patch": "delete"}}}),
                json!({"spec": {"x": 1}}),
            ),
            (
                "ports by containerPort, volumeMounts by mountPath",
                pod(),
                json!({"spec": {"containers": [{"name": "a",
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "volumeMounts": [{"mountPath": "/data", "name": "d"}]}]}}),
                json!({"spec": {"containers": [{"name": "a",
                    "ports": [{"containerPort": 80, "name": "web"}, {"containerPort": 443}],
                    "volumeMounts": [{"mountPath": "/data", "readOnly": true}]}]}}),
                json!({"spec": {"containers": [{"name": "a",
                    "ports": [{"containerPort": 80, "name": "web"}, {"containerPort": 443}],
                    "volumeMounts": [{"mountPath": "/data", "name": "d", "readOnly": true}]}]}}),
            ),
            (
                "tolerations and rbac subjects are replaced",
                pod(),
                json!({"spec": {"tolerations": [{"key": "a"}]}}),
                json!({"spec": {"tolerations": [{"key": "b"}]}}),
                json!({"spec": {"tolerations": [{"key": "b"}]}}),
            ),
            (
                "rbac subjects are atomic",
                GroupKind::new("rbac.authorization.k8s.io", "RoleBinding"),
                json!({"subjects": [{"kind": "User", "name": "a"}]}),
                json!({"subjects": [{"kind": "User", "name": "b"}]}),
                json!({"subjects": [{"kind": "User", "name": "b"}]}),
            ),
            (
                "finalizers merge as a set; $deleteFromPrimitiveList removes",
                pod(),
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"finalizers": ["c", "a"], "$deleteFromPrimitiveList/finalizers": ["b"]}}),
                json!({"metadata": {"finalizers": ["a", "c"]}}),
            ),
            (
                "ownerReferences merge by uid",
                GroupKind::new("", "ConfigMap"),
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "x"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "y"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "x"}, {"uid": "2", "name": "y"}]}}),
            ),
            (
                "conditions merge by type",
                GroupKind::new("apps", "Deployment"),
                json!({"status": {"conditions": [{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}]}}),
                json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}}),
                json!({"status": {"conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}]}}),
            ),
            (
                "$setElementOrder reorders keyed elements",
                pod(),
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
                json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                    "containers": [{"name": "a", "image": "x"}]}}),
                json!({"spec": {"containers": [{"name": "b"}, {"name": "a", "image": "x"}]}}),
            ),
            (
                "$setElementOrder keeps server-only elements in place",
                pod(),
                json!({"spec": {"containers": [{"name": "a"}, {"name": "x"}, {"name": "b"}]}}),
                json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}, {"name": "c"}],
                    "containers": [{"name": "c"}]}}),
                json!({"spec": {"containers": [{"name": "x"}, {"name": "b"}, {"name": "a"}, {"name": "c"}]}}),
            ),
            (
                "$setElementOrder on primitive finalizers",
                pod(),
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
                json!({"metadata": {"finalizers": ["b", "a"]}}),
            ),
            (
                "kubectl apply removing one env var and changing an image",
                GroupKind::new("apps", "Deployment"),
                json!({"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
                    "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app", "image": "a:1",
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}}}}),
                json!({"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"x\":1}"}},
                    "spec": {"template": {"spec": {
                        "$setElementOrder/containers": [{"name": "app"}],
                        "containers": [{"name": "app", "image": "a:2",
                            "$setElementOrder/env": [{"name": "A"}],
                            "env": [{"$patch": "delete", "name": "B"}]}]}}}}),
                json!({"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"x\":1}"}},
                    "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app", "image": "a:2",
                        "env": [{"name": "A", "value": "1"}]}]}}}}),
            ),
            (
                "$retainKeys drops keys not listed",
                GroupKind::new("apps", "Deployment"),
                json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
                json!({"spec": {"strategy": {"type": "Recreate"}}}),
            ),
            (
                "unknown kinds replace lists but keep metadata rules",
                GroupKind::new("postgresql.cnpg.io", "Cluster"),
                json!({"metadata": {"finalizers": ["a"]}, "spec": {"containers": [{"name": "a", "image": "1"}]}}),
                json!({"metadata": {"finalizers": ["b"]}, "spec": {"containers": [{"name": "b"}]}}),
                json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"containers": [{"name": "b"}]}}),
            ),
            (
                "service ports by port",
                GroupKind::new("", "Service"),
                json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
                json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
                json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}}),
            ),
            (
                "new keyed list element is stored without directives",
                pod(),
                json!({"spec": {}}),
                json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}}),
                json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}}),
            ),
        ];
        for (name, gk, mut original, patch, expected) in cases {
            strategic_merge_patch(&mut original, &patch, &gk)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(original, expected, "{name}");
        }
    }

    #[test]
    fn strategic_merge_patch_refuses_bad_input() {
        let cases = [
            (json!([1]), "must be a JSON object"),
            (
                json!({"spec": {"containers": [{"image": "x"}]}}),
                "does not contain declared merge key: name",
            ),
            (
                json!({"spec": {"x": {"$patch": "explode"}}}),
                "unknown patch type",
            ),
            (json!({"$patch": "delete"}), "not allowed at the top level"),
            (
                json!({"spec": {"$retainKeys": "a"}}),
                "must be a list of strings",
            ),
        ];
        for (patch, want) in cases {
            let mut target = json!({"spec": {"containers": [{"name": "a"}]}});
            let err = strategic_merge_patch(&mut target, &patch, &pod()).expect_err(want);
            assert!(err.contains(want), "{patch}: got {err:?}, want {want:?}");
        }
    }
}
