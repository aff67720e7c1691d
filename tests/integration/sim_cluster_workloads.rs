//! Deployment, ReplicaSet, Job, Service/Endpoints, storage and ResourceQuota in the simulated
//! cluster, through kube and kubectl.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Endpoints, PersistentVolume, PersistentVolumeClaim, Pod, ResourceQuota, Service,
};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_cluster_support::{cluster, json, pod_condition};
use crate::wait_support::{until, until_list, wait_core_event};

pub fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    json(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image,
                    "ports": [{"name": "http", "containerPort": 8080}]}]},
            },
        },
    }))
}

fn condition(d: &Deployment, kind: &str) -> Option<(String, String, String)> {
    let v = serde_json::to_value(d).ok()?;
    let c = v
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)?
        .clone();
    let s = |f: &str| c[f].as_str().unwrap_or("").to_string();
    Some((s("status"), s("reason"), s("message")))
}

pub fn available(d: &Deployment) -> bool {
    condition(d, "Available").is_some_and(|c| c.0 == "True")
        && condition(d, "Progressing").is_some_and(|c| c.1 == "NewReplicaSetAvailable")
}

#[tokio::test]
async fn a_deployment_of_three_replicas_becomes_available() {
    let (_sim, client) = cluster("dep").await;
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "dep");
    deps.create(&PostParams::default(), &deployment("web", 3, "nginx:1.27"))
        .await
        .unwrap();
    let d = until(&deps, "web", "Available", available).await;
    let status = d.status.clone().unwrap();
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(
        (
            status.replicas,
            status.updated_replicas,
            status.ready_replicas,
            status.available_replicas
        ),
        (Some(3), Some(3), Some(3), Some(3))
    );
    assert_eq!(status.unavailable_replicas, None);
    let (_, reason, message) = condition(&d, "Available").unwrap();
    assert_eq!(
        (reason.as_str(), message.as_str()),
        (
            "MinimumReplicasAvailable",
            "Deployment has minimum availability."
        )
    );
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "dep");
    let rs = rss
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .remove(0);
    let rs_name = rs.metadata.name.clone().unwrap();
    let hash = rs.metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(rs_name, format!("web-{hash}"));
    assert_eq!(
        condition(&d, "Progressing").unwrap().2,
        format!("ReplicaSet \"{rs_name}\" has successfully progressed.")
    );
    assert_eq!(
        rs.metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision"],
        "1"
    );
    assert_eq!(
        d.metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision"],
        "1"
    );
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Deployment", Some(true))
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "dep");
    let listed = pods
        .list(&ListParams::default().labels(&format!("pod-template-hash={hash}")))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|p| {
        p.metadata
            .name
            .as_ref()
            .unwrap()
            .starts_with(&format!("{rs_name}-"))
    }));
    let scaled = wait_core_event(&client, "dep", "web", "ScalingReplicaSet").await;
    assert_eq!(
        scaled,
        format!("Scaled up replica set {rs_name} from 0 to 3")
    );
    assert!(
        wait_core_event(&client, "dep", &rs_name, "SuccessfulCreate")
            .await
            .starts_with("Created pod: ")
    );

    // A new template rolls out: a second ReplicaSet takes over, the old one scales to 0.
    deps.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}})),
    )
    .await
    .unwrap();
    let d = until(&deps, "web", "rolled out again", |d: &Deployment| {
        available(d)
            && d.status.as_ref().and_then(|s| s.observed_generation) == Some(2)
            && d.metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision"] == "2"
    })
    .await;
    assert_eq!(d.status.unwrap().updated_replicas, Some(3));
    let rs_list = until_list(
        &rss,
        &ListParams::default(),
        "old ReplicaSet scaled to 0",
        |l: &[ReplicaSet]| l.len() == 2 && l.iter().any(|r| r.spec.replicas == Some(0)),
    )
    .await;
    assert_eq!(rs_list.len(), 2);
}

