//! PgAdmin's offered set and registration on the simulated cluster: the example becomes Ready
//! with its servers registered (the Job only after a pgAdmin Pod is Ready); a switchover
//! changes nothing; a grant added then removed; a rotated credential re-registers; a failed
//! registration Job, then its recovery; a converged pass makes no API request.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use pgtoolbox_operator::api::ServerState;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use super::pgadmin_support::{
    Env, IMAGE, NS, OTHER, cluster_config, condition_of, start, start_operator, start_sim, state,
};
use super::wait_support::until;

fn registration_jobs(jobs: &[Job], name: &str) -> Vec<String> {
    let prefix = format!("{name}-pgadmin-register-");
    let mut names: Vec<String> = jobs
        .iter()
        .filter_map(|j| j.metadata.name.clone())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    names.sort();
    names
}

async fn example(env: &Env) {
    env.cluster(NS, "orders", json!({"team": "a"}), 3).await;
    env.cluster(OTHER, "billing", json!({"team": "b"}), 1).await;
    env.grant("grant-team-a", "team-pgadmin", &["billing"])
        .await;
    env.pgadmin(
        "team-pgadmin",
        json!({
            "image": IMAGE,
            "clusterSelector": {"matchLabels": {"team": "a"}},
            "crossNamespaceClusterRefs": [{"namespace": OTHER, "name": "billing"}],
            "endpoints": ["rw", "ro"],
            "exposure": {"type": "ingress", "hostname": "pgadmin.team-a.apps.example.com", "ingressClassName": "nginx"},
        }),
    )
    .await;
}

#[tokio::test]
async fn pgadmin_example_is_ready_with_its_servers_registered_and_a_switchover_changes_nothing() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    example(&env).await;
    let obj = env
        .wait("team-pgadmin", "Ready", |o| {
            state(o, "Ready") == ("True".into(), "AsExpected".into())
        })
        .await;
    let status = obj.status.clone().expect("status");
    assert_eq!(
        status.url.as_deref(),
        Some("http://pgadmin.team-a.apps.example.com")
    );
    assert_eq!(status.image.as_deref(), Some(IMAGE));
    let offered: Vec<(String, String, String)> = status
        .servers
        .iter()
        .filter(|s| s.state == ServerState::Offered)
        .map(|s| (s.namespace.clone(), s.cluster.clone(), s.endpoint.clone()))
        .collect();
    assert_eq!(
        offered,
        [
            ("team-a".into(), "orders".into(), "ro".into()),
            ("team-a".into(), "orders".into(), "rw".into()),
            ("team-b".into(), "billing".into(), "ro".into()),
            ("team-b".into(), "billing".into(), "rw".into()),
        ]
    );
    let registration = status.registration.clone().expect("registration");
    let hash = registration.offered_hash.clone().expect("hash");
    let job_name = registration.job.clone().expect("job");
    assert_eq!(
        job_name,
        format!("team-pgadmin-pgadmin-register-{}", &hash[..8])
    );

    // The servers file names Services, never Pods, with a password file from the CNPG Secret.
    let file = env.servers_file("team-pgadmin").await;
    let hosts: Vec<&str> = file["Servers"]
        .as_object()
        .expect("servers")
        .values()
        .filter_map(|s| s["Host"].as_str())
        .collect();
    assert_eq!(
        hosts,
        [
            "orders-ro.team-a.svc",
            "orders-rw.team-a.svc",
            "billing-ro.team-b.svc",
            "billing-rw.team-b.svc"
        ]
    );
    assert!(file["Servers"]["1"]["PassFile"].is_string(), "{file}");

    // The registration Job started once a pgAdmin Pod was Ready.
    let job = Api::<Job>::namespaced(env.client.clone(), NS)
        .get(&job_name)
        .await
        .expect("registration Job");
    let pods = Api::<Pod>::namespaced(env.client.clone(), NS)
        .list(&ListParams::default().labels("app.kubernetes.io/component=pgadmin"))
        .await
        .expect("pods")
        .items;
    let ready_at = pods
        .iter()
        .filter_map(|p| {
            p.status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .find(|c| c.type_ == "Ready" && c.status == "True")?
                .last_transition_time
                .clone()
        })
        .min()
        .expect("a Ready pgAdmin Pod");
    let created = job.metadata.creation_timestamp.clone().expect("created");
    assert!(
        created.0 >= ready_at.0,
        "Job {created:?} before Ready {ready_at:?}"
    );
    // One RegistrationStarted per offered set seen while converging; the last names this Job.
    env.wait_event("team-pgadmin", "RegistrationStarted").await;
    let events = env.events("team-pgadmin").await;
    assert!(
        events
            .iter()
            .any(|e| e.1 == "RegistrationStarted" && e.2.contains(&job_name)),
        "{events:?}"
    );
    let registered = env.wait_event("team-pgadmin", "ServersRegistered").await;
    assert_eq!(registered.0, "Normal");
    assert_eq!(
        state(&obj, "PgAdminEgressConfined"),
        ("True".into(), "AsExpected".into())
    );

    // A switchover moves the primary; -rw follows it; nothing registered changes.
    let primary = env
        .sim
        .admin()
        .cnpg_switchover(NS, "orders", None)
        .expect("switchover");
    let clusters = env.dynamic(NS, "Cluster", "clusters");
    until(
        &clusters,
        "orders",
        &format!("the switchover to {primary} completed"),
        |c| {
            c.data["status"]["currentPrimary"] == primary.as_str()
                && c.data["status"]["phase"] == "Cluster in healthy state"
        },
    )
    .await;
    // A pass after the switchover (woken by a label) keeps what is registered.
    let seen = env.passes();
    label(&env, "switched").await;
    env.until_passes(seen, 1, "a pass after the switchover")
        .await;
    let after = env.pgadmins().get("team-pgadmin").await.expect("PgAdmin");
    assert_eq!(state(&after, "Ready"), ("True".into(), "AsExpected".into()));
    assert_eq!(
        after.status.and_then(|s| s.registration),
        Some(registration)
    );
    assert_eq!(
        registration_jobs(&env.jobs().await, "team-pgadmin"),
        std::slice::from_ref(&job_name)
    );

    // A converged pass (woken by a metadata change) makes no API request but its status read.
    env.sim.admin().reset_stats();
    let seen = env.passes();
    label(&env, "touched").await;
    env.until_passes(seen, 1, "the pass the label woke").await;
    let stats = env.sim.admin().stats();
    assert_eq!(
        stats.writes(),
        1,
        "only the test's own patch: {:?}",
        stats.by_verb_resource
    );
    let reads: Vec<&String> = stats
        .by_verb_resource
        .keys()
        .filter(|k| k.starts_with("get ") || k.starts_with("list "))
        .collect();
    assert!(reads.is_empty(), "{reads:?}");
}

