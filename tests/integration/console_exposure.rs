//! A console's exposure on the simulated cluster: ExposureReady over a Route, an Ingress and an
//! HTTPRoute; ExposureConfined for each; and the trust grant ordering observed through watches:
//! no console Pod ever carries a grant for peers other than those of the ingress policy the
//! cluster holds.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::ResourceExt;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, PostParams, WatchEvent, WatchParams,
};
use pgtoolbox_operator::testing::reconcile::console::{PEERS_ANNOTATION, TRUST_ANNOTATION};
use serde_json::json;
use tokio_util::task::AbortOnDropHandle;

use super::console_support::{Env, IMAGE, NS, message, settings, start, state, with_controllers};
use super::wait_support::{until, until_gone, wait_for};

const HOST: &str = "ops.apps.sim.local";

fn dynamic(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

async fn template_grant(env: &Env) -> Option<String> {
    let d = Api::<Deployment>::namespaced(env.client.clone(), NS)
        .get("ops-console")
        .await
        .expect("deployment");
    d.spec
        .template
        .metadata
        .and_then(|m| m.annotations)
        .and_then(|a| a.get(TRUST_ANNOTATION).cloned())
}

async fn policy_gone(env: &Env) {
    let api: Api<NetworkPolicy> = Api::namespaced(env.client.clone(), NS);
    until_gone(&api, "ops-ingress", "the ingress policy is deleted").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_exposure_ready_and_confined_over_route_ingress_and_http_route() {
    let env = start(with_controllers(), settings(), true).await;

    // A Route: admitted, confined to the router namespaces, the grant on the pod template.
    env.console(
        "ops",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": HOST}}),
    )
    .await;
    let obj = env.wait("ops", "ExposureConfined", "AsExpected").await;
    assert!(message(&obj, "ExposureConfined").contains("trust X-Forwarded-For"));
    let obj = env.ready("ops").await;
    assert_eq!(
        obj.status.as_ref().and_then(|s| s.url.clone()).as_deref(),
        Some("http://ops.apps.sim.local")
    );
    let policy = Api::<NetworkPolicy>::namespaced(env.client.clone(), NS)
        .get("ops-ingress")
        .await
        .expect("policy");
    let digest = policy.annotations().get(PEERS_ANNOTATION).cloned();
    assert!(digest.is_some());
    wait_for("the pod template carries the grant", || async {
        let grant = template_grant(&env).await;
        if grant == digest {
            Ok(())
        } else {
            Err(format!("it carries {grant:?}, not {digest:?}"))
        }
    })
    .await;

    // The router refuses the Route: NotAdmitted, no URL; admitted again once it accepts.
    super::harness::fault_instance(
        &env.sim,
        NS,
        "ops",
        pgtoolbox_sim::cluster::WorkloadFault::NotAdmitted,
    );
    let obj = env.wait("ops", "ExposureReady", "NotAdmitted").await;
    assert_eq!(obj.status.and_then(|s| s.url), None);
    env.sim.admin().clear_workload_faults(None);
    env.wait("ops", "ExposureReady", "AsExpected").await;

    // Another policy admitting everyone to every port bypasses ours.
    let policies: Api<NetworkPolicy> = Api::namespaced(env.client.clone(), NS);
    let open: NetworkPolicy = serde_json::from_value(json!({
        "metadata": {"name": "allow-all", "namespace": NS},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]},
    }))
    .expect("policy");
    policies
        .create(&PostParams::default(), &open)
        .await
        .expect("created");
    let obj = env
        .wait("ops", "ExposureConfined", "ExposurePolicyBypassed")
        .await;
    assert!(message(&obj, "ExposureConfined").contains("allow-all"));
    policies
        .delete("allow-all", &Default::default())
        .await
        .expect("deleted");
    env.wait("ops", "ExposureConfined", "AsExpected").await;

    // A broad peer: the console trusts nobody.
    env.merge("ops", json!({"spec": {"exposure": {"networkPolicy": {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}}}}))
        .await;
    let obj = env
        .wait("ops", "ExposureConfined", "ExposurePeersBroad")
        .await;
    assert!(message(&obj, "ExposureConfined").contains("10.0.0.0/8"));
    wait_for("the pod template carries no grant", || async {
        match template_grant(&env).await {
            None => Ok(()),
            Some(grant) => Err(format!("it carries {grant}")),
        }
    })
    .await;

    // An Ingress without from: no policy, open (once no Pod trusts the old peers).
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"type": "ingress", "ingressClassName": "nginx", "networkPolicy": {"from": null}}}}),
    )
    .await;
    let obj = env.wait("ops", "ExposureConfined", "ExposureOpen").await;
    assert_eq!(state(&obj, "ExposureConfined").0, "False");
    env.wait("ops", "ExposureReady", "AsExpected").await;
    assert!(
        message(
            &env.consoles().get("ops").await.expect("c"),
            "ExposureReady"
        )
        .contains("Ingress ops-console")
    );
    policy_gone(&env).await;

    // An HTTPRoute on a Gateway of the simulated controller.
    let gateways: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &dynamic("gateway.networking.k8s.io", "Gateway", "gateways"),
    );
    let gateway: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": NS},
        "spec": {"gatewayClassName": "sim", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]},
    }))
    .expect("gateway");
    gateways
        .create(&PostParams::default(), &gateway)
        .await
        .expect("created");
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"type": "gateway", "ingressClassName": null, "gateway": {"parentRef": {"name": "gw"}}}}}),
    )
    .await;
    let obj = until(&env.consoles(), "ops", "the HTTPRoute accepted", |obj| {
        message(obj, "ExposureReady").contains("HTTPRoute ops-console is accepted")
    })
    .await;
    assert_eq!(state(&obj, "ExposureConfined").1, "ExposureOpen");
    // The gateway refuses it: NotAccepted.
    super::harness::fault_instance(
        &env.sim,
        NS,
        "ops",
        pgtoolbox_sim::cluster::WorkloadFault::NotAdmitted,
    );
    env.wait("ops", "ExposureReady", "NotAccepted").await;
    env.sim.admin().clear_workload_faults(None);
    env.wait("ops", "ExposureReady", "AsExpected").await;
    // Back to the Service alone: nothing published, no advisory.
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"type": "clusterIP", "hostname": null, "gateway": null}}}),
    )
    .await;
    env.wait("ops", "ExposureReady", "NotRequested").await;
    until(
        &env.consoles(),
        "ops",
        "no ExposureConfined with nothing published",
        |obj| state(obj, "ExposureConfined").1.is_empty(),
    )
    .await;
}

