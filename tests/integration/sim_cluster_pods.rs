//! Nodes, scheduler and kubelet of the simulated cluster, seen through kube and kubectl.

use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use pgtoolbox_sim::SimConfig;
use serde_json::json;

use crate::sim_cluster_support::{cluster, cluster_with, json, pod_condition, waiting};
use crate::sim_support::{code_of, start};
use crate::wait_support::{until, wait_core_event};

fn pod(name: &str, spec: serde_json::Value) -> Pod {
    json(json!({"metadata": {"name": name, "labels": {"app": name}}, "spec": spec}))
}

fn simple(name: &str) -> Pod {
    pod(
        name,
        json!({"containers": [{"name": "app", "image": "nginx:1.27"}]}),
    )
}

#[tokio::test]
async fn nodes_are_registered_as_a_kubelet_does() {
    let (_sim, client) = cluster_with(
        "n",
        SimConfig {
            nodes: 2,
            ..Default::default()
        },
    )
    .await;
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes.list(&ListParams::default()).await.unwrap().items;
    let names: Vec<String> = list
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    assert_eq!(names, vec!["sim-node-1", "sim-node-2"]);
    let n = &list[1];
    let spec = n.spec.as_ref().unwrap();
    assert_eq!(spec.pod_cidr.as_deref(), Some("10.244.2.0/24"));
    assert_eq!(
        spec.pod_cidrs.as_deref(),
        Some(&["10.244.2.0/24".to_string()][..])
    );
    let status = n.status.as_ref().unwrap();
    let alloc = status.allocatable.as_ref().unwrap();
    assert_eq!(alloc["cpu"].0, "4");
    assert_eq!(alloc["memory"].0, "16Gi");
    assert_eq!(alloc["pods"].0, "110");
    let ready = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("True", Some("KubeletReady"))
    );
    assert_eq!(
        ready.message.as_deref(),
        Some("kubelet is posting ready status")
    );
}

#[tokio::test]
async fn without_controllers_nothing_happens() {
    let (_sim, client) = start().await;
    let nodes: Api<Node> = Api::all(client.clone());
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let created = pods
        .create(&PostParams::default(), &simple("idle"))
        .await
        .unwrap();
    // As the registry's create strategy answers: Pending, with the QoS class.
    let status = created.status.expect("a status on create");
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let p = pods.get("idle").await.unwrap();
    assert!(p.spec.unwrap().node_name.is_none());
}

#[tokio::test]
async fn a_pod_is_scheduled_started_and_ready() {
    let (_sim, client) = cluster("run").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "run");
    pods.create(&PostParams::default(), &simple("web"))
        .await
        .unwrap();
    let p = until(&pods, "web", "Running and Ready", |p: &Pod| {
        pod_condition(p, "Ready").is_some_and(|c| c.0 == "True")
    })
    .await;
    let status = p.status.clone().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let node = p.spec.as_ref().unwrap().node_name.clone().unwrap();
    let i: u32 = node.trim_start_matches("sim-node-").parse().unwrap();
    let ip = status.pod_ip.clone().unwrap();
    assert!(
        ip.starts_with(&format!("10.244.{i}.")),
        "{ip} not in node {i}'s podCIDR"
    );
    let cs = &status.container_statuses.unwrap()[0];
    assert!(cs.ready && cs.started == Some(true));
    assert!(cs.state.as_ref().unwrap().running.is_some());
    assert_eq!(cs.image, "docker.io/library/nginx:1.27");
    assert!(
        cs.container_id
            .as_deref()
            .unwrap()
            .starts_with("containerd://")
    );
    for c in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "PodScheduled",
    ] {
        assert_eq!(pod_condition(&p, c).unwrap().0, "True", "{c}");
    }
    let scheduled = wait_core_event(&client, "run", "web", "Scheduled").await;
    assert_eq!(
        scheduled,
        format!("Successfully assigned run/web to {node}")
    );
    assert_eq!(
        wait_core_event(&client, "run", "web", "Pulling").await,
        "Pulling image \"nginx:1.27\""
    );
    assert_eq!(
        wait_core_event(&client, "run", "web", "Started").await,
        "Started container app"
    );
}

