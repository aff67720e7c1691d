//! EvidenceAgent end to end: the operator in-process against the embedded API server. Each
//! test sets up Clusters, ObjectStores and Secrets as a user would and asserts the agent's
//! conditions and children.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DynamicObject, PostParams};
use pgtoolbox_operator::api::EvidenceAgent;
use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::supervisor::{Operator, OperatorSettings};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::{Value, json};

use super::harness::{TestOperator, Wiring, create_object};
use super::sim_net_support::api;
use super::wait_support::wait_for;

pub(super) const NS: &str = "team-a";
pub(super) const IMAGE: &str = "ghcr.io/pgtoolbox/evidence-agent:0.1.0";

pub(super) struct Env {
    pub(super) _sim: Sim,
    pub(super) client: kube::Client,
    /// The operator's shared state: its metrics.
    pub(super) shared: Arc<Shared>,
    operator: Option<Operator>,
}

impl Drop for Env {
    fn drop(&mut self) {
        // The operator's tasks end with the runtime of the test.
        self.operator.take();
    }
}

pub(super) async fn start(config: SimConfig, settings: OperatorSettings) -> Env {
    start_with(config, settings, true).await
}

/// `start`, creating the operator's own namespace or not.
pub(super) async fn start_with(
    config: SimConfig,
    settings: OperatorSettings,
    operator_namespace: bool,
) -> Env {
    let mut harness = TestOperator::new().sim(config).namespace(NS);
    if operator_namespace {
        // The operator's namespace, where it keeps its CA (`operator` provider).
        harness = harness.namespace(&settings.operator_namespace);
    }
    let started = harness.wiring(wiring(settings)).start().await;
    let running = started.running.expect("operator started");
    Env {
        _sim: started.sim,
        client: started.client,
        shared: running.shared,
        operator: Some(running.operator),
    }
}

/// The operator with its own shared state (no shared actors), first passes not jittered.
fn wiring(settings: OperatorSettings) -> Wiring {
    Wiring::with(OperatorSettings {
        startup_jitter: Duration::ZERO,
        ..settings
    })
    .bare()
}

pub(super) fn with_controllers() -> SimConfig {
    super::harness::cluster_config(7)
}

impl Env {
    /// Stops the operator and starts a new one with fresh shared state, as a new process
    /// would: nothing it read or wrote is remembered.
    pub(super) async fn restart_operator(&mut self, settings: OperatorSettings) {
        if let Some(operator) = self.operator.take() {
            operator.shutdown(Duration::from_secs(5)).await;
        }
        let running = wiring(settings).start(&self.client).await;
        self.operator = Some(running.operator);
        self.shared = running.shared;
    }

    pub(super) fn agents(&self) -> Api<EvidenceAgent> {
        Api::namespaced(self.client.clone(), NS)
    }

    pub(super) async fn create_json(&self, group: &str, kind: &str, plural: &str, obj: Value) {
        let api = api(&self.client, Some(NS), group, kind, plural);
        let obj: DynamicObject = serde_json::from_value(obj).expect("valid object");
        api.create(&PostParams::default(), &obj)
            .await
            .expect("created");
    }

