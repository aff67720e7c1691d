//! A minimal kind assembled from the shared child machinery alone, to test that machinery
//! against the simulated cluster apart from any production kind's own rules: the owned-children
//! store, the applier, `workload_verdict`, `decide_exposure` and the status writer. It
//! reconciles PgToolBoxConsole objects only because that CRD has a status with the workload and
//! exposure conditions; the production console controller is not started beside it. Each object
//! owns a Deployment, a Service and a Route, an Ingress or an HTTPRoute.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Client;
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use pgtoolbox_operator::api::{
    ExposureKind, PgToolBoxConsole, PgToolBoxConsoleStatus, ReportsConditions,
};
use pgtoolbox_operator::testing::actors::shared::SharedActors;
use pgtoolbox_operator::testing::actors::{ObjectContext, Outcome, ReconcileError, Reconciler};
use pgtoolbox_operator::testing::children::{
    self, Applier, ApplyReport, ChildOwner, ChildVerdict, Component, Desired, HttpRoute,
    OperatorCaches, Route,
};
use pgtoolbox_operator::testing::conditions::{
    ConditionType, StatusField, Verdict, reasons::common,
};
use pgtoolbox_operator::testing::k8s::EventSink;
use pgtoolbox_operator::testing::messages::KindKey;
use pgtoolbox_operator::testing::reconcile::children::{
    child_labels, child_name, pod_template_labels,
};
use pgtoolbox_operator::testing::reconcile::exposure::{
    BackendPort, ExposureInputs, ExposureView, ObservedExposure, decide_exposure,
    desired_http_route, desired_ingress, desired_route,
};
use pgtoolbox_operator::testing::reconcile::optional_api::{Availability, OptionalApi};
use pgtoolbox_operator::testing::reconcile::workload::workload_verdict;
use pgtoolbox_operator::testing::status::{Extras, StatusWriter};
use pgtoolbox_operator::testing::supervisor::{Kind, KindOptions, Operator, OperatorSettings};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::{Value, json};
use tokio_util::task::AbortOnDropHandle;

use super::harness::{TestOperator, create_object, merge_object};

pub const NS: &str = "team-a";
pub const KIND: &str = "PgToolBoxConsole";
const CACHE_WAIT: Duration = Duration::from_secs(30);
/// Test knobs on the owner (a real kind reads its spec): the env var's Secret `name/key`, and
/// the Deployment's progress deadline.
pub const ENV_SECRET: &str = "test.pgtoolbox.fyannk.dev/env-secret";
pub const DEADLINE: &str = "test.pgtoolbox.fyannk.dev/progress-deadline";
const PORT: BackendPort<'static> = BackendPort {
    name: "http",
    number: 8080,
};

/// What a pass waits for: the first lists of the stores it reads.
async fn wait_synced(caches: &OperatorCaches) -> Result<(), ReconcileError> {
    let synced = [
        caches.deployments.synced(),
        caches.replica_sets.synced(),
        caches.pods.synced(),
        caches.services.synced(),
        caches.ingresses.synced(),
        caches.routes.synced(),
        caches.http_routes.synced(),
    ];
    children::wait_synced(CACHE_WAIT, &synced)
        .await
        .map_err(ReconcileError::other)
}

pub struct MachineryPasses {
    caches: OperatorCaches,
    status: StatusWriter<PgToolBoxConsole>,
    pub passes: AtomicUsize,
    pub finished: AtomicUsize,
    /// The last failed pass's error, for a failure's message.
    pub last_error: Mutex<Option<String>>,
}

fn first<C: Clone>(children: &[Arc<C>]) -> Option<C> {
    children.first().map(|c| c.as_ref().clone())
}

