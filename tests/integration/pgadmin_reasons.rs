//! PgAdmin's ConfigurationValid reasons on the simulated cluster: only the seed's stalling
//! reasons stall (a refused image or hostname, a name taken by a foreign object, the missing
//! OAuth2 client Secret, the settings database); the offered set's problems leave pgAdmin
//! serving what resolves. DatabaseRoles refused in one namespace only.

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use pgtoolbox_operator::api::ServerState;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::{DenyRule, SimConfig};
use serde_json::json;

use super::pgadmin_support::{IMAGE, NS, OTHER, cluster_config, condition_of, start, state};
use super::wait_support::until_gone;

#[tokio::test]
async fn pgadmin_stalling_reasons_stall_and_the_others_keep_pgadmin_serving() {
    let env = start(
        cluster_config(),
        OperatorSettings {
            allowed_image_repositories: vec!["docker.io/dpage".into()],
            exposure_allowed_host_suffixes: vec!["apps.example.com".into()],
            ..OperatorSettings::default()
        },
    )
    .await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    let foreign: Service = serde_json::from_value(json!({
        "metadata": {"name": "taken-pgadmin", "namespace": NS},
        "spec": {"ports": [{"port": 80}]},
    }))
    .expect("service");
    Api::<Service>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &foreign)
        .await
        .expect("foreign Service");
    let selector = json!({"matchLabels": {"team": "a"}});
    let stalls = [
        (
            "evil-image",
            json!({"image": "quay.io/evil/pgadmin:1", "clusterSelector": selector}),
            "ImageNotAllowed",
            "quay.io/evil/pgadmin",
        ),
        (
            "bad-host",
            json!({"image": IMAGE, "clusterSelector": selector,
                "exposure": {"type": "ingress", "hostname": "pgadmin.evil.com", "ingressClassName": "nginx"}}),
            "HostnameNotAllowed",
            "pgadmin.evil.com",
        ),
        (
            "taken",
            json!({"image": IMAGE, "clusterSelector": selector}),
            "ResourceNotOwned",
            "taken-pgadmin",
        ),
        (
            "oidc",
            json!({"image": IMAGE, "clusterSelector": selector, "authentication": {"oauth2": {
                "issuerURL": "https://login.example.com", "clientID": "pgadmin",
                "clientSecretRef": {"name": "oidc-client", "key": "secret"},
                "proxyImage": "docker.io/dpage/oauth2-proxy:1"}}}),
            "SecretNotFound",
            "oidc-client",
        ),
        (
            "settings",
            json!({"image": IMAGE, "clusterSelector": selector, "configDatabase": {"cluster": "elsewhere"}}),
            "ConfigurationInvalid",
            "elsewhere",
        ),
    ];
    for (name, spec, _, _) in &stalls {
        env.pgadmin(name, spec.clone()).await;
    }
    for (name, _, reason, needle) in &stalls {
        let obj = env
            .wait(name, &format!("stalled on {reason}"), |o| {
                state(o, "Stalled") == ("True".into(), (*reason).into())
            })
            .await;
        let config = condition_of(&obj, "ConfigurationValid").expect("ConfigurationValid");
        assert_eq!(
            (config.status.as_str(), config.reason.as_str()),
            ("False", *reason),
            "{name}"
        );
        assert!(
            config.message.contains(needle),
            "{name}: {}",
            config.message
        );
        assert_eq!(
            state(&obj, "Ready"),
            ("False".into(), (*reason).into()),
            "{name}"
        );
        let event = env.wait_event(name, reason).await;
        assert_eq!(event.0, "Warning", "{name}");
    }

    let serving = [
        (
            "nothing-selected",
            json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "z"}}}),
            "NoClusterSelected",
        ),
        (
            "no-pooler",
            json!({"image": IMAGE, "clusterSelector": selector, "endpoints": ["rw", "pooler:nope"]}),
            "PoolerNotFound",
        ),
        (
            "no-cluster",
            json!({"image": IMAGE, "crossNamespaceClusterRefs": [{"namespace": NS, "name": "gone"}]}),
            "ClusterNotFound",
        ),
    ];
    for (name, spec, _) in &serving {
        env.pgadmin(name, spec.clone()).await;
    }
    for (name, _, reason) in &serving {
        let obj = env
            .wait(name, &format!("{reason} while serving"), |o| {
                state(o, "ConfigurationValid").1 == *reason
                    && state(o, "WorkloadReady").0 == "True"
                    && state(o, "ServersSynced").0 == "True"
            })
            .await;
        assert_eq!(state(&obj, "Stalled").0, "False", "{name}");
        assert_eq!(
            state(&obj, "Ready"),
            ("False".into(), (*reason).into()),
            "{name}"
        );
    }
}

