//! The simulated CloudNativePG: a Cluster applied with kubectl gets its PKI, credentials,
//! Services, instance Pods and status; switchovers move the primary; Poolers, Databases and
//! DatabaseRoles get what CNPG writes; `NotApplied` leaves them unapplied until cleared.

use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::{Value, json};
use x509_parser::prelude::*;

use crate::kubectl_support::kubectl_present;
use crate::sim_net_support::{
    api, certificates, condition, create, dns_names, secret_bytes, start_cluster,
};
use crate::sim_support::raw;
use crate::wait_support::until_json;

const CNPG: &str = "postgresql.cnpg.io";

fn healthy(c: &Value) -> bool {
    c.pointer("/status/phase") == Some(&json!("Cluster in healthy state"))
}

fn text(secret: &Value, key: &str) -> String {
    String::from_utf8(secret_bytes(secret, key)).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_applied_with_kubectl_gets_its_ca_services_pods_and_healthy_status() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the CNPG kubectl test");
        return;
    }
    let (sim, client) = start_cluster().await;
    let k = crate::kubectl_support::Kubectl::for_sim(&sim);
    let k = tokio::task::spawn_blocking(move || {
        let f = k.file("pg.yaml", "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: pg\nspec:\n  instances: 3\n  storage:\n    size: 1Gi\n---\napiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: other\nspec:\n  instances: 1\n");
        k.ok(&["apply", "--validate=false", "-f", &f]);
        k
    })
    .await
    .unwrap();
    let clusters = api(&client, Some("default"), CNPG, "Cluster", "clusters");
    let secrets = api(&client, Some("default"), "", "Secret", "secrets");
    let services = api(&client, Some("default"), "", "Service", "services");
    let pods = api(&client, Some("default"), "", "Pod", "pods");

    let ca = until_json(&secrets, "pg-ca", "the CA secret", |_| true).await;
    let ca_der = certificates(&secret_bytes(&ca, "ca.crt")).remove(0);
    let (_, ca_cert) = X509Certificate::from_der(&ca_der).unwrap();
    assert!(ca_cert.is_ca(), "pg-ca holds a CA");
    assert_eq!(ca_cert.subject().to_string(), "CN=pg, OU=default");
    assert!(secret_bytes(&ca, "ca.key").starts_with(b"-----BEGIN EC PRIVATE KEY-----"));
    let other_ca = until_json(&secrets, "other-ca", "the other CA", |_| true).await;
    assert_ne!(
        other_ca["data"]["ca.crt"], ca["data"]["ca.crt"],
        "a distinct CA per Cluster"
    );

    let server = until_json(&secrets, "pg-server", "the server secret", |_| true).await;
    assert_eq!(server["type"], "kubernetes.io/tls");
    let leaf_der = certificates(&secret_bytes(&server, "tls.crt")).remove(0);
    let (_, leaf) = X509Certificate::from_der(&leaf_der).unwrap();
    leaf.verify_signature(Some(ca_cert.public_key())).unwrap();
    let names = dns_names(&leaf);
    for n in [
        "pg-rw",
        "pg-rw.default.svc",
        "pg-ro.default.svc.cluster.local",
        "pg-r.default",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
    }
    let repl = until_json(&secrets, "pg-replication", "the replication secret", |_| {
        true
    })
    .await;
    let repl_der = certificates(&secret_bytes(&repl, "tls.crt")).remove(0);
    let (_, repl_cert) = X509Certificate::from_der(&repl_der).unwrap();
    assert_eq!(repl_cert.subject().to_string(), "CN=streaming_replica");

    let app = until_json(&secrets, "pg-app", "the app secret", |_| true).await;
    assert_eq!(app["type"], "kubernetes.io/basic-auth");
    let password = text(&app, "password");
    assert_eq!(password.len(), 64);
    assert_eq!(text(&app, "username"), "app");
    assert_eq!(text(&app, "dbname"), "app");
    assert_eq!(text(&app, "host"), "pg-rw");
    assert_eq!(text(&app, "port"), "5432");
    assert_eq!(
        text(&app, "uri"),
        format!("postgresql://app:{password}@pg-rw.default:5432/app")
    );
    assert_eq!(
        text(&app, "pgpass"),
        format!("pg-rw:5432:app:app:{password}\n")
    );
    assert!(
        text(&app, "jdbc-uri").starts_with("jdbc:postgresql://pg-rw.default:5432/app?password=")
    );
    assert_eq!(app["metadata"]["labels"]["cnpg.io/reload"], "true");

    for (svc, selector) in [
        (
            "pg-rw",
            json!({"cnpg.io/cluster": "pg", "cnpg.io/instanceRole": "primary"}),
        ),
        (
            "pg-ro",
            json!({"cnpg.io/cluster": "pg", "cnpg.io/instanceRole": "replica"}),
        ),
        (
            "pg-r",
            json!({"cnpg.io/cluster": "pg", "cnpg.io/podRole": "instance"}),
        ),
    ] {
        let s = until_json(&services, svc, "a cluster service", |_| true).await;
        assert_eq!(s["spec"]["selector"], selector, "{svc}");
        assert_eq!(s["spec"]["ports"][0]["port"], 5432);
    }

    let c = until_json(&clusters, "pg", "a healthy cluster", healthy).await;
    let st = &c["status"];
    assert_eq!(st["instances"], 3);
    assert_eq!(st["readyInstances"], 3);
    assert_eq!(st["currentPrimary"], "pg-1");
    assert_eq!(st["targetPrimary"], "pg-1");
    assert_eq!(st["instanceNames"], json!(["pg-1", "pg-2", "pg-3"]));
    assert_eq!(st["writeService"], "pg-rw");
    assert_eq!(st["readService"], "pg-r");
    let certs = &st["certificates"];
    assert_eq!(certs["serverCASecret"], "pg-ca");
    assert_eq!(certs["clientCASecret"], "pg-ca");
    assert_eq!(certs["serverTLSSecret"], "pg-server");
    assert_eq!(certs["replicationTLSSecret"], "pg-replication");
    let exp = certs["expirations"]["pg-server"].as_str().unwrap();
    assert!(exp.ends_with(" +0000 UTC"), "Go's time format: {exp}");
    let ready = condition(&c, "/status/conditions", "Ready").unwrap();
    assert_eq!(
        (
            ready["status"].as_str(),
            ready["reason"].as_str(),
            ready["message"].as_str()
        ),
        (
            Some("True"),
            Some("ClusterIsReady"),
            Some("Cluster is Ready")
        )
    );

    let p1 = serde_json::to_value(pods.get("pg-1").await.unwrap()).unwrap();
    let labels = &p1["metadata"]["labels"];
    assert_eq!(labels["cnpg.io/cluster"], "pg");
    assert_eq!(labels["cnpg.io/instanceName"], "pg-1");
    assert_eq!(labels["cnpg.io/instanceRole"], "primary");
    assert_eq!(labels["role"], "primary");
    assert_eq!(labels["cnpg.io/podRole"], "instance");
    assert_eq!(p1["metadata"]["ownerReferences"][0]["kind"], "Cluster");
    assert_eq!(
        p1["metadata"]["ownerReferences"][0]["uid"],
        c["metadata"]["uid"]
    );
    let p2 = serde_json::to_value(pods.get("pg-2").await.unwrap()).unwrap();
    assert_eq!(p2["metadata"]["labels"]["cnpg.io/instanceRole"], "replica");

    let out = tokio::task::spawn_blocking(move || {
        let out = k.ok(&[
            "wait",
            "--for=condition=Ready",
            "cluster/pg",
            "--timeout=10s",
        ]);
        let events = k.ok(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=pg",
            "-o",
            "json",
        ]);
        let events: Value = serde_json::from_str(&events).expect("events json");
        let mut messages: Vec<&str> = events["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["reason"] == "CreatingInstance")
            .filter_map(|e| e["message"].as_str())
            .collect();
        messages.sort_unstable();
        assert_eq!(
            messages,
            vec![
                "Creating instance pg-2",
                "Creating instance pg-3",
                "Primary instance (initdb)",
            ]
        );
        out
    })
    .await
    .unwrap();
    assert!(out.contains("condition met"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switchover_moves_the_primary_labels_and_status() {
    let (sim, client) = start_cluster().await;
    let clusters = api(&client, Some("default"), CNPG, "Cluster", "clusters");
    let pods = api(&client, Some("default"), "", "Pod", "pods");
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "db"}, "spec": {"instances": 3}}),
    )
    .await;
    until_json(&clusters, "db", "a healthy cluster", healthy).await;

    let body = json!({"namespace": "default", "cluster": "db"})
        .to_string()
        .into_bytes();
    let (code, answer) = raw(
        &client,
        "POST",
        "/_sim/cnpg/switchover",
        "application/json",
        body,
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["targetPrimary"], "db-2");
    let c = until_json(&clusters, "db", "db-2 primary", |c| {
        c["status"]["currentPrimary"] == "db-2" && healthy(c)
    })
    .await;
    assert_eq!(c["status"]["targetPrimary"], "db-2");
    assert_eq!(
        c["status"]["timelineID"], 2,
        "the promoted replica starts a new timeline"
    );
    assert_eq!(
        c["status"]["instancesReportedState"]["db-2"]["isPrimary"],
        true
    );
    assert_eq!(
        c["status"]["instancesReportedState"]["db-1"]["isPrimary"],
        false
    );
    assert!(
        c["status"].get("phaseReason").is_none(),
        "healthy: no reason"
    );
    let role = |p: &Value| p["metadata"]["labels"]["cnpg.io/instanceRole"].clone();
    let p2 = serde_json::to_value(pods.get("db-2").await.unwrap()).unwrap();
    assert_eq!(role(&p2), "primary");
    assert_eq!(p2["metadata"]["labels"]["role"], "primary");
    let p1 = serde_json::to_value(pods.get("db-1").await.unwrap()).unwrap();
    assert_eq!(role(&p1), "replica");

    assert_eq!(
        sim.admin()
            .cnpg_switchover("default", "db", None)
            .as_deref(),
        Ok("db-1")
    );
    until_json(&clusters, "db", "db-1 primary again", |c| {
        c["status"]["currentPrimary"] == "db-1" && healthy(c)
    })
    .await;

    // Promoting a named instance, as `kubectl cnpg promote db db-3` does.
    let body = json!({"namespace": "default", "cluster": "db", "instance": "db-3"});
    let (code, answer) = raw(
        &client,
        "POST",
        "/_sim/cnpg/switchover",
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(
        (code, answer["targetPrimary"].as_str()),
        (200, Some("db-3")),
        "{answer}"
    );
    until_json(&clusters, "db", "db-3 primary", |c| {
        c["status"]["currentPrimary"] == "db-3" && healthy(c)
    })
    .await;
    let body = json!({"namespace": "default", "cluster": "db", "instance": "db-9"});
    let (code, answer) = raw(
        &client,
        "POST",
        "/_sim/cnpg/switchover",
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 400, "{answer}");
    assert_eq!(
        answer["message"],
        "new primary node db-9 not found in namespace default"
    );

    // An instance failing readiness (the kubelet's NotReady fault) makes the Cluster wait.
    sim.admin()
        .add_workload_fault(
            "default",
            "cnpg.io/instanceName=db-2",
            WorkloadFault::NotReady,
        )
        .unwrap();
    let c = until_json(&clusters, "db", "waiting for db-2", |c| {
        c["status"]["readyInstances"] == 2
    })
    .await;
    assert_eq!(
        c["status"]["phase"],
        "Waiting for the instances to become active"
    );
    assert_eq!(
        c["status"]["phaseReason"],
        "Some instances are not yet active. Please wait."
    );
    assert_eq!(
        condition(&c, "/status/conditions", "Ready").unwrap()["reason"],
        "ClusterIsNotReady"
    );
    assert_eq!(
        c["status"]["instancesStatus"]["replicating"],
        json!(["db-2"])
    );
    sim.admin().clear_workload_faults(None);
    until_json(&clusters, "db", "healthy again", healthy).await;

    let missing = json!({"namespace": "default", "cluster": "nope"})
        .to_string()
        .into_bytes();
    let (code, _) = raw(
        &client,
        "POST",
        "/_sim/cnpg/switchover",
        "application/json",
        missing,
    )
    .await;
    assert_eq!(code, 404);
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "single"}, "spec": {"instances": 1}}),
    )
    .await;
    until_json(&clusters, "single", "a healthy single", healthy).await;
    let err = sim
        .admin()
        .cnpg_switchover("default", "single", None)
        .unwrap_err();
    assert!(err.contains("no ready replica"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poolers_databases_and_roles_get_what_cnpg_writes_and_not_applied_recovers() {
    let (sim, client) = start_cluster().await;
    let ns = Some("default");
    let clusters = api(&client, ns, CNPG, "Cluster", "clusters");
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "db"}, "spec": {"instances": 1}}),
    )
    .await;
    until_json(&clusters, "db", "a healthy cluster", healthy).await;

    let poolers = api(&client, ns, CNPG, "Pooler", "poolers");
    create(
        &poolers,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Pooler",
        "metadata": {"name": "db-pooler"}, "spec": {"cluster": {"name": "db"}, "instances": 2,
        "type": "rw", "pgbouncer": {"poolMode": "session"}}}),
    )
    .await;
    // `instances` follows the Deployment the simulated controllers roll out.
    let p = until_json(&poolers, "db-pooler", "pooler status", |p| {
        p["status"]["phase"] == "active" && p["status"]["instances"] == 2
    })
    .await;
    assert_eq!(p["status"]["secrets"]["serverCA"]["name"], "db-ca");
    assert!(
        p["status"]["secrets"]["serverTLS"]["version"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    let svc = api(&client, ns, "", "Service", "services")
        .get("db-pooler")
        .await
        .unwrap();
    let svc = serde_json::to_value(svc).unwrap();
    assert_eq!(
        svc["spec"]["selector"],
        json!({"cnpg.io/poolerName": "db-pooler"})
    );
    let deploy = api(&client, ns, "apps", "Deployment", "deployments")
        .get("db-pooler")
        .await
        .unwrap();
    let deploy = serde_json::to_value(deploy).unwrap();
    assert_eq!(deploy["spec"]["replicas"], 2);
    assert_eq!(deploy["metadata"]["ownerReferences"][0]["kind"], "Pooler");

    // A Pooler of a missing Cluster waits, inactive, and starts once the Cluster exists.
    create(&poolers, json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Pooler",
        "metadata": {"name": "later-pooler"}, "spec": {"cluster": {"name": "later"}, "instances": 1}}))
    .await;
    let waiting = until_json(&poolers, "later-pooler", "inactive", |p| {
        p["status"]["phase"] == "inactive"
    })
    .await;
    assert_eq!(
        waiting["status"]["phaseReason"],
        "Cluster \"later\" not found"
    );
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "later"}, "spec": {"instances": 1}}),
    )
    .await;
    let active = until_json(&poolers, "later-pooler", "active", |p| {
        p["status"]["phase"] == "active"
    })
    .await;
    assert!(active["status"].get("phaseReason").is_none());

    let dbs = api(&client, ns, CNPG, "Database", "databases");
    create(&dbs, json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Database",
        "metadata": {"name": "app-db"}, "spec": {"cluster": {"name": "db"}, "name": "shop", "owner": "app"}}))
    .await;
    let d = until_json(&dbs, "app-db", "applied", |d| {
        d["status"]["applied"] == true
    })
    .await;
    assert_eq!(d["status"]["observedGeneration"], 1);
    assert!(d["status"].get("message").is_none());

    let roles = api(&client, ns, CNPG, "DatabaseRole", "databaseroles");
    create(&roles, json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "DatabaseRole",
        "metadata": {"name": "angus"}, "spec": {"cluster": {"name": "db"}, "name": "angus", "login": true,
        "password": {"mode": "generate", "duration": "2160h"}}}))
    .await;
    let r = until_json(&roles, "angus", "role applied", |r| {
        r["status"]["applied"] == true
    })
    .await;
    assert_eq!(r["status"]["password"]["secretName"], "angus-password");
    assert!(r["status"]["password"]["expiration"].is_string());
    let secret = api(&client, ns, "", "Secret", "secrets")
        .get("angus-password")
        .await
        .unwrap();
    let secret = serde_json::to_value(secret).unwrap();
    assert_eq!(secret["type"], "kubernetes.io/basic-auth");
    assert_eq!(text(&secret, "username"), "angus");
    assert_eq!(text(&secret, "password").len(), 32);
    assert_eq!(
        r["status"]["secretResourceVersion"],
        secret["metadata"]["resourceVersion"]
    );

    // NotApplied: a new Database stays unapplied with a message, until the fault is cleared.
    sim.admin()
        .add_workload_fault("default", "apply=no", WorkloadFault::NotApplied)
        .unwrap();
    create(&dbs, json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Database",
        "metadata": {"name": "stuck", "labels": {"apply": "no"}}, "spec": {"cluster": {"name": "db"}, "name": "stuck", "owner": "app"}}))
    .await;
    let s = until_json(&dbs, "stuck", "marked failed", |d| {
        d["status"]["applied"] == false
    })
    .await;
    assert!(
        s["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stuck")),
        "{s}"
    );
    assert!(s["status"].get("observedGeneration").is_none());
    create(
        &roles,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "DatabaseRole",
        "metadata": {"name": "stuck-role", "labels": {"apply": "no"}},
        "spec": {"cluster": {"name": "db"}, "name": "stuck_role", "login": true}}),
    )
    .await;
    let r = until_json(&roles, "stuck-role", "role marked failed", |r| {
        r["status"]["applied"] == false
    })
    .await;
    assert!(
        r["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("role \"stuck_role\"")),
        "{r}"
    );
    sim.admin().clear_workload_faults(None);
    until_json(&roles, "stuck-role", "role applied after clearing", |r| {
        r["status"]["applied"] == true
    })
    .await;
    let s = until_json(&dbs, "stuck", "applied after clearing", |d| {
        d["status"]["applied"] == true
    })
    .await;
    assert!(s["status"].get("message").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_fault_withholds_or_spoils_ca_crt_and_clearing_restores_the_same_ca() {
    let (sim, client) = start_cluster().await;
    let clusters = api(&client, Some("default"), CNPG, "Cluster", "clusters");
    let secrets = api(&client, Some("default"), "", "Secret", "secrets");
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "ca", "labels": {"ca": "broken"}}, "spec": {"instances": 1}}),
    )
    .await;
    create(
        &clusters,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "fine"}, "spec": {"instances": 1}}),
    )
    .await;
    let before = until_json(&secrets, "ca-ca", "the CA secret", |_| true).await;
    let cert = text(&before, "ca.crt");
    let key = text(&before, "ca.key");
    let fine = until_json(&secrets, "fine-ca", "the other CA secret", |_| true).await;

    sim.admin()
        .add_workload_fault("default", "ca=broken", WorkloadFault::CaKeyMissing)
        .unwrap();
    let s = until_json(&secrets, "ca-ca", "ca.crt withheld", |s| {
        s["data"].get("ca.crt").is_none()
    })
    .await;
    assert_eq!(text(&s, "ca.key"), key, "the key stays");
    sim.admin().clear_workload_faults(None);
    sim.admin()
        .add_workload_fault("default", "ca=broken", WorkloadFault::CaInvalid)
        .unwrap();
    let s = until_json(&secrets, "ca-ca", "ca.crt spoilt", |s| {
        s["data"].get("ca.crt").is_some() && s["data"]["ca.crt"] != before["data"]["ca.crt"]
    })
    .await;
    assert!(!text(&s, "ca.crt").contains("BEGIN CERTIFICATE"), "{s}");
    sim.admin().clear_workload_faults(None);
    let s = until_json(&secrets, "ca-ca", "ca.crt restored", |s| {
        s["data"]["ca.crt"] == before["data"]["ca.crt"]
    })
    .await;
    assert_eq!(text(&s, "ca.crt"), cert, "the same CA, not a new one");
    let keys: Vec<&String> = s["data"].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 2, "ca.crt and ca.key only: {keys:?}");
    let fine_now = secrets.get("fine-ca").await.unwrap();
    assert_eq!(
        serde_json::to_value(fine_now).unwrap()["metadata"]["resourceVersion"],
        fine["metadata"]["resourceVersion"],
        "a Cluster the rule does not select is left alone"
    );
}