/// The Deployment of the console (pure: the same object renders the same JSON).
fn desired_deployment(obj: &PgToolBoxConsole, name: &str) -> Deployment {
    let owner = obj.metadata.name.as_deref().unwrap_or_default();
    let annotations = obj.metadata.annotations.clone().unwrap_or_default();
    let mut container = json!({
        "name": "console",
        "image": obj.spec.image.clone().unwrap_or_else(|| "ghcr.io/pgtoolbox/console:0.1.0".into()),
        "ports": [{"name": PORT.name, "containerPort": PORT.number}],
    });
    if let Some(resources) = &obj.spec.resources {
        container["resources"] = json!(resources);
    }
    if let Some((secret, key)) = annotations.get(ENV_SECRET).and_then(|v| v.split_once('/')) {
        container["env"] =
            json!([{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}]);
    }
    let mut spec = json!({
        "replicas": obj.spec.replicas,
        "selector": {"matchLabels": child_labels(owner, Component::Console)},
        "template": {
            "metadata": {"labels": pod_template_labels(owner, Component::Console)},
            "spec": {"containers": [container]},
        },
    });
    if let Some(deadline) = annotations
        .get(DEADLINE)
        .and_then(|d| d.parse::<i32>().ok())
    {
        spec["progressDeadlineSeconds"] = json!(deadline);
    }
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .unwrap_or_default()
}

fn desired_service(owner: &str, name: &str) -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "selector": child_labels(owner, Component::Console),
            "ports": [{"name": PORT.name, "port": PORT.number, "targetPort": PORT.name}],
        },
    }))
    .unwrap_or_default()
}

fn not_owned(reports: &[&ApplyReport]) -> Option<String> {
    reports.iter().find_map(|r| match r.not_owned() {
        Some(ChildVerdict::NotOwned { kind, name }) => Some(format!(
            "{kind} {name} exists and is not controlled by this PgToolBoxConsole"
        )),
        _ => None,
    })
}