#[tokio::test]
async fn pgadmin_too_many_servers_registers_the_first_64() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    for i in 0..33 {
        env.cluster(NS, &format!("c{i:02}"), json!({"fleet": "big"}), 1)
            .await;
    }
    env.pgadmin(
        "big",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"fleet": "big"}}, "endpoints": ["rw", "ro"]}),
    )
    .await;
    let obj = env
        .wait("big", "TooManyServers and synced", |o| {
            state(o, "ConfigurationValid").1 == "TooManyServers"
                && state(o, "ServersSynced").0 == "True"
        })
        .await;
    assert_eq!(state(&obj, "Stalled").0, "False");
    let rows = obj.status.expect("status").servers;
    let offered = rows
        .iter()
        .filter(|r| r.state == ServerState::Offered)
        .count();
    assert_eq!((rows.len(), offered), (66, 64));
    let file = env.servers_file("big").await;
    assert_eq!(file["Servers"].as_object().map(|m| m.len()), Some(64));
}

#[tokio::test]
async fn pgadmin_database_roles_refused_in_one_namespace_only() {
    let env = start(
        SimConfig {
            deny: vec![
                DenyRule::parse("list:postgresql.cnpg.io/databaseroles:team-b").expect("rule"),
            ],
            ..cluster_config()
        },
        OperatorSettings {
            watch_namespaces: vec![NS.into(), OTHER.into()],
            ..OperatorSettings::default()
        },
    )
    .await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.cluster(OTHER, "billing", json!({"team": "b"}), 1).await;
    env.grant("grant-p", "p", &["billing"]).await;
    env.create(
        NS,
        "DatabaseRole",
        "databaseroles",
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "DatabaseRole",
            "metadata": {"name": "angus", "namespace": NS},
            "spec": {"cluster": {"name": "orders"}, "name": "angus", "login": true, "password": {"mode": "generate"}}}),
    )
    .await;
    env.pgadmin(
        "p",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}},
            "crossNamespaceClusterRefs": [{"namespace": OTHER, "name": "billing"}]}),
    )
    .await;
    let obj = env
        .wait("p", "Ready with angus", |o| {
            state(o, "Ready") == ("True".into(), "AsExpected".into())
                && o.status.as_ref().is_some_and(|s| {
                    s.servers.iter().any(|r| {
                        r.role.as_deref() == Some("angus") && r.state == ServerState::Offered
                    })
                })
        })
        .await;
    let rows = obj.status.expect("status").servers;
    let refused = rows
        .iter()
        .find(|r| r.role.as_deref() == Some("*"))
        .expect("a NotOffered DatabaseRoles row");
    assert_eq!(refused.namespace, OTHER);
    assert_eq!(refused.state, ServerState::NotOffered);
    let message = refused.message.clone().unwrap_or_default();
    assert!(
        message.contains(OTHER) && !message.contains(NS),
        "{message}"
    );
    let file = env.servers_file("p").await;
    let angus = file["Servers"]
        .as_object()
        .expect("servers")
        .values()
        .find(|s| s["Username"] == "angus")
        .expect("angus registered");
    assert!(angus["PassFile"].is_string(), "{angus}");
}

