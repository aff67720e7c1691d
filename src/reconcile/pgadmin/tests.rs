//! Table tests of the PgAdmin decisions, over objects shaped as `kubectl get -o yaml` shows them.

use serde_json::Value;

use super::*;
use crate::api::{PgAdmin, ServerState};
use crate::conditions::reasons::{common, pgadmin};
use crate::conditions::{ConditionStatus, ConditionType, Kind, Subject, Verdict};
use crate::reconcile::optional_api::{Availability, OptionalApi};

fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(text).expect("fixture parses")
}

const ORDERS: &str = r#"
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  creationTimestamp: "2026-12-01T06:00:00Z"
  generation: 1
  labels: {team: a}
  name: orders
  namespace: team-a
  resourceVersion: "1042"
  uid: 7d3c1c2e-0000-4000-8000-000000000001
spec:
  instances: 3
  storage: {size: 1Gi}
status:
  currentPrimary: orders-1
  targetPrimary: orders-1
  phase: Cluster in healthy state
  readyInstances: 3
  writeService: orders-rw
  readService: orders-r
  timelineID: 1
"#;

const INVOICES: &str = r#"
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  labels: {team: finance}
  name: invoices
  namespace: team-a
  resourceVersion: "1050"
spec: {instances: 1, storage: {size: 1Gi}}
"#;

const BILLING: &str = r#"
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  labels: {team: b}
  name: billing
  namespace: team-b
  resourceVersion: "1100"
spec: {instances: 1, storage: {size: 1Gi}}
status: {currentPrimary: billing-1, targetPrimary: billing-1}
"#;

const GRANT: &str = r#"
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgAdminAccess
metadata:
  name: grant-team-a
  namespace: team-b
  resourceVersion: "1200"
spec:
  pgAdmin: {namespace: team-a, name: team-pgadmin}
  clusters: [billing]
"#;

const GRANT_OTHER: &str = r#"
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgAdminAccess
metadata: {name: grant-other, namespace: team-b}
spec:
  pgAdmin: {namespace: team-a, name: someone-else}
  clusters: [billing]
"#;

const POOLER: &str = r#"
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: orders-pooler-rw, namespace: team-a, resourceVersion: "1300"}
spec:
  cluster: {name: orders}
  instances: 1
  type: rw
  pgbouncer: {poolMode: session}
status: {phase: active, instances: 1}
"#;

const ROLE: &str = r#"
apiVersion: postgresql.cnpg.io/v1
kind: DatabaseRole
metadata: {name: angus, namespace: team-a, generation: 1}
spec:
  cluster: {name: orders}
  name: angus
  login: true
  password: {mode: generate}
status:
  applied: true
  observedGeneration: 1
  password: {secretName: angus-password}
"#;

const ROLE_PENDING: &str = r#"
apiVersion: postgresql.cnpg.io/v1
kind: DatabaseRole
metadata: {name: bea, namespace: team-a}
spec: {cluster: {name: orders}, name: bea, login: true}
"#;

const ROLE_BILLING: &str = r#"
apiVersion: postgresql.cnpg.io/v1
kind: DatabaseRole
metadata: {name: carl, namespace: team-b}
spec: {cluster: {name: billing}, name: carl, login: true}
status: {applied: true}
"#;

fn pgadmin(spec: &str) -> PgAdmin {
    let doc = format!(
        "apiVersion: pgtoolbox.fyannk.dev/v1alpha1\nkind: PgAdmin\nmetadata: {{name: team-pgadmin, namespace: team-a}}\nspec:\n{spec}"
    );
    serde_yaml_ng::from_str(&doc).expect("PgAdmin parses")
}

struct World {
    clusters: Vec<ClusterFacts>,
    unreadable: Vec<String>,
    grants: Vec<GrantFacts>,
    poolers: Vec<PoolerFacts>,
    roles: Vec<RoleFacts>,
    /// `(api, namespace, answer)`; On when not listed.
    apis: Vec<(OptionalApi, Option<&'static str>, Availability)>,
}

impl World {
    fn standard() -> Self {
        World {
            clusters: [ORDERS, INVOICES, BILLING]
                .iter()
                .filter_map(|c| cluster_facts(&yaml(c)))
                .collect(),
            unreadable: Vec::new(),
            grants: vec![grant_facts(&yaml(GRANT)).unwrap()],
            poolers: vec![pooler_facts(&yaml(POOLER)).unwrap()],
            roles: Vec::new(),
            apis: Vec::new(),
        }
    }