/// One change seen through a watch: (resourceVersion, what).
enum Seen {
    Policy(Option<String>),
    Pod {
        name: String,
        grant: Option<Option<String>>,
    },
}

fn rv<K: kube::Resource>(obj: &K) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_pods_never_trust_peers_the_policy_does_not_confine() {
    let env = start(with_controllers(), settings(), true).await;
    let seen: Arc<Mutex<Vec<(u64, Seen)>>> = Arc::default();
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), NS);
    let policies: Api<NetworkPolicy> = Api::namespaced(env.client.clone(), NS);
    let params = WatchParams::default().labels("app.kubernetes.io/instance=ops");
    let pod_stream = pods.watch(&params, "0").await.expect("pod watch").boxed();
    let policy_stream = policies
        .watch(&WatchParams::default(), "0")
        .await
        .expect("policy watch")
        .boxed();
    let sink = seen.clone();
    let _pods = AbortOnDropHandle::new(tokio::spawn(async move {
        let mut stream = pod_stream;
        while let Ok(Some(event)) = stream.try_next().await {
            let (pod, gone) = match event {
                WatchEvent::Added(p) | WatchEvent::Modified(p) => (p, false),
                WatchEvent::Deleted(p) => (p, true),
                _ => continue,
            };
            let grant = (!gone).then(|| pod.annotations().get(TRUST_ANNOTATION).cloned());
            let entry = (
                rv(&pod),
                Seen::Pod {
                    name: pod.name_any(),
                    grant,
                },
            );
            sink.lock().expect("lock").push(entry);
        }
    }));
    let sink = seen.clone();
    let _policies = AbortOnDropHandle::new(tokio::spawn(async move {
        let mut stream = policy_stream;
        while let Ok(Some(event)) = stream.try_next().await {
            let (policy, gone) = match event {
                WatchEvent::Added(p) | WatchEvent::Modified(p) => (p, false),
                WatchEvent::Deleted(p) => (p, true),
                _ => continue,
            };
            if policy.name_any() != "ops-ingress" {
                continue;
            }
            let digest = (!gone)
                .then(|| policy.annotations().get(PEERS_ANNOTATION).cloned())
                .flatten();
            sink.lock()
                .expect("lock")
                .push((rv(&policy), Seen::Policy(digest)));
        }
    }));

    // Confined to the routers, then widened to a load balancer's block, then unpublished.
    env.console(
        "ops",
        json!({"image": IMAGE, "replicas": 2, "exposure": {"type": "route", "hostname": HOST}}),
    )
    .await;
    env.wait("ops", "ExposureConfined", "AsExpected").await;
    let first = template_grant(&env).await;
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"networkPolicy": {"from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]}}}}),
    )
    .await;
    wait_for("the widened from granted", || async {
        let obj = env.consoles().get("ops").await.map_err(|e| e.to_string())?;
        let grant = template_grant(&env).await;
        let confined = state(&obj, "ExposureConfined").1;
        match grant {
            Some(grant) if confined == "AsExpected" && Some(&grant) != first.as_ref() => Ok(()),
            grant => Err(format!("ExposureConfined {confined}, grant {grant:?}")),
        }
    })
    .await;
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"type": "clusterIP", "hostname": null}}}),
    )
    .await;
    policy_gone(&env).await;
    // The replay runs once the recorder's own watch has seen the deletion too.
    wait_for("the recorder saw the policy deleted", || async {
        let seen = seen.lock().expect("lock");
        let deleted = seen.iter().any(|(_, s)| matches!(s, Seen::Policy(None)));
        deleted
            .then_some(())
            .ok_or_else(|| format!("{} changes", seen.len()))
    })
    .await;

    // Replay every change in the server's order.
    let mut events = std::mem::take(&mut *seen.lock().expect("lock"));
    events.sort_by_key(|(rv, _)| *rv);
    let mut policy: Option<String> = None;
    let mut live: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut grants_seen = 0;
    for (rv, event) in events {
        match event {
            Seen::Policy(digest) => policy = digest,
            Seen::Pod { name, grant: None } => {
                live.remove(&name);
            }
            Seen::Pod {
                name,
                grant: Some(grant),
            } => {
                grants_seen += usize::from(grant.is_some());
                live.insert(name, grant);
            }
        }
        for (pod, grant) in &live {
            if let Some(grant) = grant {
                assert_eq!(
                    Some(grant),
                    policy.as_ref(),
                    "at resourceVersion {rv} Pod {pod} trusts peers {grant} while the policy is {policy:?}"
                );
            }
        }
    }
    assert!(
        grants_seen > 0,
        "no Pod was ever granted: the test saw nothing"
    );
}
