//! Actor-runtime throughput without an API server: objects listed from memory, one no-op pass
//! each. Measures spawn + first pass + shutdown of N object actors.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher::Event;
use pgtoolbox_operator::actors::{ObjectContext, Outcome, ReconcileError, Reconciler, Shared};
use pgtoolbox_operator::supervisor::{Kind, KindOptions, OperatorBuilder};

struct Count(Arc<AtomicUsize>);

impl Reconciler for Count {
    type Object = ConfigMap;

    async fn reconcile(
        &self,
        _obj: Arc<ConfigMap>,
        _cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(Outcome::done())
    }
}

fn cm(i: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("o{i}")),
            namespace: Some("bench".into()),
            resource_version: Some(i.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::new()),
        ..ConfigMap::default()
    }
}

async fn converge(objects: usize) {
    let url = "http://127.0.0.1:9".parse().expect("static url");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("offline client");
    let done = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::unbounded();
    let kind = Kind::new(Count(done.clone()))
        .sources(vec![rx.boxed()])
        .options(KindOptions {
            startup_jitter: Duration::ZERO,
            ..KindOptions::default()
        });
    let operator = OperatorBuilder::new(client, Arc::new(Shared::default()))
        .register(kind)
        .start()
        .await
        .expect("operator starts");
    let _ = tx.unbounded_send(Event::Init);
    for i in 0..objects {
        let _ = tx.unbounded_send(Event::InitApply(cm(i)));
    }
    let _ = tx.unbounded_send(Event::InitDone);
    while done.load(Ordering::Relaxed) < objects {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    operator.shutdown(Duration::from_secs(30)).await;
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mut group = c.benchmark_group("runtime_converge");
    group.sample_size(10);
    for objects in [100, 1_000] {
        group.bench_with_input(BenchmarkId::from_parameter(objects), &objects, |b, &n| {
            b.iter(|| runtime.block_on(converge(n)));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
