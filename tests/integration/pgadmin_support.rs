//! PgAdmin end to end on the simulated cluster: the operator (every kind, as `run` builds it)
//! with its shared actors (the optional-API prober included) against the embedded API server,
//! whose CloudNativePG simulation makes the Clusters' Services, Secrets and instance Pods.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use pgtoolbox_operator::api::PgAdmin;
use pgtoolbox_operator::testing::actors::shared::SharedActors;
use pgtoolbox_operator::testing::reconcile::workload::current_workload_hash;
use pgtoolbox_operator::testing::supervisor::{Operator, OperatorSettings};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::{Value, json};

use super::harness::{TestOperator, Wiring, create_object, merge_object};
use super::sim_net_support::api;
use super::wait_support::{
    events_of, occurrences_of, passes_of, until_passes, wait_event_of, wait_for,
};

pub const NS: &str = "team-a";
pub const OTHER: &str = "team-b";
pub const IMAGE: &str = "docker.io/dpage/pgadmin4:9.10";

pub struct Env {
    pub sim: Sim,
    pub client: kube::Client,
    operator: Option<Operator>,
    shared: SharedActors,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.operator.take();
    }
}

pub fn cluster_config() -> SimConfig {
    super::harness::cluster_config(11)
}

pub async fn start(config: SimConfig, settings: OperatorSettings) -> Env {
    let started = harness(config, settings).start().await;
    let running = started.running.expect("operator started");
    Env {
        sim: started.sim,
        client: started.client,
        operator: Some(running.operator),
        shared: running.actors.expect("shared actors"),
    }
}

/// PgAdmin's harness: both namespaces, the shared actors serving PgAdmin and EvidenceAgent,
/// first passes not jittered.
fn harness(config: SimConfig, settings: OperatorSettings) -> TestOperator {
    TestOperator::new()
        .sim(config)
        .namespace(NS)
        .namespace(OTHER)
        .wiring(wiring(settings))
}

fn wiring(settings: OperatorSettings) -> Wiring {
    Wiring::with(OperatorSettings {
        startup_jitter: Duration::ZERO,
        ..settings
    })
    .kinds(&["PgAdmin", "EvidenceAgent"])
}

/// The simulated cluster alone (a test may change it before the operator starts).
pub async fn start_sim(config: SimConfig) -> Sim {
    TestOperator::new()
        .sim(config)
        .without_operator()
        .start()
        .await
        .sim
}

pub async fn start_operator(sim: Sim, settings: OperatorSettings) -> Env {
    let client = sim.client();
    super::sim_support::namespace(&client, NS).await;
    super::sim_support::namespace(&client, OTHER).await;
    let (operator, shared) = run_operator(&client, settings).await;
    Env {
        sim,
        client,
        operator: Some(operator),
        shared,
    }
}

async fn run_operator(
    client: &kube::Client,
    settings: OperatorSettings,
) -> (Operator, SharedActors) {
    let running = wiring(settings).start(client).await;
    (running.operator, running.actors.expect("shared actors"))
}

pub use super::wait_support::{condition_of, state};

impl Env {
    /// Stops the operator and its shared actors, then starts new ones over the same cluster
    /// (what a new process would hold: nothing remembered).
    pub async fn restart_operator(&mut self, settings: OperatorSettings) {
        if let Some(operator) = self.operator.take() {
            operator.shutdown(Duration::from_secs(5)).await;
        }
        self.shared.stop().await;
        let (operator, shared) = run_operator(&self.client, settings).await;
        self.operator = Some(operator);
        self.shared = shared;
    }

    /// PgAdmin passes ended so far (see `wait_support::until_passes`).
    pub fn passes(&self) -> u64 {
        passes_of(&self.shared.shared, "PgAdmin")
    }

    /// Waits until `more` PgAdmin passes ended after `seen`.
    pub async fn until_passes(&self, seen: u64, more: u64, what: &str) {
        until_passes(&self.shared.shared, "PgAdmin", seen, more, what).await;
    }

    pub fn pgadmins(&self) -> Api<PgAdmin> {
        Api::namespaced(self.client.clone(), NS)
    }

    pub fn dynamic(&self, ns: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
        let group = match kind {
            "PgAdminAccess" => "pgtoolbox.fyannk.dev",
            _ => "postgresql.cnpg.io",
        };
        let mut api = api(&self.client, Some(ns), group, kind, plural);
        if kind == "PgAdminAccess" {
            let gvk = kube::core::GroupVersionKind::gvk(group, "v1alpha1", kind);
            let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
            api = Api::namespaced_with(self.client.clone(), ns, &ar);
        }
        api
    }

