//! The one test harness: [`TestOperator`] starts the simulated cluster with the operator's CRDs
//! (rendered once per test binary), the namespaces, the RBAC manifests a test asks for, and the
//! operator with the production wiring — the shared actors exactly as `cli::run` starts them
//! (`start_shared_actors`, probing for every kind `register_all` registers), then
//! `register_all` — with [`quick_settings`] unless the test names its own.
//!
//! A test opts out of a part of that wiring, never around the harness: the kinds the shared
//! actors serve ([`TestOperator::kinds`]), a bare shared state without the shared actors
//! ([`TestOperator::bare`]), caches it keeps ([`TestOperator::caches`]), its own registration
//! ([`TestOperator::register`], the machinery tests' reconcilers), or no operator at all
//! ([`TestOperator::without_operator`]). The kinds' `Env` types wrap what [`Started`] holds.

#![allow(
    dead_code,
    reason = "each test module uses the part of the harness it needs"
)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use pgtoolbox_operator::api::render_crds_yaml;
use pgtoolbox_operator::cli::{register_all, register_all_with};
use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::actors::shared::{SharedActors, start_shared_actors};
use pgtoolbox_operator::testing::children::OperatorCaches;
use pgtoolbox_operator::testing::health::Readiness;
use pgtoolbox_operator::testing::k8s::{WatchClients, WatchScope, apply_manifests};
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::shard::Ownership;
use pgtoolbox_operator::testing::supervisor::{
    BackoffPolicy, Operator, OperatorBuilder, OperatorSettings,
};
use pgtoolbox_sim::{Sim, SimConfig};
use tokio_util::task::AbortOnDropHandle;

/// The settings a test starts the operator with: no start-up jitter, and retries of a failing
/// pass capped at two seconds. A refusal the operator does not watch (a quota, an admission
/// policy) is seen lifted by the next retry; with the five-minute production cap, a test that
/// lifts it after a few failures on a loaded machine would wait past its deadline.
pub fn quick_settings() -> OperatorSettings {
    OperatorSettings {
        startup_jitter: Duration::ZERO,
        retry: BackoffPolicy {
            min_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
        },
        ..OperatorSettings::default()
    }
}

/// The simulated cluster's components running (Nodes, scheduler, kubelet, controllers), Pods
/// starting after 50 ms, their randomness drawn from `seed`.
pub fn cluster_config(seed: u64) -> SimConfig {
    SimConfig {
        controllers: true,
        pod_start: Duration::from_millis(50),
        seed: Some(seed),
        ..SimConfig::default()
    }
}

/// The operator's CRDs as one YAML stream, rendered once for the whole test binary.
pub fn crds() -> String {
    static CRDS: OnceLock<String> = OnceLock::new();
    CRDS.get_or_init(|| render_crds_yaml().expect("CRDs render"))
        .clone()
}

/// A manifest of deploy/, as the installation ships it.
pub fn deploy(file: &str) -> String {
    std::fs::read_to_string(format!("{}/deploy/{file}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("deploy/{file}: {e}"))
}

/// The operator's ClusterRole as deploy/ ships it.
pub fn operator_cluster_role() -> k8s_openapi::api::rbac::v1::ClusterRole {
    use serde::Deserialize;
    let text = deploy("02-clusterrole.yaml");
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(k8s_openapi::api::rbac::v1::ClusterRole::deserialize)
        .find_map(Result::ok)
        .expect("a ClusterRole")
}

/// Creates an object of kind `K` (one of ours) from its metadata and spec, as a user's
/// manifest would.
pub async fn create_object<K>(api: &Api<K>, metadata: Value, spec: Value) -> K
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let kind = K::kind(&());
    let obj: K = serde_json::from_value(json!({
        "apiVersion": K::api_version(&()), "kind": kind,
        "metadata": metadata, "spec": spec,
    }))
    .unwrap_or_else(|e| panic!("a valid {kind}: {e}"));
    api.create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("{kind} created: {e}"))
}

/// A JSON merge patch of the object `name`.
pub async fn merge_object<K>(api: &Api<K>, name: &str, patch: Value) -> K
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("{} {name} patched: {e}", K::kind(&())))
}

/// The simulated cluster gives the Pods of the instance `instance` (their
/// `app.kubernetes.io/instance` label) in `namespace` this fault.
pub fn fault_instance(
    sim: &Sim,
    namespace: &str,
    instance: &str,
    fault: pgtoolbox_sim::cluster::WorkloadFault,
) {
    sim.admin()
        .add_workload_fault(
            namespace,
            &format!("app.kubernetes.io/instance={instance}"),
            fault,
        )
        .expect("fault added");
}

/// A custom registration in place of `register_all`: the builder on the started shared state.
pub trait RegisterFn:
    Fn(OperatorBuilder, &kube::Client, &Arc<Shared>) -> OperatorBuilder + Send + Sync + 'static
{
}

