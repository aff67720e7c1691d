//! A console becomes Ready on the simulated cluster with every child api.md names.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::Api;
use serde_json::json;

use super::console_support::{IMAGE, NS, message, settings, start, state, with_controllers};
use super::wait_support::until_gone;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_cluster_ip_becomes_ready_with_its_children() {
    let env = start(with_controllers(), settings(), true).await;
    env.console(
        "ops",
        json!({"image": IMAGE, "replicas": 2, "restoreDrills": {"enabled": true}}),
    )
    .await;
    let obj = env.ready("ops").await;
    assert_eq!(
        state(&obj, "ExposureReady"),
        ("True".into(), "NotRequested".into())
    );
    assert_eq!(
        state(&obj, "WorkloadReady"),
        ("True".into(), "AsExpected".into())
    );
    assert_eq!(
        state(&obj, "InstanceCABundleComplete"),
        ("True".into(), "AsExpected".into()),
        "no Cluster selected: {}",
        message(&obj, "InstanceCABundleComplete")
    );
    assert_eq!(
        state(&obj, "ExposureConfined"),
        (String::new(), String::new()),
        "nothing published"
    );
    assert_eq!(state(&obj, "Stalled").0, "False");

    let c = env.client.clone();
    Api::<ServiceAccount>::namespaced(c.clone(), NS)
        .get("ops-console")
        .await
        .expect("sa");
    Api::<Service>::namespaced(c.clone(), NS)
        .get("ops-console")
        .await
        .expect("service");
    let d = Api::<Deployment>::namespaced(c.clone(), NS)
        .get("ops-console")
        .await
        .expect("deployment");
    assert_eq!(d.spec.replicas, Some(2));
    Api::<ConfigMap>::namespaced(c.clone(), NS)
        .get("ops-instance-ca")
        .await
        .expect("bundle");
    let bindings = Api::<RoleBinding>::namespaced(c.clone(), NS);
    for (name, role) in [
        ("ops-console", "pgtoolbox-console"),
        ("ops-console-pod-logs", "pgtoolbox-console-pod-logs"),
        (
            "ops-console-restore-drills",
            "pgtoolbox-console-restore-drills",
        ),
    ] {
        let rb = bindings.get(name).await.expect("role binding");
        assert_eq!(rb.role_ref.name, role);
    }

    // podLogs: false takes the pod-logs binding away.
    env.merge("ops", json!({"spec": {"podLogs": false}})).await;
    until_gone(&bindings, "ops-console-pod-logs", "podLogs: false").await;
}