    pub(super) async fn cluster(&self, name: &str, object_store: Option<&str>) {
        let plugins = match object_store {
            Some(store) => json!([{
                "name": "barman-cloud.cloudnative-pg.io",
                "isWALArchiver": true,
                "parameters": {"barmanObjectName": store}
            }]),
            None => json!([]),
        };
        self.create_json(
            "postgresql.cnpg.io",
            "Cluster",
            "clusters",
            json!({
                "apiVersion": "postgresql.cnpg.io/v1",
                "kind": "Cluster",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"instances": 1, "storage": {"size": "1Gi"}, "plugins": plugins}
            }),
        )
        .await;
    }

    pub(super) async fn object_store(&self, name: &str, configuration: Value) {
        self.create_json(
            "barmancloud.cnpg.io",
            "ObjectStore",
            "objectstores",
            json!({
                "apiVersion": "barmancloud.cnpg.io/v1",
                "kind": "ObjectStore",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"configuration": configuration}
            }),
        )
        .await;
    }

    pub(super) async fn credentials(&self, name: &str) {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": NS},
            "stringData": {"ACCESS_KEY_ID": "AKIA0000", "ACCESS_SECRET_KEY": "secret"}
        }))
        .expect("secret");
        Api::<Secret>::namespaced(self.client.clone(), NS)
            .create(&PostParams::default(), &secret)
            .await
            .expect("secret created");
    }

    pub(super) async fn agent(
        &self,
        name: &str,
        cluster: &str,
        image: Option<&str>,
        provider: &str,
    ) {
        let mut spec =
            json!({"cluster": {"name": cluster}, "servingCertificate": {"provider": provider}});
        if let Some(image) = image {
            spec["image"] = json!(image);
        }
        create_object(&self.agents(), json!({"name": name, "namespace": NS}), spec).await;
    }

    /// Polls until `condition` of the agent has `reason`.
    pub(super) async fn wait_reason(
        &self,
        agent: &str,
        condition: &str,
        reason: &str,
    ) -> EvidenceAgent {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let obj = self.agents().get(agent).await.expect("agent readable");
            if condition_of(&obj, condition).is_some_and(|c| c.reason == reason) {
                return obj;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{agent}: {condition} never became {reason}; conditions: {:#?}",
                obj.status.map(|s| s.common.conditions)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

pub(super) fn condition_of(obj: &EvidenceAgent, type_: &str) -> Option<Condition> {
    obj.status
        .as_ref()?
        .common
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .cloned()
}

pub(super) fn state(obj: &EvidenceAgent, type_: &str) -> (String, String) {
    condition_of(obj, type_)
        .map(|c| (c.status, c.reason))
        .unwrap_or_default()
}

pub(super) fn static_s3(destination: &str) -> Value {
    json!({
        "destinationPath": destination,
        "s3Credentials": {
            "accessKeyId": {"name": "orders-s3", "key": "ACCESS_KEY_ID"},
            "secretAccessKey": {"name": "orders-s3", "key": "ACCESS_SECRET_KEY"}
        }
    })
}

/// Asserts the agent reached `reason` on ConfigurationValid, as a stall with Ready False.
pub(super) async fn assert_stalled(env: &Env, agent: &str, reason: &str, needle: &str) {
    let obj = env.wait_reason(agent, "ConfigurationValid", reason).await;
    let config = condition_of(&obj, "ConfigurationValid").expect("ConfigurationValid");
    assert_eq!(config.status, "False", "{agent}");
    assert!(
        config.message.contains(needle),
        "{agent}: {}",
        config.message
    );
    assert_eq!(
        state(&obj, "Ready"),
        ("False".into(), reason.into()),
        "{agent}"
    );
    let obj = env.wait_reason(agent, "Stalled", reason).await;
    assert_eq!(state(&obj, "Stalled").0, "True", "{agent}");
}

#[tokio::test]
async fn evidence_configuration_reasons_stall_and_render_nothing() {
    let env = start(
        SimConfig::default(),
        OperatorSettings {
            allowed_image_repositories: vec!["ghcr.io/pgtoolbox".into()],
            ..OperatorSettings::default()
        },
    )
    .await;
    env.credentials("orders-s3").await;
    env.cluster("plain", None).await;
    for (cluster, store) in [
        ("lost", "absent"),
        ("azure", "azure"),
        ("iam", "iam"),
        ("badbucket", "badbucket"),
        ("minio", "minio"),
        ("good", "good"),
    ] {
        env.cluster(cluster, Some(store)).await;
    }
    env.object_store(
        "azure",
        json!({"destinationPath": "s3://orders", "azureCredentials": {"storageAccount": {"name": "a", "key": "b"}, "storageKey": {"name": "a", "key": "c"}}}),
    )
    .await;
    let mut iam = static_s3("s3://orders");
    iam["s3Credentials"] = json!({"inheritFromIAMRole": true});
    env.object_store("iam", iam).await;
    env.object_store("badbucket", static_s3("s3://Orders_Backups/x"))
        .await;
    let mut minio = static_s3("s3://orders/x");
    minio["endpointURL"] = json!("https://minio.team-a.svc:9000");
    env.object_store("minio", minio).await;
    env.object_store("good", static_s3("s3://orders/team-a"))
        .await;

    let cases = [
        (
            "a-nocluster",
            "missing",
            Some(IMAGE),
            "ClusterNotFound",
            "missing",
        ),
        (
            "a-plain",
            "plain",
            Some(IMAGE),
            "BarmanPluginNotConfigured",
            "barmanObjectName",
        ),
        (
            "a-lost",
            "lost",
            Some(IMAGE),
            "ObjectStoreNotFound",
            "absent",
        ),
        (
            "a-azure",
            "azure",
            Some(IMAGE),
            "UnsupportedObjectStore",
            "Azure",
        ),
        (
            "a-iam",
            "iam",
            Some(IMAGE),
            "UnsupportedObjectStore",
            "inheritFromIAMRole",
        ),
        (
            "a-bucket",
            "badbucket",
            Some(IMAGE),
            "DestinationInvalid",
            "Orders_Backups",
        ),
        (
            "a-minio",
            "minio",
            Some(IMAGE),
            "RegionRequired",
            "minio.team-a.svc",
        ),
        (
            "a-noimage",
            "good",
            None,
            "ImageRequired",
            "--default-evidence-agent-image",
        ),
        (
            "a-evil",
            "good",
            Some("docker.io/evil/agent:1"),
            "ImageNotAllowed",
            "docker.io/evil/agent",
        ),
    ];
    for (agent, cluster, image, _, _) in cases {
        env.agent(agent, cluster, image, "openshift").await;
    }
    for (agent, _, _, reason, needle) in cases {
        assert_stalled(&env, agent, reason, needle).await;
        let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), NS);
        assert!(
            deployments
                .get_opt(&format!("{agent}-evidence"))
                .await
                .expect("readable")
                .is_none(),
            "{agent}: a stalled agent renders nothing"
        );
    }
    let obj = env.agents().get("a-bucket").await.expect("agent");
    let store = obj
        .status
        .and_then(|s| s.object_store)
        .expect("objectStore");
    assert_eq!(store.name, "badbucket");
    assert_eq!(
        store.destination_path.as_deref(),
        Some("s3://Orders_Backups/x")
    );

    // The ObjectStore appears: the stalled agent moves on with no other change.
    env.object_store("absent", static_s3("s3://orders/lost"))
        .await;
    let obj = env
        .wait_reason("a-lost", "ConfigurationValid", "AsExpected")
        .await;
    assert_eq!(state(&obj, "Stalled").0, "False");
}

#[tokio::test]
async fn evidence_foreign_child_is_resource_not_owned() {
    let env = start(SimConfig::default(), OperatorSettings::default()).await;
    env.credentials("orders-s3").await;
    env.cluster("orders", Some("store")).await;
    env.object_store("store", static_s3("s3://orders")).await;
    let foreign: Service = serde_json::from_value(json!({
        "metadata": {"name": "taken-evidence", "namespace": NS},
        "spec": {"ports": [{"port": 80}]}
    }))
    .expect("service");
    let services: Api<Service> = Api::namespaced(env.client.clone(), NS);
    services
        .create(&PostParams::default(), &foreign)
        .await
        .expect("foreign service");
    env.agent("taken", "orders", Some(IMAGE), "openshift").await;
    assert_stalled(&env, "taken", "ResourceNotOwned", "Service taken-evidence").await;
    let kept = services.get("taken-evidence").await.expect("still there");
    assert!(
        kept.metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    assert!(kept.metadata.annotations.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn evidence_object_store_api_unavailable() {
    let env = start(
        SimConfig {
            unserve: vec!["barmancloud.cnpg.io".into()],
            ..SimConfig::default()
        },
        OperatorSettings::default(),
    )
    .await;
    env.cluster("orders", Some("store")).await;
    env.agent("noapi", "orders", Some(IMAGE), "openshift").await;
    assert_stalled(&env, "noapi", "ObjectStoreAPIUnavailable", "ObjectStores").await;
}

#[tokio::test]
async fn evidence_openshift_agent_becomes_ready() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    env.credentials("orders-s3").await;
    env.cluster("orders", Some("orders-store")).await;
    env.object_store("orders-store", static_s3("s3://orders-backups/team-a"))
        .await;
    env.agent("ev", "orders", Some(IMAGE), "openshift").await;
    let obj = env.wait_reason("ev", "Ready", "AsExpected").await;
    assert_eq!(
        state(&obj, "ServingCertificateReady"),
        ("True".into(), "AsExpected".into())
    );
    assert_eq!(
        state(&obj, "WorkloadReady"),
        ("True".into(), "AsExpected".into())
    );
    let status = obj.status.expect("status");
    let store = status.object_store.expect("objectStore");
    assert_eq!(store.name, "orders-store");
    assert_eq!(
        store.destination_path.as_deref(),
        Some("s3://orders-backups/team-a")
    );
    assert_eq!(
        status.certificate.map(|c| c.secret).as_deref(),
        Some("ev-evidence-tls")
    );

    let services: Api<Service> = Api::namespaced(env.client.clone(), NS);
    let svc = services.get("ev-evidence").await.expect("service");
    assert_eq!(
        svc.metadata
            .annotations
            .unwrap_or_default()
            .get("service.beta.openshift.io/serving-cert-secret-name")
            .map(String::as_str),
        Some("ev-evidence-tls")
    );
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), NS);
    let cm = cms.get("ev-evidence-ca").await.expect("CA ConfigMap");
    assert!(cm.data.unwrap_or_default().contains_key("service-ca.crt"));
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), NS);
    let dep = deployments.get("ev-evidence").await.expect("deployment");
    let pod = dep.spec.template.spec.expect("pod spec");
    assert_eq!(pod.containers[0].image.as_deref(), Some(IMAGE));
    let env_vars = pod.containers[0].env.clone().unwrap_or_default();
    let key_ref = env_vars
        .iter()
        .find(|e| e.name == "AWS_ACCESS_KEY_ID")
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.secret_key_ref.as_ref())
        .expect("access key from the Secret");
    assert_eq!(
        (key_ref.name.as_str(), key_ref.key.as_str()),
        ("orders-s3", "ACCESS_KEY_ID")
    );
}

