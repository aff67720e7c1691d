//! PgAdmin's LDAP sign-in and its servers' CA on the simulated cluster: a missing bind password
//! Secret stalls the PgAdmin (`SecretNotFound`, as the OAuth2 client Secret does); once it
//! exists the Deployment reads it by reference only, mounts the directory's CA and the egress
//! policy lets pgAdmin reach the directory. A Cluster serving a certificate of its own CA
//! (`spec.certificates.serverCASecret`) is verified against that CA.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde_json::json;

use super::pgadmin_support::{IMAGE, NS, cluster_config, start};
use super::shared_support::secret_data;
use super::wait_support::{condition_of, state, wait_for};

const BIND_PASSWORD: &str = "never-in-the-deployment-7f3a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgadmin_ldap_waits_for_its_bind_secret_then_reads_it_by_reference() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    env.cluster(NS, "orders", json!({"team": "a"}), 1).await;
    env.pgadmin(
        "l",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}},
            "authentication": {"ldap": {
                "serverURI": "ldap://ldap.example.org:3389",
                "baseDN": "ou=people,dc=example,dc=org",
                "bindDN": "cn=reader,dc=example,dc=org",
                "bindPasswordRef": {"name": "ldap-bind", "key": "password"},
                "searchFilter": "(objectClass=inetOrgPerson)",
                "startTLS": true,
                "ca": {"configMapKeyRef": {"name": "ldap-ca", "key": "root.pem"}}}}}),
    )
    .await;
    let obj = env
        .wait("l", "stalled on its bind Secret", |o| {
            state(o, "Stalled") == ("True".into(), "SecretNotFound".into())
        })
        .await;
    let config = condition_of(&obj, "ConfigurationValid").expect("ConfigurationValid");
    assert!(
        config.message.contains("ldap-bind")
            && config
                .message
                .contains("spec.authentication.ldap.bindPasswordRef"),
        "{}",
        config.message
    );

    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "ldap-bind", "namespace": NS},
        "stringData": {"password": BIND_PASSWORD},
    }))
    .expect("secret");
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("bind Secret");
    let ca: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "ldap-ca", "namespace": NS},
        "data": {"root.pem": "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n"},
    }))
    .expect("config map");
    Api::<ConfigMap>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &ca)
        .await
        .expect("CA ConfigMap");
    let obj = env
        .wait("l", "Ready", |o| {
            state(o, "Ready") == ("True".into(), "AsExpected".into())
        })
        .await;
    let egress = condition_of(&obj, "PgAdminEgressConfined").expect("egress");
    assert!(
        egress.message.contains("the LDAP directory"),
        "{}",
        egress.message
    );

    let deployment = Api::<Deployment>::namespaced(env.client.clone(), NS)
        .get("l-pgadmin")
        .await
        .expect("deployment");
    let text = serde_json::to_string(&deployment).expect("json");
    assert!(
        !text.contains(BIND_PASSWORD),
        "the password is in the Deployment"
    );
    let value = serde_json::to_value(&deployment).expect("json");
    let pod = &value["spec"]["template"]["spec"];
    let env_vars = pod["containers"][0]["env"].as_array().expect("env");
    let var = |name: &str| {
        env_vars
            .iter()
            .find(|e| e["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {env_vars:?}"))
    };
    assert_eq!(
        var("PGTOOLBOX_LDAP_BIND_PASSWORD")["valueFrom"]["secretKeyRef"],
        json!({"name": "ldap-bind", "key": "password"})
    );
    assert_eq!(
        var("PGADMIN_CONFIG_LDAP_SERVER_URI")["value"],
        "'ldap://ldap.example.org:3389'"
    );
    assert_eq!(
        var("PGADMIN_CONFIG_LDAP_CA_CERT_FILE")["value"],
        "'/etc/pgtoolbox/ldap-ca/ca.crt'"
    );
    assert!(
        pod["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .any(|v| v["configMap"]["name"] == "ldap-ca"),
        "{pod}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgadmin_verifies_a_cluster_against_the_ca_secret_it_names() {
    let env = start(cluster_config(), OperatorSettings::default()).await;
    let own_ca = "-----BEGIN CERTIFICATE-----\nT1dO\n-----END CERTIFICATE-----\n";
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "orders-own-ca", "namespace": NS},
        "stringData": {"ca.crt": own_ca},
    }))
    .expect("secret");
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("own CA Secret");
    env.create(
        NS,
        "Cluster",
        "clusters",
        json!({
            "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "orders", "namespace": NS, "labels": {"team": "a"}},
            "spec": {"instances": 1, "storage": {"size": "1Gi"},
                "certificates": {"serverCASecret": "orders-own-ca"}},
        }),
    )
    .await;
    env.pgadmin(
        "v",
        json!({"image": IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}}}),
    )
    .await;
    let client = env.client.clone();
    wait_for("the servers Secret holds the Cluster's own CA", || {
        let client = client.clone();
        async move {
            let all = secret_data(&client, NS).await;
            let servers = all.get("v-pgadmin-servers").ok_or("no servers Secret")?;
            let held = servers
                .get("server-1.ca.crt")
                .map(|b| String::from_utf8_lossy(b).into_owned());
            if held.as_deref() == Some(own_ca) {
                return Ok(());
            }
            Err(format!(
                "server-1.ca.crt is {held:?}; orders-ca holds {:?}",
                all.get("orders-ca")
                    .and_then(|s| s.get("ca.crt"))
                    .map(|b| String::from_utf8_lossy(b).into_owned())
            ))
        }
    })
    .await;
    let file = env.servers_file("v").await;
    assert_eq!(
        file["Servers"]["1"]["SSLRootCert"],
        "pgtoolbox-credentials:/server-1.ca.crt"
    );
    assert_eq!(file["Servers"]["1"]["SSLMode"], "verify-full");
}
