//! Built-in kinds stored as a real API server stores them: defaults, Secret `stringData`,
//! immutable ConfigMaps, selector validation, delete answers and managers from the User-Agent.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::sim_support::{raw, start};

fn deployment(name: &str, selector: Value, labels: Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": selector}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}]}}},
    }))
    .expect("deployment")
}

#[tokio::test]
async fn built_in_kinds_read_back_with_their_defaults() {
    let (_sim, client) = start().await;
    let pp = PostParams::default();
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    let d = deploys
        .create(
            &pp,
            &deployment("web", json!({"app": "web"}), json!({"app": "web"})),
        )
        .await
        .expect("create");
    let v = serde_json::to_value(&d).expect("json");
    assert_eq!(v["spec"]["replicas"], 1);
    assert_eq!(v["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(v["spec"]["progressDeadlineSeconds"], 600);
    let c = &v["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always", "no tag pulls always");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(v["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");

    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
    )
    .expect("secret");
    let s = secrets.create(&pp, &s).await.expect("secret created");
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert!(s.string_data.is_none(), "stringData is never stored");
    let stored = s.data.expect("data");
    assert_eq!(stored["password"].0, b"hunter2");

    let services: Api<Service> = Api::default_namespaced(client.clone());
    let svc: Service = serde_json::from_value(
        json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 5432}]}}),
    )
    .expect("service");
    let svc = serde_json::to_value(services.create(&pp, &svc).await.expect("svc")).expect("json");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["sessionAffinity"], "None");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 5432);

    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "once"}, "spec": {"template": {
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}))
    .expect("job");
    let job = serde_json::to_value(jobs.create(&pp, &job).await.expect("job")).expect("json");
    assert_eq!(job["spec"]["backoffLimit"], 6);
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let uid = job["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"],
        "once"
    );
}

#[tokio::test]
async fn invalid_and_immutable_writes_are_refused_with_the_real_messages() {
    let (_sim, client) = start().await;
    let pp = PostParams::default();
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    let err = deploys
        .create(
            &pp,
            &deployment("bad", json!({"app": "x"}), json!({"app": "y"})),
        )
        .await
        .expect_err("selector does not match");
    let kube::Error::Api(status) = err else {
        panic!("not an API error: {err}");
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Deployment.apps \"bad\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`"
    );

    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "frozen"}, "immutable": true, "data": {"a": "1"}}),
    )
    .expect("cm");
    cms.create(&pp, &cm).await.expect("created");
    let err = cms
        .patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "2"}})),
        )
        .await
        .expect_err("immutable");
    let kube::Error::Api(status) = err else {
        panic!("not an API error: {err}");
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );
    cms.patch(
        "frozen",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"ok": "yes"}}})),
    )
    .await
    .expect("metadata still changes");
}