#[tokio::test]
async fn evidence_missing_credentials_secret_is_secret_not_found() {
    let env = start(with_controllers(), OperatorSettings::default()).await;
    env.cluster("orders", Some("orders-store")).await;
    env.object_store("orders-store", static_s3("s3://orders-backups"))
        .await;
    env.agent("nocreds", "orders", Some(IMAGE), "openshift")
        .await;
    let obj = env
        .wait_reason("nocreds", "WorkloadReady", "SecretNotFound")
        .await;
    let workload = condition_of(&obj, "WorkloadReady").expect("WorkloadReady");
    assert!(
        workload.message.contains("orders-s3"),
        "{}",
        workload.message
    );
    // The Secret appears: the agent becomes Ready through the reference index.
    env.credentials("orders-s3").await;
    env.wait_reason("nocreds", "Ready", "AsExpected").await;
}

/// A pass over a converged agent reads only caches and writes nothing: zero API requests,
/// counted by the embedded server. The kind's caches and reconciler are driven pass by pass.
#[tokio::test]
async fn evidence_pass_over_a_converged_agent_makes_no_api_request() {
    converged_pass_makes_no_request("openshift").await;
}

/// The same with the operator's certificate: the CA is read once, the certificate kept.
#[tokio::test]
async fn evidence_pass_over_a_converged_operator_certificate_makes_no_api_request() {
    converged_pass_makes_no_request("operator").await;
}