impl MachineryPasses {
    async fn pass(
        &self,
        obj: Arc<PgToolBoxConsole>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        self.passes.fetch_add(1, Ordering::SeqCst);
        wait_synced(&self.caches).await?;
        let obj = self.status.freshest(&cx.key, obj);
        let Some(owner) = ChildOwner::of(obj.as_ref()) else {
            return Err(ReconcileError::other("the console has no uid yet"));
        };
        let key = KindKey::new(KIND, &cx.key.namespace, &cx.key.name);
        let name = child_name(&cx.key.name, "console");
        let applier = Applier {
            client: &cx.client,
            writes: &cx.writes,
        };

        // Exposure: decided from the caches and the prober's answers first.
        let view = ExposureView::from(&obj.spec.exposure);
        let optional = &cx.shared.optional_apis;
        let routes = optional.availability(OptionalApi::Routes, &cx.key.namespace);
        let http_routes = optional.availability(OptionalApi::HttpRoutes, &cx.key.namespace);
        let route = first(&self.caches.routes.children_of(&key)).and_then(|r| r.to_dynamic());
        let http_route =
            first(&self.caches.http_routes.children_of(&key)).and_then(|r| r.to_dynamic());
        let ingress = first(&self.caches.ingresses.children_of(&key));
        let no_status = PgToolBoxConsoleStatus::default();
        let stored = obj.status.as_ref().unwrap_or(&no_status);
        let decision = decide_exposure(&ExposureInputs {
            exposure: view,
            child_name: &name,
            service_name: &name,
            hostname: Ok(()),
            conflict: None,
            routes: &routes,
            http_routes: &http_routes,
            observed: ObservedExposure {
                route: route.as_ref(),
                ingress: ingress.as_ref(),
                http_route: http_route.as_ref(),
            },
            namespace: &cx.key.namespace,
            recorded: &stored.published_exposure_kinds,
            past_cache: &[],
        });

        // Children: every kind's complete set, through the applier.
        let labels = BTreeMap::new();
        let ns = cx.key.namespace.as_str();
        let desired = |kind| (decision.apply == Some(kind)).then_some(());
        let mut reports = Vec::new();
        let deployment = desired_deployment(&obj, &name);
        reports.push(
            applier
                .apply(
                    &self.caches.deployments,
                    &owner,
                    vec![Desired {
                        component: Component::Console,
                        object: deployment,
                    }],
                )
                .await
                .map_err(ReconcileError::other)?,
        );
        reports.push(
            applier
                .apply(
                    &self.caches.services,
                    &owner,
                    vec![Desired {
                        component: Component::Console,
                        object: desired_service(&cx.key.name, &name),
                    }],
                )
                .await
                .map_err(ReconcileError::other)?,
        );
        let ingresses = desired(ExposureKind::Ingress)
            .map(|()| Desired {
                component: Component::Console,
                object: desired_ingress(&name, ns, &labels, &view, &name, PORT),
            })
            .into_iter()
            .collect();
        reports.push(
            applier
                .apply(&self.caches.ingresses, &owner, ingresses)
                .await
                .map_err(ReconcileError::other)?,
        );
        if routes != Availability::NotServed {
            let store = &self.caches.routes;
            let mut wanted = Vec::new();
            if desired(ExposureKind::Route).is_some() {
                let value = desired_route(&name, ns, &labels, &view, &name, PORT);
                wanted.push(Desired {
                    component: Component::Console,
                    object: Route::from_value(value).map_err(ReconcileError::other)?,
                });
            }
            reports.push(
                applier
                    .apply(store, &owner, wanted)
                    .await
                    .map_err(ReconcileError::other)?,
            );
        }
        if http_routes != Availability::NotServed {
            let store = &self.caches.http_routes;
            let mut wanted = Vec::new();
            if desired(ExposureKind::HttpRoute).is_some() {
                let value = desired_http_route(&name, ns, &labels, &view, &name, PORT);
                wanted.push(Desired {
                    component: Component::Console,
                    object: HttpRoute::from_value(value).map_err(ReconcileError::other)?,
                });
            }
            reports.push(
                applier
                    .apply(store, &owner, wanted)
                    .await
                    .map_err(ReconcileError::other)?,
            );
        }

        // Verdicts: the shared facts, read from the caches.
        let report_refs: Vec<&ApplyReport> = reports.iter().collect();
        let configuration = match not_owned(&report_refs) {
            Some(message) => Verdict::fails(common::RESOURCE_NOT_OWNED, message),
            None => Verdict::holds(common::AS_EXPECTED, "the console's children are rendered"),
        };
        let deployment = self
            .caches
            .deployments
            .children_of(&key)
            .into_iter()
            .find(|d| d.metadata.name.as_deref() == Some(name.as_str()));
        let replica_sets: Vec<ReplicaSet> = self
            .caches
            .replica_sets
            .children_of(&key)
            .iter()
            .map(|r| r.as_ref().clone())
            .collect();
        let pods: Vec<Pod> = self
            .caches
            .pods
            .children_of(&key)
            .iter()
            .map(|p| p.as_ref().clone())
            .collect();
        let workload = workload_verdict(&name, deployment.as_deref(), &replica_sets, &pods);
        let converged = reports.iter().all(ApplyReport::converged);
        let facts = obj
            .pass_facts()
            .with_aspect(ConditionType::ConfigurationValid, configuration)
            .and_then(|f| f.with_aspect(ConditionType::WorkloadReady, workload))
            .and_then(|f| f.with_aspect(ConditionType::ExposureReady, decision.verdict.clone()))
            .and_then(|f| f.with_status_field(StatusField::Url, &decision.url, &stored.url))
            .and_then(|f| {
                f.with_status_field(
                    StatusField::PublishedExposureKinds,
                    &decision.published,
                    &stored.published_exposure_kinds,
                )
            })
            .map_err(ReconcileError::other)?
            .with_children_converged(converged);
        let written = self
            .status
            .write(obj.as_ref(), &facts, Extras::default(), cx.target())
            .await
            .map_err(ReconcileError::other)?;
        Ok(Outcome::done().with_status(written))
    }
}

/// The reconciler registered with the operator; the test keeps the other handle.
struct MachineryKind(Arc<MachineryPasses>);