#[tokio::test]
async fn deletes_answer_a_status_and_read_options_from_the_query() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "gone"}})).expect("cm");
    let created = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("created");
    let (code, body) = raw(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/gone",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["status"], "Success");
    assert_eq!(body["details"]["kind"], "configmaps");
    assert_eq!(
        body["details"]["uid"].as_str(),
        created.metadata.uid.as_deref()
    );

    let services: Api<Service> = Api::default_namespaced(client.clone());
    let svc: Service = serde_json::from_value(
        json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .expect("svc");
    services
        .create(&PostParams::default(), &svc)
        .await
        .expect("svc");
    let answer = services
        .delete("svc", &DeleteParams::default())
        .await
        .expect("deleted");
    assert!(answer.is_left(), "a Service delete answers the Service");

    // An owner deleted with `?propagationPolicy=Orphan` and no body keeps its dependents.
    let owner = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "owner"}})).expect("cm"),
        )
        .await
        .expect("owner");
    let dependent: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "dep",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner.metadata.uid}]}}))
    .expect("dep");
    cms.create(&PostParams::default(), &dependent)
        .await
        .expect("dep");
    let (code, _) = raw(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/owner?propagationPolicy=Orphan",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let dep = cms.get("dep").await.expect("orphan survives");
    assert!(dep.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn writes_without_a_field_manager_are_recorded_under_the_user_agent() {
    let (_sim, client) = start().await;
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .header("user-agent", "OpenAPI-Generator/31.0.0/python")
        .body(
            serde_json::to_vec(&json!({"metadata": {"name": "ua"}, "data": {"a": "1"}}))
                .expect("body"),
        )
        .expect("request");
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("answer");
    assert_eq!(resp.status().as_u16(), 201);
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = cms.get("ua").await.expect("stored");
    let managers = cm.metadata.managed_fields.unwrap_or_default();
    assert_eq!(managers.len(), 1);
    assert_eq!(managers[0].manager.as_deref(), Some("OpenAPI-Generator"));
    assert_eq!(managers[0].operation.as_deref(), Some("Update"));
}

#[tokio::test]
async fn unserve_hides_one_kind_of_a_group_in_discovery_too() {
    let config = pgtoolbox_sim::SimConfig {
        unserve: vec!["postgresql.cnpg.io/databaseroles".into()],
        ..Default::default()
    };
    let (sim, client) = crate::sim_support::start_with(config).await;
    let listed = |doc: &Value| -> Vec<String> {
        doc["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str().map(str::to_string))
            .collect()
    };
    let (code, doc) = raw(
        &client,
        "GET",
        "/apis/postgresql.cnpg.io/v1",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let names = listed(&doc);
    assert!(names.contains(&"clusters".to_string()), "{names:?}");
    assert!(!names.contains(&"databaseroles".to_string()), "{names:?}");
    let path = "/apis/postgresql.cnpg.io/v1/namespaces/default/databaseroles";
    assert_eq!(crate::sim_support::get_code(&client, path).await, 404);
    assert_eq!(
        crate::sim_support::get_code(
            &client,
            "/apis/postgresql.cnpg.io/v1/namespaces/default/clusters"
        )
        .await,
        200
    );
    sim.admin().serve("postgresql.cnpg.io/databaseroles");
    assert_eq!(crate::sim_support::get_code(&client, path).await, 200);
    sim.admin().unserve("core/configmaps");
    assert_eq!(
        crate::sim_support::get_code(&client, "/api/v1/namespaces/default/configmaps").await,
        404
    );
}

#[tokio::test]
async fn two_appliers_co_own_a_pod_template_by_list_keys() {
    let (_sim, client) = start().await;
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    let base = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shared"},
            "spec": {"selector": {"matchLabels": {"app": "s"}}, "template": {
                "metadata": {"labels": {"app": "s"}}, "spec": {"containers": containers}}}})
    };
    let web = json!([{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]);
    deploys
        .patch(
            "shared",
            &PatchParams::apply("owner-a"),
            &Patch::Apply(base(web.clone())),
        )
        .await
        .expect("a applies");
    let sidecar = json!([{"name": "web", "env": [{"name": "MODE", "value": "x"}]},
        {"name": "log", "image": "busybox:1.36"}]);
    deploys
        .patch(
            "shared",
            &PatchParams::apply("owner-b"),
            &Patch::Apply(base(sidecar)),
        )
        .await
        .expect("b applies to other elements without conflict");
    // A applies its configuration again: B's container and env stay.
    deploys
        .patch(
            "shared",
            &PatchParams::apply("owner-a"),
            &Patch::Apply(base(web)),
        )
        .await
        .expect("a re-applies");
    let d = serde_json::to_value(deploys.get("shared").await.expect("get")).expect("json");
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, vec!["web", "log"]);
    assert_eq!(containers[0]["image"], "nginx:1.27");
    assert_eq!(containers[0]["env"][0]["name"], "MODE");
    let fields = d["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let b = fields
        .iter()
        .find(|m| m["manager"] == "owner-b")
        .expect("b recorded");
    assert!(
        b["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
            .get(r#"k:{"name":"log"}"#)
            .is_some(),
        "{b}"
    );
    // B changing A's image conflicts; B dropping its sidecar removes it.
    let err = deploys
        .patch(
            "shared",
            &PatchParams::apply("owner-b"),
            &Patch::Apply(base(json!([{"name": "web", "image": "nginx:1.28"}]))),
        )
        .await
        .expect_err("conflict");
    let kube::Error::Api(status) = err else {
        panic!("not an API error: {err}");
    };
    assert_eq!(status.code, 409, "{}", status.message);
    deploys
        .patch(
            "shared",
            &PatchParams::apply("owner-b"),
            &Patch::Apply(base(
                json!([{"name": "web", "env": [{"name": "MODE", "value": "x"}]}]),
            )),
        )
        .await
        .expect("b drops its sidecar");
    let d = serde_json::to_value(deploys.get("shared").await.expect("get")).expect("json");
    let names: Vec<String> = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(names, vec!["web".to_string()]);
}

/// `kubectl explain` reads the published schemas (built-in, external CRD, ours); `kubectl apply`
/// still leaves validation to the server; `kubectl get` prints the built-in columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explains_every_kind_and_prints_built_in_columns() {
    use crate::kubectl_support::{Kubectl, kubectl_present};
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let (sim, _client) = crate::harness::TestOperator::new().start_cluster().await;
    let k = Kubectl::for_sim(&sim);
    tokio::task::spawn_blocking(move || {
        let spec = k.ok(&["explain", "deployment.spec"]);
        assert!(spec.contains("KIND:       Deployment") && spec.contains("revisionHistoryLimit"), "{spec}");
        let ports = k.ok(&["explain", "pod.spec.containers.ports"]);
        assert!(ports.contains("containerPort"), "{ports}");
        let cnpg = k.ok(&["explain", "clusters.postgresql.cnpg.io.spec"]);
        assert!(cnpg.contains("GROUP:      postgresql.cnpg.io"), "{cnpg}");
        let ours = k.ok(&["explain", "pgadmin.spec.exposure"]);
        assert!(ours.contains("KIND:       PgAdmin"), "{ours}");
        // Our fields carry their descriptions, nested and in status too (fields that had none).
        let backup = k.ok(&["explain", "pgadmin.spec.upgradeBackup.enabled"]);
        assert!(backup.contains("pg_dump"), "{backup}");
        let state = k.ok(&["explain", "pgadmin.status.servers.state"]);
        assert!(state.contains("NotOffered"), "{state}");

        let manifest = k.file("web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n");
        assert!(k.ok(&["apply", "-f", &manifest]).contains("created"));
        let table = k.ok(&["get", "deployment", "web", "-o", "wide"]);
        let header = table.lines().next().unwrap_or_default();
        for col in ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"] {
            assert!(header.contains(col), "column {col} missing in {table}");
        }
        assert!(table.contains("0/1") && table.contains("nginx:1.27") && table.contains("app=web"), "{table}");
        let svc = k.file("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n");
        k.ok(&["apply", "-f", &svc]);
        let table = k.ok(&["get", "service", "web"]);
        assert!(table.lines().next().unwrap_or_default().contains("PORT(S)") && table.contains("80/TCP"), "{table}");
        let stored = k.ok(&["get", "service", "web", "-o", "jsonpath={.spec.ports[0].targetPort} {.spec.type}"]);
        assert_eq!(stored.trim(), "80 ClusterIP");
        let event = k.file("event.yaml", "apiVersion: v1\nkind: Event\nmetadata:\n  name: web.1\ninvolvedObject:\n  kind: Deployment\n  name: web\nreason: ScalingReplicaSet\nmessage: Scaled up replica set web-1 from 0 to 1\ntype: Normal\nsource:\n  component: deployment-controller\nlastTimestamp: \"2026-01-01T00:00:00Z\"\ncount: 1\n");
        k.ok(&["create", "-f", &event]);
        let events = k.ok(&["get", "events"]);
        let header = events.lines().next().unwrap_or_default();
        for col in ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"] {
            assert!(header.contains(col), "column {col} missing in {events}");
        }
        assert!(events.contains("deployment/web") && events.contains("ScalingReplicaSet"), "{events}");
        // Strict field validation (kubectl's default) refuses unknown fields of built-in kinds.
        let bad = k.file("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  a: \"1\"\nextra: field\n");
        k.refused(&["apply", "-f", &bad], "strict decoding error: unknown field \"extra\"");
        k.ok(&["apply", "--validate=false", "-f", &bad]);
        let kept = k.ok(&["get", "configmap", "bad", "-o", "jsonpath={.extra}|{.data.a}"]);
        assert_eq!(kept.trim(), "|1", "unknown fields are dropped");
    })
    .await
    .expect("kubectl steps");
}

#[tokio::test]
async fn appliers_co_own_finalizers_as_a_set() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let with = |finalizers: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "held", "finalizers": finalizers}})
    };
    cms.patch(
        "held",
        &PatchParams::apply("a"),
        &Patch::Apply(with(json!(["a.io/hold"]))),
    )
    .await
    .expect("a applies");
    cms.patch(
        "held",
        &PatchParams::apply("b"),
        &Patch::Apply(with(json!(["b.io/hold"]))),
    )
    .await
    .expect("b applies its own finalizer without conflict");
    let both = cms.get("held").await.expect("get").metadata.finalizers;
    assert_eq!(
        both,
        Some(vec!["a.io/hold".to_string(), "b.io/hold".to_string()])
    );
    cms.patch(
        "held",
        &PatchParams::apply("a"),
        &Patch::Apply(with(json!([]))),
    )
    .await
    .expect("a drops its finalizer");
    let left = cms.get("held").await.expect("get").metadata.finalizers;
    assert_eq!(left, Some(vec!["b.io/hold".to_string()]));
}