#[tokio::test]
async fn pgadmin_oauth2_sidecar_pooler_endpoint_and_egress_statement() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::api::networking::v1::NetworkPolicy;

    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.create(
        NS,
        "Pooler",
        "poolers",
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Pooler",
            "metadata": {"name": "orders-pooler", "namespace": NS},
            "spec": {"cluster": {"name": "orders"}, "instances": 1, "type": "rw",
                "pgbouncer": {"poolMode": "session"}}}),
    )
    .await;
    let client_secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "oidc-client", "namespace": NS},
        "stringData": {"secret": "s3cr3t"},
    }))
    .expect("secret");
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &client_secret)
        .await
        .expect("client Secret");
    env.pgadmin(
        "o",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}},
            "endpoints": ["rw", "pooler:orders-pooler"],
            "authentication": {"oauth2": {"issuerURL": "https://login.example.com", "clientID": "pgadmin",
                "clientSecretRef": {"name": "oidc-client", "key": "secret"}}},
            "egress": {"extraRules": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}}),
    )
    .await;
    let obj = env
        .wait("o", "Ready with its egress judged", |o| {
            state(o, "Ready") == ("True".into(), "AsExpected".into())
                && state(o, "PgAdminEgressConfined").1 == "PgAdminEgressOpen"
                && o.status.as_ref().is_some_and(|s| {
                    s.servers.iter().any(|r| {
                        r.endpoint == "pooler:orders-pooler" && r.state == ServerState::Offered
                    })
                })
        })
        .await;
    let egress = condition_of(&obj, "PgAdminEgressConfined").expect("egress");
    assert_eq!(egress.status, "False");
    assert!(
        egress.message.contains("the OAuth2 issuer") && egress.message.contains("extraRules[0]"),
        "{}",
        egress.message
    );
    assert!(!egress.message.contains("orders"), "{}", egress.message);
    let rows = obj.status.expect("status").servers;
    assert!(
        rows.iter()
            .any(|r| r.endpoint == "pooler:orders-pooler" && r.state == ServerState::Offered),
        "{rows:?}"
    );
    let deployment = Api::<Deployment>::namespaced(env.client.clone(), NS)
        .get("o-pgadmin")
        .await
        .expect("deployment");
    let value = serde_json::to_value(&deployment).expect("json");
    let containers = value["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["pgadmin", "oauth2-proxy"]);
    assert!(
        containers[0].to_string().contains("127.0.0.1"),
        "pgAdmin on loopback"
    );
    assert_eq!(
        containers[1]["image"],
        pgtoolbox_operator::testing::actors::pgadmin::BUILTIN_OAUTH2_PROXY_IMAGE
    );
    let policy = Api::<NetworkPolicy>::namespaced(env.client.clone(), NS)
        .get("o-pgadmin-egress")
        .await
        .expect("egress policy");
    let text = serde_json::to_string(&policy).expect("json");
    assert!(
        text.contains("\"cnpg.io/poolerName\":\"orders-pooler\""),
        "{text}"
    );
    assert!(text.contains("\"cnpg.io/cluster\":\"orders\""), "{text}");

    // A rotated OAuth2 client secret rolls the workload (its digest is in the workload hash).
    // The pooler's credential file may have rolled the Pod once already (a new credential file
    // does), so the rollout looked for is the one away from the hash the offered set rendered,
    // and its Event one more occurrence of RolloutStarted (kube's recorder may fold it into the
    // pooler's Event as a series).
    let before =
        pgtoolbox_operator::testing::reconcile::workload::current_workload_hash(&deployment)
            .expect("workload hash")
            .to_owned();
    let rolled = env.occurrences("o", "RolloutStarted").await;
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .patch(
            "oidc-client",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"stringData": {"secret": "rotated"}})),
        )
        .await
        .expect("rotated");
    env.wait_rollout_from("o", &before).await;
    assert_eq!(env.wait_event("o", "RolloutStarted").await.0, "Normal");
    env.wait_occurrences("o", "RolloutStarted", rolled).await;
}

#[tokio::test]
async fn pgadmin_pooler_api_unavailable_is_reported_not_stalled() {
    let env = start(
        SimConfig {
            unserve: vec!["postgresql.cnpg.io/poolers".into()],
            ..cluster_config()
        },
        OperatorSettings::default(),
    )
    .await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.pgadmin(
        "p",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}},
            "endpoints": ["rw", "pooler:orders-pooler"]}),
    )
    .await;
    let obj = env
        .wait("p", "PoolerAPIUnavailable while serving", |o| {
            state(o, "ConfigurationValid").1 == "PoolerAPIUnavailable"
                && state(o, "ServersSynced").0 == "True"
        })
        .await;
    assert_eq!(state(&obj, "Stalled").0, "False");
    assert_eq!(state(&obj, "WorkloadReady").0, "True");
}

#[tokio::test]
async fn pgadmin_route_refused_in_its_namespace_says_what_may_remain() {
    let env = start(
        SimConfig {
            deny: vec![DenyRule::parse("*:route.openshift.io/routes:team-a").expect("rule")],
            ..cluster_config()
        },
        OperatorSettings {
            watch_namespaces: vec![NS.into(), OTHER.into()],
            ..OperatorSettings::default()
        },
    )
    .await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.pgadmin(
        "p",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}},
            "exposure": {"type": "route", "hostname": "pgadmin.team-a.apps.example.com"}}),
    )
    .await;
    let obj = env
        .wait_reason("p", "ExposureReady", "RouteAPIUnavailable")
        .await;
    let exposure = condition_of(&obj, "ExposureReady").expect("ExposureReady");
    assert_eq!(exposure.status, "False");
    assert!(
        exposure.message.ends_with(
            "the operator may not read Routes in team-a: a Route p-pgadmin published before may remain; delete it by hand"
        ),
        "{}",
        exposure.message
    );
    assert_eq!(state(&obj, "Stalled").0, "False");
}

