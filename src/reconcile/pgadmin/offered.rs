//! The offered set (pure): which servers a PgAdmin registers, from its spec, the Clusters,
//! PgAdminAccess grants, Poolers and DatabaseRoles the caches show, and the prober's answer in
//! each Cluster's namespace. Servers are registered by Service (`<cluster>-rw` ...) or Pooler
//! Service, never by Pod, so a switchover or a failover changes nothing here.

use std::collections::BTreeMap;

use crate::api::{PgAdminSpec, ServerState, ServerStatus};
use crate::conditions::Reason;
use crate::conditions::reasons::{common, pgadmin};
use crate::reconcile::cluster_ca::server_ca_secret;
use crate::reconcile::optional_api::{Availability, OptionalApi};

use super::selector::selector_matches;

/// The most servers a PgAdmin registers (credential files and the registration Job accept).
pub const MAX_SERVERS: usize = 64;

/// PostgreSQL's port on CloudNativePG Services and on PgBouncer Poolers.
pub const POSTGRES_PORT: i32 = 5432;

/// A CloudNativePG Cluster as the caches show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterFacts {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// The Secret holding its server CA (see [`crate::reconcile::cluster_ca`]).
    pub ca_secret: String,
}

/// A PgAdminAccess: in `namespace`, it grants the PgAdmin `pgadmin` these Clusters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantFacts {
    pub namespace: String,
    pub name: String,
    /// `(namespace, name)` of the PgAdmin granted.
    pub pgadmin: (String, String),
    pub clusters: Vec<String>,
}

/// A CloudNativePG Pooler and the Cluster it pools (`spec.cluster.name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolerFacts {
    pub namespace: String,
    pub name: String,
    pub cluster: String,
}

/// A CloudNativePG DatabaseRole of a Cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleFacts {
    pub namespace: String,
    /// The object's name.
    pub name: String,
    pub cluster: String,
    /// The PostgreSQL role (`spec.name`).
    pub role: String,
    pub login: bool,
    /// CloudNativePG applied it (`status.applied`).
    pub applied: bool,
    /// The Secret holding its password (`status.password.secretName`), when CNPG keeps one.
    pub password_secret: Option<String>,
}

/// Where a server's credentials come from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Credentials {
    /// The Cluster's application Secret `<cluster>-app` (`username`, `password`).
    ClusterApp { secret: String },
    /// A DatabaseRole: its name, and its password Secret when there is one.
    Role {
        username: String,
        secret: Option<String>,
    },
}

impl Credentials {
    /// The Secret to read for this server, if any.
    pub fn secret(&self) -> Option<&str> {
        match self {
            Credentials::ClusterApp { secret } => Some(secret),
            Credentials::Role { secret, .. } => secret.as_deref(),
        }
    }
}

/// One server to register.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OfferedServer {
    pub namespace: String,
    pub cluster: String,
    /// As the spec writes it: `rw`, `ro`, `r` or `pooler:<name>`.
    pub endpoint: String,
    pub role: Option<String>,
    /// The Service's DNS name: `<service>.<namespace>.svc`.
    pub host: String,
    pub port: i32,
    pub credentials: Credentials,
    /// The Secret holding the Cluster's server CA (`ca.crt`): `spec.certificates.serverCASecret`
    /// when the Cluster names one, else CloudNativePG's `<cluster>-ca`. pgAdmin verifies the
    /// server's certificate against it.
    pub ca_secret: String,
}

impl OfferedServer {
    /// `verify-full` (the certificate must name the host) for the Cluster's own Services,
    /// whose names CloudNativePG puts in the server certificate; `verify-ca` for a Pooler's
    /// Service, which that certificate does not name unless the Cluster lists it in
    /// `serverAltDNSNames`.
    pub fn ssl_mode(&self) -> &'static str {
        if self.endpoint.starts_with("pooler:") {
            "verify-ca"
        } else {
            "verify-full"
        }
    }

    /// The name pgAdmin shows.
    pub fn display_name(&self) -> String {
        let base = format!("{}/{} ({})", self.namespace, self.cluster, self.endpoint);
        match &self.role {
            Some(role) => format!("{base} as {role}"),
            None => base,
        }
    }

    fn row(&self) -> ServerStatus {
        ServerStatus {
            cluster: self.cluster.clone(),
            namespace: self.namespace.clone(),
            endpoint: self.endpoint.clone(),
            role: self.role.clone(),
            state: ServerState::Offered,
            message: None,
        }
    }
}

