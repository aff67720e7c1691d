//! Every kind runs in a namespace that enforces Pod Security "restricted" (issue 46, finding
//! 2): the simulated ReplicaSet and Job controllers create the console's, the agent's and
//! pgAdmin's Pods (registration Job included) through the API server's Pod Security admission,
//! as in a real cluster, and each kind reaches Ready.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde_json::{Value, json};

use crate::harness::TestOperator;
use crate::wait_support::until_json;

const NS: &str = "locked-down";

fn api(client: &kube::Client, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let version = match group {
        "pgtoolbox.fyannk.dev" => "v1alpha1",
        "" | "postgresql.cnpg.io" | "barmancloud.cnpg.io" => "v1",
        other => panic!("no version for {other}"),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(
        client.clone(),
        NS,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

async fn create(client: &kube::Client, group: &str, kind: &str, plural: &str, obj: Value) {
    let obj: DynamicObject = serde_json::from_value(obj).expect("object");
    api(client, group, kind, plural)
        .create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("{kind} created: {e}"));
}

fn has(obj: &Value, condition: &str, status: &str, reason: Option<&str>) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c["type"] == condition
                && c["status"] == status
                && reason.is_none_or(|r| c["reason"] == r)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_is_ready_in_a_namespace_enforcing_restricted() {
    // The operator's namespace (its CA lives there) and the ClusterRoles a console binds, as
    // the installation ships them.
    let started = TestOperator::new()
        .sim(crate::harness::cluster_config(7))
        .install("00-namespace.yaml")
        .install("05-console-clusterroles.yaml")
        .without_operator()
        .start()
        .await;
    let (_sim, client) = (started.sim, started.client);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NS, "labels": {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/warn": "restricted"}}}))
    .expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
    // The namespace does refuse a Pod that is not restricted.
    let bare: Pod = serde_json::from_value(json!({"metadata": {"name": "bare"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
    .expect("pod");
    match Api::<Pod>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &bare)
        .await
    {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 403);
            assert!(
                e.message.starts_with(
                    "pods \"bare\" is forbidden: violates PodSecurity \"restricted:latest\""
                ),
                "{}",
                e.message
            );
        }
        other => panic!("a bare Pod was not refused: {other:?}"),
    }

    let kinds: Vec<String> = ["PgToolBoxConsole", "PgAdmin", "EvidenceAgent"]
        .iter()
        .map(|k| k.to_string())
        .collect();
    let settings = OperatorSettings {
        startup_jitter: Duration::ZERO,
        ..OperatorSettings::default()
    };
    let (_operator, _shared) =
        crate::operator_support::run_operator(&client, &kinds, settings).await;

    let ours = "pgtoolbox.fyannk.dev";
    create(
        &client,
        ours,
        "PgToolBoxConsole",
        "pgtoolboxconsoles",
        json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgToolBoxConsole",
        "metadata": {"name": "ops", "namespace": NS},
        "spec": {"image": "ghcr.io/pgtoolbox/console:0.1.0"}}),
    )
    .await;
    create(
        &client,
        "",
        "Secret",
        "secrets",
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "orders-s3", "namespace": NS},
        "stringData": {"ACCESS_KEY_ID": "AKIA0000", "ACCESS_SECRET_KEY": "secret"}}),
    )
    .await;
    create(&client, "postgresql.cnpg.io", "Cluster", "clusters", json!({
        "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": "orders", "namespace": NS, "labels": {"team": "a"}},
        "spec": {"instances": 1, "storage": {"size": "1Gi"}, "plugins": [{"name": "barman-cloud.cloudnative-pg.io",
            "isWALArchiver": true, "parameters": {"barmanObjectName": "orders-store"}}]}})).await;
    create(&client, "barmancloud.cnpg.io", "ObjectStore", "objectstores", json!({
        "apiVersion": "barmancloud.cnpg.io/v1", "kind": "ObjectStore",
        "metadata": {"name": "orders-store", "namespace": NS},
        "spec": {"configuration": {"destinationPath": "s3://orders-backups/locked-down", "s3Credentials": {
            "accessKeyId": {"name": "orders-s3", "key": "ACCESS_KEY_ID"},
            "secretAccessKey": {"name": "orders-s3", "key": "ACCESS_SECRET_KEY"}}}}})).await;
    create(
        &client,
        ours,
        "EvidenceAgent",
        "evidenceagents",
        json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "EvidenceAgent",
        "metadata": {"name": "ev", "namespace": NS},
        "spec": {"cluster": {"name": "orders"}, "image": "ghcr.io/pgtoolbox/evidence-agent:0.1.0",
            "servingCertificate": {"provider": "operator"}}}),
    )
    .await;
    create(
        &client,
        ours,
        "PgAdmin",
        "pgadmins",
        json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdmin",
        "metadata": {"name": "team-pgadmin", "namespace": NS},
        "spec": {"image": "docker.io/dpage/pgadmin4:9.10",
            "clusterSelector": {"matchLabels": {"team": "a"}}}}),
    )
    .await;

    for (kind, plural, name) in [
        ("PgToolBoxConsole", "pgtoolboxconsoles", "ops"),
        ("EvidenceAgent", "evidenceagents", "ev"),
        ("PgAdmin", "pgadmins", "team-pgadmin"),
    ] {
        until_json(
            &api(&client, ours, kind, plural),
            name,
            "Ready=True AsExpected",
            |o| has(o, "Ready", "True", Some("AsExpected")),
        )
        .await;
    }
    // pgAdmin's registration Job ran: its Pod was admitted too.
    until_json(
        &api(&client, ours, "PgAdmin", "pgadmins"),
        "team-pgadmin",
        "ServersSynced=True",
        |o| has(o, "ServersSynced", "True", None),
    )
    .await;
    // No ReplicaSet saw a Pod refused, and every Pod of the namespace is restricted.
    let sets = Api::<ReplicaSet>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("ReplicaSets");
    for rs in &sets.items {
        let v = serde_json::to_value(rs).expect("json");
        assert!(!has(&v, "ReplicaFailure", "True", None), "{v:#}");
    }
    let pods = Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("Pods");
    let owners: Vec<String> = pods
        .items
        .iter()
        .flat_map(|p| p.metadata.owner_references.clone().unwrap_or_default())
        .map(|o| o.kind)
        .collect();
    assert!(owners.iter().any(|k| k == "ReplicaSet"), "{owners:?}");
    assert!(owners.iter().any(|k| k == "Job"), "{owners:?}");
    for pod in &pods.items {
        let spec = pod.spec.as_ref().expect("spec");
        let ctx = spec.security_context.as_ref().expect("pod securityContext");
        assert_eq!(ctx.run_as_non_root, Some(true), "{:?}", pod.metadata.name);
    }
}