#[tokio::test]
async fn pgadmin_paused_with_a_refused_hostname_withdraws_its_exposure() {
    use k8s_openapi::api::networking::v1::Ingress;

    let env = start(
        cluster_config(),
        OperatorSettings {
            exposure_allowed_host_suffixes: vec!["apps.example.com".into()],
            ..OperatorSettings::default()
        },
    )
    .await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.pgadmin(
        "p",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}},
            "exposure": {"type": "ingress", "hostname": "pgadmin.apps.example.com", "ingressClassName": "nginx"}}),
    )
    .await;
    env.wait("p", "Ready", |o| {
        state(o, "Ready") == ("True".into(), "AsExpected".into())
    })
    .await;
    let ingresses: Api<Ingress> = Api::namespaced(env.client.clone(), NS);
    assert!(
        ingresses
            .get_opt("p-pgadmin")
            .await
            .expect("readable")
            .is_some()
    );
    env.merge(
        "p",
        json!({
            "metadata": {"annotations": {"pgtoolbox.fyannk.dev/reconcile": "skip"}},
            "spec": {"exposure": {"hostname": "pgadmin.evil.com"}},
        }),
    )
    .await;
    let obj = env
        .wait("p", "paused and stalled on the hostname", |o| {
            state(o, "Stalled") == ("True".into(), "HostnameNotAllowed".into())
        })
        .await;
    assert_eq!(state(&obj, "Progressing").1, "HostnameNotAllowed");
    assert_eq!(obj.status.as_ref().and_then(|s| s.url.clone()), None);
    until_gone(
        &ingresses,
        "p-pgadmin",
        "withdrawn under the refused hostname",
    )
    .await;
}

#[tokio::test]
async fn pgadmin_child_refused_by_admission_is_an_admission_denied_error() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    // A webhook denies every write of a Deployment in the namespace.
    for verb in ["create", "patch"] {
        env.sim
            .admin()
            .inject_errors(&format!("{verb}:apps/deployments:{NS}"), 403, 10_000)
            .expect("fault");
    }
    env.pgadmin(
        "p",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}}}),
    )
    .await;
    let obj = env.wait_reason("p", "Ready", "ReconcileError").await;
    let ready = condition_of(&obj, "Ready").expect("Ready");
    assert!(
        ready.message.starts_with("AdmissionDenied: "),
        "{}",
        ready.message
    );
    assert!(
        ready.message.contains("denied the request"),
        "{}",
        ready.message
    );
    env.wait_event("p", "AdmissionDenied").await;
    // Once per class, not per retry: two more (failed) passes say nothing new. The backoff
    // doubles per failed pass (child events bring passes too), so the next retry may be tens of
    // seconds away: a change of the object brings each pass at once instead.
    for touch in ["1", "2"] {
        let seen = env.passes();
        touch_pgadmin(&env, "p", touch).await;
        env.until_passes(seen, 1, "a pass after a change of the object")
            .await;
    }
    let events = env.events("p").await;
    assert_eq!(
        events.iter().filter(|e| e.1 == "AdmissionDenied").count(),
        1,
        "{events:?}"
    );
    assert!(
        !events.iter().any(|e| e.1 == "ReconciliationFailed"),
        "{events:?}"
    );
    // As after a user fixes the webhook and touches the object.
    env.sim.admin().clear_faults();
    touch_pgadmin(&env, "p", "3").await;
    env.wait("p", "Ready", |o| state(o, "Ready").0 == "True")
        .await;
}

/// A metadata change of a PgAdmin: its watch event brings a pass without waiting for a retry.
async fn touch_pgadmin(env: &super::pgadmin_support::Env, name: &str, value: &str) {
    let touched = json!({"metadata": {"annotations": {"example.com/touched": value}}});
    env.merge(name, touched).await;
}

/// Fail closed: while the server refuses the egress policy, no pgAdmin Pod and no registration
/// Job (both hold database credentials) runs unconfined; once it is admitted, they run.
#[tokio::test]
async fn pgadmin_runs_nothing_holding_credentials_while_its_egress_policy_is_refused() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::batch::v1::Job;
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    for verb in ["create", "patch"] {
        env.sim
            .admin()
            .inject_errors(
                &format!("{verb}:networking.k8s.io/networkpolicies:{NS}"),
                422,
                10_000,
            )
            .expect("fault");
    }
    env.pgadmin(
        "closed",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}},
            "egress": {"extraRules": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}}),
    )
    .await;
    let obj = env.wait_reason("closed", "Ready", "ReconcileError").await;
    let ready = condition_of(&obj, "Ready").expect("Ready");
    assert!(
        ready.message.contains("closed-pgadmin"),
        "{}",
        ready.message
    );
    let deployments = Api::<Deployment>::namespaced(env.client.clone(), NS);
    assert!(
        deployments
            .get_opt("closed-pgadmin")
            .await
            .expect("get")
            .is_none(),
        "no pgAdmin runs without its egress policy"
    );
    let jobs = Api::<Job>::namespaced(env.client.clone(), NS)
        .list(&Default::default())
        .await
        .expect("jobs");
    assert!(
        jobs.items.iter().all(|j| !j
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .starts_with("closed-pgadmin")),
        "no registration Job either"
    );
    env.sim.admin().clear_faults();
    env.wait_reason("closed", "Ready", "AsExpected").await;
    assert!(
        deployments
            .get_opt("closed-pgadmin")
            .await
            .expect("get")
            .is_some()
    );
}
