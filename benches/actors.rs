//! Actor-level load benchmarks of the runtime alone: no API server, the kind is fed from an
//! in-memory watch stream (`Kind::sources`) and passes only count.
//!
//! Run: `cargo bench --bench actors` (criterion). Groups:
//! - `spawn/<N>`: N objects listed → N object actors started and through their first pass;
//!   also prints the RSS each actor adds.
//! - `routing/supervisor` vs `routing/mpsc_baseline`: one delta to each of 10,000 live objects,
//!   through the kind supervisor, against a plain tokio router task + one mpsc-fed task each.
//! - `coalescing`: bursts of 10 back-to-back deltas to each of 1,000 objects whose pass takes
//!   1 ms; prints deltas in vs passes out.
//! - `crash_isolation/{healthy,one_percent_panicking}`: one delta to each of 10,000 objects, the
//!   time until every healthy one passed, without and with 1% of them panicking on every pass.
//! - `hibernation/wake`: one delta to each of 10,000 hibernated objects, the time until each
//!   was respawned and passed (compare `routing/supervisor`, the same to live actors);
//!   `hibernation/hibernate`: from the last pass of such a round until all 10,000 idle actors
//!   hibernated again (polled every millisecond); also prints the RSS a hibernated object keeps.
//!
//! Every group but `hibernation` runs with hibernation off, so its actors stay live.

#[path = "common/mod.rs"]
mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher::Event;
use pgtoolbox_operator::testing::actors::{
    ObjectContext, Outcome, ReconcileError, Reconciler, Shared,
};
use pgtoolbox_operator::testing::k8s::decoded_event;
use pgtoolbox_operator::testing::supervisor::{
    Kind, KindOptions, Operator, OperatorBuilder, Registry,
};
use tokio::sync::Notify;

use common::{allocator, measure};

/// The operator binary's allocator (src/main.rs), so RSS figures are those of the shipped runtime.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Counts passes and wakes the benchmark when a target is reached.
#[derive(Default)]
struct Counter {
    passes: AtomicUsize,
    target: AtomicUsize,
    reached: Notify,
}

impl Counter {
    fn count(&self) {
        let done = self.passes.fetch_add(1, Ordering::AcqRel) + 1;
        if done >= self.target.load(Ordering::Acquire) {
            self.reached.notify_one();
        }
    }

    /// Waits until `extra` more passes than `from` were counted.
    async fn wait(&self, from: usize, extra: usize) {
        let target = from + extra;
        self.target.store(target, Ordering::Release);
        while self.passes.load(Ordering::Acquire) < target {
            self.reached.notified().await;
        }
    }

    fn get(&self) -> usize {
        self.passes.load(Ordering::Acquire)
    }
}

/// The test kind: counts passes; may take time, may panic for every `panic_every`-th object.
struct Probe {
    counter: Arc<Counter>,
    work: Duration,
    panic_every: Option<usize>,
}

fn index_of(name: &str) -> usize {
    name.trim_start_matches('o').parse().unwrap_or(usize::MAX)
}

impl Reconciler for Probe {
    type Object = ConfigMap;

    async fn reconcile(
        &self,
        _obj: Arc<ConfigMap>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        if let Some(every) = self.panic_every
            && index_of(&cx.key.name).is_multiple_of(every)
        {
            panic!("benchmark: injected failure");
        }
        if !self.work.is_zero() {
            tokio::time::sleep(self.work).await;
        }
        self.counter.count();
        Ok(Outcome::done())
    }
}

fn cm(i: usize, version: u64) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("o{i}")),
            namespace: Some("bench".into()),
            resource_version: Some(version.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::new()),
        ..ConfigMap::default()
    }
}

/// RSS once the allocator returned its free pages: live memory, not what earlier iterations left.
fn live_rss_kb() -> u64 {
    allocator::trim_heap();
    measure::rss_kb()
}

