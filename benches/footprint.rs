//! What each object costs the runtime, in heap bytes, measured with a counting allocator (no
//! RSS noise, no API server): a live actor, a hibernated object's supervisor entry, an armed
//! timer, the copy of a PgAccessRequest as the watch delivers it, and what the RoleBinding
//! cache (the owned-children store every approved request is filed in) keeps per binding.
//! Since issue 16's slim cache a hibernated object's copy keeps condition messages as digests
//! (`Packed::pack_slim`) and the children stores keep children packed (`Kept`); the rows
//! without those are still printed for comparison.
//!
//! Then the workload kinds: one PgToolBoxConsole, PgAdmin and EvidenceAgent made as the mixed
//! fleet makes them (`benches/fleet/world.rs`) on the simulated cluster, the operator in this
//! process, until Ready; each child its stores then hold (Deployment, ReplicaSet, Pod, Service,
//! Job, ...) is measured as one of `FOOTPRINT_N` copies (renamed, each under its own owner):
//! its decoded copy, and the store's entry and owner index on top. A child is measured as the
//! stores keep it (`OperatorCaches::dump`): ReplicaSets and Pods projected (`reconcile::observed`).
//!
//! Run: `cargo bench --bench footprint` (under a minute; `FOOTPRINT_N`, default 10,000).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, ListParams};
use kube::core::NamespaceResourceScope;
use kube::runtime::watcher::Event;
use pgtoolbox_operator::api::{EvidenceAgent, PgAccessRequest, PgAdmin, PgToolBoxConsole};
use pgtoolbox_operator::cli::register_all_with;
use pgtoolbox_operator::testing::actors::shared::start_shared_actors;
use pgtoolbox_operator::testing::actors::{
    ObjectContext, Outcome, ReconcileError, Reconciler, Shared,
};
use pgtoolbox_operator::testing::children::{
    ChildStore, HttpRoute, OperatorCaches, REQUEST_LABEL, Relist, Route, our_owner, owner_label,
};
use pgtoolbox_operator::testing::health::Readiness;
use pgtoolbox_operator::testing::k8s::{Packed, decoded_event};
use pgtoolbox_operator::testing::messages::TimerPurpose;
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::{
    Kind, KindOptions, Operator, OperatorBuilder, OperatorSettings,
};
use pgtoolbox_sim::{Sim, SimConfig};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

// The fleet bench's world (its namespaces, Clusters and objects); this bench uses part of it.
#[allow(dead_code)]
#[path = "fleet/world.rs"]
mod world;

/// Counts the bytes currently allocated on the heap.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same layout, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: `ptr` came from `alloc` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// A pass that only counts, optionally arming one timer.
struct Probe {
    passes: Arc<AtomicUsize>,
    timer: bool,
}

impl Reconciler for Probe {
    type Object = ConfigMap;

    async fn reconcile(
        &self,
        _obj: Arc<ConfigMap>,
        _cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.passes.fetch_add(1, Ordering::Relaxed);
        let outcome = Outcome::done();
        Ok(if self.timer {
            outcome.after(TimerPurpose::Expiry, Duration::from_secs(3600))
        } else {
            outcome
        })
    }
}

fn cm(i: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("o{i}")),
            namespace: Some("bench".into()),
            resource_version: Some("1".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::new()),
        ..ConfigMap::default()
    }
}

struct Setup {
    hibernate: bool,
    timer: bool,
}

