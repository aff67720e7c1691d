//! PgAdmin's settings database and upgrade backup on the simulated cluster: no pgAdmin Pod until
//! CloudNativePG applied the role, its password and the database; an image change backs the
//! settings up first (the old image keeps running) and keeps the completed backup Job until the
//! next upgrade's supersedes it, a failed backup keeps the old image (a stall), the skip
//! annotation releases exactly the image it names.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams, Patch, PatchParams};
use pgtoolbox_operator::testing::reconcile::pgadmin::upgrade_backup_job_name;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::SimConfig;
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use super::pgadmin_support::{NS, cluster_config, condition_of, start, state};
use super::wait_support::until_gone;

const OLD: &str = "docker.io/dpage/pgadmin4:9.9";
const NEW: &str = "docker.io/dpage/pgadmin4:9.10";
const NEWER: &str = "docker.io/dpage/pgadmin4:9.11";

async fn backup_job(client: &kube::Client, name: &str) -> Option<Job> {
    Api::<Job>::namespaced(client.clone(), NS)
        .get_opt(name)
        .await
        .expect("readable")
}

async fn deployed_image(client: &kube::Client) -> Option<String> {
    let d = Api::<Deployment>::namespaced(client.clone(), NS)
        .get_opt("p-pgadmin")
        .await
        .expect("readable")?;
    let value = serde_json::to_value(&d).expect("json");
    value["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .map(str::to_owned)
}

#[tokio::test]
async fn pgadmin_settings_database_and_upgrade_backup() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.sim
        .admin()
        .add_workload_fault(
            NS,
            "app.kubernetes.io/instance=p",
            WorkloadFault::NotApplied,
        )
        .expect("fault");
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.cluster(NS, "settings", json!({"role": "settings"}), 1)
        .await;
    env.pgadmin(
        "p",
        json!({"image": OLD, "clusterSelector": {"matchLabels": {"team": "a"}},
            "configDatabase": {"cluster": "settings"}}),
    )
    .await;
    let obj = env
        .wait_reason("p", "WorkloadReady", "ConfigDatabaseNotReady")
        .await;
    assert_eq!(state(&obj, "Stalled").0, "False");
    assert!(
        deployed_image(&env.client).await.is_none(),
        "no pgAdmin before CNPG applied the settings database"
    );
    // Quiet: a child on its way raises no Warning.
    assert!(
        !env.events("p")
            .await
            .iter()
            .any(|e| e.1 == "ConfigDatabaseNotReady"),
        "{:?}",
        env.events("p").await
    );

    env.sim.admin().clear_workload_faults(None);
    let obj = env
        .wait("p", "Ready on the settings database", |o| {
            state(o, "Ready") == ("True".into(), "AsExpected".into())
        })
        .await;
    assert_eq!(obj.status.and_then(|s| s.image).as_deref(), Some(OLD));
    let d = Api::<Deployment>::namespaced(env.client.clone(), NS)
        .get("p-pgadmin")
        .await
        .expect("deployment");
    let text = serde_json::to_string(&d).expect("json");
    assert!(
        text.contains("PGADMIN_CONFIG_CONFIG_DATABASE_URI"),
        "{text}"
    );
    assert!(text.contains("settings-rw.team-a.svc"), "{text}");
    // The egress policy admits the settings database's Cluster.
    let policy =
        Api::<k8s_openapi::api::networking::v1::NetworkPolicy>::namespaced(env.client.clone(), NS)
            .get("p-pgadmin-egress")
            .await
            .expect("egress policy");
    let policy = serde_json::to_string(&policy).expect("json");
    assert!(
        policy.contains("\"cnpg.io/cluster\":\"settings\""),
        "{policy}"
    );

    // An image change: the backup first, then the rollout.
    env.pgadmins()
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": NEW}})),
        )
        .await
        .expect("patched");
    let completed = env.wait_event("p", "UpgradeBackupCompleted").await;
    assert!(completed.2.contains(NEW), "{completed:?}");
    env.wait("p", "running the new image", |o| {
        o.status.as_ref().and_then(|s| s.image.as_deref()) == Some(NEW)
            && state(o, "Ready").0 == "True"
    })
    .await;
    env.wait_event("p", "RolloutStarted").await;

    // The completed backup Job stays while the new image runs, so its logs can be read: passes
    // that see the new image running (woken by changes of the object) leave it untouched.
    let backup = upgrade_backup_job_name("p", NEW, None);
    for touch in ["1", "2"] {
        let seen = env.passes();
        env.merge(
            "p",
            json!({"metadata": {"annotations": {"example.com/touched": touch}}}),
        )
        .await;
        env.until_passes(seen, 1, "a pass once the new image runs")
            .await;
    }
    let kept = backup_job(&env.client, &backup)
        .await
        .expect("the latest backup Job is kept once the new image runs");
    assert!(
        kept.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")),
        "{kept:?}"
    );
    let pods = Api::<Pod>::namespaced(env.client.clone(), NS);
    let of_job = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={backup}"));
    let pod = pods.list(&of_job).await.expect("pods").items;
    assert_eq!(pod.len(), 1, "{pod:?}");
    let pod_name = pod[0].metadata.name.clone().expect("named");
    pods.logs(&pod_name, &LogParams::default())
        .await
        .expect("the backup's log is readable");

    // A failing backup keeps the old image and stalls.
    let registrations = env.occurrences("p", "RegistrationStarted").await;
    env.sim
        .admin()
        .add_workload_fault(
            NS,
            "app.kubernetes.io/component=pgadmin-upgrade-backup",
            WorkloadFault::JobFailed,
        )
        .expect("fault");
    env.pgadmins()
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": NEWER}})),
        )
        .await
        .expect("patched");
    let obj = env
        .wait("p", "stalled on UpgradeBackupFailed", |o| {
            state(o, "Stalled") == ("True".into(), "UpgradeBackupFailed".into())
        })
        .await;
    let workload = condition_of(&obj, "WorkloadReady").expect("WorkloadReady");
    assert_eq!(workload.reason, "UpgradeBackupFailed");
    assert!(
        workload.message.contains("BackoffLimitExceeded"),
        "{}",
        workload.message
    );
    assert_eq!(obj.status.and_then(|s| s.image).as_deref(), Some(NEW));
    assert_eq!(deployed_image(&env.client).await.as_deref(), Some(NEW));
    // The new upgrade's backup Job superseded the previous one.
    assert!(
        backup_job(&env.client, &upgrade_backup_job_name("p", NEWER, None))
            .await
            .is_some()
    );
    until_gone(
        &Api::<Job>::namespaced(env.client.clone(), NS),
        &backup,
        "the superseded backup Job",
    )
    .await;
    // The backup Job is not a registration: the old image's servers stay registered.
    assert_eq!(
        env.occurrences("p", "RegistrationStarted").await,
        registrations,
        "{:?}",
        env.events("p").await
    );

    // The skip annotation names the target: released without a backup, with a Warning.
    env.pgadmins()
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "pgtoolbox.fyannk.dev/skip-upgrade-backup": NEWER}}})),
        )
        .await
        .expect("annotated");
    let skipped = env.wait_event("p", "UpgradeBackupSkipped").await;
    assert_eq!(skipped.0, "Warning");
    env.wait("p", "running the skipped-to image", |o| {
        o.status.as_ref().and_then(|s| s.image.as_deref()) == Some(NEWER)
            && state(o, "Ready").0 == "True"
    })
    .await;
}

