//! The shared child machinery's `ExposureReady` against the simulated cluster's router, Ingress and Gateway
//! controllers and their faults, `ResourceNotOwned` on a foreign object left byte-identical,
//! and a pass of a converged object that makes no API request.

use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use pgtoolbox_operator::testing::conditions::ConditionType;
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use super::machinery_support::{NS, start};
use super::wait_support::{self, DEADLINE, eventually};

const E: ConditionType = ConditionType::ExposureReady;
const SELECTOR: &str = "app.kubernetes.io/instance=pub";
const HOST: &str = "pub.apps.sim.local";

fn dynamic(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exposure_ready_follows_route_ingress_and_http_route_admission() {
    let mut env = start(&[]).await;
    let admin = env.sim.admin();
    let routes: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &dynamic("route.openshift.io", "Route", "routes"),
    );
    let http_routes: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &dynamic("gateway.networking.k8s.io", "HTTPRoute", "httproutes"),
    );
    let gateways: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &dynamic("gateway.networking.k8s.io", "Gateway", "gateways"),
    );

    // A Route, admitted by the router: the URL is published.
    let at = env.mark();
    env.create(
        "pub",
        json!({"exposure": {"type": "route", "hostname": HOST}}),
        json!({}),
    )
    .await;
    let msg = env.until(at, "pub", E, "True", "AsExpected").await;
    assert!(msg.contains("admitted by default"), "{msg}");
    let status = env.consoles().get("pub").await.unwrap().status.unwrap();
    assert_eq!(status.url.as_deref(), Some("http://pub.apps.sim.local"));
    let at = env.mark();
    admin
        .add_workload_fault(NS, SELECTOR, WorkloadFault::NotAdmitted)
        .unwrap();
    let at = env.step(at, "pub", E, "False", "NotAdmitted").await;
    let status = env.consoles().get("pub").await.unwrap().status.unwrap();
    assert_eq!(status.url, None, "no URL while not admitted");
    admin.clear_workload_faults(None);
    let at = env.step(at, "pub", E, "True", "AsExpected").await;

    // An Ingress: admitted once the load balancer is published; the Route goes.
    env.merge(
        "pub",
        json!({"spec": {"exposure": {"type": "ingress", "ingressClassName": "nginx"}}}),
    )
    .await;
    let msg = env.until(at, "pub", E, "True", "AsExpected").await;
    assert!(msg.contains("Ingress pub-console"), "{msg}");
    wait_support::until_gone(&routes, "pub-console", "withdrawn").await;
    let at = env.mark();
    admin
        .add_workload_fault(NS, SELECTOR, WorkloadFault::NotAdmitted)
        .unwrap();
    let at = env.step(at, "pub", E, "Unknown", "Reconciling").await;
    admin.clear_workload_faults(None);
    let at = env.step(at, "pub", E, "True", "AsExpected").await;

    // An HTTPRoute on a Gateway of the simulated controller: accepted, then not.
    let gateway: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": NS},
        "spec": {"gatewayClassName": "sim",
                 "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]},
    }))
    .unwrap();
    gateways
        .create(&PostParams::default(), &gateway)
        .await
        .unwrap();
    env.merge(
        "pub",
        json!({"spec": {"exposure": {"type": "gateway", "ingressClassName": null,
                                      "gateway": {"parentRef": {"name": "gw"}}}}}),
    )
    .await;
    let msg = env.until(at, "pub", E, "True", "AsExpected").await;
    assert!(msg.contains("HTTPRoute pub-console is accepted"), "{msg}");
    let at = env.mark();
    admin
        .add_workload_fault(NS, SELECTOR, WorkloadFault::NotAdmitted)
        .unwrap();
    let at = env.step(at, "pub", E, "False", "NotAccepted").await;
    admin.clear_workload_faults(None);
    let at = env.step(at, "pub", E, "True", "AsExpected").await;

    // Back to the Service alone: nothing is published, the HTTPRoute goes.
    env.merge(
        "pub",
        json!({"spec": {"exposure": {"type": "clusterIP", "hostname": null, "gateway": null}}}),
    )
    .await;
    env.until(at, "pub", E, "True", "NotRequested").await;
    env.until(at, "pub", ConditionType::Ready, "True", "AsExpected")
        .await;
    wait_support::until_gone(&http_routes, "pub-console", "withdrawn").await;

    // Converged: a pass (woken by an annotation the pass does not read) makes no request.
    let settled = || env.consoles.finished.load(Ordering::SeqCst);
    let mut before = settled();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = settled();
        if now == before {
            break;
        }
        before = now;
    }
    admin.reset_stats();
    env.merge(
        "pub",
        json!({"metadata": {"annotations": {"touched": "yes"}}}),
    )
    .await;
    eventually(DEADLINE, "the touch made a pass", || {
        std::future::ready(settled() > before)
    })
    .await;
    let stats = env.sim.stats();
    assert_eq!(
        stats.by_verb_resource.keys().collect::<Vec<_>>(),
        vec!["patch pgtoolbox.fyannk.dev/pgtoolboxconsoles"],
        "only the test's own patch: {:#?}",
        stats.by_verb_resource
    );
    assert_eq!(stats.total, 1, "{:#?}", stats.by_verb_resource);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_taken_by_a_foreign_object_is_resource_not_owned_and_left_untouched() {
    let mut env = start(&[]).await;
    let services: Api<Service> = Api::namespaced(env.client.clone(), NS);
    let foreign: Service = serde_json::from_value(json!({
        "metadata": {"name": "taken-console", "labels": {"team": "theirs"}},
        "spec": {"ports": [{"name": "web", "port": 80}]},
    }))
    .unwrap();
    let foreign = services
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
    let before = serde_json::to_string(&foreign).unwrap();
    let at = env.mark();
    env.create("taken", json!({}), json!({})).await;
    let msg = env
        .until(
            at,
            "taken",
            ConditionType::ConfigurationValid,
            "False",
            "ResourceNotOwned",
        )
        .await;
    assert!(msg.contains("Service taken-console"), "{msg}");
    env.until(
        at,
        "taken",
        ConditionType::Ready,
        "False",
        "ResourceNotOwned",
    )
    .await;
    let after = serde_json::to_string(&services.get("taken-console").await.unwrap()).unwrap();
    assert_eq!(before, after, "the foreign Service is byte-identical");

    // A host an older Route already claims: the router refuses ours, with its reason.
    let routes: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &dynamic("route.openshift.io", "Route", "routes"),
    );
    let older: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": "older", "namespace": NS},
        "spec": {"host": "claimed.apps.sim.local", "to": {"kind": "Service", "name": "x"}},
    }))
    .unwrap();
    routes.create(&PostParams::default(), &older).await.unwrap();
    // The router admits it first: the claim is the admitted Route's.
    wait_support::until(&routes, "older", "the older Route is admitted", |route| {
        route.data["status"]["ingress"][0]["conditions"]
            .as_array()
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Admitted" && c["status"] == "True")
            })
    })
    .await;
    // The router orders claims by creationTimestamp (seconds), then uid: ours must be created
    // in a later second to be the younger one.
    let created = routes
        .get("older")
        .await
        .unwrap()
        .metadata
        .creation_timestamp
        .expect("created")
        .0
        .as_second();
    while k8s_openapi::jiff::Timestamp::now().as_second() <= created {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let at = env.mark();
    env.create(
        "late",
        json!({"exposure": {"type": "route", "hostname": "claimed.apps.sim.local"}}),
        json!({}),
    )
    .await;
    let msg = env.until(at, "late", E, "False", "NotAdmitted").await;
    assert!(msg.contains("HostAlreadyClaimed"), "{msg}");
    let at = env.mark();
    routes
        .delete("older", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    env.until(at, "late", E, "True", "AsExpected").await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exposure_kind_the_server_does_not_serve_is_said_unavailable() {
    let mut env = start(&["route.openshift.io", "gateway.networking.k8s.io"]).await;
    let at = env.mark();
    env.create(
        "pub",
        json!({"exposure": {"type": "route", "hostname": HOST}}),
        json!({}),
    )
    .await;
    let at = env.step(at, "pub", E, "False", "RouteAPIUnavailable").await;
    env.merge(
        "pub",
        json!({"spec": {"exposure": {"type": "gateway", "gateway": {"parentRef": {"name": "gw"}}}}}),
    )
    .await;
    let at = env
        .step(at, "pub", E, "False", "GatewayAPIUnavailable")
        .await;
    env.merge(
        "pub",
        json!({"spec": {"exposure": {"type": "clusterIP", "hostname": null, "gateway": null}}}),
    )
    .await;
    env.until(at, "pub", E, "True", "NotRequested").await;
    env.stop().await;
}