    pub async fn create(&self, ns: &str, kind: &str, plural: &str, obj: Value) {
        let obj: DynamicObject = serde_json::from_value(obj).expect("valid object");
        self.dynamic(ns, kind, plural)
            .create(&PostParams::default(), &obj)
            .await
            .expect("created");
    }

    pub async fn cluster(&self, ns: &str, name: &str, labels: Value, instances: i32) {
        self.create(
            ns,
            "Cluster",
            "clusters",
            json!({
                "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"instances": instances, "storage": {"size": "1Gi"}},
            }),
        )
        .await;
    }

    pub async fn grant(&self, name: &str, pgadmin: &str, clusters: &[&str]) {
        self.create(
            OTHER,
            "PgAdminAccess",
            "pgadminaccesses",
            json!({
                "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdminAccess",
                "metadata": {"name": name, "namespace": OTHER},
                "spec": {"pgAdmin": {"namespace": NS, "name": pgadmin}, "clusters": clusters},
            }),
        )
        .await;
    }

    pub async fn pgadmin(&self, name: &str, spec: Value) {
        create_object(
            &self.pgadmins(),
            json!({"name": name, "namespace": NS}),
            spec,
        )
        .await;
    }

    /// A JSON merge patch of the PgAdmin `name`.
    pub async fn merge(&self, name: &str, patch: Value) {
        merge_object(&self.pgadmins(), name, patch).await;
    }

    /// Polls until `condition` of the PgAdmin has `reason` (any status).
    pub async fn wait_reason(&self, name: &str, condition: &str, reason: &str) -> PgAdmin {
        self.wait(name, &format!("{condition} {reason}"), |obj| {
            condition_of(obj, condition).is_some_and(|c| c.reason == reason)
        })
        .await
    }

    pub async fn wait(&self, name: &str, what: &str, check: impl Fn(&PgAdmin) -> bool) -> PgAdmin {
        wait_for(&format!("{name}: {what}"), || async {
            let obj = self.pgadmins().get(name).await.expect("PgAdmin readable");
            if check(&obj) {
                Ok(obj)
            } else {
                Err(format!("status: {:#?}", obj.status))
            }
        })
        .await
    }

    /// `(type, reason, note)` of the Events recorded on the PgAdmin.
    pub async fn events(&self, name: &str) -> Vec<(String, String, String)> {
        events_of(&self.client, NS, name).await
    }

    pub async fn wait_event(&self, name: &str, reason: &str) -> (String, String, String) {
        wait_event_of(&self.client, NS, name, reason).await
    }

    /// How often `reason` was recorded on the PgAdmin (a series counts its repeats).
    pub async fn occurrences(&self, name: &str, reason: &str) -> i32 {
        occurrences_of(&self.client, NS, name, reason).await
    }

    /// Waits until `reason` was recorded more than `seen` times on the PgAdmin.
    pub async fn wait_occurrences(&self, name: &str, reason: &str, seen: i32) {
        wait_for(
            &format!("{name}: {reason} recorded again after {seen} times"),
            || async {
                if self.occurrences(name, reason).await > seen {
                    Ok(())
                } else {
                    Err(format!("events: {:#?}", self.events(name).await))
                }
            },
        )
        .await
    }

    /// Waits until the pgAdmin Deployment's pod template carries a workload hash other than
    /// `before`, and returns it.
    pub async fn wait_rollout_from(&self, name: &str, before: &str) -> String {
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), NS);
        let what = format!("{name}: the workload rolled away from {before}");
        wait_for(&what, || async {
            let deployment = deployments
                .get(&format!("{name}-pgadmin"))
                .await
                .map_err(|e| e.to_string())?;
            let hash = current_workload_hash(&deployment).map(str::to_owned);
            hash.clone()
                .filter(|h| h.as_str() != before)
                .ok_or_else(|| format!("hash {hash:?}"))
        })
        .await
    }

    pub async fn jobs(&self) -> Vec<Job> {
        Api::<Job>::namespaced(self.client.clone(), NS)
            .list(&ListParams::default())
            .await
            .expect("jobs")
            .items
    }

    pub async fn servers_file(&self, name: &str) -> Value {
        let secret = Api::<Secret>::namespaced(self.client.clone(), NS)
            .get(&format!("{name}-pgadmin-servers"))
            .await
            .expect("servers Secret");
        let data = secret.data.unwrap_or_default();
        let bytes = data.get("servers.json").expect("servers.json").0.clone();
        serde_json::from_slice(&bytes).expect("servers file is JSON")
    }
}
