//! The installation's ClusterRole grants every permission the namespace-refusal tracker checks
//! for the kinds this build runs; otherwise a WATCH_NAMESPACES install would drop them all.

use pgtoolbox_operator::testing::reconcile::namespace_permissions::required_permissions;
use pgtoolbox_sim::{Sim, SimConfig};

#[tokio::test]
async fn the_cluster_role_grants_what_the_tracker_checks() {
    let sim = Sim::start(SimConfig::default()).await.expect("sim starts");
    let kinds = crate::harness::all_kinds(&sim.client());
    let role = crate::harness::operator_cluster_role();
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

/// Grants of the ClusterRole that are not namespace permissions of the tracker's table, and why.
const OUTSIDE_THE_TABLE: &[(&str, &str, &str)] = &[
    // Cluster-scoped: not a per-namespace question.
    (
        "",
        "nodes",
        "podCIDR check of console ipBlock peers; optional",
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        "the console ClusterRoles, cluster-scoped",
    ),
    (
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "the probe itself",
    ),
    // Optional APIs: the prober turns a refused one off instead of dropping the namespace.
    ("route.openshift.io", "routes", "optional API"),
    ("gateway.networking.k8s.io", "httproutes", "optional API"),
    ("barmancloud.cnpg.io", "objectstores", "optional API"),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "cluster-scoped, one CRD by name",
    ),
    ("postgresql.cnpg.io", "poolers", "optional API"),
    (
        "postgresql.cnpg.io",
        "databaseroles",
        "optional API (PgAdmin settings database)",
    ),
    // Not yet a row of the table (named in the issue 17 report): PgAdmin's settings Database.
    (
        "postgresql.cnpg.io",
        "databases",
        "PgAdmin settings database; not a table row yet",
    ),
];

/// The other direction: everything the ClusterRole grants on namespaced resources is a row of
/// the tracker's table (for some kind), so a namespace is never watched with a grant the
/// tracker does not know about, and the table cannot quietly shrink under deploy/.
#[tokio::test]
async fn every_cluster_role_grant_is_in_the_tracker_table() {
    let role = crate::harness::operator_cluster_role();
    let every_kind = [
        "PgAccessRequest",
        "PgAdmin",
        "PgToolBoxConsole",
        "EvidenceAgent",
    ];
    let table: Vec<String> = required_permissions(&every_kind)
        .iter()
        .map(|p| {
            let resource = if p.subresource.is_empty() {
                p.resource.to_owned()
            } else {
                format!("{}/{}", p.resource, p.subresource)
            };
            format!("{} {}/{resource}", p.verb, p.group)
        })
        .collect();
    for rule in role.rules.unwrap_or_default() {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                if OUTSIDE_THE_TABLE
                    .iter()
                    .any(|(g, r, _)| g == group && r == resource)
                {
                    continue;
                }
                for verb in &rule.verbs {
                    let atom = format!("{verb} {group}/{resource}");
                    assert!(
                        table.contains(&atom),
                        "deploy/ grants {atom}, which the namespace tracker never checks"
                    );
                }
            }
        }
    }
}
