//! kubectl's imperative commands (protobuf bodies), `scale`, `rollout restart`, `auth can-i` and
//! `logs` against the sim, each checked by reading the stored object back with kube.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Pod, ResourceQuota, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::Api;
use serde_json::{Value, json};

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_support::start;

/// A self-signed EC certificate and its key: `kubectl create secret tls` checks they match.
const TLS_CRT: &str = "-----BEGIN CERTIFICATE-----
MIIBfTCCASOgAwIBAgIURpVI8aAjHWv3p/mmxfHw0G1m30IwCgYIKoZIzj0EAwIw
EzERMA8GA1UEAwwIc2ltLnRlc3QwIBcNMjYxMjAxMDMyMTQ5WhgPMjEyNjExMDcw
MzIxNDlaMBMxETAPBgNVBAMMCHNpbS50ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEfN7CNh/8mpW+hzxgP1c8WxmDLJENk2296PtwqDm2iYNov/ZxPAY++3Ta
+OnnW6eXLUZ6tlkwvEkaP9Em+tzxbqNTMFEwHQYDVR0OBBYEFF1xg/AWg9J3hkHi
HWI241KnnU+lMB8GA1UdIwQYMBaAFF1xg/AWg9J3hkHiHWI241KnnU+lMA8GA1Ud
EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAKRA0gsEjstuZ7BD73qVAXIf
WBsZb8iNi/Zygy9MPQZzAiAOIC1LbqwiZStt+dzS6a8VZXMS5Vw+j5J/+Rwr85yC
pw==
-----END CERTIFICATE-----
";
const TLS_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgNAbZMoH00gXEErvg
SW3+2DQ2ZbkHJlLsfBQJ7+Qgtg6hRANCAAR83sI2H/yalb6HPGA/VzxbGYMskQ2T
bb3o+3CoObaJg2i/9nE8Bj77dNr46edbp5ctRnq2WTC8SRo/0Sb63PFu
-----END PRIVATE KEY-----
";

const NS: &str = "team-b";

pub(crate) fn kubectl_for(sim: &pgtoolbox_sim::Sim) -> Kubectl {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    Kubectl { kubeconfig, dir }
}