#[tokio::test]
async fn a_pod_that_fits_nowhere_is_unschedulable_until_room_appears() {
    let (_sim, client) = cluster("big").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "big");
    let greedy = |name: &str, cpu: &str| {
        pod(
            name,
            json!({"containers": [{"name": "app", "image": "nginx",
            "resources": {"requests": {"cpu": cpu}}}]}),
        )
    };
    pods.create(&PostParams::default(), &greedy("huge", "5"))
        .await
        .unwrap();
    let p = until(&pods, "huge", "Unschedulable", |p: &Pod| {
        pod_condition(p, "PodScheduled").is_some_and(|c| c.1 == "Unschedulable")
    })
    .await;
    let (status, _, message) = pod_condition(&p, "PodScheduled").unwrap();
    assert_eq!(status, "False");
    assert_eq!(message, "0/3 nodes are available: 3 Insufficient cpu.");
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
    assert_eq!(
        wait_core_event(&client, "big", "huge", "FailedScheduling").await,
        "0/3 nodes are available: 3 Insufficient cpu."
    );
    let selective = pod(
        "picky",
        json!({"nodeSelector": {"disk": "ssd"},
        "containers": [{"name": "app", "image": "nginx"}]}),
    );
    pods.create(&PostParams::default(), &selective)
        .await
        .unwrap();
    let p = until(&pods, "picky", "Unschedulable", |p: &Pod| {
        pod_condition(p, "PodScheduled").is_some_and(|c| c.1 == "Unschedulable")
    })
    .await;
    assert_eq!(
        pod_condition(&p, "PodScheduled").unwrap().2,
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    );
    // Room appears: a node gets the label the pod asks for.
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(
            "sim-node-2",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"disk": "ssd"}}})),
        )
        .await
        .unwrap();
    let p = until(&pods, "picky", "bound", |p: &Pod| {
        p.spec.as_ref().unwrap().node_name.is_some()
    })
    .await;
    assert_eq!(p.spec.unwrap().node_name.as_deref(), Some("sim-node-2"));
}

