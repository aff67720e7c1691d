//! The reviews kubectl's `auth` commands and controllers create, answered from the same RBAC
//! rules (and deny rules) requests are authorized by: SelfSubjectAccessReview and
//! SubjectAccessReview (`kubectl auth can-i`), SelfSubjectRulesReview (`kubectl auth can-i
//! --list`) and SelfSubjectReview (`kubectl auth whoami`).

use serde_json::{Value, json};

use crate::apiserver::auth::Identity;
use crate::apiserver::auth::rbac::{self, Attributes};
use crate::apiserver::server::Server;
use crate::store::resources::ResourceInfo;

/// The admin user, whom the sim's own kubeconfig authenticates as.
#[cfg(test)]
pub const USER: &str = crate::apiserver::auth::identity::ADMIN_USER;

/// The answer to a review of `info`, or `None` when `info` is not one of these.
pub fn answer(
    server: &Server,
    id: &Identity,
    info: &ResourceInfo,
    mut body: Value,
) -> Option<Value> {
    let status = match info.plural.as_str() {
        "selfsubjectrulesreviews" => rules(server, id, &body),
        "selfsubjectreviews" => json!({"userInfo": id.user_info()}),
        "selfsubjectaccessreviews" => access(server, id, &body),
        "subjectaccessreviews" => {
            let spec = &body["spec"];
            let groups = crate::store::meta::string_list(spec, "groups");
            let user = spec["user"].as_str().unwrap_or("");
            access(server, &Identity::new(user, &groups), &body)
        }
        _ => return None,
    };
    body["apiVersion"] = json!(info.api_version());
    body["kind"] = json!(info.kind);
    body["metadata"] = json!({"creationTimestamp": crate::apiserver::ops::now_rfc3339()});
    body["status"] = status;
    Some(body)
}

/// The attributes of an access review's spec.
fn attributes(spec: &Value) -> Attributes {
    if let Some(nr) = spec.get("nonResourceAttributes") {
        return Attributes {
            verb: nr["verb"].as_str().unwrap_or("").into(),
            path: Some(nr["path"].as_str().unwrap_or("").into()),
            ..Attributes::default()
        };
    }
    let r = &spec["resourceAttributes"];
    let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
    Attributes {
        verb: s("verb"),
        path: None,
        group: s("group"),
        resource: s("resource"),
        subresource: s("subresource"),
        name: s("name"),
        namespace: s("namespace"),
    }
}

/// An access review: the deny rules first (they bind everyone), then RBAC.
fn access(server: &Server, id: &Identity, body: &Value) -> Value {
    let a = attributes(&body["spec"]);
    if a.path.is_none() {
        let with_sub = match a.subresource.as_str() {
            "" => a.resource.clone(),
            sub => format!("{}/{sub}", a.resource),
        };
        let denied = server
            .faults
            .denied(&a.verb, &a.group, &a.resource, &a.namespace)
            .is_some()
            || server
                .faults
                .denied(&a.verb, &a.group, &with_sub, &a.namespace)
                .is_some();
        if denied {
            return json!({"allowed": false, "denied": true, "reason": "denied by a sim deny rule"});
        }
    }
    // `system:masters` passes the privileged-group authorizer, which gives no reason; RBAC
    // names the binding whose rule allowed the request, and says nothing when none did.
    if id.is_admin() {
        return json!({"allowed": true});
    }
    match rbac::allow_reason(server, id, &a) {
        Some(reason) => json!({"allowed": true, "reason": reason}),
        None => json!({"allowed": false}),
    }
}

fn rule_json(r: &rbac::Rule) -> Value {
    if !r.non_resource_urls.is_empty() {
        return json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls});
    }
    let mut v = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
    if !r.resource_names.is_empty() {
        v["resourceNames"] = json!(r.resource_names);
    }
    v
}

/// The rules the identity holds in the namespace. The admin holds everything; deny rules cannot
/// be listed as "except", so with deny rules for the namespace the list is marked incomplete,
/// as an authorizer that cannot enumerate its decisions marks it.
fn rules(server: &Server, id: &Identity, body: &Value) -> Value {
    let namespace = body
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let denying: Vec<String> = server
        .faults
        .snapshot()
        .deny
        .iter()
        .filter(|r| r.namespace == "*" || r.namespace == namespace || r.namespace.is_empty())
        .map(ToString::to_string)
        .collect();
    let mut status = if id.is_admin() {
        json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        })
    } else {
        let mut held = rbac::rules_of(server, id, namespace);
        held.extend(rbac::bootstrap_rules());
        let (non_resource, resource): (Vec<_>, Vec<_>) =
            held.iter().partition(|r| !r.non_resource_urls.is_empty());
        json!({
            "resourceRules": resource.into_iter().map(rule_json).collect::<Vec<_>>(),
            "nonResourceRules": non_resource.into_iter().map(rule_json).collect::<Vec<_>>(),
        })
    };
    status["incomplete"] = json!(!denying.is_empty());
    if !denying.is_empty() {
        status["evaluationError"] = json!(format!(
            "the sim's deny rules are not listed: {}",
            denying.join(", ")
        ));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::config::SimConfig;

    #[test]
    fn rules_are_incomplete_only_under_deny_rules() {
        let server = std::sync::Arc::new(Server::new(SimConfig::default(), "127.0.0.1:0".into()));
        let info = &crate::store::resources::review_kinds()[0];
        let req = json!({"spec": {"namespace": "team"}});
        let admin_id = Identity::admin();
        let open = answer(&server, &admin_id, info, req.clone()).unwrap();
        assert_eq!(open["status"]["incomplete"], false);
        assert_eq!(open["kind"], "SelfSubjectRulesReview");
        let admin = crate::harness::admin::Admin {
            server: server.clone(),
        };
        admin.deny("create:pods:team").unwrap();
        let denied = answer(&server, &admin_id, info, req).unwrap();
        assert_eq!(denied["status"]["incomplete"], true);
        assert!(
            denied["status"]["evaluationError"]
                .as_str()
                .unwrap()
                .contains("create:pods:team")
        );
    }

    #[test]
    fn whoami_names_the_sim_user() {
        let server = Server::new(SimConfig::default(), "127.0.0.1:0".into());
        let v = answer(
            &server,
            &Identity::admin(),
            &crate::store::resources::review_kinds()[1],
            json!({}),
        )
        .unwrap();
        assert_eq!(v["status"]["userInfo"]["username"], USER);
        assert_eq!(v["apiVersion"], "authentication.k8s.io/v1");
    }
}
