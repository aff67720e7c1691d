//! The shared actors inside the running operator (supervisor, object actors) against the
//! embedded API server: Secret changes wake exactly the objects that use them, a dropped
//! namespace is not watched while the other works, and a failed probe fails the start.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use pgtoolbox_operator::api::{PgAdmin, ReportsConditions};
use pgtoolbox_operator::testing::actors::shared::SharedActors;
use pgtoolbox_operator::testing::actors::{ObjectContext, Outcome, ReconcileError, Reconciler};
use pgtoolbox_operator::testing::health::Readiness;
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_operator::testing::messages::shared::{RouterStats, SecretRouterMsg};
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::supervisor::{Kind, KindOptions, Operator, OperatorSettings};
use pgtoolbox_sim::{DenyRule, Sim, SimConfig};
use serde_json::json;

use crate::cli_support::{free_port, http_get};
use crate::harness::{TestOperator, Wiring};
use crate::shared_support::{create_secrets, eventually, touch, warnings_in};

const USES: &str = "test.pgtoolbox.fyannk.dev/uses";
const LIMIT: Duration = Duration::from_secs(120);
/// Long enough for a wrongly routed change to show up as a pass.
const SETTLE: Duration = Duration::from_millis(400);

/// Counts passes per object and registers the Secrets named by its `USES` annotation, as a
/// kind's reconciler registers the Secrets it read.
#[derive(Clone, Default)]
struct CountingPgAdmin {
    passes: Arc<DashMap<String, u64>>,
}

impl CountingPgAdmin {
    fn of(&self, key: &str) -> u64 {
        self.passes.get(key).map_or(0, |v| *v)
    }
    fn total(&self) -> u64 {
        self.passes.iter().map(|e| *e.value()).sum()
    }
}

impl Reconciler for CountingPgAdmin {
    type Object = PgAdmin;

    async fn reconcile(
        &self,
        obj: Arc<PgAdmin>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        *self.passes.entry(cx.key.to_string()).or_default() += 1;
        let uses = obj
            .annotations()
            .get(USES)
            .map(|list| {
                list.split(',')
                    .filter(|n| !n.is_empty())
                    .map(|n| ObjectKey::new(&cx.key.namespace, n))
                    .collect()
            })
            .unwrap_or_default();
        cx.shared.secrets.register("PgAdmin", &cx.key, uses);
        Ok(Outcome::done())
    }
}

async fn start_operator(
    client: &Client,
    namespaces: &[&str],
    reconciler: &CountingPgAdmin,
) -> (SharedActors, Operator, OperatorMetrics, Readiness) {
    let settings = OperatorSettings {
        watch_namespaces: namespaces.iter().map(|n| (*n).to_owned()).collect(),
        ..OperatorSettings::default()
    };
    let reconciler = reconciler.clone();
    let running = Wiring::with(settings)
        .kinds(&["PgAdmin"])
        .register(move |builder, _, _| {
            let options = KindOptions {
                startup_jitter: Duration::ZERO,
                ..KindOptions::default()
            };
            builder.register(Kind::new(reconciler.clone()).options(options))
        })
        .start(client)
        .await;
    running.readiness.mark_lists_expected();
    let actors = running.actors.expect("shared actors");
    (actors, running.operator, running.metrics, running.readiness)
}

async fn stats(shared: &SharedActors) -> RouterStats {
    ractor::call!(
        shared.router().expect("router runs"),
        SecretRouterMsg::Stats
    )
    .expect("router answers")
}

async fn router_saw_one_more(shared: &SharedActors, seen: u64) -> u64 {
    eventually(LIMIT, "the router to see the change", || async {
        stats(shared).await.events_seen > seen
    })
    .await;
    stats(shared).await.events_seen
}

