//! The fleet's ceiling: the operator's children and statuses written with the fewest requests.
//!
//! The children are the operator's own: the healthy run of the same run number ends by reading
//! back every child the operator made for the fleet and each object's status ([`dump`]), and the
//! ceiling run replays them on a fresh cluster. So the content is identical by construction,
//! without a second renderer to keep in step; what the ceiling leaves out is the deciding (its
//! CPU is the writing alone, which flatters it).
//!
//! The driver ([`drive`]) runs in its own process (this bench binary with [`DRIVER_ARG`]), as
//! the operator does, so both CPUs are measured alike. Per object: one GET (the owner's uid),
//! one POST per child with its final content, and, once its Deployments are ready and its Jobs
//! succeeded, one status patch. No watch: readiness comes from a list of the fleet's
//! Deployments and Jobs every half second (a few requests for the whole fleet).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use pgtoolbox_operator::testing::children::{MANAGED_BY, MANAGED_BY_LABEL};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::common::child;
use super::world::{self, Fleet, FleetKind};

/// The argument that makes this bench binary the ceiling driver.
pub const DRIVER_ARG: &str = "--ceiling-driver";
const POLL: Duration = Duration::from_millis(500);

/// The child kinds the operator makes for the fleet, in the order it applies them (group,
/// version, kind, plural).
pub const CHILD_KINDS: [(&str, &str, &str, &str); 9] = [
    ("", "v1", "ServiceAccount", "serviceaccounts"),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
    ),
    ("", "v1", "ConfigMap", "configmaps"),
    ("", "v1", "Secret", "secrets"),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ("", "v1", "Service", "services"),
    ("apps", "v1", "Deployment", "deployments"),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
    ),
    ("batch", "v1", "Job", "jobs"),
];

/// Labels and annotations the server or its controllers set, which a create must not carry.
const SERVER_SET: [&str; 7] = [
    "deployment.kubernetes.io/",
    "pv.kubernetes.io/",
    "volume.",
    "controller-uid",
    "batch.kubernetes.io/",
    "job-name",
    "kubectl.kubernetes.io/",
];

pub fn resource(i: usize) -> ApiResource {
    let (group, version, kind, plural) = CHILD_KINDS[i];
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// One fleet object as the operator left it: its children (index into [`CHILD_KINDS`], content
/// without what the server set) and its status.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Replay {
    pub children: Vec<(usize, Value)>,
    pub status: Value,
}

/// Fleet object key: (plural, namespace, name).
type Key = (String, String, String);

fn key_string((plural, ns, name): &Key) -> String {
    format!("{plural}/{ns}/{name}")
}

/// Reads back what the operator made for the fleet: every child it controls and each object's
/// status, keyed `plural/namespace/name`.
pub async fn dump(client: &kube::Client) -> HashMap<String, Replay> {
    let owners: HashMap<&str, &str> = FleetKind::ALL
        .iter()
        .map(|k| (k.kind_name(), k.plural()))
        .collect();
    let mut out: HashMap<String, Replay> = HashMap::new();
    let managed = ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"));
    for (i, _) in CHILD_KINDS.iter().enumerate() {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource(i));
        let Ok(list) = api.list(&managed).await else {
            continue;
        };
        for child in list.items {
            let ns = child.metadata.namespace.clone().unwrap_or_default();
            let owner = child
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true) && owners.contains_key(o.kind.as_str()));
            let Some(owner) = owner else { continue };
            let key = (
                owners[owner.kind.as_str()].to_owned(),
                ns,
                owner.name.clone(),
            );
            let value = serde_json::to_value(&child).unwrap_or_default();
            out.entry(key_string(&key))
                .or_default()
                .children
                .push((i, clean(value)));
        }
    }
    for kind in FleetKind::ALL {
        let Ok(list) = kind.api(client).list(&ListParams::default()).await else {
            continue;
        };
        for obj in list.items {
            let key = (
                kind.plural().to_owned(),
                obj.metadata.namespace.clone().unwrap_or_default(),
                obj.metadata.name.clone().unwrap_or_default(),
            );
            out.entry(key_string(&key)).or_default().status =
                obj.data.get("status").cloned().unwrap_or(Value::Null);
        }
    }
    for replay in out.values_mut() {
        replay.children.sort_by_key(|(i, _)| *i);
    }
    out
}

fn server_set(key: &str) -> bool {
    SERVER_SET.iter().any(|p| key.starts_with(p))
}

fn drop_server_keys(map: Option<&mut Value>) {
    if let Some(Value::Object(map)) = map {
        map.retain(|k, _| !server_set(k));
    }
}