#[tokio::test]
async fn kubectl_rollout_status_and_wait_return_for_a_deployment() {
    if !kubectl_present() {
        eprintln!("kubectl missing; skipped");
        return;
    }
    let (sim, _client) = cluster("kc").await;
    let k = Kubectl::for_sim(&sim);
    tokio::task::spawn_blocking(move || {
        let manifest = k.file("d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: kc\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n");
        k.ok(&["apply", "--validate=false", "-f", &manifest]);
        let out = k.ok(&["-n", "kc", "rollout", "status", "deployment/web", "--timeout=20s"]);
        assert!(out.contains("deployment \"web\" successfully rolled out"), "{out}");
        let out = k.ok(&["-n", "kc", "wait", "--for=condition=Available", "deployment/web", "--timeout=20s"]);
        assert!(out.contains("condition met"), "{out}");
        let pods = k.ok(&["-n", "kc", "get", "pods", "-l", "app=web", "-o", "json"]);
        let v: serde_json::Value = serde_json::from_str(&pods).unwrap();
        assert_eq!(v["items"].as_array().unwrap().len(), 3);
        let described = k.ok(&["-n", "kc", "describe", "deployment", "web"]);
        assert!(described.contains("ScalingReplicaSet"), "{described}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn recreate_scales_the_old_replica_set_down_first() {
    let (_sim, client) = cluster("rec").await;
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "rec");
    let mut d = deployment("db", 2, "postgres:17");
    d.spec.strategy = Some(json(json!({"type": "Recreate"})));
    deps.create(&PostParams::default(), &d).await.unwrap();
    until(&deps, "db", "Available", available).await;
    deps.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "postgres:18"}]}}}})),
    )
    .await
    .unwrap();
    let d = until(&deps, "db", "rolled out", |d: &Deployment| {
        available(d) && d.status.as_ref().and_then(|s| s.observed_generation) == Some(2)
    })
    .await;
    assert_eq!(d.status.unwrap().replicas, Some(2));
    let scaled: Vec<String> = crate::wait_support::core_events_of(&client, "rec", "db")
        .await
        .into_iter()
        .filter(|e| e.1 == "ScalingReplicaSet")
        .map(|e| e.2)
        .collect();
    assert!(
        scaled
            .iter()
            .any(|m| m.starts_with("Scaled down replica set db-") && m.ends_with("from 2 to 0")),
        "{scaled:?}"
    );
}

#[tokio::test]
async fn a_quota_refuses_pods_and_the_replica_set_reports_failed_create() {
    let (_sim, client) = cluster("q").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "q");
    let quota: ResourceQuota = json(json!({"metadata": {"name": "compute"},
        "spec": {"hard": {"pods": "2", "count/deployments.apps": "5"}}}));
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "q");
    deps.create(&PostParams::default(), &deployment("web", 3, "nginx"))
        .await
        .unwrap();
    let d = until(&deps, "web", "ReplicaFailure", |d: &Deployment| {
        condition(d, "ReplicaFailure").is_some()
    })
    .await;
    let (status, reason, message) = condition(&d, "ReplicaFailure").unwrap();
    assert_eq!((status.as_str(), reason.as_str()), ("True", "FailedCreate"));
    assert!(message.starts_with("pods \"web-"), "{message}");
    assert!(
        message.ends_with("is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"),
        "{message}"
    );
    let rs = Api::<ReplicaSet>::namespaced(client.clone(), "q")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .remove(0);
    let failed = wait_core_event(
        &client,
        "q",
        rs.metadata.name.as_ref().unwrap(),
        "FailedCreate",
    )
    .await;
    assert!(
        failed.starts_with("Error creating: pods \"web-"),
        "{failed}"
    );
    let q = until(&quotas, "compute", "status.used", |q: &ResourceQuota| {
        q.status
            .as_ref()
            .and_then(|s| s.used.as_ref())
            .is_some_and(|u| u["pods"].0 == "2")
    })
    .await;
    let st = q.status.unwrap();
    assert_eq!(st.hard.unwrap()["pods"].0, "2");
    assert_eq!(st.used.unwrap()["count/deployments.apps"].0, "1");

    // A direct create gets the same 403.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "q");
    let p: Pod = json(
        json!({"metadata": {"name": "extra"}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}}),
    );
    let err = pods.create(&PostParams::default(), &p).await.unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
            assert_eq!(
                s.message,
                "pods \"extra\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"
            );
        }
        other => panic!("{other:?}"),
    }
    // Raising the quota lets the ReplicaSet finish.
    quotas
        .patch(
            "compute",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hard": {"pods": "10"}}})),
        )
        .await
        .unwrap();
    let d = until(
        &deps,
        "web",
        "Available without ReplicaFailure",
        |d: &Deployment| available(d) && condition(d, "ReplicaFailure").is_none(),
    )
    .await;
    assert_eq!(d.status.unwrap().available_replicas, Some(3));
}