/// Heap bytes per object once `n` objects are listed, passed and settled.
async fn per_object(n: usize, setup: Setup) -> f64 {
    let url = "http://127.0.0.1:9".parse().expect("static url");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("offline client");
    let passes = Arc::new(AtomicUsize::new(0));
    let (events, rx) = mpsc::unbounded();
    let kind = Kind::new(Probe {
        passes: passes.clone(),
        timer: setup.timer,
    })
    .sources(vec![rx.map(decoded_event).boxed()])
    .options(KindOptions {
        startup_jitter: Duration::ZERO,
        hibernate_after: setup.hibernate.then_some(Duration::ZERO),
        ..KindOptions::default()
    });
    let shared = Arc::new(Shared::default());
    let operator: Operator = OperatorBuilder::new(client, shared.clone())
        .register(kind)
        .start()
        .await
        .expect("operator starts");
    settle().await;
    let before = live();
    // Counted: the copy the supervisor keeps is part of what an object costs.
    let objects: Vec<ConfigMap> = (0..n).map(cm).collect();
    let _ = events.unbounded_send(Event::Init);
    for obj in objects {
        let _ = events.unbounded_send(Event::InitApply(obj));
    }
    let _ = events.unbounded_send(Event::InitDone);
    while passes.load(Ordering::Relaxed) < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let want = if setup.hibernate {
        (0, n as i64)
    } else {
        (n as i64, 0)
    };
    while shared.runtime.objects("ConfigMap") != want {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    settle().await;
    let bytes = (live() - before) as f64 / n as f64;
    operator.shutdown(Duration::from_secs(30)).await;
    bytes
}

/// Lets queued messages and timer commands drain.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Bytes per object of `make()` kept alive, `n` of them.
fn bytes_of<T>(n: usize, make: impl Fn(usize) -> T) -> f64 {
    let before = live();
    let kept: Vec<T> = (0..n).map(make).collect();
    let bytes = (live() - before) as f64 / n as f64;
    // The Vec's own slots are not part of an object.
    let slots = (n * std::mem::size_of::<T>()) as f64 / n as f64;
    drop(kept);
    bytes - slots
}

/// What a hibernated object's copy becomes (`supervisor::packed`).
fn pack<T: serde::Serialize>(obj: &T) -> Box<[u8]> {
    serde_json::to_vec(obj).expect("encodes").into_boxed_slice()
}

/// A converged, approved PgAccessRequest as the watch delivers it (managedFields dropped), its
/// status as the operator writes it.
fn access_request(i: usize) -> serde_json::Value {
    let name = format!("req-{i:06}");
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": status, "reason": reason, "message": message,
               "observedGeneration": 1, "lastTransitionTime": "2026-12-01T06:14:05Z"})
    };
    json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAccessRequest",
        "metadata": {
            "name": name, "namespace": "team-3", "uid": format!("0b7c6a1e-5d2f-4c1a-9e8b-{i:012}"),
            "resourceVersion": (100_000 + i).to_string(), "generation": 1,
            "creationTimestamp": "2026-12-01T06:13:58Z",
        },
        "spec": {
            "subject": {"kind": "User", "name": "alice"},
            "cluster": "orders", "clusterRole": "view",
            "expiresAt": "2026-12-01T07:14:24Z", "reason": "incident 4711",
        },
        "status": {
            "observedGeneration": 1,
            "phase": "Approved", "approver": "bob",
            "decidedAt": "2026-12-01T06:14:04Z", "roleBindingName": format!("pgar-{name}"),
            "conditions": [
                condition("Ready", "True", "AsExpected", "every aspect holds at the current generation"),
                condition("Progressing", "False", "AsExpected", "every child is at its desired state"),
                condition("Stalled", "False", "AsExpected", "progress does not wait for a change of input"),
                condition("ConfigurationValid", "True", "AsExpected", "the grant binds ClusterRole \"view\" on Cluster \"orders\""),
                condition("RoleBindingSynced", "True", "AccessGranted",
                    &format!("RoleBinding pgar-{name} binds User alice to ClusterRole \"view\" until 2026-12-01T07:14:24Z")),
            ],
        },
    })
}

/// An approved request's RoleBinding as the operator writes it and the watch delivers it.
fn role_binding(i: usize) -> RoleBinding {
    let request = format!("req-{i:06}");
    serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": format!("pgar-{request}"), "namespace": "team-3",
            "uid": format!("7d3c2b1a-0f9e-4d8c-b7a6-{i:012}"),
            "resourceVersion": (200_000 + i).to_string(),
            "creationTimestamp": "2026-12-01T06:14:04Z",
            "labels": {REQUEST_LABEL: request, "app.kubernetes.io/managed-by": "pgtoolbox-operator"},
            "ownerReferences": [{"apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
                "kind": "PgAccessRequest", "name": request,
                "uid": format!("0b7c6a1e-5d2f-4c1a-9e8b-{i:012}"),
                "controller": true, "blockOwnerDeletion": true}],
        },
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
    }))
    .expect("decodes")
}