/// A reason `ConfigurationValid` reports (none of them stalls: pgAdmin serves what resolves).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub reason: Reason,
    pub message: String,
}

/// What a pass reads for the offered set.
pub struct OfferedInputs<'a> {
    /// The PgAdmin's namespace and name.
    pub namespace: &'a str,
    pub name: &'a str,
    pub spec: &'a PgAdminSpec,
    /// Clusters of the PgAdmin's namespace and of the namespaces its refs name.
    pub clusters: &'a [ClusterFacts],
    /// Namespaces whose Clusters the operator cannot read.
    pub clusters_unreadable: &'a [String],
    pub grants: &'a [GrantFacts],
    pub poolers: &'a [PoolerFacts],
    pub roles: &'a [RoleFacts],
    /// The prober's answer for an optional API in a namespace.
    pub apis: &'a dyn Fn(OptionalApi, &str) -> Availability,
}

/// The offered set and what `ConfigurationValid` and `status.servers` say about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offered {
    /// At most [`MAX_SERVERS`], sorted.
    pub servers: Vec<OfferedServer>,
    /// `status.servers`: every server, offered or not, sorted.
    pub rows: Vec<ServerStatus>,
    pub problems: Vec<Problem>,
    /// The registered Clusters `(namespace, name)`, sorted.
    pub clusters: Vec<(String, String)>,
    /// The Poolers registered `(namespace, name)`, sorted.
    pub poolers: Vec<(String, String)>,
}

/// The endpoints of a spec in the order given, each once.
fn endpoints(spec: &PgAdminSpec) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for e in &spec.endpoints {
        if !out.contains(&e.as_str()) {
            out.push(e.as_str());
        }
    }
    out
}