/// A child as a create carries it: what the operator wrote, without what the server, its
/// controllers or the cluster it ran on added.
pub fn clean(mut child: Value) -> Value {
    if let Value::Object(obj) = &mut child {
        obj.remove("status");
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.retain(|k, _| {
                matches!(
                    k.as_str(),
                    "name" | "namespace" | "labels" | "annotations" | "ownerReferences"
                )
            });
            drop_server_keys(meta.get_mut("labels"));
            drop_server_keys(meta.get_mut("annotations"));
        }
    }
    let kind = child["kind"].as_str().unwrap_or_default().to_owned();
    if let Some(Value::Object(spec)) = child.get_mut("spec") {
        match kind.as_str() {
            "Service" => {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
            "PersistentVolumeClaim" => {
                spec.remove("volumeName");
            }
            "Job" => {
                spec.remove("selector");
            }
            _ => {}
        }
    }
    drop_server_keys(child.pointer_mut("/spec/template/metadata/labels"));
    child
}

/// What the driver counted, printed on its stderr when done.
#[derive(Default)]
struct Counts {
    not_yet: AtomicUsize,
    conflicts: AtomicUsize,
    statuses: AtomicUsize,
}

/// An object whose children are created and whose status waits for its workloads.
struct Pending {
    plural: String,
    namespace: String,
    name: String,
    workloads: Vec<(usize, String)>,
    status: Value,
}

/// The driver process: `DRIVER_ARG kubeconfig dump per_kind namespaces`. Never returns: it
/// sleeps once done, so its CPU can still be read, until the bench kills it.
pub fn drive(args: &[String]) -> ! {
    child::runtime().block_on(async {
        let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
        let num = |i: usize| arg(i).parse::<usize>().unwrap_or(0);
        let client = world::client_of(&arg(0)).await;
        let text = std::fs::read_to_string(arg(1)).expect("dump read");
        let replays: HashMap<String, Replay> = serde_json::from_str(&text).expect("dump parsed");
        let fleet = Fleet {
            per_kind: num(2),
            namespaces: num(3).max(1),
            faulty_every: 0,
        };
        run(client, fleet, Arc::new(replays)).await;
    });
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

async fn run(client: kube::Client, fleet: Fleet, replays: Arc<HashMap<String, Replay>>) {
    // As many writers as the operator's write budget.
    let workers = OperatorSettings::default().max_inflight_writes.max(1);
    let order: Arc<Vec<(FleetKind, usize)>> = Arc::new(
        (0..fleet.per_kind)
            .flat_map(|i| FleetKind::ALL.map(|k| (k, i)))
            .collect(),
    );
    let next = Arc::new(AtomicUsize::new(0));
    let counts = Arc::new(Counts::default());
    let pending: Arc<Mutex<Vec<Pending>>> = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let (client, order, next, counts, pending, replays) = (
            client.clone(),
            order.clone(),
            next.clone(),
            counts.clone(),
            pending.clone(),
            replays.clone(),
        );
        tasks.push(tokio::spawn(async move {
            while let Some(&(kind, i)) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                let p = create_children(&client, &fleet, kind, i, &replays, &counts).await;
                pending.lock().await.push(p);
            }
        }));
    }
    let statuses = tokio::spawn(write_statuses(
        client.clone(),
        pending.clone(),
        order.len(),
        counts.clone(),
    ));
    for task in tasks {
        let _ = task.await;
    }
    let _ = statuses.await;
    eprintln!(
        "   ceiling driver: {} statuses written, {} GETs answered 404 (object not created yet), {} creates answered 409",
        counts.statuses.load(Ordering::Relaxed),
        counts.not_yet.load(Ordering::Relaxed),
        counts.conflicts.load(Ordering::Relaxed),
    );
}