    fn offered(&self, obj: &PgAdmin) -> Offered {
        let apis = |api: OptionalApi, ns: &str| {
            self.apis
                .iter()
                .find(|(a, n, _)| *a == api && n.is_none_or(|n| n == ns))
                .map_or(Availability::On, |(_, _, v)| v.clone())
        };
        offered_set(&OfferedInputs {
            namespace: "team-a",
            name: "team-pgadmin",
            spec: &obj.spec,
            clusters: &self.clusters,
            clusters_unreadable: &self.unreadable,
            grants: &self.grants,
            poolers: &self.poolers,
            roles: &self.roles,
            apis: &apis,
        })
    }
}

fn served(o: &Offered) -> Vec<String> {
    o.servers.iter().map(OfferedServer::display_name).collect()
}

fn reasons(o: &Offered) -> Vec<&str> {
    o.problems.iter().map(|p| p.reason.as_str()).collect()
}

#[test]
fn the_offered_set_follows_selector_grants_and_endpoints() {
    struct Case {
        name: &'static str,
        spec: &'static str,
        world: fn(&mut World),
        servers: &'static [&'static str],
        problems: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "selector, rw and ro by Service",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw, ro]\n",
            world: |_| {},
            servers: &["team-a/orders (ro)", "team-a/orders (rw)"],
            problems: &[],
        },
        Case {
            name: "selector matching nothing",
            spec: "  clusterSelector: {matchLabels: {team: z}}\n",
            world: |_| {},
            servers: &[],
            problems: &["NoClusterSelected"],
        },
        Case {
            name: "nothing named at all",
            spec: "  endpoints: [rw]\n",
            world: |_| {},
            servers: &[],
            problems: &["NoClusterSelected"],
        },
        Case {
            name: "granted cross-namespace Cluster",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n  crossNamespaceClusterRefs: [{namespace: team-b, name: billing}]\n",
            world: |_| {},
            servers: &["team-a/orders (rw)", "team-b/billing (rw)"],
            problems: &[],
        },
        Case {
            name: "grant missing: only the other PgAdmin is granted",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n  crossNamespaceClusterRefs: [{namespace: team-b, name: billing}]\n",
            world: |w| w.grants = vec![grant_facts(&yaml(GRANT_OTHER)).unwrap()],
            servers: &["team-a/orders (rw)"],
            problems: &["GrantMissing"],
        },
        Case {
            name: "granted but the Cluster does not exist",
            spec: "  crossNamespaceClusterRefs: [{namespace: team-b, name: billing}]\n",
            world: |w| w.clusters.retain(|c| c.name != "billing"),
            servers: &[],
            problems: &["ClusterNotFound"],
        },
        Case {
            name: "Clusters of team-b unreadable",
            spec: "  crossNamespaceClusterRefs: [{namespace: team-b, name: billing}]\n",
            world: |w| w.unreadable = vec!["team-b".into()],
            servers: &[],
            problems: &["ClusterNotFound"],
        },
        Case {
            name: "a pooler endpoint of the Cluster",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw, 'pooler:orders-pooler-rw']\n",
            world: |_| {},
            servers: &[
                "team-a/orders (pooler:orders-pooler-rw)",
                "team-a/orders (rw)",
            ],
            problems: &[],
        },
        Case {
            name: "a pooler endpoint naming no Pooler",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw, 'pooler:nope']\n",
            world: |_| {},
            servers: &["team-a/orders (rw)"],
            problems: &["PoolerNotFound"],
        },
        Case {
            name: "Poolers not served while a pooler endpoint needs them",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw, 'pooler:orders-pooler-rw']\n",
            world: |w| w.apis = vec![(OptionalApi::Poolers, None, Availability::NotServed)],
            servers: &["team-a/orders (rw)"],
            problems: &["PoolerAPIUnavailable"],
        },
        Case {
            name: "DatabaseRoles: applied roles with login become rows",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n",
            world: |w| {
                w.roles = [ROLE, ROLE_PENDING]
                    .iter()
                    .filter_map(|r| role_facts(&yaml(r)))
                    .collect()
            },
            servers: &["team-a/orders (rw)", "team-a/orders (rw) as angus"],
            problems: &[],
        },
        Case {
            name: "DatabaseRoles not served: none offered, still valid",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n",
            world: |w| {
                w.roles = vec![role_facts(&yaml(ROLE)).unwrap()];
                w.apis = vec![(OptionalApi::DatabaseRoles, None, Availability::NotServed)];
            },
            servers: &["team-a/orders (rw)"],
            problems: &[],
        },
        Case {
            name: "offerDatabaseRoles false",
            spec: "  clusterSelector: {matchLabels: {team: a}}\n  offerDatabaseRoles: false\n",
            world: |w| w.roles = vec![role_facts(&yaml(ROLE)).unwrap()],
            servers: &["team-a/orders (rw)"],
            problems: &[],
        },
    ];
    for case in cases {
        let mut world = World::standard();
        (case.world)(&mut world);
        let offered = world.offered(&pgadmin(case.spec));
        assert_eq!(served(&offered), case.servers, "{}", case.name);
        assert_eq!(reasons(&offered), case.problems, "{}", case.name);
        // Every server has an Offered row; every problem a NotOffered one (but NoClusterSelected).
        let offered_rows = offered
            .rows
            .iter()
            .filter(|r| r.state == ServerState::Offered)
            .count();
        assert_eq!(offered_rows, offered.servers.len(), "{}", case.name);
    }
}