/// One kind on the runtime, fed by an in-memory stream.
struct Harness {
    operator: Operator,
    events: mpsc::UnboundedSender<Event<ConfigMap>>,
    counter: Arc<Counter>,
    registry: Registry<ConfigMap>,
    shared: Arc<Shared>,
    version: u64,
}

impl Harness {
    async fn start(work: Duration, panic_every: Option<usize>) -> Self {
        Self::start_with(
            work,
            panic_every,
            None,
            KindOptions::default().first_passes_at_once,
        )
        .await
    }

    async fn start_with(
        work: Duration,
        panic_every: Option<usize>,
        hibernate_after: Option<Duration>,
        first_passes_at_once: Option<usize>,
    ) -> Self {
        let url = "http://127.0.0.1:9".parse().expect("static url");
        let client = kube::Client::try_from(kube::Config::new(url)).expect("offline client");
        let counter = Arc::new(Counter::default());
        let (events, rx) = mpsc::unbounded();
        let kind = Kind::new(Probe {
            counter: counter.clone(),
            work,
            panic_every,
        })
        .sources(vec![rx.map(decoded_event).boxed()])
        .options(KindOptions {
            startup_jitter: Duration::ZERO,
            hibernate_after,
            first_passes_at_once,
            ..KindOptions::default()
        });
        let registry = kind.registry();
        let shared = Arc::new(Shared::default());
        let operator = OperatorBuilder::new(client, shared.clone())
            .register(kind)
            .start()
            .await
            .expect("operator starts");
        Self {
            operator,
            events,
            counter,
            registry,
            shared,
            version: 1,
        }
    }

    /// Waits until every one of `n` objects is hibernated.
    async fn all_asleep(&self, n: usize) {
        while self.shared.runtime.objects("ConfigMap") != (0, n as i64) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Lists `n` objects and waits until `expect_passes` first passes are done.
    async fn populate(&mut self, n: usize, expect_passes: usize) {
        let from = self.counter.get();
        let _ = self.events.unbounded_send(Event::Init);
        for i in 0..n {
            let _ = self
                .events
                .unbounded_send(Event::InitApply(cm(i, self.version)));
        }
        let _ = self.events.unbounded_send(Event::InitDone);
        self.counter.wait(from, expect_passes).await;
    }

    /// Sends `rounds` changed versions of each object in `0..n`, one round after the other
    /// (deltas of one object are `n` deltas apart).
    fn deltas(&mut self, n: usize, rounds: usize) {
        for _ in 0..rounds {
            self.version += 1;
            for i in 0..n {
                let _ = self
                    .events
                    .unbounded_send(Event::Apply(cm(i, self.version)));
            }
        }
    }

    /// Sends `burst` changed versions of one object after the other, for each object in `0..n`
    /// (deltas of one object back to back).
    fn bursts(&mut self, n: usize, burst: usize) {
        for i in 0..n {
            for _ in 0..burst {
                self.version += 1;
                let _ = self
                    .events
                    .unbounded_send(Event::Apply(cm(i, self.version)));
            }
        }
    }

    async fn stop(self) {
        self.operator.shutdown(Duration::from_secs(60)).await;
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("tokio runtime")
}

fn spawn(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("spawn");
    group.sample_size(10);
    for n in [1_000, 10_000, 100_000] {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mut h = Harness::start(Duration::ZERO, None).await;
                        let start = Instant::now();
                        h.populate(n, n).await;
                        total += start.elapsed();
                        h.stop().await;
                    }
                    total
                })
            });
        });
        // Memory, once per size: what N live idle actors (and the supervisor's copy of each
        // object) add to the process.
        rt.block_on(async {
            let before = live_rss_kb();
            let mut h = Harness::start(Duration::ZERO, None).await;
            h.populate(n, n).await;
            let after = live_rss_kb();
            println!(
                "spawn/{n}: {} live actors, RSS +{} KiB = {:.2} KB per actor (object copy included)",
                h.registry.len(),
                after.saturating_sub(before),
                after.saturating_sub(before) as f64 * 1.024 / n as f64
            );
            h.stop().await;
        });
    }
    group.finish();
}

