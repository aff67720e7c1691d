//! The simulated cluster's own cost: N Deployments of one replica (default 10,000) created
//! through kube, until every one is Available (ReplicaSet, Pod scheduled, started, ready);
//! then the server's write rate with that cluster in it.
//!
//! Run: `cargo bench --bench sim_cluster` (figures go to BENCHMARKS.md). `SIM_CLUSTER_DEPLOYMENTS`
//! scales it; Nodes are sized so every Pod fits (110 Pods per Node).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::api::{Api, ListParams, PostParams};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::json;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resident set size of this process (the sim runs inside it), in MiB.
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn deployment(i: u64) -> Deployment {
    let name = format!("d{i:05}");
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}},
        },
    }))
    .expect("deployment")
}

/// Run `make(i)` for i in 0..n with 32 concurrent clients; returns requests/s.
async fn concurrently<F, Fut>(n: u64, make: F) -> f64
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let t = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let make = Arc::new(make);
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let next = next.clone();
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                make(i).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    n as f64 / t.elapsed().as_secs_f64()
}

fn available(d: &Deployment) -> bool {
    d.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter().any(|c| {
                c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True")
            })
        })
}

fn main() {
    let n = env_or("SIM_CLUSTER_DEPLOYMENTS", 10_000);
    let nodes = (n / 100 + 1).max(3) as u32;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let rss_empty = rss_mib();
        let sim = Sim::start(SimConfig {
            controllers: true,
            nodes,
            seed: Some(1),
            ..SimConfig::default()
        })
        .await
        .expect("sim");
        let client = sim.client();
        let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let ns = serde_json::from_value(json!({"metadata": {"name": "bench"}})).expect("ns");
        nss.create(&PostParams::default(), &ns)
            .await
            .expect("namespace");
        let rss_start = rss_mib();
        let deps: Api<Deployment> = Api::namespaced(client.clone(), "bench");
        let t = Instant::now();
        let api = deps.clone();
        let rate = concurrently(n, move |i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &deployment(i))
                    .await
                    .expect("create");
            }
        })
        .await;
        println!("create: {n} Deployments (1 replica), 32 clients: {rate:.0} creates/s");
        let mut last = 0;
        let deadline = Instant::now() + Duration::from_secs(1800);
        loop {
            let list = deps.list(&ListParams::default()).await.expect("list");
            let ready = list.items.iter().filter(|d| available(d)).count();
            if ready != last {
                last = ready;
            }
            if ready as u64 == n {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "only {ready} of {n} Available after 30 min"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let settled = t.elapsed();
        println!(
            "all {n} Deployments Available {:.1} s after the first create ({:.0} Deployments/s end to end, {nodes} Nodes)",
            settled.as_secs_f64(),
            n as f64 / settled.as_secs_f64()
        );
        let pods: Api<Pod> = Api::namespaced(client.clone(), "bench");
        let events: Api<Event> = Api::namespaced(client.clone(), "bench");
        let pod_count = pods.list(&ListParams::default()).await.expect("pods").items.len();
        let event_count = events
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .len();
        let rss_done = rss_mib();
        println!(
            "RSS: {rss_empty:.0} MiB before the sim, {rss_start:.0} MiB at start, {rss_done:.0} MiB with {n} Deployments, {pod_count} Pods, {event_count} Events ({:.1} KiB per Deployment incl. its ReplicaSet, Pod and Events)",
            (rss_done - rss_start) * 1024.0 / n as f64
        );
        // The server's write rate with the cluster in it (the components idle, as once settled).
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "bench");
        let writes = concurrently(10_000, move |i| {
            let api = cms.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(
                    json!({"metadata": {"name": format!("cm{i:05}")}, "data": {"k": "v"}}),
                )
                .expect("cm");
                api.create(&PostParams::default(), &cm)
                    .await
                    .expect("create");
            }
        })
        .await;
        println!("afterwards: 10,000 ConfigMap creates, 32 clients: {writes:.0} creates/s");
    });
}