/// Heap bytes per binding the RoleBinding cache keeps: its entry, the decoded binding and
/// the owner index, `n` bindings listed by its watch.
fn binding_cache_bytes(n: usize) -> f64 {
    // Each binding is made as the watch would deliver it and handed over; the store keeps
    // what it keeps of it (packed since issue 16, the decoded binding dropped).
    let before = live();
    let store = ChildStore::<RoleBinding>::new(
        "RoleBindings of requests",
        owner_label("PgAccessRequest", REQUEST_LABEL),
    );
    let mut relist = Relist::default();
    store.apply(Event::Init, None, &mut relist);
    for i in 0..n {
        store.apply(Event::InitApply(role_binding(i)), None, &mut relist);
    }
    store.apply(Event::InitDone, None, &mut relist);
    drop(relist);
    let bytes = (live() - before) as f64 / n as f64;
    drop(store);
    bytes
}

/// The fleet's objects are named `<prefix>-00000`: copy `i` renames the object and its owner
/// (and every name derived from it) to `-{i:05}`, so each copy has its own key and owner.
fn variant<T: DeserializeOwned>(object: &Value, i: usize) -> T {
    let renamed = object.to_string().replace("-00000", &format!("-{i:05}"));
    serde_json::from_str(&renamed).expect("decodes")
}

/// Heap bytes of one cached child of kind `C`, `n` copies: its decoded copy, and the store's
/// entry and owner index on top (as `binding_cache_bytes`).
fn child_bytes<C>(child: &Value, n: usize) -> (f64, f64)
where
    C: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + serde::Serialize
        + Send
        + Sync
        + 'static,
{
    let copy = bytes_of(n, |i| Arc::new(variant::<C>(child, i)));
    let children: Vec<C> = (0..n).map(|i| variant(child, i)).collect();
    let before = live();
    let store = ChildStore::<C>::new("children", our_owner());
    let mut relist = Relist::default();
    store.apply(Event::Init, None, &mut relist);
    for child in children {
        store.apply(Event::InitApply(child), None, &mut relist);
    }
    store.apply(Event::InitDone, None, &mut relist);
    drop(relist);
    // The copies were decoded before `before`: what grew is the entry, the `Arc` and the index.
    let entry = (live() - before) as f64 / n as f64;
    drop(store);
    (copy, entry)
}

/// [`child_bytes`] by the name of the store in `OperatorCaches::dump`.
fn cached_child_bytes(store: &str, child: &Value, n: usize) -> Option<(f64, f64)> {
    Some(match store {
        "serviceAccounts" => child_bytes::<ServiceAccount>(child, n),
        "services" => child_bytes::<Service>(child, n),
        "deployments" => child_bytes::<Deployment>(child, n),
        "replicaSets" => child_bytes::<ReplicaSet>(child, n),
        "pods" => child_bytes::<Pod>(child, n),
        "configMaps" => child_bytes::<ConfigMap>(child, n),
        "jobs" => child_bytes::<Job>(child, n),
        "persistentVolumeClaims" => child_bytes::<PersistentVolumeClaim>(child, n),
        "roleBindings" => child_bytes::<RoleBinding>(child, n),
        "networkPolicies" => child_bytes::<NetworkPolicy>(child, n),
        "ingresses" => child_bytes::<Ingress>(child, n),
        "routes" => child_bytes::<Route>(child, n),
        "httpRoutes" => child_bytes::<HttpRoute>(child, n),
        "ownedSecrets" => child_bytes::<Secret>(child, n),
        _ => return None,
    })
}

