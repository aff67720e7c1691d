//! The fleet's memory per object against a cache kept the kube-runtime way.
//!
//! Once the healthy run's writes settled and its operator was stopped, a driver process (this
//! bench binary with [`DRIVER_ARG`], so its memory is its own, as the operator's is) opens one
//! kube-runtime `reflector` over a `watcher` for each fleet kind and each child kind the
//! operator caches, with the operator's selectors (`children::caches`: the fleet kinds
//! unselected, the children by the `managed-by` label), so both hold the same objects. Each
//! store keeps whole typed objects, as a `Controller`'s own store keeps its main kind. A bare
//! `Controller::owns` keeps no child (kube-runtime 5 watches children's metadata only to find
//! the owner); an operator that reads its children from memory, as ours does, adds a reflector
//! per child kind, which is what this driver holds.
//!
//! The driver reports its RSS growth from before the reflectors (client connected, a pooled
//! connection per kind) to after every store listed, and then the same objects' JSON bytes from
//! a paged list: the floor of any cache that keeps them whole. It runs twice: the objects whole,
//! then without their `managedFields` (kube's documented `.modify()` trim for reflectors), so
//! the comparison is also made against a Controller written with that care.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, Resource, ResourceExt};
use pgtoolbox_operator::api::{EvidenceAgent, PgAdmin, PgToolBoxConsole};
use pgtoolbox_operator::testing::children::{MANAGED_BY, MANAGED_BY_LABEL};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio_util::task::AbortOnDropHandle;

use super::RunResult;
use super::common::stats::{median, ratio_of_medians};
use super::common::{allocator, child, measure};
use super::world;

/// The argument that makes this bench binary the Controller-footprint driver.
pub const DRIVER_ARG: &str = "--controller-footprint";
/// The driver's second argument when it drops each object's managedFields.
const LEAN_ARG: &str = "--without-managed-fields";
/// How long the driver waits for every store's first list.
const SYNC_LIMIT: Duration = Duration::from_secs(600);
/// As long as the operator rests before its RSS is read (`fleet.rs`).
const REST: Duration = Duration::from_secs(3);
const PAGE: u32 = 500;
/// Ours per fleet object against the Controller-style cache's.
const GOAL: f64 = 0.5;

/// What the driver measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ControllerFootprint {
    /// RSS before the reflectors (heap purged), KiB.
    pub rss_before_kb: u64,
    /// RSS once every store listed and the driver rested as long as the operator does.
    pub rss_synced_kb: u64,
    /// The same after purging the allocator's free pages: what the stores keep. The compared
    /// figure (a purge the operator does not get, so it favours the Controller).
    pub rss_trimmed_kb: u64,
    /// Heap bytes in use (jemalloc's), growth over the same span, KiB.
    pub heap_growth_kb: u64,
    /// From the first reflector until every store listed.
    pub sync_s: f64,
    pub objects_by_kind: BTreeMap<String, usize>,
    /// The same objects as the API server serves them, JSON bytes by kind (a paged list).
    pub json_bytes_by_kind: BTreeMap<String, u64>,
    /// Of those, the bytes of `metadata.managedFields` (which a cache could drop).
    pub managed_fields_bytes: u64,
}

/// The two driver runs of one healthy run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Footprints {
    pub whole: ControllerFootprint,
    /// managedFields dropped as each object arrives; no floor (the same objects as `whole`).
    pub without_managed_fields: ControllerFootprint,
}

impl ControllerFootprint {
    pub fn growth_kb(&self) -> u64 {
        self.rss_trimmed_kb.saturating_sub(self.rss_before_kb)
    }

    pub fn json_bytes(&self) -> u64 {
        self.json_bytes_by_kind.values().sum()
    }
}

/// Whether this run measures it (`FLEET_CONTROLLER_FOOTPRINT=0` skips it).
pub fn wanted(scenario: &str) -> bool {
    scenario == "healthy" && child::env_or("FLEET_CONTROLLER_FOOTPRINT", 1) != 0
}