#[tokio::test]
async fn a_compute_quota_needs_requests_and_counts_them() {
    let (_sim, client) = cluster("cq").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "cq");
    let quota: ResourceQuota = json(json!({"metadata": {"name": "cpu"},
        "spec": {"hard": {"requests.cpu": "1", "requests.memory": "1Gi"}}}));
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "cq");
    let bare: Pod = json(
        json!({"metadata": {"name": "bare"}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}}),
    );
    let kube::Error::Api(s) = pods
        .create(&PostParams::default(), &bare)
        .await
        .unwrap_err()
    else {
        panic!("expected a refusal")
    };
    assert_eq!(
        s.message,
        "pods \"bare\" is forbidden: failed quota: cpu: must specify requests.cpu,requests.memory"
    );
    let sized = |name: &str, cpu: &str| -> Pod {
        json(
            json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "a", "image": "nginx",
            "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]}}),
        )
    };
    pods.create(&PostParams::default(), &sized("one", "600m"))
        .await
        .unwrap();
    let kube::Error::Api(s) = pods
        .create(&PostParams::default(), &sized("two", "500m"))
        .await
        .unwrap_err()
    else {
        panic!("expected a refusal")
    };
    assert_eq!(
        s.message,
        "pods \"two\" is forbidden: exceeded quota: cpu, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
}

#[tokio::test]
async fn a_job_runs_to_completion() {
    let (_sim, client) = cluster("jobs").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "jobs");
    let job: Job = json(
        json!({"metadata": {"name": "migrate"}, "spec": {"completions": 2, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}}}}),
    );
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let j = until(&jobs, "migrate", "Complete", |j: &Job| {
        j.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Complete" && c.status == "True")
            })
    })
    .await;
    let st = j.status.unwrap();
    assert_eq!(st.succeeded, Some(2));
    assert!(st.completion_time.is_some() && st.start_time.is_some());
    let conds = st.conditions.unwrap();
    let met = conds
        .iter()
        .find(|c| c.type_ == "SuccessCriteriaMet")
        .unwrap();
    assert_eq!(met.reason.as_deref(), Some("CompletionsReached"));
    let complete = conds.iter().find(|c| c.type_ == "Complete").unwrap();
    assert_eq!(
        complete.message.as_deref(),
        Some("Reached expected number of succeeded pods")
    );
    assert_eq!(
        wait_core_event(&client, "jobs", "migrate", "Completed").await,
        "Job completed"
    );
    let created = wait_core_event(&client, "jobs", "migrate", "SuccessfulCreate").await;
    assert!(created.starts_with("Created pod: migrate-"), "{created}");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "jobs");
    let done = pods
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=migrate"))
        .await
        .unwrap()
        .items;
    assert_eq!(done.len(), 2);
    let p = &done[0];
    assert_eq!(
        p.status.as_ref().unwrap().phase.as_deref(),
        Some("Succeeded")
    );
    let term = p
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0]
        .state
        .as_ref()
        .unwrap()
        .terminated
        .clone()
        .unwrap();
    assert_eq!(
        (term.exit_code, term.reason.as_deref()),
        (0, Some("Completed"))
    );
    assert_eq!(pod_condition(p, "Ready").unwrap().1, "PodCompleted");
}

