//! WorkloadReady of a console from the shared workload facts, driven by the simulated
//! cluster's faults; a refused hostname while paused; a Pod stuck terminating that still holds
//! the trust grant keeps the ingress policy (ExposurePolicyKept, naming it).

use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use super::console_support::{
    IMAGE, NS, message, settings, start, start_probed, state, with_controllers,
};
use super::wait_support::{until, until_gone, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_workload_ready_copies_the_workload_facts() {
    let env = start(with_controllers(), settings(), true).await;
    let admin = env.sim.admin();
    let cases = [
        ("pull", WorkloadFault::ImagePullBackOff, "ImagePullFailed"),
        ("crash", WorkloadFault::CrashLoopBackOff, "CrashLoopBackOff"),
        ("unready", WorkloadFault::NotReady, "PodNotReady"),
        (
            "stuck",
            WorkloadFault::ProgressDeadlineExceeded,
            "RolloutStuck",
        ),
    ];
    for (name, fault, reason) in cases {
        admin
            .add_workload_fault(NS, &format!("app.kubernetes.io/instance={name}"), fault)
            .expect("fault");
        env.console(name, json!({"image": IMAGE})).await;
        let obj = env.wait(name, "WorkloadReady", reason).await;
        assert_eq!(state(&obj, "Ready").1, reason, "{name}");
    }
    admin.clear_workload_faults(None);
    for (name, ..) in cases {
        env.ready(name).await;
    }

    // A quota that admits no Pod: the ReplicaSet cannot create one.
    let quota: k8s_openapi::api::core::v1::ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "no-pods", "namespace": NS}, "spec": {"hard": {"pods": "0"}},
    }))
    .expect("quota");
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> =
        Api::namespaced(env.client.clone(), NS);
    quotas
        .create(&Default::default(), &quota)
        .await
        .expect("quota created");
    env.console("quota", json!({"image": IMAGE})).await;
    let obj = env.wait("quota", "WorkloadReady", "ReplicaFailure").await;
    assert!(
        message(&obj, "WorkloadReady").contains("quota"),
        "{}",
        message(&obj, "WorkloadReady")
    );
    quotas
        .delete("no-pods", &Default::default())
        .await
        .expect("quota deleted");

    // More than a Node holds: unschedulable.
    env.console(
        "big",
        json!({"image": IMAGE, "resources": {"requests": {"cpu": "100"}}}),
    )
    .await;
    env.wait("big", "WorkloadReady", "PodUnschedulable").await;

    // The OIDC Secret exists without the key the container reads.
    env.secret("oidc", json!({"other": "x"})).await;
    env.console(
        "nokey",
        json!({"image": IMAGE, "authentication": {"oidc": {"issuerURL": "https://id.example.com",
               "clientID": "console", "clientSecretRef": {"name": "oidc", "key": "clientSecret"}}}}),
    )
    .await;
    let obj = env.wait("nokey", "WorkloadReady", "SecretKeyMissing").await;
    assert!(
        message(&obj, "WorkloadReady").contains("clientSecret"),
        "{}",
        message(&obj, "WorkloadReady")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_paused_with_a_refused_hostname_still_withdraws_the_exposure() {
    let env = start(
        with_controllers(),
        super::console_support::settings_allowing_sim_hosts(),
        true,
    )
    .await;
    env.console(
        "ops",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": "ops.apps.sim.local"}}),
    )
    .await;
    env.ready("ops").await;
    let routes: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("route.openshift.io", "v1", "Route"),
            "routes",
        ),
    );
    assert!(routes.get_opt("ops-console").await.expect("get").is_some());

    // Paused: nothing but the pause is said.
    env.merge(
        "ops",
        json!({"metadata": {"annotations": {"pgtoolbox.fyannk.dev/reconcile": "skip"}}}),
    )
    .await;
    let obj = env.wait("ops", "Ready", "ReconciliationPaused").await;
    assert_eq!(state(&obj, "Ready").0, "Unknown");
    assert_eq!(
        state(&obj, "Progressing"),
        ("False".into(), "ReconciliationPaused".into())
    );

    // Paused with a refused hostname: stalled on it, and the Route is withdrawn.
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"hostname": "ops.evil.io"}}}),
    )
    .await;
    let obj = env.wait("ops", "Stalled", "HostnameNotAllowed").await;
    assert_eq!(state(&obj, "Stalled").0, "True");
    assert_eq!(state(&obj, "Progressing").1, "HostnameNotAllowed");
    until_gone(&routes, "ops-console", "withdrawn under a refused hostname").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_policy_kept_while_a_pod_stuck_terminating_trusts_its_peers() {
    let env = super::console_support::routed_with_a_stuck_pod("ops").await;
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"type": "clusterIP", "hostname": null}}}),
    )
    .await;
    env.wait("ops", "ExposureConfined", "ExposurePolicyKept")
        .await;
    let obj = until(&env.consoles(), "ops", "a stuck Pod named", |obj| {
        message(obj, "ExposureConfined").contains("stuck terminating")
    })
    .await;
    let text = message(&obj, "ExposureConfined");
    assert!(
        text.contains("stuck terminating") && text.contains("ops-console-"),
        "{text}"
    );
    let policies: Api<NetworkPolicy> = Api::namespaced(env.client.clone(), NS);
    assert!(
        policies
            .get_opt("ops-ingress")
            .await
            .expect("get")
            .is_some(),
        "kept"
    );
    env.sim.admin().clear_workload_faults(None);
    // Stuck Pods are let go once the fault is cleared: the policy goes, and the advisory.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(env.client.clone(), NS);
    for pod in pods.list(&Default::default()).await.expect("pods").items {
        if pod.metadata.deletion_timestamp.is_some() {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let _ = pods
                .patch(
                    &name,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
                )
                .await;
        }
    }
    until_gone(&policies, "ops-ingress", "the kept policy removed").await;
    until(&env.consoles(), "ops", "no ExposureConfined", |obj| {
        state(obj, "ExposureConfined").1.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_route_api_unavailable_then_an_ingress_admitted_once_the_controller_is() {
    let env = start_probed(
        pgtoolbox_sim::SimConfig {
            unserve: vec![
                "route.openshift.io".into(),
                "gateway.networking.k8s.io".into(),
            ],
            ..with_controllers()
        },
        settings(),
    )
    .await;
    env.console(
        "ops",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": "ops.apps.sim.local"}}),
    )
    .await;
    env.wait("ops", "ExposureReady", "RouteAPIUnavailable")
        .await;
    let obj = env.wait("ops", "Ready", "RouteAPIUnavailable").await;
    assert_eq!(state(&obj, "ExposureReady").0, "False");

    // An Ingress the controller does not admit.
    super::harness::fault_instance(&env.sim, NS, "ops", WorkloadFault::NotAdmitted);
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"type": "ingress", "ingressClassName": "nginx"}}}),
    )
    .await;
    env.wait("ops", "ExposureConfined", "ExposureOpen").await;
    env.sim.admin().clear_workload_faults(None);
    env.wait("ops", "ExposureReady", "AsExpected").await;

    // Gateway API not served either.
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"type": "gateway", "ingressClassName": null, "gateway": {"parentRef": {"name": "gw"}}}}}),
    )
    .await;
    env.wait("ops", "ExposureReady", "GatewayAPIUnavailable")
        .await;
}