#[tokio::test]
async fn delete_collection_reads_its_options_from_the_query() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let owner = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "owner", "labels": {"sweep": "yes"}}}),
            )
            .expect("cm"),
        )
        .await
        .expect("owner");
    let dependent: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "dep",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner.metadata.uid}]}}))
    .expect("dep");
    cms.create(&PostParams::default(), &dependent)
        .await
        .expect("dep");
    let base = "/api/v1/namespaces/default/configmaps?labelSelector=sweep%3Dyes";
    let (code, _) = raw(
        &client,
        "DELETE",
        &format!("{base}&dryRun=All"),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    cms.get("owner").await.expect("a dry run deletes nothing");
    let (code, _) = raw(
        &client,
        "DELETE",
        &format!("{base}&propagationPolicy=Orphan"),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    assert!(cms.get_opt("owner").await.expect("get").is_none());
    let dep = cms.get("dep").await.expect("the orphan stays");
    assert!(dep.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn status_writes_are_recorded_as_their_own_manager() {
    let (_sim, client) = start().await;
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..Default::default()
    };
    deploys
        .create(
            &pp,
            &deployment("st", json!({"app": "st"}), json!({"app": "st"})),
        )
        .await
        .expect("create");
    let params = PatchParams {
        field_manager: Some("creator".into()),
        ..Default::default()
    };
    deploys
        .patch_status(
            "st",
            &params,
            &Patch::Merge(json!({"status": {"replicas": 1}})),
        )
        .await
        .expect("status");
    let d = deploys.get("st").await.expect("get");
    let entries = d.metadata.managed_fields.unwrap_or_default();
    let shown: Vec<(Option<String>, Option<String>)> = entries
        .iter()
        .map(|e| (e.manager.clone(), e.subresource.clone()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (Some("creator".into()), None),
            (Some("creator".into()), Some("status".into()))
        ]
    );
}