#[test]
fn a_refusal_in_one_namespace_names_that_namespace_only() {
    let mut world = World::standard();
    world.roles = [ROLE, ROLE_BILLING]
        .iter()
        .filter_map(|r| role_facts(&yaml(r)))
        .collect();
    world.poolers.push(PoolerFacts {
        namespace: "team-b".into(),
        name: "billing-pooler".into(),
        cluster: "billing".into(),
    });
    let refused = Availability::Refused {
        namespace: "team-b".into(),
    };
    world.apis = vec![
        (OptionalApi::DatabaseRoles, Some("team-b"), refused.clone()),
        (OptionalApi::Poolers, Some("team-b"), refused),
    ];
    let obj = pgadmin(
        "  clusterSelector: {matchLabels: {team: a}}\n  crossNamespaceClusterRefs: [{namespace: team-b, name: billing}]\n  endpoints: [rw, 'pooler:billing-pooler']\n",
    );
    let offered = world.offered(&obj);
    // team-a's role is offered; team-b's DatabaseRoles are one NotOffered row naming team-b.
    assert!(served(&offered).contains(&"team-a/orders (rw) as angus".to_owned()));
    assert!(!served(&offered).iter().any(|s| s.contains("carl")));
    let row = offered
        .rows
        .iter()
        .find(|r| r.role.as_deref() == Some("*"))
        .expect("a NotOffered DatabaseRoles row");
    assert_eq!(
        (row.namespace.as_str(), row.state),
        ("team-b", ServerState::NotOffered)
    );
    let message = row.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("team-b") && !message.contains("team-a"),
        "{message}"
    );
    // The pooler endpoint of billing is a configuration problem naming team-b and no other;
    // orders' pooler endpoint is only missing (PoolerNotFound), its API is readable in team-a.
    let api = offered
        .problems
        .iter()
        .find(|p| p.reason == pgadmin::POOLER_API_UNAVAILABLE)
        .expect("PoolerAPIUnavailable");
    assert!(
        api.message.contains("team-b") && !api.message.contains("team-a"),
        "{}",
        api.message
    );
    assert_eq!(
        reasons(&offered),
        ["PoolerNotFound", "PoolerAPIUnavailable"],
        "{:?}",
        offered.problems
    );
}

#[test]
fn more_than_64_servers_are_cut_to_64_and_reported() {
    let mut world = World::standard();
    world.clusters = (0..40)
        .map(|i| ClusterFacts {
            namespace: "team-a".into(),
            name: format!("c{i:02}"),
            labels: [("team".to_owned(), "a".to_owned())].into(),
            ca_secret: format!("c{i:02}-ca"),
        })
        .collect();
    let offered = world.offered(&pgadmin(
        "  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw, ro]\n",
    ));
    assert_eq!(offered.servers.len(), MAX_SERVERS);
    assert_eq!(reasons(&offered), ["TooManyServers"]);
    assert_eq!(offered.rows.len(), 80);
    let not_offered = offered
        .rows
        .iter()
        .filter(|r| r.state == ServerState::NotOffered)
        .count();
    assert_eq!(not_offered, 16);
    // 64 exactly is fine.
    world.clusters.truncate(32);
    let offered = world.offered(&pgadmin(
        "  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw, ro]\n",
    ));
    assert_eq!((offered.servers.len(), offered.problems.len()), (64, 0));
}

#[test]
fn a_switchover_changes_neither_the_offered_set_nor_its_hash() {
    let obj = pgadmin("  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw, ro, r]\n");
    let before = World::standard().offered(&obj);
    let mut switched = yaml(ORDERS);
    switched["status"]["currentPrimary"] = "orders-2".into();
    switched["status"]["targetPrimary"] = "orders-2".into();
    switched["status"]["timelineID"] = 2.into();
    switched["metadata"]["resourceVersion"] = "1999".into();
    let mut world = World::standard();
    world.clusters[0] = cluster_facts(&switched).unwrap();
    let after = world.offered(&obj);
    assert_eq!(before, after);
    let hosts: Vec<&str> = after.servers.iter().map(|s| s.host.as_str()).collect();
    assert_eq!(
        hosts,
        [
            "orders-r.team-a.svc",
            "orders-ro.team-a.svc",
            "orders-rw.team-a.svc"
        ]
    );
    let cred = |_: &OfferedServer| {
        Some(Credential {
            username: Some("app".into()),
            password: "pw".into(),
        })
    };
    assert_eq!(
        servers_file(&before.servers, &cred, &no_ca).hash,
        servers_file(&after.servers, &cred, &no_ca).hash
    );
}