/// Runs the driver twice (whole objects, then without managedFields) against the cluster of
/// `kubeconfig`.
pub async fn measure(kubeconfig: &Path) -> Option<Footprints> {
    Some(Footprints {
        whole: driver(kubeconfig, false).await?,
        without_managed_fields: driver(kubeconfig, true).await?,
    })
}

/// Runs one driver process and reads back what it measured.
async fn driver(kubeconfig: &Path, lean: bool) -> Option<ControllerFootprint> {
    let mut args = vec![kubeconfig.to_string_lossy().into_owned()];
    if lean {
        args.push(LEAN_ARG.to_owned());
    }
    let answer = tokio::task::spawn_blocking(move || {
        child::spawn_as::<ControllerFootprint>(DRIVER_ARG, &args)
    })
    .await;
    match answer {
        Ok(Ok(footprint)) => {
            eprintln!(
                "   Controller-style cache{}: RSS {} -> {} KiB ({} KiB purged), {} objects listed in {:.1} s, {} KiB of JSON",
                if lean { " without managedFields" } else { "" },
                footprint.rss_before_kb,
                footprint.rss_synced_kb,
                footprint.rss_trimmed_kb,
                footprint.objects_by_kind.values().sum::<usize>(),
                footprint.sync_s,
                footprint.json_bytes() / 1024,
            );
            Some(footprint)
        }
        Ok(Err(err)) => {
            eprintln!("   Controller-footprint driver failed: {err}");
            None
        }
        Err(err) => {
            eprintln!("   Controller-footprint driver not awaited: {err}");
            None
        }
    }
}

/// A kind the driver caches: its API, the operator's selector for it, and how to start its
/// typed store.
struct Kind {
    resource: ApiResource,
    labels: Option<String>,
    start: fn(&Client, Option<&str>, bool) -> Cache,
}

fn kind<K>(labels: Option<&str>) -> Kind
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    Kind {
        resource: ApiResource::erase::<K>(&()),
        labels: labels.map(str::to_owned),
        start: cache::<K>,
    }
}

/// The fleet's kinds and the children the operator caches for them, selected as it selects
/// them. Routes and HTTPRoutes are left out: not served by the sim, they hold nothing.
fn kinds() -> Vec<Kind> {
    let managed = format!("{MANAGED_BY_LABEL}={MANAGED_BY}");
    let ours = Some(managed.as_str());
    vec![
        kind::<PgToolBoxConsole>(None),
        kind::<PgAdmin>(None),
        kind::<EvidenceAgent>(None),
        kind::<Deployment>(ours),
        kind::<ReplicaSet>(ours),
        kind::<Pod>(ours),
        kind::<Service>(ours),
        kind::<ServiceAccount>(ours),
        kind::<RoleBinding>(ours),
        kind::<ConfigMap>(ours),
        kind::<Secret>(ours),
        kind::<PersistentVolumeClaim>(ours),
        kind::<NetworkPolicy>(ours),
        kind::<Job>(ours),
        kind::<Ingress>(ours),
    ]
}

/// One started store: its first list awaited, its size, and the task that feeds it.
struct Cache {
    ready: BoxFuture<'static, bool>,
    len: Box<dyn Fn() -> usize + Send>,
    _feed: AbortOnDropHandle<()>,
}

/// A reflector over a watcher of every `K` matching `labels`, whole objects in its store, or
/// without their managedFields when `lean`.
fn cache<K>(client: &Client, labels: Option<&str>, lean: bool) -> Cache
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store::<K>();
    let config = labels.map_or_else(watcher::Config::default, |l| {
        watcher::Config::default().labels(l)
    });
    let events = watcher(Api::<K>::all(client.clone()), config);
    let events = if lean {
        events
            .modify(|obj: &mut K| obj.managed_fields_mut().clear())
            .boxed()
    } else {
        events.boxed()
    };
    let feed = reflector(writer, events)
        .default_backoff()
        .applied_objects()
        .for_each(|_| async {});
    let waiting = reader.clone();
    Cache {
        ready: Box::pin(async move { waiting.wait_until_ready().await.is_ok() }),
        len: Box::new(move || reader.len()),
        _feed: AbortOnDropHandle::new(tokio::spawn(feed)),
    }
}