/// What the operator holds once one object of each workload kind is Ready: its caches (as
/// `OperatorCaches::dump`) and the objects as its watches deliver them (managed fields dropped).
async fn converged_workload() -> (Value, Vec<Value>) {
    let crds = pgtoolbox_operator::api::render_crds_yaml().expect("CRDs render");
    let sim = Sim::start(SimConfig {
        extra_crds: vec![crds],
        controllers: true,
        pod_start: Duration::from_millis(50),
        seed: Some(1),
        ..SimConfig::default()
    })
    .await
    .expect("sim starts");
    let client = sim.client();
    let fleet = world::Fleet {
        per_kind: 1,
        namespaces: 1,
        faulty_every: 0,
    };
    world::infrastructure(&client, fleet).await;
    let settings = OperatorSettings {
        startup_jitter: Duration::ZERO,
        ..OperatorSettings::default()
    };
    let kinds = [
        "PgAccessRequest",
        "EvidenceAgent",
        "PgAdmin",
        "PgToolBoxConsole",
    ]
    .map(String::from)
    .to_vec();
    let shared = start_shared_actors(
        &client,
        &kinds,
        settings,
        OperatorMetrics::new(),
        Readiness::new(),
    )
    .await
    .expect("shared actors start");
    let caches = OperatorCaches::new().sharing_secrets(shared.shared.secrets.routed_index());
    let operator = register_all_with(
        OperatorBuilder::new(client.clone(), shared.shared.clone()),
        caches.clone(),
    )
    .start()
    .await
    .expect("operator starts");
    let observer = world::Observer::start(&client);
    let start = std::time::Instant::now();
    world::objects(&client, fleet).await;
    observer
        .healthy_ready(fleet, start, Duration::from_secs(120))
        .await
        .expect("one of each kind Ready");
    // The last writes reach the watches (and the stores) before they are read.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let dump: Value = serde_json::from_str(&caches.dump()).expect("the dump is JSON");
    let mut objects = Vec::new();
    for kind in world::FleetKind::ALL {
        let list = kind
            .api(&client)
            .list(&ListParams::default())
            .await
            .expect("listed");
        for mut object in list.items {
            object.metadata.managed_fields = None;
            objects.push(serde_json::to_value(&object).expect("encodes"));
        }
    }
    operator.shutdown(Duration::from_secs(10)).await;
    shared.stop().await;
    drop(sim);
    (dump, objects)
}

/// The owner kind of a child, as the stores file it.
fn owner_kind(child: &Value) -> String {
    let object: DynamicObject = serde_json::from_value(child.clone()).expect("an object");
    our_owner::<DynamicObject>()(&object).map_or_else(|| "none".into(), |owner| owner.kind)
}

/// One row of the workload breakdown.
struct ChildRow {
    owner: String,
    store: String,
    name: String,
    copy: f64,
    entry: f64,
}

fn workload_breakdown(runtime: &tokio::runtime::Runtime, n: usize) {
    let (dump, objects) = runtime.block_on(converged_workload());
    let mut rows = Vec::new();
    if let Some(stores) = dump["stores"].as_object() {
        for (store, children) in stores {
            for child in children.as_array().into_iter().flatten() {
                let Some((copy, entry)) = cached_child_bytes(store, child, n) else {
                    continue;
                };
                rows.push(ChildRow {
                    owner: owner_kind(child),
                    store: store.clone(),
                    name: child["metadata"]["name"].as_str().unwrap_or("").to_owned(),
                    copy,
                    entry,
                });
            }
        }
    }
    rows.sort_by(|a, b| (&a.owner, &a.store).cmp(&(&b.owner, &b.store)));
    println!(
        "\nworkload children, one converged object of each kind, {n} copies each, heap bytes per child:"
    );
    println!(
        "  {:<18} {:<24} {:<34} {:>8} {:>8} {:>8}",
        "owner", "store", "child", "decoded", "entry", "total"
    );
    for row in &rows {
        println!(
            "  {:<18} {:<24} {:<34} {:>8.0} {:>8.0} {:>8.0}",
            row.owner,
            row.store,
            row.name,
            row.copy,
            row.entry,
            row.copy + row.entry
        );
    }
    println!("\nper workload object, heap bytes (counting allocator):");
    for object in &objects {
        let kind = object["kind"].as_str().unwrap_or("");
        let (copy, packed) = match kind {
            "PgToolBoxConsole" => (
                bytes_of(n, |i| Arc::new(variant::<PgToolBoxConsole>(object, i))),
                bytes_of(n, |i| pack(&variant::<PgToolBoxConsole>(object, i))),
            ),
            "PgAdmin" => (
                bytes_of(n, |i| Arc::new(variant::<PgAdmin>(object, i))),
                bytes_of(n, |i| pack(&variant::<PgAdmin>(object, i))),
            ),
            "EvidenceAgent" => (
                bytes_of(n, |i| Arc::new(variant::<EvidenceAgent>(object, i))),
                bytes_of(n, |i| pack(&variant::<EvidenceAgent>(object, i))),
            ),
            _ => continue,
        };
        let mine: Vec<&ChildRow> = rows.iter().filter(|r| r.owner == kind).collect();
        let children: f64 = mine.iter().map(|r| r.copy + r.entry).sum();
        println!(
            "  {kind:<18} object decoded {copy:6.0} / packed {packed:6.0}; {} cached children {children:7.0}; sum (packed object + children) {:7.0}",
            mine.len(),
            packed + children
        );
    }
}

