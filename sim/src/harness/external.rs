//! Third-party CRDs embedded from `crds/external/` and served by default.

/// `(group, manifest)` of every embedded third-party CRD.
pub const EXTERNAL_CRDS: &[(&str, &str)] = &[
    (
        "postgresql.cnpg.io",
        include_str!("../../../crds/external/postgresql.cnpg.io_clusters.yaml"),
    ),
    (
        "postgresql.cnpg.io",
        include_str!("../../../crds/external/postgresql.cnpg.io_poolers.yaml"),
    ),
    (
        "postgresql.cnpg.io",
        include_str!("../../../crds/external/postgresql.cnpg.io_databases.yaml"),
    ),
    (
        "postgresql.cnpg.io",
        include_str!("../../../crds/external/postgresql.cnpg.io_databaseroles.yaml"),
    ),
    (
        "postgresql.cnpg.io",
        include_str!("../../../crds/external/postgresql.cnpg.io_backups.yaml"),
    ),
    (
        "postgresql.cnpg.io",
        include_str!("../../../crds/external/postgresql.cnpg.io_scheduledbackups.yaml"),
    ),
    (
        "barmancloud.cnpg.io",
        include_str!("../../../crds/external/barmancloud.cnpg.io_objectstores.yaml"),
    ),
    (
        "route.openshift.io",
        include_str!("../../../crds/external/route.openshift.io_routes.yaml"),
    ),
    (
        "gateway.networking.k8s.io",
        include_str!("../../../crds/external/gateway.networking.k8s.io_gatewayclasses.yaml"),
    ),
    (
        "gateway.networking.k8s.io",
        include_str!("../../../crds/external/gateway.networking.k8s.io_gateways.yaml"),
    ),
    (
        "gateway.networking.k8s.io",
        include_str!("../../../crds/external/gateway.networking.k8s.io_httproutes.yaml"),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_external_crd_parses_into_served_kinds() {
        for (group, text) in EXTERNAL_CRDS {
            let crd: serde_json::Value = serde_yaml_ng::from_str(text).unwrap();
            let infos = crate::store::resources::from_crd(&crd).unwrap();
            assert!(!infos.is_empty());
            assert!(
                infos
                    .iter()
                    .all(|i| i.group == *group && i.status_subresource && i.custom)
            );
        }
    }
}