/// Decides the offered set.
pub fn offered_set(inputs: &OfferedInputs<'_>) -> Offered {
    let mut out = Offered::default();
    let mut registered: Vec<(String, String)> = Vec::new();
    let ns = inputs.namespace;

    // Clusters of the namespace chosen by the selector.
    if let Some(selector) = &inputs.spec.cluster_selector {
        if inputs.clusters_unreadable.iter().any(|n| n == ns) {
            out.problems.push(Problem {
                reason: common::CLUSTER_NOT_FOUND,
                message: format!("the operator may not read Clusters in {ns}"),
            });
        } else {
            let before = registered.len();
            for c in inputs.clusters.iter().filter(|c| c.namespace == ns) {
                if selector_matches(selector, &c.labels) {
                    registered.push((c.namespace.clone(), c.name.clone()));
                }
            }
            if registered.len() == before {
                out.problems.push(Problem {
                    reason: pgadmin::NO_CLUSTER_SELECTED,
                    message: format!("clusterSelector matches no Cluster in {ns}"),
                });
            }
        }
    } else if inputs.spec.cross_namespace_cluster_refs.is_empty() {
        out.problems.push(Problem {
            reason: pgadmin::NO_CLUSTER_SELECTED,
            message: "neither clusterSelector nor crossNamespaceClusterRefs names a Cluster"
                .to_owned(),
        });
    }

    // Clusters of other namespaces, each granted there.
    for r in &inputs.spec.cross_namespace_cluster_refs {
        let granted = r.namespace == ns
            || inputs.grants.iter().any(|g| {
                g.namespace == r.namespace
                    && g.pgadmin.0 == ns
                    && g.pgadmin.1 == inputs.name
                    && g.clusters.contains(&r.name)
            });
        let not_offered = |message: String| {
            endpoints(inputs.spec)
                .into_iter()
                .map(move |e| ServerStatus {
                    cluster: r.name.clone(),
                    namespace: r.namespace.clone(),
                    endpoint: e.to_owned(),
                    role: None,
                    state: ServerState::NotOffered,
                    message: Some(message.clone()),
                })
                .collect::<Vec<_>>()
        };
        if !granted {
            let message = format!(
                "no PgAdminAccess in {} grants PgAdmin {ns}/{} the Cluster {}",
                r.namespace, inputs.name, r.name
            );
            out.rows.extend(not_offered(message.clone()));
            out.problems.push(Problem {
                reason: pgadmin::GRANT_MISSING,
                message,
            });
            continue;
        }
        if inputs.clusters_unreadable.contains(&r.namespace) {
            let message = format!("the operator may not read Clusters in {}", r.namespace);
            out.rows.extend(not_offered(message.clone()));
            out.problems.push(Problem {
                reason: common::CLUSTER_NOT_FOUND,
                message,
            });
            continue;
        }
        let exists = inputs
            .clusters
            .iter()
            .any(|c| c.namespace == r.namespace && c.name == r.name);
        if !exists {
            let message = format!("Cluster {}/{} does not exist", r.namespace, r.name);
            out.rows.extend(not_offered(message.clone()));
            out.problems.push(Problem {
                reason: common::CLUSTER_NOT_FOUND,
                message,
            });
            continue;
        }
        registered.push((r.namespace.clone(), r.name.clone()));
    }
    registered.sort();
    registered.dedup();

    let mut servers = Vec::new();
    for (cns, cluster) in &registered {
        offer_cluster(inputs, cns, cluster, &mut servers, &mut out);
    }
    servers.sort();
    servers.dedup();
    if servers.len() > MAX_SERVERS {
        out.problems.push(Problem {
            reason: pgadmin::TOO_MANY_SERVERS,
            message: format!(
                "{} servers are offered and a PgAdmin registers at most {MAX_SERVERS}: the first {MAX_SERVERS} by namespace, Cluster, endpoint and role are",
                servers.len()
            ),
        });
        for extra in servers.split_off(MAX_SERVERS) {
            out.rows.push(ServerStatus {
                state: ServerState::NotOffered,
                message: Some(format!(
                    "beyond the {MAX_SERVERS} servers a PgAdmin registers"
                )),
                ..extra.row()
            });
        }
    }
    out.rows.extend(servers.iter().map(OfferedServer::row));
    out.rows.sort_by(|a, b| {
        (&a.namespace, &a.cluster, &a.endpoint, &a.role).cmp(&(
            &b.namespace,
            &b.cluster,
            &b.endpoint,
            &b.role,
        ))
    });
    let mut poolers: Vec<(String, String)> = servers
        .iter()
        .filter_map(|s| {
            s.endpoint
                .strip_prefix("pooler:")
                .map(|p| (s.namespace.clone(), p.to_owned()))
        })
        .collect();
    poolers.sort();
    poolers.dedup();
    out.poolers = poolers;
    out.servers = servers;
    out.clusters = registered;
    out
}

