//! The names of a console's children (api.md) and the installation's ClusterRoles it binds.

use crate::api::PgToolBoxConsoleSpec;
use crate::reconcile::children::child_name;

/// The ClusterRoles the installation provides for consoles (deploy/).
pub const CONSOLE_ROLE: &str = "pgtoolbox-console";
pub const POD_LOGS_ROLE: &str = "pgtoolbox-console-pod-logs";
pub const RESTORE_DRILLS_ROLE: &str = "pgtoolbox-console-restore-drills";

/// Names of a console's children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildNames {
    /// ServiceAccount, Deployment, Service, exposure object and the first RoleBinding.
    pub workload: String,
    pub network_policy: String,
    pub instance_ca: String,
}

impl ChildNames {
    pub fn of(console: &str) -> Self {
        Self {
            workload: child_name(console, "console"),
            network_policy: child_name(console, "ingress"),
            instance_ca: child_name(console, "instance-ca"),
        }
    }
}

/// One RoleBinding the console needs: its name and the ClusterRole it binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleGrant {
    pub binding: String,
    pub cluster_role: &'static str,
}

/// The ClusterRoles this spec binds, in a fixed order: the console role always, pod logs
/// unless `podLogs: false`, restore drills when enabled.
pub fn role_grants(console: &str, spec: &PgToolBoxConsoleSpec) -> Vec<RoleGrant> {
    let mut grants = vec![RoleGrant {
        binding: child_name(console, "console"),
        cluster_role: CONSOLE_ROLE,
    }];
    if spec.pod_logs {
        grants.push(RoleGrant {
            binding: child_name(console, "console-pod-logs"),
            cluster_role: POD_LOGS_ROLE,
        });
    }
    if spec.restore_drills.enabled {
        grants.push(RoleGrant {
            binding: child_name(console, "console-restore-drills"),
            cluster_role: RESTORE_DRILLS_ROLE,
        });
    }
    grants
}

/// A Secret or ConfigMap the console's spec names, with the field that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedRef {
    pub name: String,
    pub field: String,
    /// The console Pod consumes it (its contents enter the workload hash).
    pub mounted: bool,
}

/// The Secrets the console needs, in spec order: the OIDC client Secret, `extraSecrets`, the
/// exposure's TLS Secret.
pub fn secret_refs(spec: &PgToolBoxConsoleSpec) -> Vec<NamedRef> {
    let mut refs = Vec::new();
    if let Some(oidc) = spec.authentication.as_ref().and_then(|a| a.oidc.as_ref()) {
        refs.push(NamedRef {
            name: oidc.client_secret_ref.name.clone(),
            field: "spec.authentication.oidc.clientSecretRef".into(),
            mounted: true,
        });
    }
    for (i, extra) in spec.extra_secrets.iter().enumerate() {
        refs.push(NamedRef {
            name: extra.name.clone(),
            field: format!("spec.extraSecrets[{i}]"),
            mounted: true,
        });
    }
    if spec.exposure.type_ != crate::api::ExposureType::ClusterIp
        && let Some(secret) = spec
            .exposure
            .tls
            .as_ref()
            .and_then(|t| t.secret_name.as_ref())
    {
        refs.push(NamedRef {
            name: secret.clone(),
            field: "spec.exposure.tls.secretName".into(),
            mounted: false,
        });
    }
    refs
}

/// The user's ConfigMaps the console mounts: `instanceCABundleRef`, then `extraConfigMaps`.
pub fn config_map_refs(spec: &PgToolBoxConsoleSpec) -> Vec<NamedRef> {
    let mut refs = Vec::new();
    if let Some(bundle) = &spec.instance_ca_bundle_ref {
        refs.push(NamedRef {
            name: bundle.name.clone(),
            field: "spec.instanceCABundleRef".into(),
            mounted: true,
        });
    }
    for (i, extra) in spec.extra_config_maps.iter().enumerate() {
        refs.push(NamedRef {
            name: extra.name.clone(),
            field: format!("spec.extraConfigMaps[{i}]"),
            mounted: true,
        });
    }
    refs
}