#[test]
fn the_servers_file_is_what_pgadmin_imports_and_its_hash_follows_credentials() {
    let obj = pgadmin("  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw]\n");
    let offered = World::standard().offered(&obj);
    let with = |password: &'static str| {
        move |server: &OfferedServer| {
            (server.credentials.secret() == Some("orders-app")).then(|| Credential {
                username: Some("app".into()),
                password: password.into(),
            })
        }
    };
    let file = servers_file(&offered.servers, &with("s3cr:et"), &no_ca);
    let json: Value = serde_json::from_str(&file.data[SERVERS_FILE_KEY]).unwrap();
    let server = &json["Servers"]["1"];
    assert_eq!(server["Host"], "orders-rw.team-a.svc");
    assert_eq!(server["Port"], 5432);
    assert_eq!(server["Username"], "app");
    assert_eq!(server["Group"], "team-a");
    // Resolved by pgAdmin in the shared storage holding the Pod's 0600 copies.
    assert_eq!(server["PassFile"], "pgtoolbox-credentials:/server-1.pgpass");
    assert_eq!(server["SharedUsername"], "app");
    assert_eq!(
        file.data["server-1.pgpass"],
        "orders-rw.team-a.svc:5432:*:app:s3cr\\:et\n"
    );
    assert!(!file.data[SERVERS_FILE_KEY].contains("s3cr"));
    // Stable, and a rotated password is a new hash (a new registration Job).
    assert_eq!(
        file.hash,
        servers_file(&offered.servers, &with("s3cr:et"), &no_ca).hash
    );
    let rotated = servers_file(&offered.servers, &with("other"), &no_ca);
    assert_ne!(file.hash, rotated.hash);
    assert!(
        !format!("{file:?}").contains("s3cr"),
        "Debug shows no secret"
    );
    // Without the Secret: registered with no password file.
    let none = servers_file(&offered.servers, &|_: &OfferedServer| None, &no_ca);
    assert_eq!(none.data.len(), 1);
    assert_eq!(
        registration_job_name("team-pgadmin", &file.hash),
        format!("team-pgadmin-pgadmin-register-{}", &file.hash[..8])
    );
}

/// A Cluster serving a certificate of a CA its user provides (`spec.certificates.serverCASecret`)
/// is verified against that CA, every server of it (its DatabaseRoles' too), and the pass reads
/// and watches that Secret, not `<cluster>-ca`.
#[test]
fn a_clusters_own_server_ca_secret_is_the_one_verified_against() {
    let mut world = World::standard();
    let mut orders = yaml(ORDERS);
    orders["spec"]["certificates"] = serde_json::json!({"serverCASecret": "orders-own-ca"});
    orders["status"]["certificates"] = serde_json::json!({"serverCASecret": "orders-own-ca"});
    world.clusters[0] = cluster_facts(&orders).unwrap();
    let obj = pgadmin("  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw, ro]\n");
    let offered = world.offered(&obj);
    let orders_servers: Vec<&OfferedServer> = offered
        .servers
        .iter()
        .filter(|s| s.cluster == "orders")
        .collect();
    assert!(!orders_servers.is_empty());
    for server in &orders_servers {
        assert_eq!(server.ca_secret, "orders-own-ca", "{server:?}");
    }
    let keys = super::plan::ca_secrets(&offered.servers);
    assert!(keys.iter().any(|k| k.name == "orders-own-ca"), "{keys:?}");
    assert!(!keys.iter().any(|k| k.name == "orders-ca"), "{keys:?}");
}

/// No server CA known.
fn no_ca(_: &OfferedServer) -> Option<String> {
    None
}