/// The sim with its controllers, one agent of `provider` with everything it needs, the
/// operator's caches watching the namespace, and a reconciler over them (no operator runs:
/// the test drives the passes).
struct Driven {
    env: Env,
    caches: pgtoolbox_operator::testing::children::OperatorCaches,
    reconciler: pgtoolbox_operator::testing::actors::evidence_agent::EvidenceAgentReconciler,
    _drain: tokio_util::task::AbortOnDropHandle<()>,
}

async fn driven(provider: &str) -> Driven {
    use pgtoolbox_operator::testing::actors::evidence_agent::EvidenceAgentReconciler;
    use pgtoolbox_operator::testing::k8s::EventSink;

    let settings = OperatorSettings::default();
    let started = TestOperator::new()
        .sim(with_controllers())
        .namespace(NS)
        .namespace(&settings.operator_namespace)
        .without_operator()
        .start()
        .await;
    let client = started.client.clone();
    let env = Env {
        _sim: started.sim,
        client: client.clone(),
        shared: Arc::new(Shared::default()),
        operator: None,
    };
    env.credentials("orders-s3").await;
    env.cluster("orders", Some("orders-store")).await;
    env.object_store("orders-store", static_s3("s3://orders-backups"))
        .await;
    env.agent("steady", "orders", Some(IMAGE), provider).await;

    let (caches, _drain) = crate::harness::watched_caches(&client, NS);
    let reconciler = EvidenceAgentReconciler::new(caches.clone(), EventSink::new(client.clone()));
    Driven {
        env,
        caches,
        reconciler,
        _drain,
    }
}