fn metric(metrics: &OperatorMetrics, series: &str) -> Option<f64> {
    let text = metrics.encode().expect("encode");
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn pgadmin(name: &str, uses: &str) -> PgAdmin {
    serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAdmin",
        "metadata": {"name": name, "annotations": {USES: uses}},
        "spec": {},
    }))
    .expect("pgadmin")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_change_reconciles_exactly_the_objects_that_use_it() {
    const NS: &str = "tenants";
    const COUNT: usize = 5_000;
    let started = TestOperator::new()
        .namespace(NS)
        .without_operator()
        .start()
        .await;
    let (_sim, client) = (started.sim, started.client);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let pgadmins: Api<PgAdmin> = Api::namespaced(client.clone(), NS);

    // Secrets s-0..s-4998 and "shared"; PgAdmin p-i uses s-i (i < 4998), p-7 also uses
    // "shared", p-4998 and p-4999 use only "shared"; s-4998 is used by nobody.
    let mut secret_names: Vec<String> = (0..COUNT - 1).map(|i| format!("s-{i}")).collect();
    secret_names.push("shared".to_owned());
    create_secrets(&secrets, &secret_names).await;
    futures::stream::iter(0..COUNT)
        .map(|i| {
            let pgadmins = pgadmins.clone();
            async move {
                let uses = match i {
                    7 => "s-7,shared".to_owned(),
                    i if i >= COUNT - 2 => "shared".to_owned(),
                    i => format!("s-{i}"),
                };
                pgadmins
                    .create(&PostParams::default(), &pgadmin(&format!("p-{i}"), &uses))
                    .await
                    .expect("pgadmin created");
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;

    let reconciler = CountingPgAdmin::default();
    let (shared, operator, metrics, readiness) = start_operator(&client, &[NS], &reconciler).await;
    eventually(
        LIMIT,
        "every object's first pass and registration",
        || async {
            let s = stats(&shared).await;
            reconciler.passes.len() == COUNT && s.objects == COUNT && s.synced_scopes == 1
        },
    )
    .await;
    eventually(LIMIT, "readiness", || async { readiness.is_ready() }).await;
    tokio::time::sleep(SETTLE).await;
    let baseline = reconciler.total();
    assert_eq!(
        baseline, COUNT as u64,
        "one pass each, and the Secret list woke nobody"
    );
    let mut seen = stats(&shared).await.events_seen;

    touch(&secrets, "shared", "1").await;
    eventually(LIMIT, "the three users' passes", || async {
        ["tenants/p-7", "tenants/p-4998", "tenants/p-4999"]
            .iter()
            .all(|k| reconciler.of(k) == 2)
    })
    .await;
    tokio::time::sleep(SETTLE).await;
    assert_eq!(
        reconciler.total(),
        baseline + 3,
        "exactly the three users ran"
    );
    seen = router_saw_one_more(&shared, seen).await;

    touch(&secrets, "s-4998", "1").await;
    seen = router_saw_one_more(&shared, seen).await;
    tokio::time::sleep(SETTLE).await;
    assert_eq!(
        reconciler.total(),
        baseline + 3,
        "an unused Secret wakes nobody"
    );

    pgadmins
        .delete("p-7", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually(LIMIT, "the deleted object's references to go", || async {
        stats(&shared).await.objects == COUNT - 1
    })
    .await;
    touch(&secrets, "s-7", "1").await;
    router_saw_one_more(&shared, seen).await;
    tokio::time::sleep(SETTLE).await;
    assert_eq!(
        reconciler.total(),
        baseline + 3,
        "a deleted object's Secret wakes nobody"
    );

    let passes = reconciler.total() as f64;
    assert_eq!(
        metric(
            &metrics,
            r#"pgtoolbox_reconcile_passes_total{kind="PgAdmin",result="Converged"}"#
        ),
        Some(passes)
    );
    assert_eq!(
        metric(
            &metrics,
            r#"pgtoolbox_reconcile_duration_seconds_count{kind="PgAdmin"}"#
        ),
        Some(passes)
    );
    // Live or hibernated (converged objects give their actor up), every object but the deleted.
    let live = metric(&metrics, r#"pgtoolbox_object_actors{kind="PgAdmin"}"#);
    let asleep = metric(&metrics, r#"pgtoolbox_hibernated_objects{kind="PgAdmin"}"#);
    assert_eq!(
        live.unwrap_or(0.0) + asleep.unwrap_or(0.0),
        (COUNT - 1) as f64
    );
    operator.shutdown(Duration::from_secs(5)).await;
    shared.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_namespace_is_not_watched_and_the_other_works() {
    let started = TestOperator::new()
        .sim(SimConfig {
            deny: vec![DenyRule::parse("create:secrets:team-b").expect("rule")],
            ..SimConfig::default()
        })
        .namespace("team-a")
        .namespace("team-b")
        .without_operator()
        .start()
        .await;
    let (_sim, client) = (started.sim, started.client);
    for (ns, name) in [("team-a", "kept"), ("team-b", "left-out")] {
        let api: Api<PgAdmin> = Api::namespaced(client.clone(), ns);
        api.create(&PostParams::default(), &pgadmin(name, ""))
            .await
            .expect("pgadmin created");
    }

    for start in 1..=2 {
        let reconciler = CountingPgAdmin::default();
        let (shared, operator, metrics, _) =
            start_operator(&client, &["team-a", "team-b"], &reconciler).await;
        assert_eq!(
            shared.shared.settings.watch_namespaces,
            vec!["team-a".to_owned()]
        );
        eventually(LIMIT, "the watched namespace's pass", || async {
            reconciler.of("team-a/kept") >= 1
        })
        .await;
        tokio::time::sleep(SETTLE).await;
        assert_eq!(
            reconciler.of("team-b/left-out"),
            0,
            "start {start}: not watched"
        );
        assert_eq!(metric(&metrics, "pgtoolbox_dropped_namespaces"), Some(1.0));
        let left_out: Api<PgAdmin> = Api::namespaced(client.clone(), "team-b");
        let object = left_out.get("left-out").await.expect("get");
        let ready = object
            .stored_status()
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .cloned()
            .expect("a Ready condition");
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("Unknown", "NamespaceNotWatched")
        );
        assert_eq!(
            warnings_in(&client, "team-b").await.len(),
            1,
            "start {start}: one Event in all"
        );
        operator.shutdown(Duration::from_secs(5)).await;
        shared.stop().await;
    }
}

#[tokio::test]
async fn the_binary_exits_non_zero_when_the_probe_is_refused_its_credentials() {
    let sim = Sim::start(SimConfig {
        unauthorized: true,
        ..SimConfig::default()
    })
    .await
    .expect("sim starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let output = crate::cli_support::operator_run(&kubeconfig).output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("the start fails quickly")
        .expect("the binary ran");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("401 Unauthorized"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_becomes_ready_and_serves_its_metrics() {
    let sim = TestOperator::new()
        .sim(SimConfig {
            unserve: vec!["route.openshift.io".to_owned()],
            ..SimConfig::default()
        })
        .without_operator()
        .start()
        .await
        .sim;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let (health, metrics) = (free_port(), free_port());
    let _child = tokio::process::Command::new(env!("CARGO_BIN_EXE_pgtoolbox-operator"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--metrics-bind-address", &format!("127.0.0.1:{metrics}")])
        .args([
            "--health-probe-bind-address",
            &format!("127.0.0.1:{health}"),
        ])
        .env_remove("WATCH_NAMESPACES")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    eventually(LIMIT, "/readyz", || async {
        http_get(health, "/readyz")
            .await
            .is_some_and(|(code, _)| code == 200)
    })
    .await;
    assert_eq!(http_get(health, "/healthz").await.map(|r| r.0), Some(200));
    let (code, body) = http_get(metrics, "/metrics").await.expect("metrics answer");
    assert_eq!(code, 200);
    let value = |series: &str| {
        body.lines().find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .parse::<f64>()
                .ok()
        })
    };
    assert!(
        value(r#"pgtoolbox_api_requests_total{verb="list"}"#).is_some_and(|n| n >= 1.0),
        "the probe's lists are counted:\n{body}"
    );
    assert_eq!(
        value(r#"pgtoolbox_optional_api_unavailable{api="routes"}"#),
        Some(1.0)
    );
    assert_eq!(
        value(r#"pgtoolbox_optional_api_unavailable{api="httproutes"}"#),
        Some(0.0)
    );
    assert_eq!(value("pgtoolbox_dropped_namespaces"), Some(0.0));
    // Without --leader-elect the one replica leads; the write budget is the default one.
    assert_eq!(value("pgtoolbox_leader"), Some(1.0), "{body}");
    assert_eq!(value("pgtoolbox_write_budget_capacity"), Some(32.0));
    // The Route watch's lists of an API the server does not serve are answered 404.
    assert!(
        value(r#"pgtoolbox_api_errors_total{verb="list",resource="routes",code="404"}"#)
            .is_some_and(|n| n >= 1.0),
        "the unserved Routes' lists are counted as errors:\n{body}"
    );
}