#[tokio::test]
async fn missing_config_is_reported_as_the_kubelet_reports_it() {
    let (_sim, client) = cluster("cfg").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "cfg");
    let env_pod = pod(
        "env",
        json!({"containers": [{"name": "app", "image": "nginx", "env": [
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
            {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "x", "optional": true}}},
        ]}]}),
    );
    pods.create(&PostParams::default(), &env_pod).await.unwrap();
    let p = until(&pods, "env", "CreateContainerConfigError", |p: &Pod| {
        waiting(p).is_some_and(|w| w.0 == "CreateContainerConfigError")
    })
    .await;
    assert_eq!(waiting(&p).unwrap().1, "secret \"db\" not found");
    assert_eq!(
        wait_core_event(&client, "cfg", "env", "Failed").await,
        "Error: secret \"db\" not found"
    );

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "cfg");
    let s: Secret = json(json!({"metadata": {"name": "db"}, "data": {"user": "eA=="}}));
    secrets.create(&PostParams::default(), &s).await.unwrap();
    let p = until(&pods, "env", "missing key reported", |p: &Pod| {
        waiting(p).is_some_and(|w| w.1.starts_with("couldn't find key"))
    })
    .await;
    assert_eq!(
        waiting(&p).unwrap().1,
        "couldn't find key password in Secret cfg/db"
    );
    secrets
        .patch(
            "db",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"data": {"password": "eA=="}})),
        )
        .await
        .unwrap();
    until(&pods, "env", "Running once the key exists", |p: &Pod| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;

    let vol_pod = pod(
        "vol",
        json!({"containers": [{"name": "app", "image": "nginx"}],
        "volumes": [{"name": "certs", "secret": {"secretName": "tls"}},
                    {"name": "maybe", "secret": {"secretName": "absent", "optional": true}}]}),
    );
    pods.create(&PostParams::default(), &vol_pod).await.unwrap();
    assert_eq!(
        wait_core_event(&client, "cfg", "vol", "FailedMount").await,
        "MountVolume.SetUp failed for volume \"certs\" : secret \"tls\" not found"
    );
    let p = pods.get("vol").await.unwrap();
    assert_eq!(waiting(&p).unwrap().0, "ContainerCreating");
    let tls: Secret = json(json!({"metadata": {"name": "tls"}, "data": {}}));
    secrets.create(&PostParams::default(), &tls).await.unwrap();
    until(&pods, "vol", "Running once mounted", |p: &Pod| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;

    let bad = pod(
        "bad",
        json!({"containers": [{"name": "app", "image": "Not/Valid"}]}),
    );
    pods.create(&PostParams::default(), &bad).await.unwrap();
    let p = until(&pods, "bad", "InvalidImageName", |p: &Pod| {
        waiting(p).is_some_and(|w| w.0 == "InvalidImageName")
    })
    .await;
    assert!(
        waiting(&p)
            .unwrap()
            .1
            .contains("couldn't parse image name \"Not/Valid\"")
    );
}

#[tokio::test]
async fn deleting_a_running_pod_is_graceful() {
    let (_sim, client) = cluster("del").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "del");
    pods.create(&PostParams::default(), &simple("bye"))
        .await
        .unwrap();
    until(&pods, "bye", "running", |p: &Pod| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    let answer = pods.delete("bye", &DeleteParams::default()).await.unwrap();
    let marked = answer.left().expect("the pod is still there, terminating");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(30));
    for _ in 0..100 {
        if pods.get_opt("bye").await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (code, _) = code_of(pods.get("bye").await);
    panic!("the kubelet never removed the pod ({code})");
}

/// `sim --api-only` with the cluster flags: the Nodes it registers, or none with
/// `--no-controllers`.
async fn binary_node_names(flags: &[&str]) -> Vec<String> {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pgtoolbox-operator"))
        .args(["sim", "--api-only", "--listen", "127.0.0.1:0"])
        .args(flags)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let url = BufReader::new(stdout)
        .lines()
        .next()
        .expect("a line")
        .expect("utf-8");
    let mut config = kube::Config::new(url.parse().expect("url"));
    config.default_namespace = "default".into();
    let client = kube::Client::try_from(config).expect("client");
    let nodes: Api<Node> = Api::all(client);
    let names = nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    names
}

#[tokio::test]
async fn the_sim_binary_runs_the_cluster_unless_told_not_to() {
    assert_eq!(
        binary_node_names(&["--nodes", "2", "--seed", "5", "--pod-start-ms", "50"]).await,
        vec!["sim-node-1", "sim-node-2"]
    );
    assert!(binary_node_names(&["--no-controllers"]).await.is_empty());
}

/// Node choices and Service IPs of a run, to compare two runs with the same seed.
async fn choices(seed: u64) -> (Vec<String>, String) {
    let (_sim, client) = cluster_with(
        "seeded",
        SimConfig {
            seed: Some(seed),
            ..Default::default()
        },
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "seeded");
    let mut nodes = Vec::new();
    for i in 0..6 {
        let name = format!("p{i}");
        pods.create(&PostParams::default(), &simple(&name))
            .await
            .unwrap();
        let p = until(&pods, &name, "bound", |p: &Pod| {
            p.spec.as_ref().unwrap().node_name.is_some()
        })
        .await;
        nodes.push(p.spec.unwrap().node_name.unwrap());
    }
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(client.clone(), "seeded");
    let svc = json(json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}));
    let created = services.create(&PostParams::default(), &svc).await.unwrap();
    (nodes, created.spec.unwrap().cluster_ip.unwrap())
}

