//! `pods/eviction`: `kubectl drain` and kube's `Api::evict` against the disruption budgets, as
//! the API server's eviction handler decides from a budget's status.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{EvictParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_support::start;

fn pod(name: &str, app: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}}))
    .expect("pod")
}

fn budget(name: &str, app: &str) -> PodDisruptionBudget {
    serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}}))
    .expect("pdb")
}

async fn budget_status(pdbs: &Api<PodDisruptionBudget>, name: &str, allowed: i32) {
    let status = json!({"status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
        "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}});
    pdbs.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .expect("pdb status");
}

/// POST an Eviction of `name` over plain HTTP/1.1: the status code and the JSON answer.
fn post(url: &str, path: &str, name: &str) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let host = url.trim_start_matches("http://");
    let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    let code = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let json = answer.split("\r\n\r\n").nth(1).unwrap_or("");
    (
        code,
        serde_json::from_str(json).unwrap_or(serde_json::Value::Null),
    )
}

#[tokio::test]
async fn evictions_follow_the_budget_status() {
    let (sim, client) = start().await;
    let url = sim.url().to_string();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    for (name, app) in [("free", "free"), ("guarded", "web"), ("twice", "both")] {
        pods.create(&pp, &pod(name, app)).await.expect("pod");
    }
    pdbs.create(&pp, &budget("web", "web")).await.expect("pdb");
    let ep = EvictParams::default();

    // No budget: the Pod goes.
    pods.evict("free", &ep).await.expect("evicted");
    assert!(pods.get_opt("free").await.expect("get").is_none());
    assert_eq!(
        crate::sim_support::code_of(pods.evict("missing", &ep).await).0,
        404
    );

    // A budget without a status (no disruption controller) refuses, as one not yet processed.
    // (Plain HTTP: kube's client would retry the 429 answers for minutes.)
    let evict = |name: &str| {
        post(
            &url,
            &format!("/api/v1/namespaces/default/pods/{name}/eviction"),
            name,
        )
    };
    let (code, status) = evict("guarded");
    assert_eq!((code, &status["reason"]), (429, &json!("TooManyRequests")));
    assert_eq!(
        status["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let cause = &status["details"]["causes"][0];
    assert_eq!(cause["reason"], "DisruptionBudget");
    assert_eq!(
        cause["message"],
        "The disruption budget web is still being processed by the server."
    );

    // A budget that allows none says how many healthy Pods it needs.
    budget_status(&pdbs, "web", 0).await;
    let (code, status) = evict("guarded");
    assert_eq!(code, 429);
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "The disruption budget web needs 1 healthy pods and has 1 currently"
    );

    // One allowed disruption is spent and recorded; the Pod goes.
    budget_status(&pdbs, "web", 1).await;
    pods.evict("guarded", &ep).await.expect("evicted");
    assert!(pods.get_opt("guarded").await.expect("get").is_none());
    let after = serde_json::to_value(pdbs.get("web").await.expect("pdb").status).expect("json");
    assert_eq!(after["disruptionsAllowed"], 0);
    assert!(after["disruptedPods"]["guarded"].is_string(), "{after}");

    // Two budgets over one Pod: the eviction handler does not choose.
    pdbs.create(&pp, &budget("both-a", "both"))
        .await
        .expect("pdb");
    pdbs.create(&pp, &budget("both-b", "both"))
        .await
        .expect("pdb");
    let (code, _) = evict("twice");
    assert_eq!(code, 500);
    assert!(pods.get_opt("twice").await.expect("get").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drain_evicts_the_pods_of_a_node() {
    if !kubectl_present() {
        eprintln!("kubectl not found: skipping the kubectl test");
        return;
    }
    let (sim, client) = start().await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).expect("node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("node");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod("a", "a"))
        .await
        .expect("pod");
    pods.create(&PostParams::default(), &pod("b", "b"))
        .await
        .expect("pod");
    let k = Kubectl::for_sim(&sim);
    let out =
        tokio::task::spawn_blocking(move || k.ok(&["drain", "n1", "--force", "--timeout=10s"]))
            .await
            .expect("kubectl drain");
    assert!(out.contains("node/n1 drained"), "{out}");
    assert!(
        pods.list(&Default::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
    let n1 = nodes.get("n1").await.expect("node");
    assert_eq!(n1.spec.and_then(|s| s.unschedulable), Some(true));
}