/// A pass context for the agent "steady" under `settings`.
fn context_of(
    client: &kube::Client,
    settings: OperatorSettings,
) -> pgtoolbox_operator::testing::actors::ObjectContext {
    use pgtoolbox_operator::testing::actors::{ObjectContext, PassEnv};
    use pgtoolbox_operator::testing::k8s::WriteBudget;
    use pgtoolbox_operator::testing::messages::ObjectKey;
    let pass_env = Arc::new(PassEnv {
        client: client.clone(),
        writes: WriteBudget::new(4),
        shared: Arc::new(Shared::new(settings)),
    });
    ObjectContext::new(ObjectKey::new(NS, "steady"), pass_env, 0)
}

/// A pass whose status write fails still hands the runtime the renewal timer of the
/// certificate it issued: the renewal does not wait for the retry to decide it again.
#[tokio::test]
async fn evidence_a_failed_status_write_keeps_the_certificate_renewal_timer() {
    use pgtoolbox_operator::testing::actors::{ReconcileError, Reconciler};
    use pgtoolbox_operator::testing::messages::TimerPurpose;
    // `_drain` is held: dropping it would stop the caches' watches.
    let Driven {
        env,
        reconciler,
        _drain,
        ..
    } = driven("operator").await;
    env._sim
        .admin()
        .inject_errors(
            // Status patches (the sim matches the resource, not its subresource); a pass
            // patches nothing else of the agent.
            &format!(
                "patch:{}/evidenceagents:{NS}",
                pgtoolbox_operator::api::GROUP
            ),
            500,
            1_000,
        )
        .expect("fault rule");
    let cx = context_of(&env.client, OperatorSettings::default());
    let err = wait_for("a pass reaches its status write", || async {
        let agent = env
            .agents()
            .get("steady")
            .await
            .map_err(|e| e.to_string())?;
        match reconciler.reconcile(Arc::new(agent), &cx).await {
            Err(err)
                if matches!(
                    err.cause(),
                    ReconcileError::Kube(kube::Error::Api(status)) if status.code == 500
                ) =>
            {
                Ok(err)
            }
            // Caches still syncing, or the certificate not yet issued: try again.
            other => Err(format!("the pass ended {other:?}")),
        }
    })
    .await;
    let renewal = err.decided_timers()[TimerPurpose::Expiry.index()];
    assert!(
        renewal.is_some_and(|d| d > Duration::from_secs(24 * 3600)),
        "the failed pass dropped the certificate's renewal: {err} {:?}",
        err.decided_timers()
    );
}