#[tokio::test]
async fn a_seed_reproduces_the_clusters_choices() {
    let first = choices(42).await;
    let second = choices(42).await;
    assert_eq!(first, second);
    // Pods without requests spread over the three nodes (least allocated first).
    let mut spread = first.0.clone();
    spread.sort();
    spread.dedup();
    assert_eq!(spread.len(), 3, "{:?}", first.0);
}

#[tokio::test]
async fn the_pgadmin_image_refuses_what_the_real_one_refuses() {
    let (_sim, client) = cluster("img").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "img");
    // The real image's entrypoint refuses a special-use e-mail domain (tests/real found it).
    let refused = pod(
        "refused",
        json!({"containers": [{"name": "pgadmin", "image": "docker.io/dpage/pgadmin4:9.10",
            "env": [{"name": "PGADMIN_DEFAULT_EMAIL", "value": "admin@p.team-a.pgadmin.local"}]}]}),
    );
    pods.create(&PostParams::default(), &refused).await.unwrap();
    until(&pods, "refused", "CrashLoopBackOff", |p: &Pod| {
        waiting(p).is_some_and(|w| w.0 == "CrashLoopBackOff")
    })
    .await;
    // Allowed, it runs; and a probe on a port the container does not declare never passes.
    let allowed = pod(
        "allowed",
        json!({"containers": [{"name": "pgadmin", "image": "docker.io/dpage/pgadmin4:9.10",
            "readinessProbe": {"httpGet": {"path": "/misc/ping", "port": "http"}},
            "env": [{"name": "PGADMIN_DEFAULT_EMAIL", "value": "admin@p.team-a.pgadmin.local"},
                {"name": "PGADMIN_CONFIG_ALLOW_SPECIAL_EMAIL_DOMAINS", "value": "'local'"}]}]}),
    );
    pods.create(&PostParams::default(), &allowed).await.unwrap();
    assert_eq!(
        wait_core_event(&client, "img", "allowed", "Unhealthy").await,
        "Readiness probe errored: couldn't find port: http"
    );
    let p = pods.get("allowed").await.unwrap();
    assert_eq!(
        p.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Running")
    );
    assert_eq!(
        pod_condition(&p, "Ready").map(|c| c.0).as_deref(),
        Some("False")
    );
}

/// ServiceAccount admission adds the `kube-api-access-*` projected volume to a Pod; the root
/// CA publisher has put the `kube-root-ca.crt` it projects into every namespace (the new one
/// too, and back after a delete), so the kubelet mounts it and the Pod runs.
#[tokio::test]
async fn the_service_account_volume_mounts_from_the_published_root_ca() {
    use k8s_openapi::api::core::v1::ConfigMap;

    let (_sim, client) = cluster("sa").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "sa");
    let published = until(&cms, "kube-root-ca.crt", "published", |cm| {
        cm.data
            .as_ref()
            .and_then(|d| d.get("ca.crt"))
            .is_some_and(|ca| ca.starts_with("-----BEGIN CERTIFICATE-----"))
    })
    .await;
    let defaults: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let elsewhere = defaults
        .get("kube-root-ca.crt")
        .await
        .expect("in default too");
    assert_eq!(elsewhere.data, published.data, "one CA for the cluster");
    cms.delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .expect("deleted");
    until(&cms, "kube-root-ca.crt", "published again", |cm| {
        cm.data == published.data
    })
    .await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "sa");
    let created = pods
        .create(&PostParams::default(), &simple("web"))
        .await
        .expect("created");
    let spec = created.spec.expect("spec");
    let volume = &spec.volumes.expect("volumes")[0];
    assert!(volume.name.starts_with("kube-api-access-"), "{volume:?}");
    let mounts = spec.containers[0].volume_mounts.clone().expect("mounts");
    assert_eq!(mounts[0].name, volume.name);
    assert_eq!(
        mounts[0].mount_path,
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    until(&pods, "web", "running", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
}