#[tokio::test]
async fn pgadmin_grant_added_then_removed_and_a_rotated_credential_re_registers() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.cluster(OTHER, "billing", json!({"team": "b"}), 1).await;
    env.pgadmin(
        "p",
        json!({
            "image": IMAGE,
            "clusterSelector": {"matchLabels": {"team": "a"}},
            "crossNamespaceClusterRefs": [{"namespace": OTHER, "name": "billing"}],
        }),
    )
    .await;
    // No grant: reported, not a stall; pgAdmin serves what resolves.
    let obj = env
        .wait("p", "GrantMissing and servers synced", |o| {
            state(o, "ConfigurationValid").1 == "GrantMissing"
                && state(o, "ServersSynced").0 == "True"
        })
        .await;
    assert_eq!(
        state(&obj, "Ready"),
        ("False".into(), "GrantMissing".into())
    );
    assert_eq!(state(&obj, "Stalled").0, "False");
    assert_eq!(state(&obj, "WorkloadReady").0, "True");
    let rows = obj.status.clone().expect("status").servers;
    let billing = rows
        .iter()
        .find(|r| r.cluster == "billing")
        .expect("billing row");
    assert_eq!(billing.state, ServerState::NotOffered);
    let first_job = obj.status.and_then(|s| s.registration).and_then(|r| r.job);

    // The grant appears: seen at once, billing registered by a new Job.
    env.grant("grant-p", "p", &["billing"]).await;
    let obj = env
        .wait("p", "Ready with billing", |o| {
            state(o, "Ready") == ("True".into(), "AsExpected".into())
                && o.status.as_ref().is_some_and(|s| {
                    s.servers
                        .iter()
                        .any(|r| r.cluster == "billing" && r.state == ServerState::Offered)
                })
        })
        .await;
    let granted_job = obj.status.and_then(|s| s.registration).and_then(|r| r.job);
    assert_ne!(granted_job, first_job);

    // A rotated credential of orders re-registers (a new offered-set hash).
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), NS);
    secrets
        .patch(
            "orders-app",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": "rotated-password"}})),
        )
        .await
        .expect("rotated");
    let obj = env
        .wait("p", "re-registered after rotation", |o| {
            let job = o
                .status
                .as_ref()
                .and_then(|s| s.registration.as_ref())
                .and_then(|r| r.job.clone());
            job.is_some() && job != granted_job && state(o, "ServersSynced").0 == "True"
        })
        .await;
    let rotated_job = obj.status.and_then(|s| s.registration).and_then(|r| r.job);
    // The superseded Jobs are deleted.
    let jobs = registration_jobs(&env.jobs().await, "p");
    assert_eq!(jobs, rotated_job.iter().cloned().collect::<Vec<_>>());

    // The grant goes: GrantMissing again, billing no longer offered.
    env.dynamic(OTHER, "PgAdminAccess", "pgadminaccesses")
        .delete("grant-p", &DeleteParams::default())
        .await
        .expect("grant deleted");
    env.wait("p", "GrantMissing again", |o| {
        state(o, "ConfigurationValid").1 == "GrantMissing"
            && o.status.as_ref().is_some_and(|s| {
                s.servers
                    .iter()
                    .all(|r| r.cluster != "billing" || r.state == ServerState::NotOffered)
            })
    })
    .await;
}