/// One GET of the object (until it exists), then each child POSTed once, owned by its uid.
async fn create_children(
    client: &kube::Client,
    fleet: &Fleet,
    kind: FleetKind,
    i: usize,
    replays: &HashMap<String, Replay>,
    counts: &Counts,
) -> Pending {
    let ns = fleet.namespace(i);
    let name = Fleet::name(kind, i);
    let api = kind.namespaced_api(client, &ns);
    let uid = loop {
        match api.get_opt(&name).await {
            Ok(Some(obj)) => break obj.metadata.uid.unwrap_or_default(),
            Ok(None) => {
                counts.not_yet.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => {
                eprintln!("   ceiling: GET {ns}/{name}: {err}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let key = (kind.plural().to_owned(), ns.clone(), name.clone());
    let replay = replays.get(&key_string(&key)).cloned().unwrap_or_default();
    let mut workloads = Vec::new();
    for (ci, mut child) in replay.children {
        if let Some(Value::Array(refs)) = child.pointer_mut("/metadata/ownerReferences") {
            for r in refs.iter_mut().filter(|r| r["name"] == name.as_str()) {
                r["uid"] = json!(uid);
            }
        }
        let Ok(obj) = serde_json::from_value::<DynamicObject>(child) else {
            continue;
        };
        let child_name = obj.metadata.name.clone().unwrap_or_default();
        let children: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource(ci));
        match children.create(&PostParams::default(), &obj).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {
                counts.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            Err(err) => eprintln!("   ceiling: POST {ns}/{child_name}: {err}"),
        }
        if matches!(CHILD_KINDS[ci].2, "Deployment" | "Job") {
            workloads.push((ci, child_name));
        }
    }
    Pending {
        plural: kind.plural().to_owned(),
        namespace: ns,
        name,
        workloads,
        status: replay.status,
    }
}

/// Every half second: which of the fleet's Deployments are ready and Jobs complete (two
/// lists), and one status patch for each object whose workloads all are.
async fn write_statuses(
    client: kube::Client,
    pending: Arc<Mutex<Vec<Pending>>>,
    total: usize,
    counts: Arc<Counts>,
) {
    let managed = ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"));
    let mut written = 0;
    while written < total {
        tokio::time::sleep(POLL).await;
        if pending.lock().await.is_empty() {
            continue;
        }
        let mut ready: HashSet<(usize, String, String)> = HashSet::new();
        for (ci, (_, _, kind, _)) in CHILD_KINDS.iter().enumerate() {
            if !matches!(*kind, "Deployment" | "Job") {
                continue;
            }
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource(ci));
            let Ok(list) = api.list(&managed).await else {
                continue;
            };
            for obj in list.items.iter().filter(|o| workload_ready(o)) {
                ready.insert((
                    ci,
                    obj.metadata.namespace.clone().unwrap_or_default(),
                    obj.metadata.name.clone().unwrap_or_default(),
                ));
            }
        }
        let due: Vec<Pending> = {
            let mut pending = pending.lock().await;
            let (due, wait) = std::mem::take(&mut *pending).into_iter().partition(|p| {
                p.workloads
                    .iter()
                    .all(|(ci, n)| ready.contains(&(*ci, p.namespace.clone(), n.clone())))
            });
            *pending = wait;
            due
        };
        written += due.len();
        let writes = due.into_iter().map(|p| {
            let client = client.clone();
            let counts = counts.clone();
            async move {
                write_status(&client, &p).await;
                counts.statuses.fetch_add(1, Ordering::Relaxed);
            }
        });
        futures::StreamExt::collect::<Vec<_>>(futures::StreamExt::buffer_unordered(
            futures::stream::iter(writes),
            OperatorSettings::default().max_inflight_writes.max(1),
        ))
        .await;
    }
}

/// A Deployment with all its replicas updated and ready, a Job that succeeded.
fn workload_ready(obj: &DynamicObject) -> bool {
    let num = |p: &str| obj.data.pointer(p).and_then(Value::as_i64);
    match obj.types.as_ref().map(|t| t.kind.as_str()) {
        Some("Job") => num("/status/succeeded").unwrap_or(0) >= 1,
        _ => {
            let want = num("/spec/replicas").unwrap_or(1);
            num("/status/readyReplicas").unwrap_or(0) >= want
                && num("/status/updatedReplicas").unwrap_or(0) >= want
        }
    }
}

/// The operator's final status, its transition times now: one merge patch of the status.
async fn write_status(client: &kube::Client, p: &Pending) {
    let Some(kind) = FleetKind::ALL.into_iter().find(|k| k.plural() == p.plural) else {
        return;
    };
    let mut status = p.status.clone();
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
        for c in conditions {
            c["lastTransitionTime"] = json!(now);
        }
    }
    let api = kind.namespaced_api(client, &p.namespace);
    let patch = json!({ "status": status });
    if let Err(err) = api
        .patch_status(&p.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        eprintln!("   ceiling: status of {}/{}: {err}", p.namespace, p.name);
    }
}

/// Starts the driver process against the cluster of `kubeconfig`.
pub fn start_driver(kubeconfig: &Path, dump: &Path, fleet: Fleet) -> std::process::Child {
    let exe = std::env::current_exe().expect("bench executable");
    std::process::Command::new(exe)
        .arg(DRIVER_ARG)
        .arg(kubeconfig)
        .arg(dump)
        .arg(fleet.per_kind.to_string())
        .arg(fleet.namespaces.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("ceiling driver starts")
}
