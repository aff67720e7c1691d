//! The three ways of bringing the fleet to its statuses, with the same decisions and the same
//! write budget: our actor runtime, kube-runtime's `Controller`, and a plain client (the ceiling).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Resource, ResourceExt};
use pgtoolbox_operator::api::{PgAccessRequest, ReportsConditions};
use pgtoolbox_operator::cli::register_all;
use pgtoolbox_operator::testing::actors::access_request::AccessRequestReconciler;
use pgtoolbox_operator::testing::actors::{PassEnv, Shared};
use pgtoolbox_operator::testing::children::OperatorCaches;
use pgtoolbox_operator::testing::conditions::{derive_status, status_patch};
use pgtoolbox_operator::testing::k8s::{
    EventSink, WatchClients, WriteBudget, delete_pinned, patch_status,
};
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_operator::testing::reconcile::access_request::{
    RequestFacts, decide, deletion_event, pass_facts, request_events, status_fields,
};
use pgtoolbox_operator::testing::supervisor::{
    Operator, OperatorBuilder, OperatorSettings, WatchScope,
};
use tokio_util::task::AbortOnDropHandle;

use super::common::drivers::{actors_settled, passes_reached, spawn_controller};
use super::seed::Seeded;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    Ours,
    Controller,
    Raw,
}

impl Driver {
    pub const ALL: [Driver; 3] = [Driver::Raw, Driver::Controller, Driver::Ours];

    pub fn name(self) -> &'static str {
        match self {
            Driver::Ours => "ours",
            Driver::Controller => "controller",
            Driver::Raw => "raw",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == value)
    }
}

/// A started driver; dropping it (or `stop`) ends it.
pub enum Running {
    Ours(Operator, Arc<Shared>),
    Controller(AbortOnDropHandle<()>),
    Raw(tokio::task::JoinHandle<()>),
}

impl Running {
    /// Ours: waits (at most `bound`) until no PgAccessRequest actor is live any more, then
    /// answers (live, hibernated).
    pub async fn actors_settled(&self, bound: Duration) -> Option<(i64, i64)> {
        let Running::Ours(_, shared) = self else {
            return None;
        };
        Some(actors_settled(shared, "PgAccessRequest", bound).await)
    }

    /// Ours: waits (at most `bound`) until `count` PgAccessRequest passes have run, then
    /// answers how many had.
    pub async fn passes_reached(&self, count: u64, bound: Duration) -> Option<u64> {
        let Running::Ours(_, shared) = self else {
            return None;
        };
        Some(passes_reached(shared, "PgAccessRequest", count, bound).await)
    }

    pub async fn stop(self) {
        match self {
            Running::Ours(operator, _) => operator.shutdown(Duration::from_secs(10)).await,
            Running::Controller(task) => drop(task),
            Running::Raw(task) => task.abort(),
        }
    }
}

pub async fn start(
    driver: Driver,
    client: &kube::Client,
    settings: &OperatorSettings,
    fleet: Vec<Seeded>,
) -> Running {
    match driver {
        Driver::Ours => {
            let shared = Arc::new(Shared::new(settings.clone()));
            let operator = register_all(OperatorBuilder::new(client.clone(), shared.clone()))
                .start()
                .await
                .expect("operator starts");
            Running::Ours(operator, shared)
        }
        Driver::Controller => Running::Controller(controller(client, settings)),
        Driver::Raw => Running::Raw(tokio::spawn(raw(client.clone(), settings.clone(), fleet))),
    }
}

/// kube-runtime's Controller calling our reconciler (decide, conditions engine, one status
/// write, Events) with a write budget of the same size; RoleBinding changes reach it through the
/// same caches as ours, as `reconcile_on` triggers. Concurrency is kube's default (unbounded).
fn controller(client: &kube::Client, settings: &OperatorSettings) -> AbortOnDropHandle<()> {
    // The same cache set (and so the same watches) as the operator's.
    let caches = OperatorCaches::new();
    let scope = WatchScope::All;
    let owners: Vec<_> = caches
        .watches()
        .into_iter()
        .flat_map(|start| start(&WatchClients::same(client), &scope))
        .collect();
    let triggers = futures::stream::select_all(owners)
        .map(|key| ObjectRef::<PgAccessRequest>::new(&key.name).within(&key.namespace));
    let reconciler = AccessRequestReconciler::new(caches, EventSink::new(client.clone()));
    let env = Arc::new(PassEnv {
        client: client.clone(),
        writes: WriteBudget::new(settings.max_inflight_writes),
        shared: Arc::new(Shared::new(settings.clone())),
    });
    let api: Api<PgAccessRequest> = Api::all(client.clone());
    let controller = Controller::new(api, watcher::Config::default()).reconcile_on(triggers);
    spawn_controller(controller, reconciler, env)
}