fn params(labels: Option<&str>) -> ListParams {
    let params = ListParams::default().limit(PAGE);
    match labels {
        Some(l) => params.labels(l),
        None => params,
    }
}

/// A list of one object of each kind at once: the client's pooled connections (one per kind,
/// as the watches will hold) and its first decodes are in place before the span measured.
async fn warm_up(client: &Client, kinds: &[Kind]) {
    let lists = kinds.iter().map(|k| async move {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &k.resource);
        let _ = api.list(&params(k.labels.as_deref()).limit(1)).await;
    });
    futures::future::join_all(lists).await;
}

/// JSON bytes of every object of `resource` (paged), and of their managedFields.
async fn json_bytes(client: &Client, resource: &ApiResource, labels: Option<&str>) -> (u64, u64) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let (mut bytes, mut managed_fields) = (0, 0);
    let mut token: Option<String> = None;
    loop {
        let mut page_params = params(labels);
        if let Some(t) = &token {
            page_params = page_params.continue_token(t);
        }
        let page = match api.list(&page_params).await {
            Ok(page) => page,
            Err(err) => {
                eprintln!("   footprint: list of {}: {err}", resource.plural);
                break;
            }
        };
        for obj in &page.items {
            bytes += serde_json::to_vec(obj).map_or(0, |v| v.len()) as u64;
            managed_fields += obj
                .metadata
                .managed_fields
                .as_ref()
                .and_then(|m| serde_json::to_vec(m).ok())
                .map_or(0, |v| v.len()) as u64;
        }
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    (bytes, managed_fields)
}

fn rss_purged_kb() -> u64 {
    allocator::trim_heap();
    measure::rss_kb()
}

/// The driver process: `DRIVER_ARG kubeconfig [LEAN_ARG]`. Prints its [`ControllerFootprint`] and exits.
pub fn drive(args: &[String]) -> ! {
    let footprint = child::runtime().block_on(async {
        let kubeconfig = args.first().cloned().unwrap_or_default();
        let lean = args.get(1).map(String::as_str) == Some(LEAN_ARG);
        let client = world::client_of(&kubeconfig).await;
        let kinds = kinds();
        warm_up(&client, &kinds).await;
        let rss_before_kb = rss_purged_kb();
        let heap_before_kb = allocator::heap_in_use_kb();
        let start = Instant::now();
        let mut caches: Vec<Cache> = kinds
            .iter()
            .map(|k| (k.start)(&client, k.labels.as_deref(), lean))
            .collect();
        for (cache, kind) in caches.iter_mut().zip(&kinds) {
            let listed = tokio::time::timeout(SYNC_LIMIT, &mut cache.ready).await;
            if !matches!(listed, Ok(true)) {
                eprintln!(
                    "   footprint: {} not listed in {SYNC_LIMIT:?}",
                    kind.resource.kind
                );
            }
        }
        let sync_s = start.elapsed().as_secs_f64();
        tokio::time::sleep(REST).await;
        let rss_synced_kb = measure::rss_kb();
        let rss_trimmed_kb = rss_purged_kb();
        let heap_growth_kb = allocator::heap_in_use_kb().saturating_sub(heap_before_kb);
        let mut footprint = ControllerFootprint {
            rss_before_kb,
            rss_synced_kb,
            rss_trimmed_kb,
            heap_growth_kb,
            sync_s,
            ..ControllerFootprint::default()
        };
        // The floor: read after the figures above, its pages dropped one by one.
        for (cache, kind) in caches.iter().zip(&kinds) {
            let name = kind.resource.kind.clone();
            footprint
                .objects_by_kind
                .insert(name.clone(), (cache.len)());
            if lean {
                continue;
            }
            let (bytes, managed_fields) =
                json_bytes(&client, &kind.resource, kind.labels.as_deref()).await;
            footprint.json_bytes_by_kind.insert(name, bytes);
            footprint.managed_fields_bytes += managed_fields;
        }
        footprint
    });
    child::finish(&footprint)
}