/// Runs blocking kubectl steps off the runtime that serves kube.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("kubectl steps")
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("serialises")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_generators_store_what_they_describe() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let (sim, client) = start().await;
    let k = kubectl_for(&sim);
    let k = blocking(move || {
        let crt = k.file("tls.crt", TLS_CRT);
        let key = k.file("tls.key", TLS_KEY);
        let create = |args: &[&str], expected: &str| {
            let out = k.ok(&[&["create", "-n", NS], args].concat());
            assert!(out.contains(expected), "kubectl create {args:?}: {out}");
        };
        k.ok(&["create", "namespace", NS]);
        create(
            &["secret", "generic", "s1", "--from-literal=a=b"],
            "secret/s1 created",
        );
        create(
            &["secret", "tls", "t1", "--cert", &crt, "--key", &key],
            "secret/t1 created",
        );
        create(
            &["configmap", "c1", "--from-literal=x=y"],
            "configmap/c1 created",
        );
        create(&["serviceaccount", "sa1"], "serviceaccount/sa1 created");
        create(
            &["role", "r1", "--verb=get,list", "--resource=pods"],
            "role.rbac.authorization.k8s.io/r1 created",
        );
        create(
            &[
                "rolebinding",
                "rb1",
                "--role=r1",
                "--serviceaccount=team-b:sa1",
            ],
            "rolebinding.rbac.authorization.k8s.io/rb1 created",
        );
        create(
            &["clusterrole", "cr1", "--verb=get", "--resource=nodes"],
            "clusterrole.rbac.authorization.k8s.io/cr1 created",
        );
        create(
            &[
                "clusterrolebinding",
                "crb1",
                "--clusterrole=cr1",
                "--user=alice",
            ],
            "clusterrolebinding.rbac.authorization.k8s.io/crb1 created",
        );
        create(
            &[
                "deployment",
                "d1",
                "--image=nginx:1.27",
                "--replicas=2",
                "--port=80",
            ],
            "deployment.apps/d1 created",
        );
        create(
            &["job", "j1", "--image=busybox", "--", "echo", "hi"],
            "job.batch/j1 created",
        );
        create(
            &[
                "quota",
                "q1",
                "--hard=pods=10,requests.cpu=2,requests.memory=1Gi",
            ],
            "resourcequota/q1 created",
        );
        create(
            &[
                "cronjob",
                "cj1",
                "--image=busybox",
                "--schedule=*/5 * * * *",
            ],
            "cronjob.batch/cj1 created",
        );
        create(
            &["service", "clusterip", "svc1", "--tcp=80:8080"],
            "service/svc1 created",
        );
        assert!(
            k.ok(&["run", "p1", "--image=nginx", "--labels=app=p1", "-n", NS])
                .contains("pod/p1 created")
        );
        create(
            &[
                "ingress",
                "i1",
                "--class=nginx",
                "--rule=foo.com/bar=svc1:80",
            ],
            "ingress.networking.k8s.io/i1 created",
        );
        create(
            &[
                "poddisruptionbudget",
                "pdb1",
                "--selector=app=d1",
                "--min-available=50%",
            ],
            "poddisruptionbudget.policy/pdb1 created",
        );
        assert!(
            k.ok(&[
                "create",
                "priorityclass",
                "high",
                "--value=1000",
                "--description=urgent"
            ])
            .contains("priorityclass.scheduling.k8s.io/high created")
        );
        assert!(
            k.ok(&[
                "autoscale",
                "deployment",
                "d1",
                "--max=5",
                "--cpu-percent=60",
                "-n",
                NS
            ])
            .contains("horizontalpodautoscaler.autoscaling/d1 autoscaled")
        );
        k
    })
    .await;

    let ns = |c: &kube::Client| c.clone();
    assert!(Api::<Namespace>::all(ns(&client)).get(NS).await.is_ok());
    let secrets: Api<Secret> = Api::namespaced(ns(&client), NS);
    let s1 = secrets.get("s1").await.expect("secret s1");
    // kubectl leaves `type` out; defaulting it to Opaque is the server's (built-in defaults).
    assert!(
        matches!(s1.type_.as_deref(), None | Some("Opaque")),
        "{:?}",
        s1.type_
    );
    assert_eq!(s1.data.expect("data")["a"].0, b"b");
    let t1 = secrets.get("t1").await.expect("secret t1");
    assert_eq!(t1.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = t1.data.expect("tls data");
    assert_eq!(data["tls.crt"].0, TLS_CRT.as_bytes());
    assert_eq!(data["tls.key"].0, TLS_KEY.as_bytes());
    let c1 = Api::<ConfigMap>::namespaced(ns(&client), NS)
        .get("c1")
        .await
        .expect("c1");
    assert_eq!(c1.data.expect("data")["x"], "y");
    assert!(
        Api::<ServiceAccount>::namespaced(ns(&client), NS)
            .get("sa1")
            .await
            .is_ok()
    );

    let r1 = Api::<Role>::namespaced(ns(&client), NS)
        .get("r1")
        .await
        .expect("r1");
    assert_eq!(
        to_json(&r1.rules),
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
    );
    let rb1 = Api::<RoleBinding>::namespaced(ns(&client), NS)
        .get("rb1")
        .await
        .expect("rb1");
    assert_eq!(
        to_json(&rb1.role_ref),
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r1"})
    );
    assert_eq!(
        to_json(&rb1.subjects),
        json!([{"kind": "ServiceAccount", "name": "sa1", "namespace": NS}])
    );
    let cr1 = Api::<ClusterRole>::all(ns(&client))
        .get("cr1")
        .await
        .expect("cr1");
    assert_eq!(
        to_json(&cr1.rules),
        json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}])
    );
    let crb1 = Api::<ClusterRoleBinding>::all(ns(&client))
        .get("crb1")
        .await
        .expect("crb1");
    assert_eq!(
        to_json(&crb1.subjects),
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}])
    );

    let d1 = Api::<Deployment>::namespaced(ns(&client), NS)
        .get("d1")
        .await
        .expect("d1");
    let spec = to_json(&d1.spec);
    assert_eq!(spec["replicas"], 2);
    assert_eq!(spec["selector"], json!({"matchLabels": {"app": "d1"}}));
    assert_eq!(spec["template"]["metadata"]["labels"], json!({"app": "d1"}));
    // What kubectl sent, plus the server's container defaults.
    assert_eq!(
        spec["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {}, "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}])
    );
    let j1 = Api::<Job>::namespaced(ns(&client), NS)
        .get("j1")
        .await
        .expect("j1");
    let pod_spec = to_json(&j1.spec.expect("job spec").template.spec);
    assert_eq!(pod_spec["restartPolicy"], "Never");
    assert_eq!(pod_spec["containers"][0]["command"], json!(["echo", "hi"]));
    let q1 = Api::<ResourceQuota>::namespaced(ns(&client), NS)
        .get("q1")
        .await
        .expect("q1");
    assert_eq!(
        to_json(&q1.spec.expect("quota spec").hard),
        json!({"pods": "10", "requests.cpu": "2", "requests.memory": "1Gi"})
    );
    let cj1 = Api::<CronJob>::namespaced(ns(&client), NS)
        .get("cj1")
        .await
        .expect("cj1");
    let cj_spec = to_json(&cj1.spec);
    assert_eq!(cj_spec["schedule"], "*/5 * * * *");
    assert_eq!(
        cj_spec["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"],
        "OnFailure"
    );
    let svc1 = Api::<Service>::namespaced(ns(&client), NS)
        .get("svc1")
        .await
        .expect("svc1");
    let svc_spec = to_json(&svc1.spec);
    assert_eq!(svc_spec["type"], "ClusterIP");
    assert_eq!(
        svc_spec["ports"],
        json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    let ingresses: Api<k8s_openapi::api::networking::v1::Ingress> =
        Api::namespaced(ns(&client), NS);
    let i1 = ingresses.get("i1").await.expect("i1");
    assert_eq!(
        to_json(&i1.spec),
        json!({"ingressClassName": "nginx", "rules": [{"host": "foo.com", "http": {"paths": [
            {"path": "/bar", "pathType": "Exact",
             "backend": {"service": {"name": "svc1", "port": {"number": 80}}}}]}}]})
    );
    let pdb: Api<k8s_openapi::api::policy::v1::PodDisruptionBudget> =
        Api::namespaced(ns(&client), NS);
    let pdb1 = pdb.get("pdb1").await.expect("pdb1");
    assert_eq!(
        to_json(&pdb1.spec),
        json!({"minAvailable": "50%", "selector": {"matchLabels": {"app": "d1"}}})
    );
    let pcs: Api<k8s_openapi::api::scheduling::v1::PriorityClass> = Api::all(ns(&client));
    let high = pcs.get("high").await.expect("priority class");
    assert_eq!(
        (high.value, high.description.as_deref()),
        (Some(1000), Some("urgent"))
    );
    // kubectl writes autoscaling/v1; the v2 view carries the same target as a CPU metric.
    let hpas: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
        Api::namespaced(ns(&client), NS);
    let hpa = to_json(&hpas.get("d1").await.expect("hpa").spec);
    assert_eq!(hpa["maxReplicas"], 5);
    assert_eq!(
        hpa["scaleTargetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d1"})
    );
    assert_eq!(
        hpa["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 60}}}])
    );
    let p1 = Api::<Pod>::namespaced(ns(&client), NS)
        .get("p1")
        .await
        .expect("p1");
    let p_spec = to_json(&p1.spec);
    assert_eq!(p_spec["containers"][0]["image"], "nginx");
    assert_eq!(p1.metadata.labels.expect("labels")["app"], "p1");

    // Server-side dry run goes through the same decoding and stores nothing.
    blocking(move || {
        let out = k.ok(&[
            "create",
            "configmap",
            "dry",
            "--from-literal=a=b",
            "--dry-run=server",
            "-o",
            "json",
            "-n",
            NS,
        ]);
        let v: Value = serde_json::from_str(&out).expect("json output");
        assert_eq!(v["data"]["a"], "b");
        k.refused(&["get", "configmap", "dry", "-n", NS], "NotFound");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scale_restart_can_i_and_logs() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let (sim, client) = start().await;
    let admin = sim.admin();
    let k = kubectl_for(&sim);
    let k = blocking(move || {
        k.ok(&["create", "namespace", NS]);
        k.ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=1",
            "-n",
            NS,
        ]);
        assert!(
            k.ok(&["scale", "deployment/web", "--replicas=3", "-n", NS])
                .contains("deployment.apps/web scaled")
        );
        // --current-replicas makes kubectl check the Scale it reads first.
        k.refused(
            &[
                "scale",
                "deployment/web",
                "--current-replicas=2",
                "--replicas=4",
                "-n",
                NS,
            ],
            "Expected replicas to be 2, was 3",
        );
        assert!(
            k.ok(&["rollout", "restart", "deployment/web", "-n", NS])
                .contains("deployment.apps/web restarted")
        );
        assert_eq!(
            k.ok(&["auth", "can-i", "create", "pods", "-n", NS]).trim(),
            "yes"
        );
        // `kubectl create token`: a TokenRequest whose JWT names the ServiceAccount.
        k.ok(&["create", "serviceaccount", "bot", "-n", NS]);
        let token = k.ok(&["create", "token", "bot", "-n", NS]);
        let claims = token.trim().split('.').nth(1).expect("a JWT");
        let claims =
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, claims)
                .expect("base64url claims");
        let claims: Value = serde_json::from_slice(&claims).expect("JSON claims");
        assert_eq!(claims["sub"], "system:serviceaccount:team-b:bot");
        assert_eq!(
            claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
            3600
        );
        k.refused(
            &["create", "token", "bot", "--duration=1m", "-n", NS],
            "may not specify a duration less than 10 minutes",
        );
        k.refused(
            &["create", "token", "nobody", "-n", NS],
            "serviceaccounts \"nobody\" not found",
        );
        let whoami = k.ok(&["auth", "whoami"]);
        assert!(whoami.contains("system:sim"), "{whoami}");
        let list = k.ok(&["auth", "can-i", "--list", "-n", NS]);
        assert!(
            list.contains("*.*") && !list.contains("incomplete"),
            "{list}"
        );
        k.ok(&["run", "p1", "--image=nginx", "-n", NS]);
        let log = k.ok(&["logs", "p1", "-n", NS]);
        assert!(log.contains("Pod team-b/p1 is simulated"), "{log}");
        k.refused(
            &["logs", "p1", "-c", "other", "-n", NS],
            "container other is not valid for pod p1",
        );
        k.refused(&["logs", "missing", "-n", NS], "pods \"missing\" not found");
        k
    })
    .await;

    let web = Api::<Deployment>::namespaced(client.clone(), NS)
        .get("web")
        .await
        .expect("web");
    let spec = to_json(&web.spec);
    assert_eq!(spec["replicas"], 3);
    let restarted =
        &spec["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"];
    assert!(
        restarted.as_str().is_some_and(|t| t.ends_with('Z')),
        "{spec}"
    );

    // A container the kubelet reports waiting has no logs yet, in the kubelet's words.
    let pulling: Pod = serde_json::from_value(json!({
        "metadata": {"name": "pulling"},
        "spec": {"containers": [{"name": "app", "image": "nginx:nope"}]},
        "status": {"phase": "Pending", "containerStatuses": [{"name": "app", "image": "nginx:nope",
            "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ImagePullBackOff"}}}]},
    }))
    .expect("pod");
    Api::<Pod>::namespaced(client.clone(), NS)
        .create(&Default::default(), &pulling)
        .await
        .expect("pod created");
    admin.deny("create:pods:team-b").expect("rule");
    blocking(move || {
        let (ok, out) = k.run(&["auth", "can-i", "create", "pods", "-n", NS]);
        assert!(!ok && out.trim().starts_with("no"), "{out}");
        assert_eq!(
            k.ok(&["auth", "can-i", "get", "pods", "-n", NS]).trim(),
            "yes"
        );
        k.refused(
            &["logs", "pulling", "-n", NS],
            "container \"app\" in pod \"pulling\" is waiting to start: trying and failing to pull image",
        );
        // The rules review cannot express a deny rule, so it says it is incomplete.
        let list = k.ok(&["auth", "can-i", "--list", "-n", NS]);
        assert!(list.contains("the list may be incomplete"), "{list}");
        assert!(list.contains("create:pods:team-b"), "{list}");
    })
    .await;
}

