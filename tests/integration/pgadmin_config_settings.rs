//! `spec.config.settings` of a PgAdmin on the embedded API server: a name that is no pgAdmin
//! setting is refused when stored, a setting the operator owns is refused by the operator
//! (`ConfigurationInvalid`, never rendered, pgAdmin keeps running), the others reach the pgAdmin
//! container and the registration Job as Python literals.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde_json::{Value, json};

use super::pgadmin_support::{IMAGE, NS, cluster_config, start, state};

fn env_of(deployment: &Deployment) -> Vec<(String, Option<String>)> {
    let v = serde_json::to_value(deployment).expect("json");
    v["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap_or_default().to_owned(),
                e["value"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgadmin_settings_are_rendered_and_owned_ones_refused() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    let selector = json!({"matchLabels": {"team": "a"}});

    // Not a setting's name: the CRD's rule refuses it.
    let refused = env
        .pgadmins()
        .create(
            &Default::default(),
            &serde_json::from_value(json!({
                "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdmin",
                "metadata": {"name": "lower", "namespace": NS},
                "spec": {"image": IMAGE, "config": {"settings": {"max_login": 1}}},
            }))
            .expect("PgAdmin"),
        )
        .await
        .expect_err("a lower-case name is refused");
    assert!(
        refused.to_string().contains("upper-case letters"),
        "{refused}"
    );

    let hostile = "'); import os; os.system('id') #";
    env.pgadmin(
        "tuned",
        json!({"image": IMAGE, "clusterSelector": selector, "config": {"settings": {
            "MAX_LOGIN_ATTEMPTS": 5,
            "LOGIN_BANNER": hostile,
            "AUTHENTICATION_SOURCES": ["internal"],
            "CONFIG_DATABASE_URI": "sqlite:////tmp/elsewhere.db",
        }}}),
    )
    .await;
    let obj = env
        .wait("tuned", "ConfigurationInvalid while running", |o| {
            state(o, "ConfigurationValid") == ("False".into(), "ConfigurationInvalid".into())
                && state(o, "WorkloadReady").0 == "True"
        })
        .await;
    let message = obj
        .status
        .as_ref()
        .and_then(|s| {
            s.common
                .conditions
                .iter()
                .find(|c| c.type_ == "ConfigurationValid")
        })
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("AUTHENTICATION_SOURCES, CONFIG_DATABASE_URI"),
        "{message}"
    );
    assert_ne!(
        state(&obj, "Stalled").0,
        "True",
        "a refused setting is not a stall"
    );
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), NS);
    let d = deployments.get("tuned-pgadmin").await.expect("Deployment");
    let vars = env_of(&d);
    let value = |name: &str| {
        vars.iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.clone())
    };
    assert_eq!(
        value("PGADMIN_CONFIG_MAX_LOGIN_ATTEMPTS").as_deref(),
        Some("5")
    );
    let banner = value("PGADMIN_CONFIG_LOGIN_BANNER").expect("the banner");
    assert_eq!(
        banner,
        format!("bytes.fromhex('{}').decode()", hex::encode(hostile))
    );
    assert!(value("PGADMIN_CONFIG_CONFIG_DATABASE_URI").is_none());
    assert!(value("PGADMIN_CONFIG_AUTHENTICATION_SOURCES").is_none());

    // Dropping the refused settings: valid again, the kept ones still rendered.
    env.pgadmins()
        .patch(
            "tuned",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"config": {"settings": {
                "AUTHENTICATION_SOURCES": Value::Null, "CONFIG_DATABASE_URI": Value::Null}}}})),
        )
        .await
        .expect("patched");
    env.wait("tuned", "ConfigurationValid", |o| {
        state(o, "ConfigurationValid").0 == "True"
    })
    .await;
}
