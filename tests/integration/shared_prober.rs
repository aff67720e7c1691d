//! The optional-API prober against the embedded API server: each outcome of the start-up probe.

use pgtoolbox_operator::testing::actors::prober::{ProberArgs, ProberStartError, start_prober};
use pgtoolbox_operator::testing::metrics::OperatorMetrics;
use pgtoolbox_operator::testing::reconcile::optional_api::{
    ApiState, Availability, OptionalApi, ProbeError,
};
use pgtoolbox_operator::testing::supervisor::WatchScope;
use pgtoolbox_sim::{Sim, SimConfig};

use crate::shared_support::{create_namespaces, sim_with};

const NAMESPACES: [&str; 3] = ["team-a", "team-b", "team-c"];

fn scope() -> WatchScope {
    WatchScope::Namespaces(NAMESPACES.iter().map(|s| (*s).to_owned()).collect())
}

async fn probe(
    sim: &Sim,
    metrics: &OperatorMetrics,
) -> Result<
    std::sync::Arc<pgtoolbox_operator::testing::reconcile::optional_api::ProbeResult>,
    ProberStartError,
> {
    let args = ProberArgs {
        client: sim.client(),
        scope: scope(),
        metrics: metrics.clone(),
    };
    start_prober(args).await.map(|(actor, result)| {
        actor.stop(None);
        result
    })
}

fn metric(metrics: &OperatorMetrics, series: &str) -> Option<f64> {
    let text = metrics.encode().expect("encode");
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn all_served_turns_every_api_on() {
    let sim = sim_with(&[], &[]).await;
    create_namespaces(&sim.client(), &NAMESPACES).await;
    let metrics = OperatorMetrics::new();
    let result = probe(&sim, &metrics).await.expect("probe succeeds");
    for api in OptionalApi::ALL {
        assert_eq!(
            result.state(api),
            Some(&ApiState::On {
                refused_in: Default::default()
            }),
            "{api}"
        );
        for ns in NAMESPACES {
            assert_eq!(result.availability(api, ns), Availability::On);
        }
    }
    assert_eq!(
        metric(
            &metrics,
            r#"pgtoolbox_optional_api_refused_namespaces{api="routes"}"#
        ),
        Some(0.0)
    );
}

#[tokio::test]
async fn a_group_not_served_is_off_until_the_next_start() {
    let sim = sim_with(&[], &["route.openshift.io"]).await;
    create_namespaces(&sim.client(), &NAMESPACES).await;
    let metrics = OperatorMetrics::new();
    let result = probe(&sim, &metrics).await.expect("probe succeeds");
    assert_eq!(
        result.state(OptionalApi::Routes),
        Some(&ApiState::NotServed)
    );
    let availability = result.availability(OptionalApi::Routes, "team-a");
    assert_eq!(availability, Availability::NotServed);
    assert!(
        availability
            .message(OptionalApi::Routes)
            .is_some_and(|m| m.contains("route.openshift.io/v1"))
    );
    assert_eq!(
        result.availability(OptionalApi::HttpRoutes, "team-a"),
        Availability::On
    );
    assert_eq!(
        metric(
            &metrics,
            r#"pgtoolbox_optional_api_unavailable{api="routes"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &metrics,
            r#"pgtoolbox_optional_api_unavailable{api="httproutes"}"#
        ),
        Some(0.0)
    );
}

#[tokio::test]
async fn refused_in_every_namespace_is_off_everywhere() {
    let sim = sim_with(&["list:gateway.networking.k8s.io/httproutes:*"], &[]).await;
    create_namespaces(&sim.client(), &NAMESPACES).await;
    let metrics = OperatorMetrics::new();
    let result = probe(&sim, &metrics).await.expect("probe succeeds");
    assert_eq!(
        result.state(OptionalApi::HttpRoutes),
        Some(&ApiState::RefusedEverywhere)
    );
    for ns in NAMESPACES {
        assert_eq!(
            result.availability(OptionalApi::HttpRoutes, ns),
            Availability::Refused {
                namespace: ns.to_owned()
            }
        );
    }
    assert_eq!(
        result.availability(OptionalApi::Routes, "team-a"),
        Availability::On
    );
    assert_eq!(
        metric(
            &metrics,
            r#"pgtoolbox_optional_api_unavailable{api="httproutes"}"#
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn refused_in_one_of_three_namespaces_is_off_there_only() {
    let sim = sim_with(&["list:route.openshift.io/routes:team-b"], &[]).await;
    create_namespaces(&sim.client(), &NAMESPACES).await;
    let metrics = OperatorMetrics::new();
    let result = probe(&sim, &metrics).await.expect("probe succeeds");
    assert_eq!(
        metric(
            &metrics,
            r#"pgtoolbox_optional_api_refused_namespaces{api="routes"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &metrics,
            r#"pgtoolbox_optional_api_unavailable{api="routes"}"#
        ),
        Some(0.0)
    );
    let refused = result.availability(OptionalApi::Routes, "team-b");
    assert_eq!(
        refused.message(OptionalApi::Routes).as_deref(),
        Some("the operator may not read Routes in team-b")
    );
    assert_eq!(
        result.availability(OptionalApi::Routes, "team-a"),
        Availability::On
    );
    assert_eq!(
        result.availability(OptionalApi::Routes, "team-c"),
        Availability::On
    );
}

#[tokio::test]
async fn unauthorized_fails_the_start_with_a_clear_error() {
    let config = SimConfig {
        unauthorized: true,
        ..SimConfig::default()
    };
    let sim = Sim::start(config).await.expect("sim starts");
    let error = probe(&sim, &OperatorMetrics::new())
        .await
        .expect_err("401 fails the start");
    assert!(
        matches!(
            error,
            ProberStartError::Probe(ProbeError::Unauthorized { .. })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("401 Unauthorized"), "{error}");
}

#[tokio::test]
async fn any_other_answer_fails_the_start() {
    let sim = sim_with(&[], &[]).await;
    create_namespaces(&sim.client(), &NAMESPACES).await;
    sim.admin()
        .inject_errors("list:postgresql.cnpg.io/poolers:team-c", 500, 100)
        .expect("fault");
    let error = probe(&sim, &OperatorMetrics::new())
        .await
        .expect_err("500 fails the start");
    assert!(
        matches!(
            error,
            ProberStartError::Probe(ProbeError::Unexpected { .. })
        ),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("Poolers") && text.contains("team-c") && text.contains("500"),
        "{text}"
    );
}
