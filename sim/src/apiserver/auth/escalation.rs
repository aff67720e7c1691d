//! The RBAC escalation checks on writes of roles and bindings
//! (`pkg/registry/rbac/validation`): a role may only hold what its writer holds, unless the
//! writer may `escalate`; a binding may only grant what its writer holds, unless the writer may
//! `bind` the role it references. Members of `system:masters` pass.

use serde_json::Value;

use super::identity::Identity;
use super::rbac::{self, Attributes, GROUP, Rule};
use crate::apiserver::error::ApiError;
use crate::apiserver::server::Server;

/// Split a rule into single-verb, single-resource (single-name) rules.
fn breakdown(rule: &Rule) -> Vec<Rule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for verb in &rule.verbs {
        for url in &rule.non_resource_urls {
            out.push(Rule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Rule::default()
            });
        }
        for group in &rule.api_groups {
            for resource in &rule.resources {
                let base = Rule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Rule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(Rule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    out
}

fn has(set: &[String], value: &str) -> bool {
    set.iter().any(|s| s == "*" || s == value)
}

fn resource_covers(owner: &[String], resource: &str) -> bool {
    has(owner, resource)
        || resource
            .split_once('/')
            .is_some_and(|(_, sub)| owner.iter().any(|o| o == &format!("*/{sub}")))
}

/// Does `owner` cover the atomic rule `atom`?
fn covers(owner: &Rule, atom: &Rule) -> bool {
    if !atom.verbs.iter().all(|v| has(&owner.verbs, v)) {
        return false;
    }
    if !atom.non_resource_urls.is_empty() {
        return atom.non_resource_urls.iter().all(|u| {
            owner.non_resource_urls.iter().any(|o| {
                o == "*" || o == u || o.strip_suffix('*').is_some_and(|p| u.starts_with(p))
            })
        });
    }
    atom.api_groups.iter().all(|g| has(&owner.api_groups, g))
        && atom
            .resources
            .iter()
            .all(|r| resource_covers(&owner.resources, r))
        && (owner.resource_names.is_empty()
            || (!atom.resource_names.is_empty()
                && atom
                    .resource_names
                    .iter()
                    .all(|n| owner.resource_names.contains(n))))
}

/// The atoms of `wanted` no rule of `owned` covers, compacted per resource.
fn missing(owned: &[Rule], wanted: &[Rule]) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for atom in wanted.iter().flat_map(breakdown) {
        if owned.iter().any(|o| covers(o, &atom)) {
            continue;
        }
        match out.iter_mut().find(|r| {
            r.api_groups == atom.api_groups
                && r.resources == atom.resources
                && r.resource_names == atom.resource_names
                && r.non_resource_urls == atom.non_resource_urls
        }) {
            Some(r) if !r.verbs.contains(&atom.verbs[0]) => r.verbs.push(atom.verbs[0].clone()),
            Some(_) => {}
            None => out.push(atom),
        }
    }
    // Upstream sorts the compacted rules by their printed form.
    out.sort_by_key(Rule::describe);
    out
}

fn refusal(plural: &str, name: &str, id: &Identity, missing: &[Rule]) -> ApiError {
    let groups = id
        .groups
        .iter()
        .map(|g| format!("{g:?}"))
        .collect::<Vec<_>>()
        .join(" ");
    let rules = missing
        .iter()
        .map(Rule::describe)
        .collect::<Vec<_>>()
        .join("\n");
    let mut e = ApiError::forbidden(format!(
        "{plural}.{GROUP} \"{name}\" is forbidden: user \"{}\" (groups=[{groups}]) is attempting to grant RBAC permissions not currently held:\n{rules}",
        id.user
    ));
    e.details = Some(Box::new(crate::apiserver::error::Details {
        name: name.to_string(),
        group: GROUP.to_string(),
        kind: plural.to_string(),
        ..Default::default()
    }));
    e
}

fn held(server: &Server, id: &Identity, namespace: &str) -> Vec<Rule> {
    let mut rules = rbac::rules_of(server, id, namespace);
    rules.extend(rbac::bootstrap_rules());
    rules
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Only ownerReferences and finalizers changed (what the garbage collector and owners do):
/// no check, as on a real server.
fn only_gc_fields_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "ownerReferences",
                "finalizers",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                m.remove(k);
            }
        }
        v
    };
    strip(old) == strip(new)
}