/// The raw answers of the scale subresource and the content negotiation around protobuf.
#[tokio::test]
async fn scale_subresource_and_protobuf_negotiation() {
    use k8s_pb::api::core::v1 as pb;
    let (_sim, client) = start().await;
    let send = |method: &str, path: &str, ct: &str, accept: &str, body: Vec<u8>| {
        let req = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", ct)
            .header("accept", accept)
            .body(body)
            .expect("request");
        let client = client.clone();
        async move {
            let resp = client
                .send(req.map(kube::client::Body::from))
                .await
                .expect("answer");
            let code = resp.status().as_u16();
            let bytes = resp.into_body().collect_bytes().await.expect("body");
            (
                code,
                serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
            )
        }
    };
    let json_ct = "application/json";
    let proto_ct = "application/vnd.kubernetes.protobuf";
    let cm = pb::ConfigMap {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("from-proto".into()),
            ..Default::default()
        }),
        data: [("k".to_string(), "v".to_string())].into(),
        binary_data: [("bin".to_string(), vec![0u8, 255])].into(),
        ..Default::default()
    };
    let body = pgtoolbox_sim::proto::encode("v1", "ConfigMap", &cm);
    let cms = "/api/v1/namespaces/default/configmaps";
    // A client that accepts only protobuf cannot be answered.
    let (code, _) = send("POST", cms, proto_ct, proto_ct, body.clone()).await;
    assert_eq!(code, 406);
    let (code, created) = send(
        "POST",
        cms,
        proto_ct,
        "application/vnd.kubernetes.protobuf, */*",
        body,
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["data"], json!({"k": "v"}));
    assert_eq!(created["binaryData"], json!({"bin": "AP8="}));
    // An update in protobuf goes through the same path.
    let mut changed = cm.clone();
    changed.data.insert("k".into(), "w".into());
    let put = pgtoolbox_sim::proto::encode("v1", "ConfigMap", &changed);
    let (code, updated) = send("PUT", &format!("{cms}/from-proto"), proto_ct, json_ct, put).await;
    assert_eq!((code, &updated["data"]["k"]), (200, &json!("w")));
    // Deletes carry DeleteOptions in protobuf too; their preconditions are honoured.
    let delete_opts = |uid: &str| {
        use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
        let opts = meta::DeleteOptions {
            preconditions: Some(meta::Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        pgtoolbox_sim::proto::encode("meta.k8s.io/v1", "DeleteOptions", &opts)
    };
    let one = format!("{cms}/from-proto");
    let (code, _) = send(
        "DELETE",
        &one,
        proto_ct,
        json_ct,
        delete_opts("not-its-uid"),
    )
    .await;
    assert_eq!(code, 409);
    let uid = updated["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let (code, _) = send("DELETE", &one, proto_ct, json_ct, delete_opts(&uid)).await;
    assert_eq!(code, 200);
    let (code, _) = send("GET", &one, json_ct, json_ct, vec![]).await;
    assert_eq!(code, 404);
    // Kinds without a converter, and other binary formats, are refused as unsupported media.
    let crd = pgtoolbox_sim::proto::encode(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition::default(),
    );
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, status) = send("POST", crds, proto_ct, json_ct, crd).await;
    assert_eq!(
        (code, &status["reason"]),
        (415, &json!("UnsupportedMediaType"))
    );
    let (code, _) = send("POST", cms, "application/cbor", json_ct, vec![0xa0]).await;
    assert_eq!(code, 415);
    let (code, status) = send("POST", cms, proto_ct, json_ct, b"{}".to_vec()).await;
    assert_eq!((code, &status["reason"]), (400, &json!("BadRequest")));

    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let (code, _) = send(
        "POST",
        deployments,
        json_ct,
        json_ct,
        serde_json::to_vec(&deploy).unwrap(),
    )
    .await;
    assert_eq!(code, 201);
    let scale = format!("{deployments}/web/scale");
    let (code, got) = send("GET", &scale, json_ct, json_ct, vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(
        (
            &got["apiVersion"],
            &got["kind"],
            &got["spec"],
            &got["status"]
        ),
        (
            &json!("autoscaling/v1"),
            &json!("Scale"),
            &json!({"replicas": 2}),
            &json!({"replicas": 0, "selector": "app=web"})
        )
    );
    let rv = got["metadata"]["resourceVersion"].clone();
    let put = |replicas: i64, rv: &Value| {
        serde_json::to_vec(&json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": rv},
            "spec": {"replicas": replicas}}))
        .unwrap()
    };
    let (code, put_answer) = send("PUT", &scale, json_ct, json_ct, put(5, &rv)).await;
    assert_eq!((code, &put_answer["spec"]["replicas"]), (200, &json!(5)));
    // The old resourceVersion is now stale: a conflict, as on the object itself.
    let (code, _) = send("PUT", &scale, json_ct, json_ct, put(6, &rv)).await;
    assert_eq!(code, 409);
    let (code, invalid) = send("PUT", &scale, json_ct, json_ct, put(-1, &json!(""))).await;
    assert_eq!((code, &invalid["reason"]), (422, &json!("Invalid")));
    let (code, patched) = send(
        "PATCH",
        &scale,
        "application/json-patch+json",
        json_ct,
        serde_json::to_vec(&json!([{"op": "replace", "path": "/spec/replicas", "value": 1}]))
            .unwrap(),
    )
    .await;
    assert_eq!((code, &patched["spec"]["replicas"]), (200, &json!(1)));
    let (code, stored) = send(
        "GET",
        &format!("{deployments}/web"),
        json_ct,
        json_ct,
        vec![],
    )
    .await;
    assert_eq!((code, &stored["spec"]["replicas"]), (200, &json!(1)));
    let (code, _) = send(
        "GET",
        &format!("{deployments}/missing/scale"),
        json_ct,
        json_ct,
        vec![],
    )
    .await;
    assert_eq!(code, 404);
    let (code, _) = send("DELETE", &scale, json_ct, json_ct, vec![]).await;
    assert_eq!(code, 405);
    // Discovery lists the subresources kubectl and HPA clients look for.
    let (_, apps) = send("GET", "/apis/apps/v1", json_ct, json_ct, vec![]).await;
    let names: Vec<&str> = apps["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for sub in [
        "deployments/scale",
        "replicasets/scale",
        "statefulsets/scale",
    ] {
        assert!(names.contains(&sub), "{sub} missing from {names:?}");
    }
}