#[tokio::test]
async fn pgadmin_registration_failure_then_recovery() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.sim
        .admin()
        .add_workload_fault(
            NS,
            "app.kubernetes.io/component=pgadmin-register",
            WorkloadFault::JobFailed,
        )
        .expect("fault");
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.pgadmin(
        "p",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}}}),
    )
    .await;
    let obj = env
        .wait_reason("p", "ServersSynced", "RegistrationFailed")
        .await;
    let synced = condition_of(&obj, "ServersSynced").expect("ServersSynced");
    assert_eq!(synced.status, "False");
    assert!(
        synced.message.contains("BackoffLimitExceeded"),
        "{}",
        synced.message
    );
    assert_eq!(
        state(&obj, "Ready"),
        ("False".into(), "RegistrationFailed".into())
    );
    assert_eq!(state(&obj, "Stalled").0, "False");
    let failed = env.wait_event("p", "RegistrationFailed").await;
    assert_eq!(failed.0, "Warning");

    // Fixed, and the failed Job deleted: the registration runs again and succeeds.
    env.sim.admin().clear_workload_faults(None);
    let job = obj
        .status
        .and_then(|s| s.registration)
        .and_then(|r| r.job)
        .expect("job");
    Api::<Job>::namespaced(env.client.clone(), NS)
        .delete(&job, &DeleteParams::background())
        .await
        .expect("deleted");
    env.wait("p", "Ready after recovery", |o| {
        state(o, "Ready") == ("True".into(), "AsExpected".into())
    })
    .await;
}

/// CloudNativePG not served when the operator starts (installed after it, or being upgraded):
/// a PgAdmin selecting Clusters by labels cannot see them and says ClusterNotFound. Once the
/// kind is served, the first list of Clusters must wake it although no Cluster changed (the
/// Cluster existed all along), and its server is registered.
#[tokio::test]
async fn pgadmin_selector_registers_its_cluster_once_cloudnativepg_is_served() {
    let sim = start_sim(cluster_config()).await;
    let client = sim.client();
    super::sim_support::namespace(&client, NS).await;
    let cluster: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "orders", "namespace": NS, "labels": {"team": "a"}},
        "spec": {"instances": 1, "storage": {"size": "1Gi"}},
    }))
    .expect("a Cluster");
    super::sim_net_support::api(
        &client,
        Some(NS),
        "postgresql.cnpg.io",
        "Cluster",
        "clusters",
    )
    .create(&Default::default(), &cluster)
    .await
    .expect("Cluster created");
    // The Cluster is stored, but its API is not served when the operator starts.
    sim.admin().unserve("postgresql.cnpg.io");
    let env = start_operator(sim, OperatorSettings::default()).await;
    env.pgadmin(
        "p",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}}, "endpoints": ["rw"]}),
    )
    .await;
    let unverified = env
        .wait("p", "ClusterNotFound", |o| {
            state(o, "ConfigurationValid").1 == "ClusterNotFound"
        })
        .await;
    assert!(
        condition_of(&unverified, "ConfigurationValid")
            .is_some_and(|c| c.message.contains("may not read Clusters in team-a")),
        "{:#?}",
        unverified.status
    );
    env.sim.admin().serve("postgresql.cnpg.io");
    let obj = env
        .wait("p", "its Cluster offered", |o| {
            o.status.as_ref().is_some_and(|s| {
                s.servers
                    .iter()
                    .any(|v| v.cluster == "orders" && v.state == ServerState::Offered)
            })
        })
        .await;
    assert_ne!(state(&obj, "ConfigurationValid").1, "ClusterNotFound");
}

/// A metadata-only change of the PgAdmin: it wakes one pass and nothing else changes.
async fn label(env: &Env, key: &str) {
    env.pgadmins()
        .patch(
            "team-pgadmin",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {key: "yes"}}})),
        )
        .await
        .expect("labelled");
}

/// Issue 29: an operator restarted over a Ready PgAdmin (nothing remembered, as a new process)
/// judges it without a write: the servers Secret carries the digest of what it was written
/// with, so it is re-rendered but not re-applied, and the status stays as it is.
#[tokio::test]
async fn a_restart_over_a_ready_pgadmin_writes_nothing() {
    let mut env = start(cluster_config(), OperatorSettings::default()).await;
    example(&env).await;
    env.wait("team-pgadmin", "Ready", |o| {
        state(o, "Ready") == ("True".into(), "AsExpected".into())
    })
    .await;
    // Its last writes (status, Events) settled: a second without one.
    let mut writes = env.sim.admin().stats().writes();
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let now = env.sim.admin().stats().writes();
        if now == writes {
            break;
        }
        writes = now;
    }

    env.sim.admin().reset_stats();
    env.restart_operator(OperatorSettings::default()).await;
    env.until_passes(0, 1, "the restarted operator's pass")
        .await;
    // A write the pass chose would be made by now (the settle window of a held-back message
    // included).
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let stats = env.sim.admin().stats();
    assert_eq!(stats.writes(), 0, "{:?}", stats.by_verb_resource);
    let obj = env.pgadmins().get("team-pgadmin").await.expect("PgAdmin");
    assert_eq!(state(&obj, "Ready"), ("True".into(), "AsExpected".into()));
}