/// The baseline router: a task reading the same events, one tokio task + mpsc per object.
struct MpscFanOut {
    events: tokio::sync::mpsc::UnboundedSender<Event<ConfigMap>>,
    counter: Arc<Counter>,
    _router: tokio::task::JoinHandle<()>,
}

impl MpscFanOut {
    fn start() -> Self {
        let counter = Arc::new(Counter::default());
        let (events, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event<ConfigMap>>();
        let shared = counter.clone();
        let router = tokio::spawn(async move {
            let mut objects: HashMap<String, tokio::sync::mpsc::UnboundedSender<Arc<ConfigMap>>> =
                HashMap::new();
            while let Some(event) = rx.recv().await {
                let (Event::Apply(obj) | Event::InitApply(obj)) = event else {
                    continue;
                };
                let key = obj.metadata.name.clone().unwrap_or_default();
                let obj = Arc::new(obj);
                let tx = objects.entry(key).or_insert_with(|| {
                    let (tx, mut mailbox) = tokio::sync::mpsc::unbounded_channel();
                    let counter = shared.clone();
                    tokio::spawn(async move {
                        while let Some(_obj) = mailbox.recv().await {
                            counter.count();
                        }
                    });
                    tx
                });
                let _ = tx.send(obj);
            }
        });
        Self {
            events,
            counter,
            _router: router,
        }
    }

    fn send_round(&self, n: usize, version: u64) {
        for i in 0..n {
            let _ = self.events.send(Event::Apply(cm(i, version)));
        }
    }
}

fn routing(c: &mut Criterion) {
    const N: usize = 10_000;
    let rt = runtime();
    let mut group = c.benchmark_group("routing");
    group.sample_size(20);
    group.throughput(Throughput::Elements(N as u64));
    let mut h = rt.block_on(async {
        let mut h = Harness::start(Duration::ZERO, None).await;
        h.populate(N, N).await;
        h
    });
    group.bench_function("supervisor", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let from = h.counter.get();
                    h.deltas(N, 1);
                    h.counter.wait(from, N).await;
                }
                start.elapsed()
            })
        });
    });
    rt.block_on(h.stop());
    let baseline = rt.block_on(async {
        let b = MpscFanOut::start();
        b.send_round(N, 1);
        b.counter.wait(0, N).await;
        b
    });
    let mut version = 1;
    group.bench_function("mpsc_baseline", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    version += 1;
                    let from = baseline.counter.get();
                    baseline.send_round(N, version);
                    baseline.counter.wait(from, N).await;
                }
                start.elapsed()
            })
        });
    });
    group.finish();
}

fn coalescing(c: &mut Criterion) {
    const N: usize = 1_000;
    const BURST: usize = 10;
    let rt = runtime();
    let mut group = c.benchmark_group("coalescing");
    group.sample_size(10);
    group.throughput(Throughput::Elements((N * BURST) as u64));
    let mut h = rt.block_on(async {
        let mut h = Harness::start(Duration::from_millis(1), None).await;
        h.populate(N, N).await;
        h
    });
    let (mut deltas_in, mut passes_out) = (0usize, 0usize);
    group.bench_function(BenchmarkId::new("burst", BURST), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let from = h.counter.get();
                    let start = Instant::now();
                    h.bursts(N, BURST);
                    // Every object passes at least once after its last delta.
                    h.counter.wait(from, N).await;
                    // Let passes already queued finish, so none is counted in the next round.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    total += start.elapsed();
                    deltas_in += N * BURST;
                    passes_out += h.counter.get() - from;
                }
                total
            })
        });
    });
    group.finish();
    println!(
        "coalescing: {deltas_in} deltas in, {passes_out} passes out ({:.2} deltas per pass)",
        deltas_in as f64 / passes_out.max(1) as f64
    );
    rt.block_on(h.stop());
}