impl<F> RegisterFn for F where
    F: Fn(OperatorBuilder, &kube::Client, &Arc<Shared>) -> OperatorBuilder + Send + Sync + 'static
{
}

type Register = Arc<dyn RegisterFn>;

/// A fresh cache set watching `namespace` through `client`, as an operator's caches do (every
/// watch started, their wake-ups drained), so a test can drive a reconciler over it; the
/// watches end when the handle drops.
pub fn watched_caches(
    client: &kube::Client,
    namespace: &str,
) -> (OperatorCaches, AbortOnDropHandle<()>) {
    let caches = OperatorCaches::new();
    let scope = WatchScope::Namespaces(vec![namespace.into()]);
    let wakeups: Vec<_> = caches
        .watches()
        .into_iter()
        .flat_map(|start| start(&WatchClients::same(client), &scope))
        .collect();
    let drain = AbortOnDropHandle::new(tokio::spawn(async move {
        let mut all = futures::stream::select_all(wakeups);
        while all.next().await.is_some() {}
    }));
    (caches, drain)
}

/// How the operator starts (and starts again after a stop): the production wiring unless a
/// part is opted out of.
#[derive(Clone)]
pub struct Wiring {
    pub settings: OperatorSettings,
    /// The kinds the shared actors serve; `None`: every kind `register_all` registers.
    kinds: Option<Vec<String>>,
    /// The shared actors started (production), or a bare `Shared` of the settings.
    actors: bool,
    caches: Option<OperatorCaches>,
    register: Option<Register>,
    /// The share of the objects this replica starts with (a member of a sharded set).
    ownership: Option<Ownership>,
}

/// A running operator: its handle, the shared actors when started, and the shared state.
pub struct Running {
    pub operator: Operator,
    pub actors: Option<SharedActors>,
    pub shared: Arc<Shared>,
    pub metrics: OperatorMetrics,
    pub readiness: Readiness,
}

impl Default for Wiring {
    fn default() -> Self {
        Self {
            settings: quick_settings(),
            kinds: None,
            actors: true,
            caches: None,
            register: None,
            ownership: None,
        }
    }
}

impl Wiring {
    /// The production wiring with `settings`.
    pub fn with(settings: OperatorSettings) -> Self {
        Self {
            settings,
            ..Self::default()
        }
    }

    /// The shared actors serve (probe, track refusals for) these kinds only.
    pub fn kinds(mut self, kinds: &[&str]) -> Self {
        self.kinds = Some(kinds.iter().map(|k| (*k).to_owned()).collect());
        self
    }

    /// No shared actors: the operator on a bare `Shared` of the settings.
    pub fn bare(mut self) -> Self {
        self.actors = false;
        self
    }

    /// `register_all` over caches the test keeps.
    pub fn caches(mut self, caches: OperatorCaches) -> Self {
        self.caches = Some(caches);
        self
    }

    /// The test's own registration instead of `register_all`.
    pub fn register(mut self, register: impl RegisterFn) -> Self {
        self.register = Some(Arc::new(register));
        self
    }

    /// The replica starts owning this share (a member of a sharded set).
    pub fn ownership(mut self, ownership: Ownership) -> Self {
        self.ownership = Some(ownership);
        self
    }

    /// Starts the shared state and the operator on `client`.
    pub async fn start(&self, client: &kube::Client) -> Running {
        let metrics = OperatorMetrics::new();
        let readiness = Readiness::new();
        let (actors, shared) = if self.actors {
            let kinds = match &self.kinds {
                Some(kinds) => kinds.clone(),
                None => all_kinds(client),
            };
            let actors = start_shared_actors(
                client,
                &kinds,
                self.settings.clone(),
                metrics.clone(),
                readiness.clone(),
            )
            .await
            .expect("shared actors start");
            let shared = actors.shared.clone();
            (Some(actors), shared)
        } else {
            (None, Arc::new(Shared::new(self.settings.clone())))
        };
        let mut builder = OperatorBuilder::new(client.clone(), shared.clone());
        if let Some(ownership) = &self.ownership {
            builder = builder.ownership(ownership.clone());
        }
        let builder = match (&self.register, &self.caches) {
            (Some(register), _) => register(builder, client, &shared),
            (None, Some(caches)) => register_all_with(builder, caches.clone()),
            (None, None) => register_all(builder),
        };
        let operator = builder.start().await.expect("operator starts");
        Running {
            operator,
            actors,
            shared,
            metrics,
            readiness,
        }
    }
}

/// Every kind the operator registers.
pub fn all_kinds(client: &kube::Client) -> Vec<String> {
    register_all(OperatorBuilder::new(
        client.clone(),
        Arc::new(Shared::default()),
    ))
    .kind_names()
}