/// A Route published before its kind was refused in the namespace: read past the cache, said
/// in ExposureReady's message, counted as published (ExposureConfined Unknown while it cannot
/// be read); deleted, pinned to its UID, once it is not wanted and can be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_route_published_before_its_kind_was_refused() {
    use super::console_support::run_operator;
    let mut env = start_probed(with_controllers(), settings()).await;
    env.console(
        "ops",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": "ops.apps.sim.local"}}),
    )
    .await;
    env.wait("ops", "ExposureConfined", "AsExpected").await;
    env.stop_operator().await;

    // Routes refused in team-a, reads included: the operator cannot tell whether it remains.
    let admin = env.sim.admin();
    admin
        .deny("*:route.openshift.io/routes:team-a")
        .expect("deny");
    let watched = OperatorSettings {
        watch_namespaces: vec![NS.into()],
        ..settings()
    };
    let (operator, shared) = run_operator(&env.client, watched).await;
    env.operator = Some(operator);
    env.shared = Some(shared);
    let obj = env
        .wait("ops", "ExposureReady", "RouteAPIUnavailable")
        .await;
    let text = message(&obj, "ExposureReady");
    assert!(text.contains("may remain; delete it by hand"), "{text}");
    let obj = env.wait("ops", "ExposureConfined", "ExposureOpen").await;
    assert_eq!(state(&obj, "ExposureConfined").0, "Unknown");

    // Reads allowed again (the kind stays off until a restart), deletes still refused: not
    // wanted any more, its delete is refused, and the next pass (asked for at once) decides
    // with that refusal: it may remain.
    let routes: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("route.openshift.io", "v1", "Route"),
            "routes",
        ),
    );
    admin.clear_deny();
    for verb in ["list", "watch", "delete"] {
        let rule = format!("{verb}:route.openshift.io/routes:team-a");
        admin.deny(&rule).expect("deny");
    }
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"type": "clusterIP", "hostname": null}}}),
    )
    .await;
    wait_for("its refused delete said in ExposureReady", || async {
        let obj = env.consoles().get("ops").await.map_err(|e| e.to_string())?;
        let (reason, text) = (
            state(&obj, "ExposureReady").1,
            message(&obj, "ExposureReady"),
        );
        if reason == "NotRequested" && text.contains("may remain; delete it by hand") {
            Ok(())
        } else {
            Err(format!("{reason}: {text}"))
        }
    })
    .await;
    let kept = routes.get_opt("ops-console").await.expect("route read");
    assert!(kept.is_some(), "its delete was refused");

    // Deletes allowed again: on the next generation it is deleted.
    admin.clear_deny();
    for verb in ["list", "watch"] {
        let rule = format!("{verb}:route.openshift.io/routes:team-a");
        admin.deny(&rule).expect("deny");
    }
    env.merge("ops", json!({"spec": {"replicas": 2}})).await;
    env.wait("ops", "ExposureReady", "NotRequested").await;
    admin.clear_deny();
    until_gone(
        &routes,
        "ops-console",
        "published before the refusal, deleted",
    )
    .await;
}