/// KB (1,000 bytes) per fleet object of `kib`, as the fleet table gives the operator's.
fn per_object(kib: u64, run: &RunResult) -> f64 {
    kib as f64 * 1.024 / run.objects as f64
}

/// Ours (the operator's RSS growth per object in the healthy runs) against each driver's, run
/// by run and as the ratio of the medians, next to the goal; then the floor and what was cached.
pub fn report(healthy: &[&RunResult]) {
    let runs: Vec<(&RunResult, &Footprints)> = healthy
        .iter()
        .filter_map(|r| Some((*r, r.controller.as_ref()?)))
        .collect();
    let Some(&(first, first_footprints)) = runs.first() else {
        return;
    };
    let ours: Vec<f64> = runs
        .iter()
        .map(|(r, _)| {
            per_object(
                r.operator_rss_after_kb
                    .saturating_sub(r.operator_rss_before_kb),
                r,
            )
        })
        .collect();
    type Variant<'a> = (&'a str, &'a dyn Fn(&Footprints) -> &ControllerFootprint);
    let variants: [Variant; 2] = [
        ("whole objects", &|f| &f.whole),
        ("without managedFields", &|f| &f.without_managed_fields),
    ];
    println!(
        "\n| memory per fleet object (healthy), RSS growth KB / object | ours | Controller-style cache | ratio | per run | goal |"
    );
    println!("|---|---|---|---|---|---|");
    for (what, pick) in variants {
        let theirs: Vec<f64> = runs
            .iter()
            .map(|(r, f)| per_object(pick(f).growth_kb(), r))
            .collect();
        let (ratio, per_run) = ratio_of_medians(&ours, &theirs);
        let verdict = if ratio.ratio <= GOAL { "met" } else { "missed" };
        println!(
            "| ours / Controller-style cache, {what} | {:.1} | {:.1} | {:.2}x | {:?} | <= {GOAL}x: {verdict} |",
            ratio.ours,
            ratio.ceiling,
            ratio.ratio,
            per_run
                .iter()
                .map(|x| (x * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
    }
    let med = |f: &dyn Fn(&RunResult, &Footprints) -> f64| {
        median(runs.iter().map(|(r, c)| f(r, c)).collect())
    };
    let floor = med(&|r, f| f.whole.json_bytes() as f64 / 1000.0 / r.objects as f64);
    let floor_lean = med(&|r, f| {
        f.whole
            .json_bytes()
            .saturating_sub(f.whole.managed_fields_bytes) as f64
            / 1000.0
            / r.objects as f64
    });
    println!(
        "- floor, the cached objects' JSON: {floor:.1} KB / object ({floor_lean:.1} without managedFields); ours / floor {:.2}x",
        median(ours.clone()) / floor
    );
    for (what, pick) in variants {
        println!(
            "- Controller-style cache, {what}: heap in use {:.1} KB / object, RSS at rest before the purge {:.1} KB / object, listed in {:.1} s",
            med(&|r, f| per_object(pick(f).heap_growth_kb, r)),
            med(&|r, f| per_object(
                pick(f).rss_synced_kb.saturating_sub(pick(f).rss_before_kb),
                r
            )),
            med(&|_, f| pick(f).sync_s),
        );
    }
    let whole = &first_footprints.whole;
    let counts: Vec<String> = whole
        .objects_by_kind
        .iter()
        .map(|(kind, n)| {
            let bytes = whole.json_bytes_by_kind.get(kind).copied().unwrap_or(0);
            format!(
                "{kind} {n} ({:.1} KB each)",
                bytes as f64 / 1000.0 / (*n).max(1) as f64
            )
        })
        .collect();
    println!(
        "- objects cached (run 1, {} fleet objects): {}",
        first.objects,
        counts.join(", ")
    );
}
