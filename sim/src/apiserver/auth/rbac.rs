//! The RBAC authorizer: the stored Roles, ClusterRoles, RoleBindings and ClusterRoleBindings
//! decide, with Kubernetes' semantics (`plugin/pkg/auth/authorizer/rbac`): ClusterRoleBindings
//! first, then the RoleBindings of the request's namespace; the first rule that allows wins.
//! Aggregated ClusterRoles take the rules of the ClusterRoles their selectors match, computed
//! when read (a real cluster's aggregation controller writes them into the object).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::identity::{AUTHENTICATED, Identity, service_account};
use crate::apiserver::rbac_audit::RuleRef;
use crate::apiserver::server::Server;
use crate::store::meta::string_list as strings;
use crate::store::objects::Locked;

pub const GROUP: &str = "rbac.authorization.k8s.io";

/// What a request asks to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    /// `None` for a resource request; the URL path for a non-resource one.
    pub path: Option<String>,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    pub namespace: String,
}

impl Attributes {
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str) -> Self {
        Self {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            ..Self::default()
        }
    }
}

/// A rule, read from its JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl Rule {
    pub fn from_json(v: &Value) -> Self {
        Self {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    pub fn allows(&self, a: &Attributes) -> bool {
        if !has(&self.verbs, &a.verb) {
            return false;
        }
        match &a.path {
            Some(path) => self.non_resource_urls.iter().any(|u| url_matches(u, path)),
            None => {
                has(&self.api_groups, &a.group)
                    && self.resource_matches(&a.resource, &a.subresource)
                    && (self.resource_names.is_empty()
                        || self.resource_names.iter().any(|n| n == &a.name))
            }
        }
    }

    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            if r == "*" {
                return true;
            }
            if subresource.is_empty() {
                return r == resource;
            }
            match r.split_once('/') {
                Some((res, sub)) => sub == subresource && (res == resource || res == "*"),
                None => false,
            }
        })
    }

    /// The Go `%+v`-like line a refused escalation names for one atomic rule.
    pub fn describe(&self) -> String {
        let list = |v: &[String]| {
            v.iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut parts = Vec::new();
        if !self.api_groups.is_empty() || !self.resources.is_empty() {
            parts.push(format!("APIGroups:[{}]", list(&self.api_groups)));
            parts.push(format!("Resources:[{}]", list(&self.resources)));
        }
        if !self.resource_names.is_empty() {
            parts.push(format!("ResourceNames:[{}]", list(&self.resource_names)));
        }
        if !self.non_resource_urls.is_empty() {
            parts.push(format!(
                "NonResourceURLs:[{}]",
                list(&self.non_resource_urls)
            ));
        }
        parts.push(format!("Verbs:[{}]", list(&self.verbs)));
        format!("{{{}}}", parts.join(", "))
    }
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

fn url_matches(rule: &str, path: &str) -> bool {
    rule == "*"
        || rule == path
        || rule
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

/// Does a binding subject name this identity? A ServiceAccount subject without a namespace
/// means the binding's own.
pub fn subject_matches(subject: &Value, binding_namespace: &str, id: &Identity) -> bool {
    let s = |k: &str| subject.get(k).and_then(Value::as_str).unwrap_or("");
    match s("kind") {
        "User" => s("name") == id.user,
        "Group" => id.groups.iter().any(|g| g == s("name")),
        "ServiceAccount" => {
            let ns = match s("namespace") {
                "" => binding_namespace,
                ns => ns,
            };
            service_account(&id.user) == Some((ns, s("name")))
        }
        _ => false,
    }
}

fn key(plural: &str) -> (String, String) {
    (GROUP.to_string(), plural.to_string())
}

fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// A metav1.LabelSelector (matchLabels, matchExpressions) against labels; an empty selector
/// matches nothing here, as the aggregation controller skips it.
fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let mut any = false;
    if let Some(m) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            any = true;
            if labels.get(k).map(String::as_str) != v.as_str() {
                return false;
            }
        }
    }
    if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            any = true;
            let k = e["key"].as_str().unwrap_or("");
            let values = strings(e, "values");
            let have = labels.get(k);
            let ok = match e["operator"].as_str().unwrap_or("") {
                "In" => have.is_some_and(|v| values.contains(v)),
                "NotIn" => have.is_none_or(|v| !values.contains(v)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    any
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The rules of a ClusterRole, with where each is written; an aggregated one gathers the
/// rules of every ClusterRole its selectors match.
fn cluster_role_rules(l: &Locked<'_>, role: &Value, out: &mut Vec<(RuleRef, Rule)>) {
    let own = |obj: &Value, out: &mut Vec<(RuleRef, Rule)>| {
        let role = format!("ClusterRole/{}", name_of(obj));
        if let Some(rules) = obj.get("rules").and_then(Value::as_array) {
            for (index, r) in rules.iter().enumerate() {
                out.push((
                    RuleRef {
                        role: role.clone(),
                        index,
                        verb: String::new(),
                        resource: String::new(),
                    },
                    Rule::from_json(r),
                ));
            }
        }
    };
    let Some(selectors) = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
    else {
        own(role, out);
        return;
    };
    let mut seen = BTreeSet::new();
    for other in l.list(&key("clusterroles"), None) {
        if other.get("aggregationRule").is_some() || !seen.insert(name_of(&other).to_string()) {
            continue;
        }
        let l = labels(&other);
        if selectors.iter().any(|s| selector_matches(s, &l)) {
            own(&other, out);
        }
    }
}

/// The rules a binding grants, through the role it references (none when that role is
/// missing, as on a real server).
fn binding_rules(l: &Locked<'_>, binding: &Value, namespace: &str) -> Vec<(RuleRef, Rule)> {
    let kind = binding.pointer("/roleRef/kind").and_then(Value::as_str);
    let name = binding
        .pointer("/roleRef/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = Vec::new();
    match kind {
        Some("ClusterRole") => {
            if let Some(role) = l.get(&key("clusterroles"), &(String::new(), name.into())) {
                cluster_role_rules(l, &role, &mut out);
            }
        }
        Some("Role") => {
            if let Some(role) = l.get(&key("roles"), &(namespace.into(), name.into()))
                && let Some(rules) = role.get("rules").and_then(Value::as_array)
            {
                for (index, r) in rules.iter().enumerate() {
                    out.push((
                        RuleRef {
                            role: format!("Role/{namespace}/{name}"),
                            index,
                            verb: String::new(),
                            resource: String::new(),
                        },
                        Rule::from_json(r),
                    ));
                }
            }
        }
        _ => {}
    }
    out
}

fn binds(binding: &Value, namespace: &str, id: &Identity) -> bool {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .is_some_and(|subs| subs.iter().any(|s| subject_matches(s, namespace, id)))
}

/// Every rule this identity holds in `namespace` ("" for cluster scope only), in the order the
/// authorizer visits them.
pub fn rules_for(l: &Locked<'_>, id: &Identity, namespace: &str) -> Vec<(RuleRef, Rule)> {
    let mut out = Vec::new();
    for b in l.list(&key("clusterrolebindings"), None) {
        if binds(&b, "", id) {
            out.extend(binding_rules(l, &b, ""));
        }
    }
    if !namespace.is_empty() {
        for b in l.list(&key("rolebindings"), Some(namespace)) {
            if binds(&b, namespace, id) {
                out.extend(binding_rules(l, &b, namespace));
            }
        }
    }
    out
}

/// The bootstrap policy every authenticated user holds on a real cluster (`system:discovery`,
/// `system:basic-user`, `system:public-info-viewer`); the sim grants it without storing it.
pub fn bootstrap_rules() -> Vec<Rule> {
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        Rule {
            verbs: s(&["get"]),
            non_resource_urls: s(&[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/openapi",
                "/openapi/*",
                "/version",
                "/version/",
                "/healthz",
                "/livez",
                "/readyz",
            ]),
            ..Rule::default()
        },
        Rule {
            verbs: s(&["create"]),
            api_groups: s(&["authorization.k8s.io"]),
            resources: s(&["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            ..Rule::default()
        },
        Rule {
            verbs: s(&["create"]),
            api_groups: s(&["authentication.k8s.io"]),
            resources: s(&["selfsubjectreviews"]),
            ..Rule::default()
        },
    ]
}

/// Decide one request of a non-admin identity; the allowing rule, when stored, is recorded as
/// exercised.
pub fn authorize(server: &Server, id: &Identity, a: &Attributes) -> bool {
    decide(server, id, a, true)
}

fn decide(server: &Server, id: &Identity, a: &Attributes, record: bool) -> bool {
    if id.is_admin() {
        return true;
    }
    if bootstrap_rules().iter().any(|r| r.allows(a)) {
        return true;
    }
    let granted = {
        let l = server.store.lock();
        let rules: Vec<(RuleRef, Rule)> = rules_for(&l, id, &a.namespace);
        rules
            .into_iter()
            .find(|(_, r)| r.allows(a))
            .map(|(at, _)| at)
    };
    match granted {
        Some(mut at) => {
            if record {
                at.verb = a.verb.clone();
                at.resource = match (&a.path, a.subresource.as_str()) {
                    (Some(path), _) => path.clone(),
                    (None, "") => format!("{}/{}", a.group, a.resource),
                    (None, sub) => format!("{}/{}/{sub}", a.group, a.resource),
                };
                server.rbac_audit.record(&id.user, at);
            }
            true
        }
        None => false,
    }
}

/// The RBAC authorizer's reason for allowing `a`: the first binding (ClusterRoleBindings, then
/// the namespace's RoleBindings) whose role has a rule allowing it, as
/// `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "u"`; the bootstrap
/// policy is named by its own bindings. `None` when no rule allows it.
pub fn allow_reason(server: &Server, id: &Identity, a: &Attributes) -> Option<String> {
    let describe = |binding: &Value, namespace: &str, l: &Locked<'_>| -> Option<String> {
        let subject = binding
            .get("subjects")
            .and_then(Value::as_array)?
            .iter()
            .find(|s| subject_matches(s, namespace, id))?;
        if !binding_rules(l, binding, namespace)
            .iter()
            .any(|(_, r)| r.allows(a))
        {
            return None;
        }
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let role_ref = &binding["roleRef"];
        let source = if namespace.is_empty() {
            format!("ClusterRoleBinding {:?}", name_of(binding))
        } else {
            format!(
                "RoleBinding {:?}",
                format!("{}/{namespace}", name_of(binding))
            )
        };
        let who = match s(subject, "kind").as_str() {
            "ServiceAccount" => {
                let ns = match s(subject, "namespace") {
                    ns if !ns.is_empty() => ns,
                    _ => namespace.to_string(),
                };
                format!(
                    "ServiceAccount {:?}",
                    format!("{}/{ns}", s(subject, "name"))
                )
            }
            kind => format!("{kind} {:?}", s(subject, "name")),
        };
        Some(format!(
            "RBAC: allowed by {source} of {} {:?} to {who}",
            s(role_ref, "kind"),
            s(role_ref, "name")
        ))
    };
    {
        let l = server.store.lock();
        for b in l.list(&key("clusterrolebindings"), None) {
            if let Some(reason) = describe(&b, "", &l) {
                return Some(reason);
            }
        }
        if !a.namespace.is_empty() {
            for b in l.list(&key("rolebindings"), Some(&a.namespace)) {
                if let Some(reason) = describe(&b, &a.namespace, &l) {
                    return Some(reason);
                }
            }
        }
    }
    let bootstrap = bootstrap_rules();
    let index = bootstrap.iter().position(|r| r.allows(a))?;
    // The sim keeps the three bootstrap roles as rules of its own: the first holds
    // `system:discovery`'s paths and `system:public-info-viewer`'s health checks, the others
    // `system:basic-user`'s reviews.
    let role = match (index, a.path.as_deref()) {
        (0, Some("/healthz" | "/livez" | "/readyz")) => "system:public-info-viewer",
        (0, _) => "system:discovery",
        _ => "system:basic-user",
    };
    Some(format!(
        "RBAC: allowed by ClusterRoleBinding {role:?} of ClusterRole {role:?} to Group {AUTHENTICATED:?}"
    ))
}

/// Hand the store's objects out for the review answers (rules for SelfSubjectRulesReview).
pub fn rules_of(server: &Server, id: &Identity, namespace: &str) -> Vec<Rule> {
    let l = server.store.lock();
    rules_for(&l, id, namespace)
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

/// The stored role a binding's `roleRef` names, if any.
pub fn referenced_role(l: &Locked<'_>, role_ref: &Value, namespace: &str) -> Option<Arc<Value>> {
    let name = role_ref.get("name").and_then(Value::as_str)?.to_string();
    match role_ref.get("kind").and_then(Value::as_str)? {
        "ClusterRole" => l.get(&key("clusterroles"), &(String::new(), name)),
        "Role" => l.get(&key("roles"), &(namespace.to_string(), name)),
        _ => None,
    }
}

/// The rules of a role object (aggregated ClusterRoles resolved).
pub fn role_rules(l: &Locked<'_>, role: &Value) -> Vec<Rule> {
    if role.get("aggregationRule").is_some() {
        let mut out = Vec::new();
        cluster_role_rules(l, role, &mut out);
        return out.into_iter().map(|(_, r)| r).collect();
    }
    role.get("rules")
        .and_then(Value::as_array)
        .map(|rs| rs.iter().map(Rule::from_json).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(v: Value) -> Rule {
        Rule::from_json(&v)
    }

    fn req(verb: &str, group: &str, res: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            group: group.into(),
            resource: res.into(),
            subresource: sub.into(),
            name: name.into(),
            namespace: "ns".into(),
            path: None,
        }
    }

    #[test]
    fn rule_semantics_table() {
        let pods =
            rule(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}));
        let status = rule(
            json!({"apiGroups": ["x.io"], "resources": ["things/status"], "verbs": ["patch"]}),
        );
        let any_status =
            rule(json!({"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["*"]}));
        let named = rule(
            json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["ca"], "verbs": ["get"]}),
        );
        let all = rule(json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}));
        let urls = rule(json!({"nonResourceURLs": ["/metrics", "/logs/*"], "verbs": ["get"]}));
        let cases = [
            (&pods, req("get", "", "pods", "", "p"), true),
            (&pods, req("watch", "", "pods", "", ""), false),
            (&pods, req("get", "apps", "pods", "", "p"), false),
            (&pods, req("get", "", "pods", "log", "p"), false),
            (&status, req("patch", "x.io", "things", "status", "t"), true),
            (&status, req("patch", "x.io", "things", "", "t"), false),
            (
                &any_status,
                req("update", "y.io", "others", "status", "t"),
                true,
            ),
            (&any_status, req("update", "y.io", "others", "", "t"), false),
            (&named, req("get", "", "secrets", "", "ca"), true),
            (&named, req("get", "", "secrets", "", "other"), false),
            (&named, req("get", "", "secrets", "", ""), false),
            (
                &all,
                req("deletecollection", "q.io", "z", "scale", ""),
                true,
            ),
            (&urls, req("get", "", "pods", "", ""), false),
        ];
        for (r, a, want) in cases {
            assert_eq!(r.allows(&a), want, "{r:?} {a:?}");
        }
        let path = |p: &str| Attributes {
            verb: "get".into(),
            path: Some(p.into()),
            ..Attributes::default()
        };
        assert!(urls.allows(&path("/metrics")));
        assert!(urls.allows(&path("/logs/kube")));
        assert!(!urls.allows(&path("/metricsx")));
        assert!(!pods.allows(&path("/metrics")));
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let sa = Identity::new("system:serviceaccount:ops:op", &[]);
        let bob = Identity::new("bob", &["devs".into()]);
        let s = |v: Value| v;
        assert!(subject_matches(
            &s(json!({"kind": "ServiceAccount", "name": "op", "namespace": "ops"})),
            "",
            &sa
        ));
        assert!(subject_matches(
            &s(json!({"kind": "ServiceAccount", "name": "op"})),
            "ops",
            &sa
        ));
        assert!(!subject_matches(
            &s(json!({"kind": "ServiceAccount", "name": "op"})),
            "other",
            &sa
        ));
        assert!(subject_matches(
            &s(json!({"kind": "Group", "name": "system:serviceaccounts:ops"})),
            "",
            &sa
        ));
        assert!(subject_matches(
            &s(json!({"kind": "User", "name": "bob"})),
            "",
            &bob
        ));
        assert!(subject_matches(
            &s(json!({"kind": "Group", "name": "devs"})),
            "",
            &bob
        ));
        assert!(!subject_matches(
            &s(json!({"kind": "User", "name": "devs"})),
            "",
            &bob
        ));
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let l: BTreeMap<String, String> = [("a".to_string(), "true".to_string())].into();
        assert!(selector_matches(&json!({"matchLabels": {"a": "true"}}), &l));
        assert!(!selector_matches(
            &json!({"matchLabels": {"a": "false"}}),
            &l
        ));
        assert!(selector_matches(
            &json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
            &l
        ));
        assert!(!selector_matches(
            &json!({"matchExpressions": [{"key": "b", "operator": "In", "values": ["x"]}]}),
            &l
        ));
        assert!(!selector_matches(&json!({}), &l));
    }

    #[test]
    fn describe_is_shaped_like_the_go_rule() {
        let r = rule(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}));
        assert_eq!(
            r.describe(),
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#
        );
    }
}
