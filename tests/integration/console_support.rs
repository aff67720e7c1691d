//! PgToolBoxConsole end to end: the operator in-process (register_all) against the embedded
//! API server, with or without the simulated cluster. Helpers create what a user or an
//! installation would: the console ClusterRoles of deploy/, Secrets, ConfigMaps, Clusters.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use pgtoolbox_operator::api::PgToolBoxConsole;
use pgtoolbox_operator::testing::actors::shared::SharedActors;
use pgtoolbox_operator::testing::children::OperatorCaches;
use pgtoolbox_operator::testing::k8s::apply_manifests;
use pgtoolbox_operator::testing::supervisor::{Operator, OperatorSettings};
use pgtoolbox_sim::{Sim, SimConfig};

use super::harness::{Started, TestOperator, create_object, merge_object};
use serde_json::{Value, json};

pub const NS: &str = "team-a";
pub const IMAGE: &str = "ghcr.io/pgtoolbox/console:0.1.0";
pub const ROLES: &str = include_str!("../../deploy/05-console-clusterroles.yaml");

pub struct Env {
    pub sim: Sim,
    pub client: kube::Client,
    pub operator: Option<Operator>,
    /// With `start_probed`: the shared actors (the optional APIs probed as `run` does).
    pub shared: Option<SharedActors>,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.operator.take();
    }
}

/// Short rechecks, so the two- and five-minute ones are observed in a test.
pub fn settings() -> OperatorSettings {
    OperatorSettings {
        stall_rechecks: (Duration::from_millis(500), Duration::from_millis(1500)),
        ..crate::operator_support::quick_settings()
    }
}

/// [`settings`] allowing exposures only under the sim's `apps.sim.local`.
pub fn settings_allowing_sim_hosts() -> OperatorSettings {
    OperatorSettings {
        exposure_allowed_host_suffixes: vec!["apps.sim.local".into()],
        ..settings()
    }
}

pub fn with_controllers() -> SimConfig {
    super::harness::cluster_config(7)
}

pub async fn start(config: SimConfig, settings: OperatorSettings, roles: bool) -> Env {
    start_with(config, settings, roles, None).await
}

/// The harness for the console's tests: the namespace, the console roles when asked.
fn harness(config: SimConfig, settings: OperatorSettings, roles: bool) -> TestOperator {
    let harness = TestOperator::new()
        .sim(config)
        .namespace(NS)
        .settings(settings);
    if roles {
        harness.manifest(ROLES)
    } else {
        harness
    }
}

fn env(started: Started) -> Env {
    let (operator, shared) = match started.running {
        Some(running) => (Some(running.operator), running.actors),
        None => (None, None),
    };
    Env {
        sim: started.sim,
        client: started.client,
        operator,
        shared,
    }
}

/// The cluster with the namespace and the console roles, no operator (a test drives a
/// reconciler itself, or starts the operator later).
pub async fn start_without_operator(config: SimConfig) -> Env {
    env(harness(config, settings(), true)
        .without_operator()
        .start()
        .await)
}

/// As `start`, the operator reading `caches` when given (a test inspects what they hold); no
/// shared actors (`start_probed` has them).
pub async fn start_with(
    config: SimConfig,
    settings: OperatorSettings,
    roles: bool,
    caches: Option<OperatorCaches>,
) -> Env {
    let harness = harness(config, settings, roles).bare();
    let harness = match caches {
        Some(caches) => harness.caches(caches),
        None => harness,
    };
    env(harness.start().await)
}

/// As `start`, with the shared actors started as `run` starts them: the optional APIs
/// (Routes, Gateways) probed, so an unserved one is reported rather than written to.
pub async fn start_probed(config: SimConfig, settings: OperatorSettings) -> Env {
    env(harness(config, settings, true)
        .kinds(&["PgToolBoxConsole"])
        .start()
        .await)
}

/// The shared actors (the optional APIs probed) and the operator, as `run` starts them.
pub async fn run_operator(
    client: &kube::Client,
    settings: OperatorSettings,
) -> (Operator, SharedActors) {
    crate::operator_support::run_operator(client, &["PgToolBoxConsole".to_owned()], settings).await
}

