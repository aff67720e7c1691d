//! Benchmarks of the embedded API server through a real kube::Client over loopback HTTP.
//!
//! Run: `cargo bench --bench sim` (figures go to BENCHMARKS.md). Sizes can be scaled with
//! `SIM_BENCH_OBJECTS` (default 10000) and `SIM_BENCH_SECONDS` (default 5).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::core::GroupVersionKind;
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::json;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn cm(name: String) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"bench": "yes"}}, "data": {"k": "v"}}),
    )
    .expect("configmap")
}

/// Creates `n` small ConfigMaps with 32 concurrent clients; returns writes/s.
async fn create_many(api: &Api<ConfigMap>, n: u64, prefix: &str) -> f64 {
    let t = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let api = api.clone();
        let next = next.clone();
        let prefix = prefix.to_string();
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                api.create(&PostParams::default(), &cm(format!("{prefix}{i:06}")))
                    .await
                    .expect("create");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    n as f64 / t.elapsed().as_secs_f64()
}

async fn bench_list(api: &Api<ConfigMap>, n: u64) {
    let rate = create_many(api, n, "list-").await;
    println!("create: {n} ConfigMaps, 32 clients: {rate:.0} creates/s");
    let mut best = Duration::MAX;
    let mut total = Duration::ZERO;
    let rounds = 10;
    for _ in 0..rounds {
        let t = Instant::now();
        let list = api.list(&ListParams::default()).await.expect("list");
        let d = t.elapsed();
        assert_eq!(list.items.len() as u64, n);
        best = best.min(d);
        total += d;
    }
    println!(
        "list: {n} objects: best {:.1} ms, mean {:.1} ms (decoded by kube into ConfigMap)",
        best.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3 / rounds as f64
    );
    let t = Instant::now();
    let page = api
        .list(&ListParams::default().limit(500))
        .await
        .expect("page");
    println!(
        "list: first page of 500 of {n}: {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(page.items.len(), 500);
}

async fn bench_fanout(client: &kube::Client, watchers: usize, writes: u64) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "fanout");
    let rv = api
        .list(&ListParams::default().limit(1))
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    let mut streams = Vec::new();
    for _ in 0..watchers {
        streams.push(
            api.watch(&WatchParams::default(), &rv)
                .await
                .expect("watch")
                .boxed(),
        );
    }
    let t = Instant::now();
    let counting: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            tokio::spawn(async move {
                let mut seen = 0u64;
                while seen < writes {
                    match s.next().await {
                        Some(Ok(WatchEvent::Added(_))) => seen += 1,
                        Some(_) => {}
                        None => break,
                    }
                }
                seen
            })
        })
        .collect();
    create_many(&api, writes, "fan-").await;
    let writes_done = t.elapsed();
    let mut delivered = 0;
    for c in counting {
        delivered += c.await.expect("watcher");
    }
    let all = t.elapsed();
    println!(
        "watch fan-out: {writes} writes to {watchers} watchers: writes done in {:.0} ms, all {delivered} events delivered in {:.0} ms ({:.0} events/s)",
        writes_done.as_secs_f64() * 1e3,
        all.as_secs_f64() * 1e3,
        delivered as f64 / all.as_secs_f64()
    );
}

async fn bench_status_writes(client: &kube::Client, clients: usize, seconds: u64) {
    let gvk = GroupVersionKind::gvk("postgresql.cnpg.io", "v1", "Cluster");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "clusters");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    for i in 0..clients {
        let obj: DynamicObject = serde_json::from_value(
            json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": format!("pg{i}")}, "spec": {"instances": 1}}),
        )
        .expect("cluster");
        api.create(&PostParams::default(), &obj)
            .await
            .expect("create cluster");
    }
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for i in 0..clients {
        let api = api.clone();
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let name = format!("pg{i}");
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                let patch = json!({"status": {"observedGeneration": 1, "readyInstances": n, "phase": "Cluster in healthy state"}});
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(patch)).await.expect("status patch");
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let t = Instant::now();
    for t in tasks {
        t.await.expect("task");
    }
    let n = done.load(Ordering::Relaxed);
    println!(
        "status writes: {clients} concurrent clients, merge patch /status: {n} in {:.1} s = {:.0} writes/s",
        t.elapsed().as_secs_f64(),
        n as f64 / t.elapsed().as_secs_f64()
    );
}

fn main() {
    let objects = env_or("SIM_BENCH_OBJECTS", 10_000);
    let seconds = env_or("SIM_BENCH_SECONDS", 5);
    // The sim runs its own 2-thread runtime; the clients get another 2 threads.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let sim = Sim::start(SimConfig {
            history: 20_000,
            ..SimConfig::default()
        })
        .await
        .expect("sim");
        let client = sim.client();
        let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        for ns in ["bench", "fanout"] {
            let n = serde_json::from_value(json!({"metadata": {"name": ns}})).expect("ns");
            nss.create(&PostParams::default(), &n)
                .await
                .expect("namespace");
        }
        bench_list(&Api::namespaced(client.clone(), "bench"), objects).await;
        bench_fanout(&client, 100, 1_000).await;
        bench_status_writes(&client, 32, seconds).await;
        let stats = sim.stats();
        println!(
            "server counted {} requests, {} writes",
            stats.total,
            stats.writes()
        );
    });
}