/// Every server is verified: `verify-full` against its Cluster's CA, delivered as a file of
/// the shared storage next to the credential files (`verify-ca` for a Pooler, whose Service
/// the server certificate does not name); without a CA it is still verified (and so does not
/// connect), never `require`.
#[test]
fn servers_are_verified_against_their_clusters_ca() {
    let obj = pgadmin("  clusterSelector: {matchLabels: {team: a}}\n  endpoints: [rw]\n");
    let offered = World::standard().offered(&obj);
    let ca = "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n";
    let with_ca = |server: &OfferedServer| (server.ca_secret == "orders-ca").then(|| ca.to_owned());
    let file = servers_file(&offered.servers, &|_: &OfferedServer| None, &with_ca);
    let json: Value = serde_json::from_str(&file.data[SERVERS_FILE_KEY]).unwrap();
    let server = &json["Servers"]["1"];
    assert_eq!(server["SSLMode"], "verify-full");
    assert_eq!(
        server["SSLRootCert"],
        "pgtoolbox-credentials:/server-1.ca.crt"
    );
    assert_eq!(file.data["server-1.ca.crt"], ca);
    // A new CA is new credential files: the pgAdmin Pod copies them again. The servers file
    // names the CA file by path, so the registration (named by `hash`) does not depend on it.
    let other_ca = |_: &OfferedServer| Some(ca.replace("QUJD", "REVG"));
    let rotated = servers_file(&offered.servers, &|_: &OfferedServer| None, &other_ca);
    assert_ne!(file.credentials_hash, rotated.credentials_hash);
    assert_eq!(file.hash, rotated.hash);
    let other = servers_file(&offered.servers, &|_: &OfferedServer| None, &no_ca);
    let json: Value = serde_json::from_str(&other.data[SERVERS_FILE_KEY]).unwrap();
    assert_eq!(json["Servers"]["1"]["SSLMode"], "verify-full");
    assert!(json["Servers"]["1"].get("SSLRootCert").is_none());
    assert!(!other.data[SERVERS_FILE_KEY].contains("require"));
    let pooled = OfferedServer {
        endpoint: "pooler:orders-pooler".into(),
        ..offered.servers[0].clone()
    };
    assert_eq!(pooled.ssl_mode(), "verify-ca");
    // The init container copies the CA files with the password files.
    let script = super::image::copy_credentials_script("/s");
    assert!(script.contains("/s/*.ca.crt"), "{script}");
}

fn problem(reason: crate::conditions::Reason) -> Problem {
    Problem {
        reason,
        message: format!("{reason} happened"),
    }
}

#[test]
fn only_the_seed_s_stalling_reasons_stall() {
    let image = Verdict::fails(common::IMAGE_NOT_ALLOWED, "spec.image x outside (y)");
    let grant = [problem(pgadmin::GRANT_MISSING)];
    let cases: Vec<(&str, ConfigFacts<'_>, &str, bool)> = vec![
        ("all resolve", ConfigFacts::default(), "AsExpected", false),
        (
            "a grant missing",
            ConfigFacts {
                problems: &grant,
                ..Default::default()
            },
            "GrantMissing",
            false,
        ),
        (
            "a refused image before a grant",
            ConfigFacts {
                image_refusal: Some(image.clone()),
                problems: &grant,
                ..Default::default()
            },
            "ImageNotAllowed",
            true,
        ),
        (
            "the OAuth2 client Secret",
            ConfigFacts {
                missing_sign_in_secret: Some((
                    "spec.authentication.oauth2.clientSecretRef",
                    "oidc",
                )),
                ..Default::default()
            },
            "SecretNotFound",
            true,
        ),
        (
            "a foreign child first",
            ConfigFacts {
                foreign_child: Some(("Service", "team-pgadmin-pgadmin")),
                image_refusal: Some(image),
                ..Default::default()
            },
            "ResourceNotOwned",
            true,
        ),
    ];
    for reason in [
        pgadmin::NO_CLUSTER_SELECTED,
        pgadmin::POOLER_NOT_FOUND,
        pgadmin::TOO_MANY_SERVERS,
        pgadmin::POOLER_API_UNAVAILABLE,
        common::CLUSTER_NOT_FOUND,
    ] {
        let p = [problem(reason)];
        let v = configuration_valid(
            &ConfigFacts {
                problems: &p,
                ..Default::default()
            },
            "team-a",
        );
        assert_eq!(v.reason, reason);
        assert!(!Kind::PgAdmin.stalls_on(
            ConditionType::ConfigurationValid,
            v.status,
            v.reason,
            v.subject
        ));
    }
    for (name, facts, reason, stalls) in cases {
        let v = configuration_valid(&facts, "team-a");
        assert_eq!(v.reason.as_str(), reason, "{name}");
        assert_eq!(
            Kind::PgAdmin.stalls_on(
                ConditionType::ConfigurationValid,
                v.status,
                v.reason,
                v.subject
            ),
            stalls,
            "{name}"
        );
        for p in facts.problems {
            assert!(v.message.contains(&p.message), "{name}: {}", v.message);
        }
        if reason == "SecretNotFound" {
            assert_eq!(v.subject, Some(Subject::SignInSecret));
        }
    }
}

const JOB_RUNNING: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: team-pgadmin-pgadmin-register-0a1b2c3d, namespace: team-a}
status: {active: 1, ready: 0, startTime: "2026-12-01T06:10:00Z"}
"#;

const JOB_COMPLETE: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: team-pgadmin-pgadmin-register-0a1b2c3d, namespace: team-a}
status:
  completionTime: "2026-12-01T06:10:05Z"
  conditions:
  - {type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: Reached expected number of succeeded pods}
  - {type: Complete, status: "True", reason: CompletionsReached, message: Reached expected number of succeeded pods}
  succeeded: 1