/// The ceiling: no watch, no cache, no scheduler. A fixed pool of clients (as many as the
/// write budget) runs the same decision over the seeded objects and issues the same writes
/// (binding deletions, one status merge patch, Events); expiring requests get their second
/// write at their instant.
async fn raw(client: kube::Client, settings: OperatorSettings, fleet: Vec<Seeded>) {
    let workers = settings.max_inflight_writes;
    let budget = WriteBudget::new(workers);
    let events = EventSink::new(client.clone());
    let fleet = Arc::new(fleet);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let (client, budget, events, fleet, next) = (
            client.clone(),
            budget.clone(),
            events.clone(),
            fleet.clone(),
            next.clone(),
        );
        let grace = settings.access_request_orphan_grace;
        tasks.push(tokio::spawn(async move {
            let mut later = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(seeded) = fleet.get(index) else {
                    break;
                };
                let io = RawIo {
                    client: &client,
                    budget: &budget,
                    events: &events,
                    grace,
                };
                let (mut written, mut binding, mut expiry) =
                    io.pass(&seeded.request, seeded.binding.as_ref()).await;
                // An adoption leaves the children in flight: like the reconciler's next pass,
                // a second pass over what was written records them converged.
                let adopted = binding.as_ref().is_some_and(|rb| {
                    rb.metadata
                        .owner_references
                        .as_ref()
                        .is_some_and(|o| !o.is_empty())
                }) && seeded
                    .binding
                    .as_ref()
                    .is_some_and(|rb| rb.metadata.owner_references.is_none());
                if adopted {
                    (written, binding, expiry) = io.pass(&written, binding.as_ref()).await;
                }
                // Only expiries within the run; the others are a day away.
                let soon = Timestamp::now() + k8s_openapi::jiff::SignedDuration::from_hours(1);
                if let Some(at) = expiry.filter(|at| *at < soon) {
                    later.push((written, binding, at));
                }
            }
            // The second write of the expiring requests, at their instant.
            let mut expiries = Vec::new();
            for (written, binding, at) in later {
                let (client, budget, events) = (client.clone(), budget.clone(), events.clone());
                expiries.push(tokio::spawn(async move {
                    let wait = at.duration_since(Timestamp::now());
                    if let Ok(wait) = Duration::try_from(wait) {
                        tokio::time::sleep(wait + Duration::from_millis(20)).await;
                    }
                    let io = RawIo {
                        client: &client,
                        budget: &budget,
                        events: &events,
                        grace,
                    };
                    io.pass(&written, binding.as_ref()).await;
                }));
            }
            for expiry in expiries {
                let _ = expiry.await;
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}

struct RawIo<'a> {
    client: &'a kube::Client,
    budget: &'a WriteBudget,
    events: &'a EventSink,
    grace: Duration,
}

impl RawIo<'_> {
    /// One pass as the reconciler does it, from what the benchmark seeded instead of from
    /// caches. Returns the written request and, while it can still expire, its expiry.
    async fn pass(
        &self,
        obj: &PgAccessRequest,
        binding: Option<&RoleBinding>,
    ) -> (PgAccessRequest, Option<RoleBinding>, Option<Timestamp>) {
        let now = Timestamp::now();
        let key = ObjectKey::of(obj).expect("seeded key");
        let status = obj.status.clone().unwrap_or_default();
        let bindings: Vec<&RoleBinding> = binding.into_iter().collect();
        let mut request =
            RequestFacts::of(obj, &key.name, &key.namespace, &status, None, self.grace);
        // The bench serves every role its requests name.
        request.cluster_role_exists = Some(true);
        let decision = decide(&request, &bindings, now);
        let regarding = obj.object_ref(&());
        let rbs: Api<RoleBinding> = Api::namespaced(self.client.clone(), &key.namespace);
        for deletion in &decision.deletions {
            delete_pinned(
                &rbs,
                self.budget,
                &deletion.name,
                deletion.uid.clone(),
                deletion.resource_version.clone(),
            )
            .await
            .expect("binding deleted");
            self.events
                .publish(self.budget, &regarding, &[deletion_event(deletion)])
                .await;
        }
        // The same adoption write as `k8s::add_owner_pinned`, keeping the answer: the binding's
        // new version is what the expiry pass must pin its deletion to.
        let mut binding = binding.cloned();
        if let Some(owner) = obj.owner_ref(&()) {
            for adoption in &decision.adoptions {
                let patch = serde_json::json!({"metadata": {
                    "resourceVersion": adoption.resource_version,
                    "ownerReferences": [owner],
                }});
                let _permit = self.budget.acquire().await.expect("budget open");
                let adopted = rbs
                    .patch(
                        &adoption.name,
                        &PatchParams::default(),
                        &Patch::Strategic(&patch),
                    )
                    .await
                    .expect("binding adopted");
                binding = Some(adopted);
            }
        }
        let facts = pass_facts(obj.pass_facts(), &decision).expect("facts");
        let update = derive_status(&facts, obj.stored_status(), now);
        let fields = status_fields(&decision);
        if !update.changed && fields.is_empty() {
            return (obj.clone(), binding, decision.expiry_at);
        }
        let precondition = decision
            .new_phase
            .is_some()
            .then(|| obj.resource_version())
            .flatten();
        let patch = status_patch(&update, fields, precondition.as_deref()).expect("patch");
        let written = patch_status::<PgAccessRequest>(self.client, self.budget, &key, &patch)
            .await
            .expect("status written");
        let mut events = update.events;
        events.extend(request_events(&decision));
        self.events.publish(self.budget, &regarding, &events).await;
        (written, binding, decision.expiry_at)
    }
}