/// The builder of a test's cluster and operator.
pub struct TestOperator {
    sim: SimConfig,
    ours: Option<String>,
    namespaces: Vec<String>,
    /// Manifests and the field manager applying each.
    manifests: Vec<(String, &'static str)>,
    operator_as: Option<String>,
    wiring: Option<Wiring>,
}

/// What [`TestOperator::start`] started.
pub struct Started {
    pub sim: Sim,
    /// The cluster administrator's client.
    pub client: kube::Client,
    /// The operator's client (the administrator's unless `operator_as` named a user).
    pub operator_client: kube::Client,
    pub running: Option<Running>,
}

impl Default for TestOperator {
    fn default() -> Self {
        Self::new()
    }
}

impl TestOperator {
    /// The default sim with the operator's CRDs, no namespace, and the operator with the
    /// production wiring and quick settings.
    pub fn new() -> Self {
        Self {
            sim: SimConfig::default(),
            ours: Some(crds()),
            namespaces: Vec::new(),
            manifests: Vec::new(),
            operator_as: None,
            wiring: Some(Wiring::default()),
        }
    }

    /// The sim's configuration; its `extra_crds` follow the operator's CRDs.
    pub fn sim(mut self, config: SimConfig) -> Self {
        self.sim = config;
        self
    }

    /// These CRDs in place of the operator's as rendered (a test alters them).
    pub fn our_crds(mut self, crds: String) -> Self {
        self.ours = Some(crds);
        self
    }

    /// Creates `name` before the operator starts (one that exists already is kept).
    pub fn namespace(mut self, name: &str) -> Self {
        self.namespaces.push(name.to_owned());
        self
    }

    /// Applies `manifest` (RBAC, ClusterRoles a kind binds) before the operator starts.
    pub fn manifest(mut self, manifest: impl Into<String>) -> Self {
        self.manifests.push((manifest.into(), "test"));
        self
    }

    /// Applies deploy/`file` before the operator starts, as the installation does.
    pub fn install(mut self, file: &str) -> Self {
        self.manifests.push((deploy(file), "install"));
        self
    }

    /// The operator runs as this user (its RBAC as installed), not as the administrator.
    pub fn operator_as(mut self, user: &str) -> Self {
        self.operator_as = Some(user.to_owned());
        self
    }

    /// The operator's settings (quick settings otherwise).
    pub fn settings(mut self, settings: OperatorSettings) -> Self {
        self.wiring.get_or_insert_with(Wiring::default).settings = settings;
        self
    }

    /// How the operator starts (see [`Wiring`]).
    pub fn wiring(mut self, wiring: Wiring) -> Self {
        self.wiring = Some(wiring);
        self
    }

    /// The shared actors serve these kinds only.
    pub fn kinds(mut self, kinds: &[&str]) -> Self {
        self.wiring = Some(self.wiring.unwrap_or_default().kinds(kinds));
        self
    }

    /// No shared actors: a bare `Shared` of the settings.
    pub fn bare(mut self) -> Self {
        self.wiring = Some(self.wiring.unwrap_or_default().bare());
        self
    }

    /// `register_all` over caches the test keeps.
    pub fn caches(mut self, caches: OperatorCaches) -> Self {
        self.wiring = Some(self.wiring.unwrap_or_default().caches(caches));
        self
    }

    /// The test's own registration instead of `register_all`.
    pub fn register(mut self, register: impl RegisterFn) -> Self {
        self.wiring = Some(self.wiring.unwrap_or_default().register(register));
        self
    }

    /// The cluster alone: the test starts the operator later (or never).
    pub fn without_operator(mut self) -> Self {
        self.wiring = None;
        self
    }

    /// The cluster alone (no operator): the sim and the administrator's client.
    pub async fn start_cluster(self) -> (Sim, kube::Client) {
        let started = self.without_operator().start().await;
        (started.sim, started.client)
    }

    /// The sim with the CRDs, the namespaces and manifests, then the operator.
    pub async fn start(self) -> Started {
        let mut extra_crds: Vec<String> = self.ours.into_iter().collect();
        extra_crds.extend(self.sim.extra_crds.iter().cloned());
        let sim = Sim::start(SimConfig {
            extra_crds,
            ..self.sim
        })
        .await
        .expect("sim starts");
        let client = sim.client();
        for name in &self.namespaces {
            super::sim_support::namespace(&client, name).await;
        }
        for (manifest, manager) in &self.manifests {
            for result in apply_manifests(&client, manifest, manager).await {
                result.unwrap_or_else(|e| panic!("manifest not applied: {e}"));
            }
        }
        let operator_client = match &self.operator_as {
            Some(user) => sim.admin().client_for(user, &[]).expect("operator client"),
            None => client.clone(),
        };
        let running = match &self.wiring {
            Some(wiring) => Some(wiring.start(&operator_client).await),
            None => None,
        };
        Started {
            sim,
            client,
            operator_client,
            running,
        }
    }
}

impl Running {
    /// Stops the operator, then its shared actors (what a process exit would).
    pub async fn stop(self) {
        self.operator.shutdown(Duration::from_secs(5)).await;
        if let Some(actors) = self.actors {
            actors.stop().await;
        }
    }
}