"#;

const JOB_FAILED: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: team-pgadmin-pgadmin-register-0a1b2c3d, namespace: team-a}
status:
  conditions:
  - {type: FailureTarget, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
  failed: 3
"#;

const POD_READY: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: team-pgadmin-pgadmin-6d9f7c8b5-x2x9q
  namespace: team-a
  labels: {app.kubernetes.io/component: pgadmin, app.kubernetes.io/instance: team-pgadmin, app.kubernetes.io/managed-by: pgtoolbox-operator}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "True"}
"#;

#[test]
fn servers_synced_follows_the_pod_and_the_job() {
    let job = |y: &str| job_state(&serde_yaml_ng::from_str(y).unwrap());
    assert_eq!(job(JOB_RUNNING), JobState::Running);
    assert_eq!(job(JOB_COMPLETE), JobState::Complete);
    let JobState::Failed { fact } = job(JOB_FAILED) else {
        panic!("failed")
    };
    assert_eq!(
        fact,
        "BackoffLimitExceeded: Job has reached the specified backoff limit"
    );
    let ready: k8s_openapi::api::core::v1::Pod = serde_yaml_ng::from_str(POD_READY).unwrap();
    let mut registration_pod = ready.clone();
    registration_pod.metadata.labels.as_mut().unwrap().insert(
        "app.kubernetes.io/component".into(),
        "pgadmin-register".into(),
    );
    assert!(pgadmin_pod_ready(std::slice::from_ref(&ready)));
    assert!(!pgadmin_pod_ready(&[registration_pod]));
    let cases = [
        (
            false,
            None,
            ConditionStatus::Unknown,
            "PgAdminNotRunning",
            false,
        ),
        (
            true,
            None,
            ConditionStatus::Unknown,
            "RegistrationRunning",
            true,
        ),
        (
            true,
            Some(JobState::Running),
            ConditionStatus::Unknown,
            "RegistrationRunning",
            true,
        ),
        (
            false,
            Some(JobState::Complete),
            ConditionStatus::True,
            "AsExpected",
            true,
        ),
        (
            true,
            Some(JobState::Failed { fact }),
            ConditionStatus::False,
            "RegistrationFailed",
            true,
        ),
    ];
    for (pod_ready, state, status, reason, wanted) in cases {
        let facts = RegistrationFacts {
            job_name: "team-pgadmin-pgadmin-register-0a1b2c3d",
            servers: 2,
            pod_ready,
            job: state.clone(),
        };
        let v = servers_synced(&facts);
        assert_eq!((v.status, v.reason.as_str()), (status, reason), "{state:?}");
        assert_eq!(job_wanted(&facts), wanted, "{state:?}");
        if reason == "RegistrationFailed" {
            assert!(v.message.contains("BackoffLimitExceeded"), "{}", v.message);
        }
        // ServersRegistered once: only when the stored condition did not say so already.
        let event = servers_registered_event(&v, None);
        assert_eq!(event.is_some(), status == ConditionStatus::True);
        assert!(servers_registered_event(&v, Some((ConditionStatus::True, &v.message))).is_none());
    }
}

/// What the children of `obj` (its image `docker.io/dpage/pgadmin4:9.10`) render from, with no
/// sign-in, settings database, consumed Secret nor block.
fn render_input<'a>(obj: &'a PgAdmin, names: &'a ChildNames) -> RenderInput<'a> {
    RenderInput {
        owner: "team-pgadmin",
        namespace: "team-a",
        image: "docker.io/dpage/pgadmin4:9.10",
        resources: None,
        storage: &obj.spec.storage,
        oauth2: None,
        ldap: None,
        config_db: None,
        consumed: &[],
        names,
        pod_template: None,
        settings: None,
    }
}