#[tokio::test]
async fn pgadmin_settings_database_without_the_database_api_stalls() {
    let env = start(
        SimConfig {
            unserve: vec!["postgresql.cnpg.io/databases".into()],
            ..cluster_config()
        },
        OperatorSettings::default(),
    )
    .await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.pgadmin(
        "p",
        json!({"image": OLD, "clusterSelector": {"matchLabels": {"team": "a"}},
            "configDatabase": {"cluster": "orders"}}),
    )
    .await;
    let obj = env
        .wait("p", "stalled on DatabaseAPIUnavailable", |o| {
            state(o, "Stalled") == ("True".into(), "DatabaseAPIUnavailable".into())
        })
        .await;
    assert_eq!(
        state(&obj, "ConfigurationValid"),
        ("False".into(), "DatabaseAPIUnavailable".into())
    );
}

#[tokio::test]
async fn pgadmin_settings_database_without_password_generation_stalls() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    // A CloudNativePG whose DatabaseRole schema predates generated passwords.
    let sim = super::pgadmin_support::start_sim(cluster_config()).await;
    let crds: Api<CustomResourceDefinition> = Api::all(sim.client());
    let old_schema = json!({"spec": {"versions": [{
        "name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "cluster": {"type": "object", "properties": {"name": {"type": "string"}}},
                "name": {"type": "string"}, "login": {"type": "boolean"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
    }]}});
    crds.patch(
        "databaseroles.postgresql.cnpg.io",
        &PatchParams::default(),
        &Patch::Merge(old_schema),
    )
    .await
    .expect("older DatabaseRole schema");
    let env = super::pgadmin_support::start_operator(sim, OperatorSettings::default()).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.pgadmin(
        "p",
        json!({"image": OLD, "clusterSelector": {"matchLabels": {"team": "a"}},
            "configDatabase": {"cluster": "orders"}}),
    )
    .await;
    let obj = env
        .wait("p", "stalled on PasswordGenerationUnavailable", |o| {
            state(o, "Stalled") == ("True".into(), "PasswordGenerationUnavailable".into())
        })
        .await;
    let config = condition_of(&obj, "ConfigurationValid").expect("ConfigurationValid");
    assert!(config.message.contains("1.31"), "{}", config.message);
    assert!(deployed_image(&env.client).await.is_none());
}