impl Reconciler for MachineryKind {
    type Object = PgToolBoxConsole;

    async fn reconcile(
        &self,
        obj: Arc<PgToolBoxConsole>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        let result = self.0.pass(obj, cx).await;
        self.0.finished.fetch_add(1, Ordering::SeqCst);
        if let Err(err) = &result {
            *self.0.last_error.lock().expect("not poisoned") = Some(err.to_string());
        }
        result
    }
}

/// One condition as a watch of the consoles saw it written: `(object, type, status, reason,
/// message)`. Every written status is seen, so a transient reason is not missed by polling.
pub type Seen = (String, String, String, String, String);

pub struct Env {
    pub sim: Sim,
    pub client: Client,
    pub consoles: Arc<MachineryPasses>,
    seen: Arc<Mutex<Vec<Seen>>>,
    _recorder: AbortOnDropHandle<()>,
    _shared: SharedActors,
    operator: Option<Operator>,
}

fn record(client: &Client) -> (Arc<Mutex<Vec<Seen>>>, AbortOnDropHandle<()>) {
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let sink = seen.clone();
    let api: Api<PgToolBoxConsole> = Api::namespaced(client.clone(), NS);
    let task = tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .applied_objects()
            .boxed();
        while let Some(Ok(obj)) = stream.next().await {
            let name = obj.metadata.name.clone().unwrap_or_default();
            let Some(status) = obj.status else { continue };
            let mut seen = sink.lock().expect("not poisoned");
            for c in status.common.conditions {
                let entry = (name.clone(), c.type_, c.status, c.reason, c.message);
                // A transition is recorded; the same condition written again is not.
                let last = seen
                    .iter()
                    .rev()
                    .find(|(n, t, ..)| *n == entry.0 && *t == entry.1);
                if last != Some(&entry) {
                    seen.push(entry);
                }
            }
        }
    });
    (seen, AbortOnDropHandle::new(task))
}

/// The simulated cluster (Nodes, scheduler, kubelet, controllers, router, Ingress and Gateway
/// controllers) with `unserve`d groups, the shared actors and the machinery kind.
pub async fn start(unserve: &[&str]) -> Env {
    // The machinery kind is built on the started shared actors (its caches share their Secret
    // index); the registration hands it back through this slot.
    let slot: Arc<Mutex<Option<Arc<MachineryPasses>>>> = Arc::default();
    let registered = slot.clone();
    let started = TestOperator::new()
        .sim(SimConfig {
            controllers: true,
            unserve: unserve.iter().map(|g| g.to_string()).collect(),
            pod_start: Duration::from_secs(1),
            ..SimConfig::default()
        })
        .namespace(NS)
        .settings(OperatorSettings {
            startup_jitter: Duration::ZERO,
            ..OperatorSettings::default()
        })
        .kinds(&[KIND])
        .register(move |mut builder, client, shared| {
            let caches = OperatorCaches::new().sharing_secrets(shared.secrets.routed_index());
            let consoles = Arc::new(MachineryPasses {
                caches: caches.clone(),
                status: StatusWriter::new(EventSink::new(client.clone())),
                passes: AtomicUsize::new(0),
                finished: AtomicUsize::new(0),
                last_error: Mutex::new(None),
            });
            for start in caches.watches() {
                builder = builder.cache(start);
            }
            let options = KindOptions {
                startup_jitter: Duration::ZERO,
                ..KindOptions::default()
            };
            *registered.lock().expect("slot") = Some(consoles.clone());
            builder.register(Kind::new(MachineryKind(consoles)).options(options))
        })
        .start()
        .await;
    let (sim, client) = (started.sim, started.client);
    let running = started.running.expect("operator started");
    let (operator, shared) = (running.operator, running.actors.expect("shared actors"));
    let consoles = slot.lock().expect("slot").take().expect("kind registered");
    let (seen, recorder) = record(&client);
    Env {
        sim,
        client,
        consoles,
        seen,
        _recorder: recorder,
        _shared: shared,
        operator: Some(operator),
    }
}