/// LDAP sign-in on the pgAdmin Pod: pgAdmin's settings, the bind password only as a Secret
/// reference, the CA mounted where LDAP_CA_CERT_FILE says, and the directory's port allowed out.
#[test]
fn ldap_sign_in_is_on_the_pgadmin_pod_and_in_its_egress() {
    let obj = pgadmin(
        "  authentication:\n    ldap:\n      serverURI: ldap://ldap.example.org:3389\n      baseDN: ou=people,dc=example,dc=org\n      bindDN: cn=reader,dc=example,dc=org\n      bindPasswordRef: {name: ldap-bind, key: password}\n      startTLS: true\n      ca: {secretKeyRef: {name: ldap-ca, key: ca.pem}}\n",
    );
    let ldap = obj
        .spec
        .authentication
        .as_ref()
        .and_then(|a| a.ldap.as_ref());
    assert_eq!(ldap.map(|l| l.username_attribute.as_str()), Some("uid"));
    let names = ChildNames::of("team-pgadmin");
    let input = RenderInput {
        ldap,
        ..render_input(&obj, &names)
    };
    let (d, _) = deployment(&input).unwrap();
    let d = serde_json::to_value(&d).unwrap();
    let pod = &d["spec"]["template"]["spec"];
    let env = pod["containers"][0]["env"].as_array().unwrap();
    let var = |name: &str| env.iter().find(|e| e["name"] == name).cloned();
    assert_eq!(
        var("PGTOOLBOX_LDAP_BIND_PASSWORD").unwrap()["valueFrom"]["secretKeyRef"],
        serde_json::json!({"name": "ldap-bind", "key": "password"})
    );
    assert_eq!(
        var("PGADMIN_CONFIG_AUTHENTICATION_SOURCES").unwrap()["value"],
        "list(('ldap','internal',))"
    );
    assert_eq!(
        var("PGADMIN_CONFIG_LDAP_USE_STARTTLS").unwrap()["value"],
        "True"
    );
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "ldap-ca")
        .cloned()
        .unwrap();
    assert_eq!(volume["secret"]["secretName"], "ldap-ca");
    assert!(
        pod["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "ldap-ca" && m["mountPath"] == "/etc/pgtoolbox/ldap-ca")
    );
    let sign_in = Some(super::egress::SignInPeer::LdapDirectory(super::ldap::port(
        ldap.unwrap(),
    )));
    let rules = super::egress::egress_rules(&[], &[], sign_in, &[]).unwrap();
    let directory = rules
        .iter()
        .find(|r| r.what == "the LDAP directory")
        .unwrap();
    assert_eq!(
        serde_json::to_value(&directory.rule).unwrap()["ports"][0]["port"],
        3389
    );
}

#[test]
fn the_workload_is_one_pgadmin_process_with_its_data_volume() {
    let obj = pgadmin("  image: docker.io/dpage/pgadmin4:9.10\n");
    let names = ChildNames::of("team-pgadmin");
    let input = render_input(&obj, &names);
    let (d, hash) = deployment(&input).unwrap();
    let d = serde_json::to_value(&d).unwrap();
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["strategy"]["type"], "Recreate");
    assert_eq!(hash.len(), 16);
    assert_eq!(deployment(&input).unwrap().1, hash, "byte-stable");
    let claim = data_claim(&input).unwrap();
    assert_eq!(claim.metadata.name.as_deref(), Some("team-pgadmin-pgadmin"));
    let job = registration_job(&input, "team-pgadmin-pgadmin-register-0a1b2c3d").unwrap();
    let command = serde_json::to_value(&job).unwrap()["spec"]["template"]["spec"]["containers"][0]
        ["command"]
        .clone();
    assert_eq!(command[0], "/bin/sh");
    let script = command[2].as_str().unwrap();
    assert!(
        script.contains(
            "/venv/bin/python3 /pgadmin4/setup.py load-servers '/pgadmin-servers/servers.json' \
             --user 'admin@team-pgadmin.team-a.pgadmin.local' --replace"
        ),
        "{script}"
    );
    // Built as the entrypoint builds it, before setup.py reads it; checked afterwards.
    assert!(script.find("config_distro.py") < script.find("load-servers"));
    assert!(script.contains("dump-servers"), "{script}");
    // pgAdmin reads the copies, never the Secret volume itself (libpq refuses its modes).
    let d = serde_json::to_value(deployment(&input).unwrap().0).unwrap();
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["initContainers"][0]["name"], "credentials");
    let mounts = pod["containers"][0]["volumeMounts"].to_string();
    assert!(!mounts.contains("/pgadmin-servers"), "{mounts}");
    assert!(mounts.contains("/pgtoolbox-credentials"), "{mounts}");
    assert!(pod["volumes"].to_string().contains("\"medium\":\"Memory\""));
    assert_eq!(names.servers_secret, "team-pgadmin-pgadmin-servers");
}

