//! The mixed fleet: per namespace one CNPG Cluster archiving to an ObjectStore (what the
//! EvidenceAgents watch), and the same number of PgToolBoxConsoles, PgAdmins and EvidenceAgents
//! spread over the namespaces; an observer that watches them and tells which are Ready.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use pgtoolbox_operator::testing::k8s::apply_manifests;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde_json::{Value, json};
use tokio_util::task::AbortOnDropHandle;

/// The console ClusterRoles an installation applies (deploy/).
const ROLES: &str = include_str!("../../deploy/05-console-clusterroles.yaml");
const SEEDERS: usize = 32;
const GROUP: &str = "pgtoolbox.fyannk.dev";
/// The labels of each namespace's Cluster, which the PgAdmins select.
fn cluster_labels() -> Value {
    json!({"bench": "fleet"})
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FleetKind {
    Console,
    PgAdmin,
    EvidenceAgent,
}

impl FleetKind {
    pub const ALL: [FleetKind; 3] = [Self::Console, Self::PgAdmin, Self::EvidenceAgent];

    pub fn kind_name(self) -> &'static str {
        match self {
            Self::Console => "PgToolBoxConsole",
            Self::PgAdmin => "PgAdmin",
            Self::EvidenceAgent => "EvidenceAgent",
        }
    }

    /// The resource, as the API server's counters name it.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Console => "pgtoolboxconsoles",
            Self::PgAdmin => "pgadmins",
            Self::EvidenceAgent => "evidenceagents",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Self::Console => "console",
            Self::PgAdmin => "pgadmin",
            Self::EvidenceAgent => "agent",
        }
    }

    fn spec(self) -> Value {
        match self {
            Self::Console => json!({"image": "ghcr.io/pgtoolbox/console:0.1.0"}),
            // A PgAdmin offers the Clusters its selector matches; with none it is rightly not
            // Ready (`NoClusterSelected`), so it selects the namespace's Cluster.
            Self::PgAdmin => json!({
                "image": "docker.io/dpage/pgadmin4:9.10",
                "clusterSelector": {"matchLabels": cluster_labels()},
            }),
            // The `openshift` provider: the serving certificate comes from the (simulated)
            // service CA, so the fleet measures the operator rather than key generation.
            Self::EvidenceAgent => json!({
                "cluster": {"name": "pg"},
                "image": "ghcr.io/pgtoolbox/evidence-agent:0.1.0",
                "servingCertificate": {"provider": "openshift"},
            }),
        }
    }

    fn resource(self) -> ApiResource {
        let gvk = GroupVersionKind::gvk(GROUP, "v1alpha1", self.kind_name());
        ApiResource::from_gvk_with_plural(&gvk, self.plural())
    }

    pub fn api(self, client: &kube::Client) -> Api<DynamicObject> {
        Api::all_with(client.clone(), &self.resource())
    }

    pub fn namespaced_api(self, client: &kube::Client, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(client.clone(), ns, &self.resource())
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Fleet {
    pub per_kind: usize,
    pub namespaces: usize,
    /// One object in `faulty_every` gets a child whose image cannot be pulled (0: none).
    pub faulty_every: usize,
}

impl Fleet {
    pub fn objects(&self) -> usize {
        self.per_kind * FleetKind::ALL.len()
    }

    pub fn name(kind: FleetKind, i: usize) -> String {
        format!("{}-{i:05}", kind.prefix())
    }

    pub fn namespace(&self, i: usize) -> String {
        format!("fleet-{:02}", i % self.namespaces)
    }

    pub fn faulty(&self, i: usize) -> bool {
        self.faulty_every > 0 && i.is_multiple_of(self.faulty_every)
    }

    /// Pods the cluster runs: one per object, one per Cluster.
    pub fn pods(&self) -> usize {
        self.objects() + self.namespaces
    }
}

/// A client of the cluster a kubeconfig file names (a driver process's, started by the bench).
pub async fn client_of(kubeconfig: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).expect("kubeconfig read");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig valid");
    kube::Client::try_from(config).expect("client")
}