/// The servers of one registered Cluster: one per endpoint, and per DatabaseRole when offered.
fn offer_cluster(
    inputs: &OfferedInputs<'_>,
    ns: &str,
    cluster: &str,
    servers: &mut Vec<OfferedServer>,
    out: &mut Offered,
) {
    let mut hosts: Vec<(&str, String)> = Vec::new();
    for endpoint in endpoints(inputs.spec) {
        let host = match endpoint.strip_prefix("pooler:") {
            None => Some(format!("{cluster}-{endpoint}.{ns}.svc")),
            Some(pooler) => pooler_host(inputs, ns, cluster, endpoint, pooler, out),
        };
        if let Some(host) = host {
            hosts.push((endpoint, host));
        }
    }
    // A registered Cluster is one the caches showed, with its CA Secret.
    let ca_secret = inputs
        .clusters
        .iter()
        .find(|c| c.namespace == ns && c.name == cluster)
        .map_or_else(
            || server_ca_secret(cluster, &serde_json::Value::Null),
            |c| c.ca_secret.clone(),
        );
    for (endpoint, host) in &hosts {
        servers.push(OfferedServer {
            namespace: ns.to_owned(),
            cluster: cluster.to_owned(),
            endpoint: (*endpoint).to_owned(),
            role: None,
            host: host.clone(),
            port: POSTGRES_PORT,
            credentials: Credentials::ClusterApp {
                secret: format!("{cluster}-app"),
            },
            ca_secret: ca_secret.clone(),
        });
    }
    if !inputs.spec.offer_database_roles {
        return;
    }
    match (inputs.apis)(OptionalApi::DatabaseRoles, ns) {
        // An install without DatabaseRoles only means none is offered.
        Availability::NotServed => {}
        refused @ Availability::Refused { .. } => {
            let message = refused
                .message(OptionalApi::DatabaseRoles)
                .unwrap_or_default();
            out.rows.push(ServerStatus {
                cluster: cluster.to_owned(),
                namespace: ns.to_owned(),
                endpoint: hosts
                    .first()
                    .map_or_else(|| "rw".to_owned(), |(e, _)| (*e).to_owned()),
                role: Some("*".to_owned()),
                state: ServerState::NotOffered,
                message: Some(format!("DatabaseRoles are not offered: {message}")),
            });
        }
        Availability::On => {
            let roles = inputs
                .roles
                .iter()
                .filter(|r| r.namespace == ns && r.cluster == cluster && r.login);
            for role in roles {
                for (endpoint, host) in &hosts {
                    if !role.applied {
                        out.rows.push(ServerStatus {
                            cluster: cluster.to_owned(),
                            namespace: ns.to_owned(),
                            endpoint: (*endpoint).to_owned(),
                            role: Some(role.role.clone()),
                            state: ServerState::NotOffered,
                            message: Some(format!(
                                "DatabaseRole {} is not applied by CloudNativePG yet",
                                role.name
                            )),
                        });
                        continue;
                    }
                    servers.push(OfferedServer {
                        namespace: ns.to_owned(),
                        cluster: cluster.to_owned(),
                        endpoint: (*endpoint).to_owned(),
                        role: Some(role.role.clone()),
                        host: host.clone(),
                        port: POSTGRES_PORT,
                        credentials: Credentials::Role {
                            username: role.role.clone(),
                            secret: role.password_secret.clone(),
                        },
                        ca_secret: ca_secret.clone(),
                    });
                }
            }
        }
    }
}

/// The host of a `pooler:<name>` endpoint, or `None` with the problem recorded.
fn pooler_host(
    inputs: &OfferedInputs<'_>,
    ns: &str,
    cluster: &str,
    endpoint: &str,
    pooler: &str,
    out: &mut Offered,
) -> Option<String> {
    let not_offered = |out: &mut Offered, reason: Reason, message: String| {
        out.rows.push(ServerStatus {
            cluster: cluster.to_owned(),
            namespace: ns.to_owned(),
            endpoint: endpoint.to_owned(),
            role: None,
            state: ServerState::NotOffered,
            message: Some(message.clone()),
        });
        out.problems.push(Problem { reason, message });
    };
    let availability = (inputs.apis)(OptionalApi::Poolers, ns);
    if let Some(message) = availability.message(OptionalApi::Poolers) {
        not_offered(
            out,
            pgadmin::POOLER_API_UNAVAILABLE,
            format!("endpoint {endpoint} of Cluster {ns}/{cluster} needs Poolers: {message}"),
        );
        return None;
    }
    let found = inputs
        .poolers
        .iter()
        .any(|p| p.namespace == ns && p.name == pooler && p.cluster == cluster);
    if !found {
        not_offered(
            out,
            pgadmin::POOLER_NOT_FOUND,
            format!("no Pooler {pooler} of Cluster {cluster} exists in {ns}"),
        );
        return None;
    }
    Some(format!("{pooler}.{ns}.svc"))
}
