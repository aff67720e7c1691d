//! Helpers of the shared-actor tests.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use pgtoolbox_sim::{DenyRule, Sim, SimConfig};
use serde_json::json;

use crate::harness::TestOperator;

pub async fn sim_with(deny: &[&str], unserve: &[&str]) -> Sim {
    Sim::start(config_with(deny, unserve))
        .await
        .expect("sim starts")
}

fn config_with(deny: &[&str], unserve: &[&str]) -> SimConfig {
    SimConfig {
        deny: deny
            .iter()
            .map(|rule| DenyRule::parse(rule).expect("deny rule"))
            .collect(),
        unserve: unserve.iter().map(|g| (*g).to_owned()).collect(),
        ..SimConfig::default()
    }
}

pub async fn create_namespaces(client: &kube::Client, names: &[&str]) {
    let api: Api<Namespace> = Api::all(client.clone());
    for name in names {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("ns");
        api.create(&PostParams::default(), &ns)
            .await
            .expect("namespace created");
    }
}

/// A server with our CRDs that answers 403 to the requests `deny` matches.
pub async fn sim_with_crds(deny: &[&str]) -> Sim {
    TestOperator::new()
        .sim(config_with(deny, &[]))
        .start_cluster()
        .await
        .0
}

pub fn pgadmins(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("pgtoolbox.fyannk.dev", "v1alpha1", "PgAdmin");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "pgadmins"),
    )
}

pub async fn create_pgadmin(client: &kube::Client, ns: &str, name: &str) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAdmin",
        "metadata": {"name": name, "namespace": ns},
        "spec": {},
    }))
    .expect("pgadmin");
    pgadmins(client, ns)
        .create(&PostParams::default(), &object)
        .await
        .expect("pgadmin created");
}

pub fn ready_condition(object: &DynamicObject) -> serde_json::Value {
    object.data["status"]["conditions"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or_default()
}

/// The NamespaceNotWatched Events recorded in `ns`.
pub async fn warnings_in(client: &kube::Client, ns: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("NamespaceNotWatched"))
        .collect()
}

pub use super::wait_support::eventually;

/// Every Secret of `ns` with its data, by name: what a kubelet would mount.
pub async fn secret_data(
    client: &kube::Client,
    ns: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<u8>>> {
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("Secrets")
        .items
        .into_iter()
        .map(|s| {
            let data = s
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            (s.metadata.name.unwrap_or_default(), data)
        })
        .collect()
}

/// The Job of `ns` whose name starts with `prefix` (a Job's name carries a hash), among those
/// `labels` selects (`""`: all).
pub async fn job_starting_with(
    client: &kube::Client,
    ns: &str,
    labels: &str,
    prefix: &str,
) -> k8s_openapi::api::batch::v1::Job {
    Api::<k8s_openapi::api::batch::v1::Job>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(labels))
        .await
        .expect("Jobs")
        .items
        .into_iter()
        .find(|j| {
            j.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .unwrap_or_else(|| panic!("no Job {prefix}* in {ns}"))
}

/// Creates a Secret `{password: initial}` of each name, 32 at a time.
pub async fn create_secrets(secrets: &Api<k8s_openapi::api::core::v1::Secret>, names: &[String]) {
    use futures::StreamExt;
    futures::stream::iter(names)
        .map(|name| {
            let secrets = secrets.clone();
            async move {
                let s: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
                    "metadata": {"name": name}, "stringData": {"password": "initial"},
                }))
                .expect("secret");
                secrets
                    .create(&PostParams::default(), &s)
                    .await
                    .expect("secret created");
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
}

/// Changes the Secret `name` (its `touched` key), which wakes whoever uses it.
pub async fn touch(secrets: &Api<k8s_openapi::api::core::v1::Secret>, name: &str, value: &str) {
    let patch = json!({"stringData": {"touched": value}});
    secrets
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("secret patched");
}