async fn converged_pass_makes_no_request(provider: &str) {
    use pgtoolbox_operator::testing::actors::{ObjectContext, Reconciler};

    let Driven {
        env,
        caches,
        reconciler,
        _drain,
    } = driven(provider).await;
    let client = env.client.clone();
    let settings = OperatorSettings::default();
    let context = |settings: OperatorSettings| context_of(&client, settings);
    let converge = async |cx: &ObjectContext| {
        let what = format!("{provider}: converged to a pass without requests");
        wait_for(&what, || async {
            let current = env
                .agents()
                .get("steady")
                .await
                .map_err(|e| e.to_string())?;
            env._sim.admin().reset_stats();
            reconciler
                .reconcile(Arc::new(current), cx)
                .await
                .map_err(|e| e.to_string())?;
            let stats = env._sim.stats();
            let now = env
                .agents()
                .get("steady")
                .await
                .map_err(|e| e.to_string())?;
            if stats.total == 0 && state(&now, "Ready") == ("True".into(), "AsExpected".into()) {
                Ok(())
            } else {
                Err(format!("the last pass made {:?}", stats.by_verb_resource))
            }
        })
        .await;
    };
    converge(&context(settings.clone())).await;
    if provider != "operator" {
        return;
    }
    // The serving key is in the Secret, never in the operator's caches: neither once Ready
    // nor after a renewal (passes 61 days later: two thirds of 90 have passed).
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let key_of = async || -> String {
        let secret = secrets
            .get("steady-evidence-tls")
            .await
            .expect("the serving Secret");
        let key = secret.data.expect("data")["tls.key"].0.clone();
        String::from_utf8(key).expect("a PEM key")
    };
    let first = key_of().await;
    assert_no_key_cached(&caches, &first);
    let later = OperatorSettings {
        clock: pgtoolbox_operator::testing::supervisor::Clock::following_tokio(
            k8s_openapi::jiff::Timestamp::now()
                + k8s_openapi::jiff::SignedDuration::from_hours(61 * 24),
        ),
        ..settings
    };
    converge(&context(later)).await;
    let renewed = key_of().await;
    assert_ne!(renewed, first, "renewed with a new key");
    assert_no_key_cached(&caches, &renewed);
    assert_no_key_cached(&caches, &first);
}

/// No line of `key_pem`'s body, nor its base64 as a Secret stores it, in any cache; the
/// serving Secret itself is cached (as judged).
fn assert_no_key_cached(
    caches: &pgtoolbox_operator::testing::children::OperatorCaches,
    key_pem: &str,
) {
    use base64::Engine;
    let cached = caches.owned_secrets.dump();
    assert!(
        cached.iter().any(|s| s["data"]["tls.key"].is_string()),
        "the serving Secret is not cached: {cached:?}"
    );
    let dump = caches.dump();
    let stored = base64::engine::general_purpose::STANDARD.encode(key_pem);
    assert!(!dump.contains(&stored), "a cache holds the serving key");
    for line in key_pem.lines().filter(|l| !l.starts_with("-----")) {
        assert!(
            !dump.contains(line),
            "a cache holds a line of the serving key"
        );
    }
}