fn crash_isolation(c: &mut Criterion) {
    const N: usize = 10_000;
    let rt = runtime();
    // Injected panics would print a backtrace each; keep the output readable.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut group = c.benchmark_group("crash_isolation");
    group.sample_size(20);
    for (label, panic_every) in [("healthy", None), ("one_percent_panicking", Some(100))] {
        let healthy = match panic_every {
            Some(every) => N - N.div_ceil(every),
            None => N,
        };
        group.throughput(Throughput::Elements(healthy as u64));
        let mut h = rt.block_on(async {
            let mut h = Harness::start(Duration::ZERO, panic_every).await;
            h.populate(N, healthy).await;
            h
        });
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let from = h.counter.get();
                        h.deltas(N, 1);
                        h.counter.wait(from, healthy).await;
                    }
                    start.elapsed()
                })
            });
        });
        rt.block_on(h.stop());
    }
    group.finish();
    std::panic::set_hook(default_hook);
}

fn hibernation(c: &mut Criterion) {
    const N: usize = 10_000;
    let rt = runtime();
    // Memory first, each size in a fresh kind: what a hibernated object keeps (the
    // supervisor's entry and its object copy) against a live actor (the `spawn` group); with
    // the default cold-start bound and without it (every actor live at once).
    let bound = KindOptions::default().first_passes_at_once;
    for (n, at_once) in [
        (10_000, None),
        (10_000, bound),
        (100_000, None),
        (100_000, bound),
    ] {
        rt.block_on(async {
            let before = live_rss_kb();
            let heap_before = allocator::heap_in_use_kb();
            let mut h =
                Harness::start_with(Duration::ZERO, None, Some(Duration::ZERO), at_once).await;
            h.populate(n, n).await;
            let started = Instant::now();
            h.all_asleep(n).await;
            let asleep_after = started.elapsed();
            let after = live_rss_kb();
            let heap = allocator::heap_in_use_kb().saturating_sub(heap_before);
            println!(
                "hibernation/{n} (first passes at once: {at_once:?}): all asleep {:.1} ms after the last first pass; RSS +{} KiB = {:.2} KB per hibernated object (object copy included); heap in use {:.2} KB per object",
                asleep_after.as_secs_f64() * 1e3,
                after.saturating_sub(before),
                after.saturating_sub(before) as f64 * 1.024 / n as f64,
                heap as f64 * 1.024 / n as f64
            );
            h.stop().await;
        });
    }
    let mut group = c.benchmark_group("hibernation");
    group.sample_size(20);
    group.throughput(Throughput::Elements(N as u64));
    let mut h = rt.block_on(async {
        let mut h = Harness::start_with(Duration::ZERO, None, Some(Duration::ZERO), bound).await;
        h.populate(N, N).await;
        h.all_asleep(N).await;
        h
    });
    // Waking: one delta to each hibernated object, until each was respawned and passed.
    group.bench_function("wake", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let from = h.counter.get();
                    let start = Instant::now();
                    h.deltas(N, 1);
                    h.counter.wait(from, N).await;
                    total += start.elapsed();
                    // Back to sleep before the next round (not timed here).
                    h.all_asleep(N).await;
                }
                total
            })
        });
    });
    // Hibernating: from the last pass of a round of wake-ups until every idle actor was
    // stopped and its object packed by the supervisor (no linger: `hibernate_after` 0).
    group.bench_function("hibernate", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let from = h.counter.get();
                    h.deltas(N, 1);
                    h.counter.wait(from, N).await;
                    let passed = Instant::now();
                    h.all_asleep(N).await;
                    total += passed.elapsed();
                }
                total
            })
        });
    });
    group.finish();
    rt.block_on(h.stop());
}

criterion_group!(
    benches,
    spawn,
    routing,
    coalescing,
    crash_isolation,
    hibernation
);
criterion_main!(benches);