#[tokio::test]
async fn services_get_a_cluster_ip_and_endpoints_of_ready_pods() {
    let (_sim, client) = cluster("svc").await;
    let services: Api<Service> = Api::namespaced(client.clone(), "svc");
    let svc: Service = json(
        json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"},
        "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
    );
    let created = services.create(&PostParams::default(), &svc).await.unwrap();
    let ip = created.spec.as_ref().unwrap().cluster_ip.clone().unwrap();
    assert!(
        ip.starts_with("10.9") || ip.starts_with("10.10") || ip.starts_with("10.11"),
        "{ip}"
    );
    assert_eq!(created.spec.unwrap().cluster_ips, Some(vec![ip.clone()]));
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "svc");
    deps.create(&PostParams::default(), &deployment("web", 2, "nginx"))
        .await
        .unwrap();
    let eps: Api<Endpoints> = Api::namespaced(client.clone(), "svc");
    let e = until(&eps, "web", "two ready addresses", |e: &Endpoints| {
        e.subsets
            .as_ref()
            .and_then(|s| s.first())
            .and_then(|s| s.addresses.as_ref())
            .is_some_and(|a| a.len() == 2)
    })
    .await;
    let subset = &e.subsets.unwrap()[0];
    let port = &subset.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port, port.protocol.as_deref()),
        (Some("http"), 8080, Some("TCP"))
    );
    let addr = &subset.addresses.as_ref().unwrap()[0];
    assert!(addr.ip.starts_with("10.244."));
    assert_eq!(
        addr.target_ref.as_ref().unwrap().kind.as_deref(),
        Some("Pod")
    );
    assert!(addr.node_name.as_ref().unwrap().starts_with("sim-node-"));
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
        Api::namespaced(client.clone(), "svc");
    let listed = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 1);
    let slice = &listed[0];
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(
        slice.metadata.labels.as_ref().unwrap()["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    let endpoints = slice.endpoints.as_ref().unwrap();
    assert_eq!(endpoints.len(), 2);
    assert_eq!(endpoints[0].conditions.as_ref().unwrap().ready, Some(true));
    assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(8080));
    // Scale to zero: the addresses go.
    deps.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 0}})),
    )
    .await
    .unwrap();
    until(&eps, "web", "no addresses", |e: &Endpoints| {
        e.subsets.as_ref().is_none_or(|s| s.is_empty())
    })
    .await;
    let rs = Api::<ReplicaSet>::namespaced(client.clone(), "svc")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .remove(0);
    let deleted = wait_core_event(
        &client,
        "svc",
        rs.metadata.name.as_ref().unwrap(),
        "SuccessfulDelete",
    )
    .await;
    assert!(deleted.starts_with("Deleted pod: web-"), "{deleted}");
}

#[tokio::test]
async fn claims_of_the_default_class_bind_and_unknown_classes_block_their_pods() {
    let (_sim, client) = cluster("st").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "st");
    let pvc = |name: &str, class: Option<&str>| -> PersistentVolumeClaim {
        let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
        if let Some(c) = class {
            spec["storageClassName"] = json!(c);
        }
        json(json!({"metadata": {"name": name}, "spec": spec}))
    };
    let created = claims
        .create(&PostParams::default(), &pvc("data", None))
        .await
        .unwrap();
    assert_eq!(
        created.spec.as_ref().unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
    let bound = until(&claims, "data", "Bound", |c: &PersistentVolumeClaim| {
        c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
    })
    .await;
    let pv_name = bound.spec.unwrap().volume_name.unwrap();
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pv = pvs.get(&pv_name).await.unwrap();
    assert_eq!(
        pv.spec
            .as_ref()
            .unwrap()
            .claim_ref
            .as_ref()
            .unwrap()
            .name
            .as_deref(),
        Some("data")
    );
    assert_eq!(pv.status.unwrap().phase.as_deref(), Some("Bound"));

    claims
        .create(&PostParams::default(), &pvc("lost", Some("fancy")))
        .await
        .unwrap();
    assert_eq!(
        wait_core_event(&client, "st", "lost", "ProvisioningFailed").await,
        "storageclass.storage.k8s.io \"fancy\" not found"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "st");
    let p: Pod = json(
        json!({"metadata": {"name": "user"}, "spec": {"containers": [{"name": "a", "image": "nginx"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "lost"}}]}}),
    );
    pods.create(&PostParams::default(), &p).await.unwrap();
    let p = until(&pods, "user", "Unschedulable", |p: &Pod| {
        pod_condition(p, "PodScheduled").is_some_and(|c| c.1 == "Unschedulable")
    })
    .await;
    assert_eq!(
        pod_condition(&p, "PodScheduled").unwrap().2,
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    );
}