impl Env {
    pub fn consoles(&self) -> Api<PgToolBoxConsole> {
        Api::namespaced(self.client.clone(), NS)
    }

    pub async fn create(&self, name: &str, spec: Value, annotations: Value) -> PgToolBoxConsole {
        let metadata = json!({"name": name, "namespace": NS, "annotations": annotations});
        create_object(&self.consoles(), metadata, spec).await
    }

    pub async fn merge(&self, name: &str, patch: Value) {
        merge_object(&self.consoles(), name, patch).await;
    }

    /// The workload as the API server holds it, for a failure's message.
    async fn dump(&self) -> String {
        let lp = ListParams::default();
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), NS);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), NS);
        let d = deployments.list(&lp).await.map(|l| {
            l.items
                .into_iter()
                .map(|d| (d.metadata.name, d.metadata.labels, d.status))
                .collect::<Vec<_>>()
        });
        let p = pods.list(&lp).await.map(|l| {
            l.items
                .into_iter()
                .map(|p| (p.metadata.name, p.metadata.labels, p.status))
                .collect::<Vec<_>>()
        });
        format!("deployments: {d:#?}\npods: {p:#?}")
    }

    /// How many conditions were seen so far: [`Env::until`] looks only at later ones.
    pub fn mark(&self) -> usize {
        self.seen.lock().expect("not poisoned").len()
    }

    /// Waits until a status written after `since` shows the condition with `status` and
    /// `reason`; returns its message.
    pub async fn until(
        &self,
        since: usize,
        name: &str,
        type_: ConditionType,
        status: &str,
        reason: &str,
    ) -> String {
        let deadline = tokio::time::Instant::now() + super::wait_support::DEADLINE;
        while tokio::time::Instant::now() < deadline {
            let found = self.seen.lock().expect("not poisoned")[since..]
                .iter()
                .find(|(n, t, s, r, _)| {
                    n == name && t == type_.as_str() && s == status && r == reason
                })
                .map(|e| e.4.clone());
            if let Some(message) = found {
                return message;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let seen = self.seen.lock().expect("not poisoned")[since..].to_vec();
        let passes = self.consoles.passes.load(Ordering::SeqCst);
        let error = self
            .consoles
            .last_error
            .lock()
            .expect("not poisoned")
            .clone();
        let cluster = self.dump().await;
        let key = KindKey::new(KIND, NS, name);
        let cached: Vec<_> = self
            .consoles
            .caches
            .pods
            .children_of(&key)
            .iter()
            .map(|p| {
                let ready = p.status.as_ref().and_then(|s| s.conditions.clone());
                (
                    p.metadata.name.clone(),
                    p.metadata.resource_version.clone(),
                    ready.map(|c| {
                        c.into_iter()
                            .map(|c| (c.type_, c.status))
                            .collect::<Vec<_>>()
                    }),
                )
            })
            .collect();
        let cached_d: Vec<_> = self
            .consoles
            .caches
            .deployments
            .children_of(&key)
            .iter()
            .map(|d| {
                (
                    d.metadata.resource_version.clone(),
                    d.status.as_ref().and_then(|s| s.available_replicas),
                )
            })
            .collect();
        eprintln!("FINISHED {}", self.consoles.finished.load(Ordering::SeqCst));
        eprintln!("CACHED pods {cached:?} deployments {cached_d:?}");
        panic!(
            "{name}: {type_:?} never became {status}/{reason}; seen since: {seen:#?}; {passes} passes, last error {error:?}; {cluster}"
        );
    }

    /// Waits for `reason`, then returns a new mark.
    pub async fn step(
        &self,
        since: usize,
        name: &str,
        type_: ConditionType,
        status: &str,
        reason: &str,
    ) -> usize {
        self.until(since, name, type_, status, reason).await;
        self.mark()
    }

    pub async fn stop(&mut self) {
        if let Some(operator) = self.operator.take() {
            operator.shutdown(Duration::from_secs(5)).await;
        }
    }
}