async fn create(api: &Api<DynamicObject>, obj: Value) {
    let obj: DynamicObject = serde_json::from_value(obj).expect("valid object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("created");
}

fn namespaced(
    client: &kube::Client,
    ns: &str,
    group: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

/// What exists before the operator starts: namespaces, the console ClusterRoles, and per
/// namespace the Cluster `pg` archiving to the ObjectStore `store` with its credentials.
pub async fn infrastructure(client: &kube::Client, fleet: Fleet) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut names: Vec<String> = (0..fleet.namespaces).map(|i| fleet.namespace(i)).collect();
    // The operator's own namespace (where it would keep its CA).
    names.push(OperatorSettings::default().operator_namespace);
    for name in &names {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("namespace created");
    }
    for result in apply_manifests(client, ROLES, "bench").await {
        result.expect("ClusterRole applied");
    }
    for i in 0..fleet.namespaces {
        let ns = fleet.namespace(i);
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "s3", "namespace": ns},
            "stringData": {"ACCESS_KEY_ID": "AKIA0000", "ACCESS_SECRET_KEY": "secret"},
        }))
        .expect("secret");
        Api::<Secret>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &secret)
            .await
            .expect("secret created");
        let stores = namespaced(
            client,
            &ns,
            "barmancloud.cnpg.io",
            "ObjectStore",
            "objectstores",
        );
        create(
            &stores,
            json!({
                "apiVersion": "barmancloud.cnpg.io/v1", "kind": "ObjectStore",
                "metadata": {"name": "store", "namespace": ns},
                "spec": {"configuration": {
                    "destinationPath": format!("s3://backups/{ns}"),
                    "s3Credentials": {
                        "accessKeyId": {"name": "s3", "key": "ACCESS_KEY_ID"},
                        "secretAccessKey": {"name": "s3", "key": "ACCESS_SECRET_KEY"},
                    },
                }},
            }),
        )
        .await;
        let clusters = namespaced(client, &ns, "postgresql.cnpg.io", "Cluster", "clusters");
        create(
            &clusters,
            json!({
                "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
                "metadata": {"name": "pg", "namespace": ns, "labels": cluster_labels()},
                "spec": {"instances": 1, "storage": {"size": "1Gi"}, "plugins": [{
                    "name": "barman-cloud.cloudnative-pg.io", "isWALArchiver": true,
                    "parameters": {"barmanObjectName": "store"},
                }]},
            }),
        )
        .await;
    }
    // The Clusters come up before the timed part (an agent waits for its Cluster otherwise).
    let clusters = namespaced_all(client, "postgresql.cnpg.io", "Cluster", "clusters");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let list = clusters
            .list(&ListParams::default())
            .await
            .expect("clusters listed");
        let ready = list
            .items
            .iter()
            .filter(|c| {
                c.data
                    .pointer("/status/readyInstances")
                    .and_then(Value::as_u64)
                    >= Some(1)
            })
            .count();
        if ready == fleet.namespaces || Instant::now() > deadline {
            eprintln!("   {ready}/{} Clusters ready", fleet.namespaces);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn namespaced_all(
    client: &kube::Client,
    group: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

/// The label selector of the Pods that cannot pull their image: the faulty objects' children.
pub fn faulty_selector(fleet: Fleet) -> Option<String> {
    let names: Vec<String> = (0..fleet.per_kind)
        .filter(|&i| fleet.faulty(i))
        .flat_map(|i| FleetKind::ALL.map(|k| Fleet::name(k, i)))
        .collect();
    (!names.is_empty()).then(|| format!("app.kubernetes.io/instance in ({})", names.join(",")))
}

/// Creates every object of the fleet, the kinds interleaved.
pub async fn objects(client: &kube::Client, fleet: Fleet) {
    let all = (0..fleet.per_kind).flat_map(|i| FleetKind::ALL.map(|k| (k, i)));
    futures::stream::iter(all)
        .map(|(kind, i)| {
            let api = kind.namespaced_api(client, &fleet.namespace(i));
            async move {
                create(
                    &api,
                    json!({
                        "apiVersion": format!("{GROUP}/v1alpha1"), "kind": kind.kind_name(),
                        "metadata": {"name": Fleet::name(kind, i), "namespace": fleet.namespace(i)},
                        "spec": kind.spec(),
                    }),
                )
                .await;
            }
        })
        .buffer_unordered(SEEDERS)
        .collect::<Vec<_>>()
        .await;
}

/// Watches the three kinds and records when each object is first seen Ready (`Ready=True`).
/// A watch rather than polling lists: at thousands of objects a full list of each kind every
/// few hundred milliseconds would cost the shared cores more than the operator's own work.
/// Started before the timed part, so its list and watch requests are not counted.
pub struct Observer {
    seen: Arc<Mutex<HashMap<(FleetKind, String), Instant>>>,
    _watches: Vec<AbortOnDropHandle<()>>,
}

impl Observer {
    pub fn start(client: &kube::Client) -> Self {
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let watches = FleetKind::ALL
            .map(|kind| {
                let seen = seen.clone();
                let events = watcher::watcher(kind.api(client), watcher::Config::default())
                    .default_backoff()
                    .touched_objects();
                AbortOnDropHandle::new(tokio::spawn(async move {
                    futures::pin_mut!(events);
                    while let Some(event) = events.next().await {
                        let Ok(obj) = event else { continue };
                        if is_ready(&obj) {
                            let name = obj.metadata.name.clone().unwrap_or_default();
                            lock(&seen).entry((kind, name)).or_insert_with(Instant::now);
                        }
                    }
                }))
            })
            .into_iter()
            .collect();
        Self {
            seen,
            _watches: watches,
        }
    }

    /// Waits until every healthy object was seen Ready (or `timeout`); answers the time of
    /// the last one and, per kind, of its last one, since `start`.
    pub async fn healthy_ready(
        &self,
        fleet: Fleet,
        start: Instant,
        timeout: Duration,
    ) -> Option<(f64, Vec<(FleetKind, f64)>)> {
        let healthy: Vec<(FleetKind, String)> = (0..fleet.per_kind)
            .filter(|&i| !fleet.faulty(i))
            .flat_map(|i| FleetKind::ALL.map(|k| (k, Fleet::name(k, i))))
            .collect();
        loop {
            let missing = {
                let seen = lock(&self.seen);
                healthy
                    .iter()
                    .filter(|key| !seen.contains_key(*key))
                    .count()
            };
            if missing == 0 {
                break;
            }
            if start.elapsed() > timeout {
                eprintln!("   {missing} healthy objects not Ready after {timeout:?}");
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let seen = lock(&self.seen);
        let last = |of: Option<FleetKind>| {
            healthy
                .iter()
                .filter(|(k, _)| of.is_none_or(|of| of == *k))
                .filter_map(|key| seen.get(key))
                .max()
                .map_or(0.0, |at| at.saturating_duration_since(start).as_secs_f64())
        };
        Some((
            last(None),
            FleetKind::ALL.map(|k| (k, last(Some(k)))).to_vec(),
        ))
    }
}

fn is_ready(obj: &DynamicObject) -> bool {
    obj.data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why objects are not Ready, read back from the API when a run times out: each kind's
/// not-Ready objects counted by the reasons of their False conditions, and the Pods counted by
/// phase and, for Pending ones, by their `PodScheduled` reason (a full simulated cluster shows
/// as `Unschedulable`).
pub async fn diagnose(client: &kube::Client) {
    let mut tally: std::collections::BTreeMap<String, usize> = Default::default();
    for kind in FleetKind::ALL {
        let Ok(list) = kind.api(client).list(&ListParams::default()).await else {
            continue;
        };
        for obj in list.items.iter().filter(|o| !is_ready(o)) {
            let reasons: Vec<String> = obj
                .data
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|c| c["status"] != "True" && c["type"] != "Ready")
                .map(|c| {
                    format!(
                        "{}={}",
                        c["type"].as_str().unwrap_or("?"),
                        c["reason"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            *tally
                .entry(format!("{kind:?} not Ready: {}", reasons.join(",")))
                .or_default() += 1;
        }
    }
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::all(client.clone());
    if let Ok(list) = pods.list(&ListParams::default()).await {
        for pod in list.items {
            let status = pod.status.unwrap_or_default();
            let phase = status.phase.unwrap_or_default();
            let scheduled = status
                .conditions
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")
                .map(|c| format!(" PodScheduled={}", c.reason.unwrap_or_default()))
                .unwrap_or_default();
            *tally.entry(format!("Pod {phase}{scheduled}")).or_default() += 1;
        }
    }
    for (what, n) in tally {
        eprintln!("   {n:>6}  {what}");
    }
}
