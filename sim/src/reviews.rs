//! The self reviews kubectl's `auth` commands create, besides the access review in `http`:
//! SelfSubjectRulesReview (`kubectl auth can-i --list`) and SelfSubjectReview
//! (`kubectl auth whoami`).

use serde_json::{Value, json};

use crate::resources::ResourceInfo;
use crate::server::Server;

/// The user every request is taken to come from (the name the Forbidden messages use).
pub const USER: &str = "system:sim";

fn review(group: &str, kind: &str, plural: &str) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        namespaced: false,
        short_names: Vec::new(),
        categories: Vec::new(),
        status_subresource: false,
        verbs: vec!["create"],
        custom: false,
        schema: None,
        printer_columns: Vec::new(),
        create_only: true,
    }
}

/// The review kinds served here, to register with the built-ins.
pub fn kinds() -> Vec<ResourceInfo> {
    vec![
        review(
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
        ),
        review(
            "authentication.k8s.io",
            "SelfSubjectReview",
            "selfsubjectreviews",
        ),
    ]
}

/// The answer to a review of `info`, or `None` when `info` is not one of these.
pub fn answer(server: &Server, info: &ResourceInfo, mut body: Value) -> Option<Value> {
    let status = match info.plural.as_str() {
        "selfsubjectrulesreviews" => rules(server, &body),
        "selfsubjectreviews" => json!({"userInfo": {
            "username": USER, "groups": ["system:masters", "system:authenticated"]}}),
        _ => return None,
    };
    body["apiVersion"] = json!(info.api_version());
    body["kind"] = json!(info.kind);
    body["metadata"] = json!({"creationTimestamp": crate::ops::now_rfc3339()});
    body["status"] = status;
    Some(body)
}

/// Everything is allowed but what a deny rule refuses, and rules cannot say "except": with deny
/// rules for the namespace the list is marked incomplete, as an authorizer that cannot
/// enumerate its decisions marks it.
fn rules(server: &Server, body: &Value) -> Value {
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
    let mut status = json!({
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": !denying.is_empty(),
    });
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
    use crate::config::SimConfig;

    #[test]
    fn rules_are_incomplete_only_under_deny_rules() {
        let server = std::sync::Arc::new(Server::new(SimConfig::default(), "127.0.0.1:0".into()));
        let info = &kinds()[0];
        let req = json!({"spec": {"namespace": "team"}});
        let open = answer(&server, info, req.clone()).unwrap();
        assert_eq!(open["status"]["incomplete"], false);
        assert_eq!(open["kind"], "SelfSubjectRulesReview");
        let admin = crate::faults::Admin {
            server: server.clone(),
        };
        admin.deny("create:pods:team").unwrap();
        let denied = answer(&server, info, req).unwrap();
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
        let v = answer(&server, &kinds()[1], json!({})).unwrap();
        assert_eq!(v["status"]["userInfo"]["username"], USER);
        assert_eq!(v["apiVersion"], "authentication.k8s.io/v1");
    }
}