fn main() {
    let n: usize = std::env::var("FOOTPRINT_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let config_map = bytes_of(n, |i| Arc::new(cm(i)));
    let packed_config_map = bytes_of(n, |i| pack(&cm(i)));
    let json: Vec<serde_json::Value> = (0..n).map(access_request).collect();
    let decode =
        |i: usize| serde_json::from_value::<PgAccessRequest>(json[i].clone()).expect("decodes");
    let request = bytes_of(n, |i| Arc::new(decode(i)));
    let requests: Vec<PgAccessRequest> = (0..n).map(decode).collect();
    let packed_request = bytes_of(n, |i| pack(&requests[i]));
    let slim_request = bytes_of(n, |i| Packed::pack_slim(&requests[i]).expect("encodes"));
    drop(requests);
    drop(json);
    let binding = bytes_of(n, |i| Arc::new(role_binding(i)));
    let packed_binding = bytes_of(n, |i| pack(&role_binding(i)));
    let binding_cache = binding_cache_bytes(n);
    let live_actors = runtime.block_on(per_object(
        n,
        Setup {
            hibernate: false,
            timer: false,
        },
    ));
    let hibernated = runtime.block_on(per_object(
        n,
        Setup {
            hibernate: true,
            timer: false,
        },
    ));
    let with_timer = runtime.block_on(per_object(
        n,
        Setup {
            hibernate: true,
            timer: true,
        },
    ));
    println!("footprint, {n} objects, heap bytes per object (counting allocator):");
    println!("  object copy, tiny ConfigMap (Arc)                  {config_map:8.0}");
    println!("  the same, packed as JSON (hibernated)              {packed_config_map:8.0}");
    println!("  object copy, converged PgAccessRequest (Arc)       {request:8.0}");
    println!("  the same, packed as JSON (before issue 16)         {packed_request:8.0}");
    println!("  the same, packed, messages as digests (hibernated) {slim_request:8.0}");
    println!("  RoleBinding of an approved request, decoded (Arc)  {binding:8.0}");
    println!("  the same, packed as JSON                           {packed_binding:8.0}");
    println!("  in the RoleBinding cache: packed + entry + index   {binding_cache:8.0}");
    println!("  live actor + supervisor entry + copy (ConfigMap)   {live_actors:8.0}");
    println!("  hibernated: supervisor entry + packed copy         {hibernated:8.0}");
    println!(
        "    => the actor alone                               {:8.0}",
        live_actors - hibernated - (config_map - packed_config_map)
    );
    println!(
        "    => the supervisor entry alone                    {:8.0}",
        hibernated - packed_config_map
    );
    println!(
        "  one armed timer in the wheel                       {:8.0}",
        with_timer - hibernated
    );
    workload_breakdown(&runtime, n);
}
