//! The installation's ClusterRole grants every permission the namespace-refusal tracker checks
//! for the kinds this build runs; otherwise a WATCH_NAMESPACES install would drop them all.

use k8s_openapi::api::rbac::v1::ClusterRole;
use pgtoolbox_operator::cli::register_all;
use pgtoolbox_operator::reconcile::namespace_permissions::required_permissions;
use pgtoolbox_operator::supervisor::OperatorBuilder;
use pgtoolbox_sim::{Sim, SimConfig};
use serde::Deserialize;

#[tokio::test]
async fn the_cluster_role_grants_what_the_tracker_checks() {
    let sim = Sim::start(SimConfig::default()).await.expect("sim starts");
    let kinds = register_all(OperatorBuilder::new(sim.client(), Default::default())).kind_names();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/02-clusterrole.yaml"
    ))
    .expect("deploy/02-clusterrole.yaml");
    let role = serde_yaml_ng::Deserializer::from_str(&text)
        .map(ClusterRole::deserialize)
        .find_map(Result::ok)
        .expect("a ClusterRole");
    let rules = role.rules.unwrap_or_default();
    for permission in required_permissions(&kinds) {
        let resource = if permission.subresource.is_empty() {
            permission.resource.to_owned()
        } else {
            format!("{}/{}", permission.resource, permission.subresource)
        };
        let granted = rules.iter().any(|rule| {
            let has =
                |list: &Option<Vec<String>>, value: &str| list.iter().flatten().any(|v| v == value);
            has(&rule.api_groups, permission.group)
                && has(&rule.resources, &resource)
                && rule.verbs.iter().any(|v| v == permission.verb)
        });
        assert!(granted, "{permission} is not granted (kinds {kinds:?})");
    }
}