/// Check a role or binding `new` (replacing `old`) written by `id` into `plural`.
pub fn check(
    server: &Server,
    id: &Identity,
    plural: &str,
    namespace: &str,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if id.is_admin() || old.is_some_and(|o| only_gc_fields_changed(o, new)) {
        return Ok(());
    }
    let name = name_of(new);
    match plural {
        "roles" | "clusterroles" => {
            let may_escalate = Attributes {
                name: name.to_string(),
                ..Attributes::resource("escalate", GROUP, plural, namespace)
            };
            if rbac::authorize(server, id, &may_escalate) {
                return Ok(());
            }
            let wanted: Vec<Rule> = new
                .get("rules")
                .and_then(Value::as_array)
                .map(|rs| rs.iter().map(Rule::from_json).collect())
                .unwrap_or_default();
            let gaps = missing(&held(server, id, namespace), &wanted);
            if gaps.is_empty() {
                Ok(())
            } else {
                Err(refusal(plural, name, id, &gaps))
            }
        }
        "rolebindings" | "clusterrolebindings" => {
            let role_ref = new.get("roleRef").cloned().unwrap_or(Value::Null);
            let role_kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
            let role_name = role_ref.get("name").and_then(Value::as_str).unwrap_or("");
            let role_plural = if role_kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            let may_bind = Attributes {
                name: role_name.to_string(),
                ..Attributes::resource("bind", GROUP, role_plural, namespace)
            };
            if rbac::authorize(server, id, &may_bind) {
                return Ok(());
            }
            let wanted = {
                let l = server.store.lock();
                match rbac::referenced_role(&l, &role_ref, namespace) {
                    Some(role) => rbac::role_rules(&l, &role),
                    None => {
                        return Err(ApiError::forbidden(format!(
                            "{plural}.{GROUP} \"{name}\" is forbidden: {role_plural}.{GROUP} \"{role_name}\" not found"
                        )));
                    }
                }
            };
            let gaps = missing(&held(server, id, namespace), &wanted);
            if gaps.is_empty() {
                Ok(())
            } else {
                Err(refusal(plural, name, id, &gaps))
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(v: Value) -> Rule {
        Rule::from_json(&v)
    }

    #[test]
    fn coverage_follows_the_upstream_rules() {
        let owned = vec![
            r(
                json!({"apiGroups": [""], "resources": ["pods", "*/status"], "verbs": ["get", "list"]}),
            ),
            r(
                json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]}),
            ),
            r(json!({"nonResourceURLs": ["/metrics*"], "verbs": ["get"]})),
        ];
        let cases = [
            (
                json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}),
                0,
            ),
            (
                json!({"apiGroups": [""], "resources": ["pods/status"], "verbs": ["list"]}),
                0,
            ),
            (
                json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete", "create"]}),
                1,
            ),
            (
                json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]}),
                0,
            ),
            (
                json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}),
                1,
            ),
            (
                json!({"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]}),
                1,
            ),
            (
                json!({"nonResourceURLs": ["/metrics/x"], "verbs": ["get"]}),
                0,
            ),
        ];
        for (wanted, gaps) in cases {
            let m = missing(&owned, &[r(wanted.clone())]);
            assert_eq!(m.len(), gaps, "{wanted}: {m:?}");
        }
        let m = missing(
            &owned,
            &[r(
                json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete", "create"]}),
            )],
        );
        assert_eq!(
            m[0].describe(),
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete" "create"]}"#
        );
    }

    #[test]
    fn owner_reference_only_changes_are_not_checked() {
        let old =
            json!({"metadata": {"name": "b", "resourceVersion": "1"}, "roleRef": {"name": "x"}});
        let owned = json!({"metadata": {"name": "b", "resourceVersion": "2",
            "ownerReferences": [{"uid": "u"}]}, "roleRef": {"name": "x"}});
        let changed = json!({"metadata": {"name": "b"}, "roleRef": {"name": "y"}});
        assert!(only_gc_fields_changed(&old, &owned));
        assert!(!only_gc_fields_changed(&old, &changed));
    }
}