impl Env {
    /// Stops the operator and its shared actors (a restart follows with `run_operator`).
    pub async fn stop_operator(&mut self) {
        if let Some(operator) = self.operator.take() {
            operator.shutdown(Duration::from_secs(5)).await;
        }
        if let Some(shared) = self.shared.take() {
            shared.stop().await;
        }
    }
}

impl Env {
    /// Console passes ended so far; 0 without the shared actors (`start` makes its own).
    pub fn passes(&self) -> u64 {
        (self.shared.as_ref()).map_or(0, |s| passes_of(&s.shared, "PgToolBoxConsole"))
    }

    /// Waits until `more` console passes ended after `seen` (an operator started with the
    /// shared actors).
    pub async fn until_passes(&self, seen: u64, more: u64, what: &str) {
        let shared = &self
            .shared
            .as_ref()
            .expect("started with the shared actors")
            .shared;
        until_passes(shared, "PgToolBoxConsole", seen, more, what).await;
    }

    pub fn consoles(&self) -> Api<PgToolBoxConsole> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// The installation's console ClusterRoles, as deploy/ ships them.
    pub async fn install_roles(&self) {
        for result in apply_manifests(&self.client, ROLES, "test").await {
            result.expect("ClusterRole applied");
        }
    }

    pub async fn console(&self, name: &str, spec: Value) {
        create_object(
            &self.consoles(),
            json!({"name": name, "namespace": NS}),
            spec,
        )
        .await;
    }

    pub async fn merge(&self, name: &str, patch: Value) {
        merge_object(&self.consoles(), name, patch).await;
    }

    pub async fn secret(&self, name: &str, data: Value) {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": NS}, "stringData": data,
        }))
        .expect("secret");
        Api::<Secret>::namespaced(self.client.clone(), NS)
            .create(&PostParams::default(), &secret)
            .await
            .expect("secret created");
    }

    pub async fn config_map(&self, name: &str) {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": NS}, "data": {"k": "v"},
        }))
        .expect("config map");
        Api::<ConfigMap>::namespaced(self.client.clone(), NS)
            .create(&PostParams::default(), &cm)
            .await
            .expect("config map created");
    }

    /// Polls until `condition` of the console has `reason` (and `status` when given).
    pub async fn wait(&self, name: &str, condition: &str, reason: &str) -> PgToolBoxConsole {
        wait_for(&format!("{name}: {condition} {reason}"), || async {
            let obj = self.consoles().get(name).await.expect("console readable");
            if condition_of(&obj, condition).is_some_and(|c| c.reason == reason) {
                Ok(obj)
            } else {
                Err(format!("conditions: {:#?}", conditions(&obj)))
            }
        })
        .await
    }

    /// Waits for Ready=True.
    pub async fn ready(&self, name: &str) -> PgToolBoxConsole {
        let obj = self.wait(name, "Ready", "AsExpected").await;
        assert_eq!(state(&obj, "Ready").0, "True");
        obj
    }
}

pub use super::wait_support::{condition_of, state};
use super::wait_support::{conditions, passes_of, until_passes, wait_for};

pub fn message(obj: &PgToolBoxConsole, type_: &str) -> String {
    condition_of(obj, type_)
        .map(|c| c.message)
        .unwrap_or_default()
}

/// A console `name` exposed over a Route, confined and Ready, whose Pods then get stuck
/// terminating (they keep trusting the peers they had).
pub async fn routed_with_a_stuck_pod(name: &str) -> Env {
    let env = start(with_controllers(), settings(), true).await;
    let hostname = format!("{name}.apps.sim.local");
    env.console(
        name,
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": hostname}}),
    )
    .await;
    env.wait(name, "ExposureConfined", "AsExpected").await;
    env.ready(name).await;
    let stuck = pgtoolbox_sim::cluster::WorkloadFault::StuckTerminating;
    super::harness::fault_instance(&env.sim, NS, name, stuck);
    env
}

/// A console "ops" exposed over a Route in a cluster (no simulated components) whose API server
/// refuses its ingress NetworkPolicy with a 422, as an admission policy would.
pub async fn routed_with_a_refused_ingress_policy(settings: OperatorSettings) -> Env {
    let env = start(SimConfig::default(), settings, true).await;
    env.sim
        .admin()
        .inject_errors("create:networking.k8s.io/networkpolicies:team-a", 422, 1000)
        .expect("fault");
    env.console(
        "ops",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": "ops.apps.sim.local"}}),
    )
    .await;
    env
}