/// Every Pod pgAdmin's children run passes Pod Security "restricted": the Deployment (with the
/// OAuth2 proxy), the registration Job and the upgrade backup Job. Only pgAdmin and the
/// registration, which write pgAdmin's configuration into the image, keep a writable root.
#[test]
fn every_pgadmin_pod_passes_pod_security_restricted() {
    use crate::api::OAuth2;
    use crate::reconcile::pgadmin::config_database::ConfigConnection;
    use crate::reconcile::workload::restricted_violations;
    let obj = pgadmin("  image: docker.io/dpage/pgadmin4:9.10\n");
    let names = ChildNames::of("team-pgadmin");
    let oauth2 = OAuth2::default();
    let db = ConfigConnection {
        host: "orders-rw.team-a.svc".into(),
        database: "pgadmin".into(),
        role: "pgadmin".into(),
        password_secret: "orders-pgadmin".into(),
    };
    let input = RenderInput {
        oauth2: Some((&oauth2, "quay.io/oauth2-proxy/oauth2-proxy:v7.12.0")),
        config_db: Some(&db),
        ..render_input(&obj, &names)
    };
    let template = |v: Value| v["spec"]["template"].clone();
    let d = serde_json::to_value(deployment(&input).unwrap().0).unwrap();
    let job = serde_json::to_value(registration_job(&input, "r").unwrap()).unwrap();
    let backup = upgrade_backup_job(&input, "b", "docker.io/dpage/pgadmin4:9.9").unwrap();
    let backup = serde_json::to_value(backup.unwrap()).unwrap();
    for (what, object) in [
        ("Deployment", &d),
        ("registration", &job),
        ("backup", &backup),
    ] {
        assert_eq!(
            restricted_violations(&template(object.clone())),
            "",
            "{what}"
        );
    }
    let read_only = |v: &Value, kind: &str, i: usize| {
        v["spec"]["template"]["spec"][kind][i]["securityContext"]["readOnlyRootFilesystem"].clone()
    };
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][1]["name"],
        "oauth2-proxy"
    );
    assert_eq!(read_only(&d, "containers", 1), true);
    assert_eq!(read_only(&d, "initContainers", 0), true);
    assert_eq!(read_only(&d, "containers", 0), false);
    assert_eq!(read_only(&job, "containers", 0), false);
    assert_eq!(read_only(&backup, "containers", 0), true);
    // pgAdmin's own user stays.
    assert_eq!(
        d["spec"]["template"]["spec"]["securityContext"]["runAsUser"],
        5050
    );
}

/// The `podTemplate` block reaches the pgAdmin Pod and both Jobs' Pods (which keep their Pod
/// affinity to pgAdmin's), and a new block is a new registration Job (a Job's template is
/// immutable) and a new workload hash.
#[test]
fn the_pod_template_block_is_on_the_pgadmin_pod_and_its_jobs() {
    use crate::api::PodTemplate;
    use crate::reconcile::pgadmin::config_database::ConfigConnection;
    use crate::reconcile::pgadmin::with_block;
    let obj = pgadmin("  image: docker.io/dpage/pgadmin4:9.10\n");
    let names = ChildNames::of("team-pgadmin");
    let db = ConfigConnection {
        host: "orders-rw.team-a.svc".into(),
        database: "pgadmin".into(),
        role: "pgadmin".into(),
        password_secret: "orders-pgadmin".into(),
    };
    let block: PodTemplate = serde_json::from_value(serde_json::json!({
        "nodeSelector": {"pool": "tools"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}],
        "imagePullSecrets": [{"name": "registry"}],
        "priorityClassName": "tools",
        "labels": {"team": "a", "app.kubernetes.io/component": "forged"},
    }))
    .unwrap();
    let input = |pod_template| RenderInput {
        config_db: Some(&db),
        pod_template,
        ..render_input(&obj, &names)
    };
    let placed = input(Some(&block));
    let (d, hash) = deployment(&placed).unwrap();
    let job = registration_job(&placed, "r").unwrap();
    let backup = upgrade_backup_job(&placed, "b", "docker.io/dpage/pgadmin4:9.9")
        .unwrap()
        .unwrap();
    let templates = [
        (
            "Deployment",
            serde_json::to_value(&d.spec.template).unwrap(),
        ),
        (
            "registration",
            serde_json::to_value(&job.spec.unwrap().template).unwrap(),
        ),
        (
            "backup",
            serde_json::to_value(&backup.spec.unwrap().template).unwrap(),
        ),
    ];
    for (what, t) in &templates {
        let spec = &t["spec"];
        assert_eq!(spec["nodeSelector"]["pool"], "tools", "{what}");
        assert_eq!(spec["tolerations"][0]["key"], "dedicated", "{what}");
        assert_eq!(spec["imagePullSecrets"][0]["name"], "registry", "{what}");
        assert_eq!(spec["priorityClassName"], "tools", "{what}");
        assert_eq!(t["metadata"]["labels"]["team"], "a", "{what}");
        assert_ne!(
            t["metadata"]["labels"]["app.kubernetes.io/component"], "forged",
            "{what}: the operator's label wins"
        );
    }
    for (what, t) in &templates[1..] {
        let own =
            &t["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
        assert_eq!(own[0]["topologyKey"], "kubernetes.io/hostname", "{what}");
    }
    assert_ne!(deployment(&input(None)).unwrap().1, hash);
    assert_eq!(with_block("abc", None), "abc");
    assert_eq!(with_block("abc", Some(&PodTemplate::default())), "abc");
    assert_ne!(with_block("abc", Some(&block)), "abc");
}
