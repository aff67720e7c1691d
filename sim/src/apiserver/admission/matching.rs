//! Which requests a policy's `matchConstraints` and a binding's `matchResources` select:
//! namespace and object selectors, resource rules (with `resource/subresource`), excluded
//! rules, as the API server's admission matcher decides.

use std::collections::BTreeMap;

use crate::store::meta::string_list as strings;
use serde_json::Value;

/// What the matcher needs to know of a request.
pub struct Target<'a> {
    pub operation: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespaced: bool,
    /// The request's namespace; empty for cluster-scoped kinds.
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
    /// The request is about a Namespace itself (its own labels answer the namespaceSelector).
    pub is_namespace: bool,
}

/// `Ok(true)` when `criteria` (`matchConstraints` or `matchResources`) selects the request;
/// `namespace_labels` gives the labels of the request's namespace, `None` when it is absent.
/// An error is a configuration error of the policy or binding (a bad selector, a missing
/// namespace), reported only when the resource rules select the request, as upstream.
pub fn matches(
    criteria: &Value,
    target: &Target<'_>,
    namespace_labels: impl FnOnce() -> Option<BTreeMap<String, String>>,
) -> Result<bool, String> {
    let namespace_match =
        match_namespace(criteria.get("namespaceSelector"), target, namespace_labels);
    if matches!(namespace_match, Ok(false)) {
        return Ok(false);
    }
    let object_match = match_object(criteria.get("objectSelector"), target);
    if matches!(object_match, Ok(false)) {
        return Ok(false);
    }
    if rules(criteria.get("excludeResourceRules"))
        .iter()
        .any(|rule| rule_matches(rule, target))
    {
        return Ok(false);
    }
    let included = rules(criteria.get("resourceRules"));
    if !included.is_empty() && !included.iter().any(|rule| rule_matches(rule, target)) {
        return Ok(false);
    }
    namespace_match?;
    object_match?;
    Ok(true)
}

fn rules(value: Option<&Value>) -> Vec<&Value> {
    value
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

/// A `NamedRuleWithOperations`: operations, apiGroups, apiVersions, resources (with
/// `*`, `*/*`, `res/*`, `*/sub`), scope and resourceNames.
fn rule_matches(rule: &Value, t: &Target<'_>) -> bool {
    let operations = strings(rule, "operations");
    if !listed(&operations, t.operation) {
        return false;
    }
    if !listed(&strings(rule, "apiGroups"), t.group)
        || !listed(&strings(rule, "apiVersions"), t.version)
    {
        return false;
    }
    let resource_ok = strings(rule, "resources").iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
        let res_ok = res == "*" || res == t.resource;
        let sub_ok = if r.contains('/') {
            sub == "*" || sub == t.subresource
        } else {
            t.subresource.is_empty()
        };
        res_ok && sub_ok
    });
    if !resource_ok {
        return false;
    }
    let scope_ok = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !t.namespaced,
        "Namespaced" => t.namespaced,
        _ => true,
    };
    if !scope_ok {
        return false;
    }
    let names = strings(rule, "resourceNames");
    names.is_empty() || names.iter().any(|n| n == t.name)
}

fn labels_of(obj: Option<&Value>) -> Option<BTreeMap<String, String>> {
    let obj = obj?;
    Some(
        obj.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

fn match_namespace(
    selector: Option<&Value>,
    t: &Target<'_>,
    namespace_labels: impl FnOnce() -> Option<BTreeMap<String, String>>,
) -> Result<bool, String> {
    let Some(selector) = selector.filter(|s| !is_everything(s)) else {
        return Ok(true);
    };
    if t.is_namespace {
        let labels = labels_of(t.object.or(t.old_object)).unwrap_or_default();
        return selector_matches(selector, &labels);
    }
    // A cluster-scoped object has no namespace to select on: it is matched.
    if !t.namespaced || t.namespace.is_empty() {
        return Ok(true);
    }
    match namespace_labels() {
        Some(labels) => selector_matches(selector, &labels),
        None => Err(format!("namespace \"{}\" not found", t.namespace)),
    }
}

fn match_object(selector: Option<&Value>, t: &Target<'_>) -> Result<bool, String> {
    let Some(selector) = selector.filter(|s| !is_everything(s)) else {
        return Ok(true);
    };
    // Either the new or the old object may match.
    let mut any_error = None;
    for obj in [t.object, t.old_object].into_iter().flatten() {
        let labels = labels_of(Some(obj)).unwrap_or_default();
        match selector_matches(selector, &labels) {
            Ok(true) => return Ok(true),
            Ok(false) => {}
            Err(e) => any_error = Some(e),
        }
    }
    any_error.map_or(Ok(false), Err)
}

fn is_everything(selector: &Value) -> bool {
    let empty = |f: &str| {
        selector.get(f).is_none_or(|v| {
            v.is_null()
                || v.as_object().is_some_and(|m| m.is_empty())
                || v.as_array().is_some_and(|a| a.is_empty())
        })
    };
    empty("matchLabels") && empty("matchExpressions")
}

/// A `metav1.LabelSelector` against labels; an empty selector selects everything.
pub fn selector_matches(
    selector: &Value,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    if let Some(m) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            if labels.get(k).map(String::as_str) != v.as_str() {
                return Ok(false);
            }
        }
    }
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values = strings(e, "values");
        let have = labels.get(key);
        let ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => have.is_some_and(|v| values.contains(v)),
            "NotIn" => have.is_none_or(|v| !values.contains(v)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            other => return Err(format!("{other:?} is not a valid label selector operator")),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}
