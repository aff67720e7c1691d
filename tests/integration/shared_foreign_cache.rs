//! Issue 46, finding 4: anyone who may edit a namespace can put the operator's managed-by label
//! on objects, and the child stores watch by that label. Only an object one of our objects
//! controls is kept whole; any other one is kept as its metadata, which is all the applier
//! needs to report a child's name as taken (`ResourceNotOwned`).

use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{Api, PostParams};
use pgtoolbox_operator::testing::children::{MANAGED_BY, MANAGED_BY_LABEL, OperatorCaches};
use pgtoolbox_operator::testing::messages::ObjectKey;
use pgtoolbox_sim::SimConfig;
use serde_json::{Value, json};

use super::console_support::{IMAGE, NS, settings, start_with, state};
use super::wait_support::wait_for;

/// Foreign labelled objects of each kind (Secrets, ConfigMaps), each holding `PAYLOAD` bytes.
const FOREIGN: usize = 200;
const PAYLOAD: usize = 200 * 1024;
const MARK: &str = "foreign-payload-";

fn labelled(name: &str) -> Value {
    json!({
        "name": name,
        "namespace": NS,
        "labels": {MANAGED_BY_LABEL: MANAGED_BY},
        "annotations": {"note": format!("{MARK}{}", "a".repeat(4096))},
    })
}

/// The cached entries of one store whose name starts with `prefix`.
fn named<'a>(dump: &'a Value, store: &str, prefix: &str) -> Vec<&'a Value> {
    dump["stores"][store]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|o| {
                    o["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with(prefix))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Creates `count` Secrets and as many ConfigMaps in `NS`, named `foreign-N`, each holding
/// `payload` under the metadata `metadata(name)` gives.
pub async fn create_foreign(
    client: &kube::Client,
    count: usize,
    payload: &str,
    metadata: impl Fn(&str) -> Value,
) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    for i in 0..count {
        let meta = metadata(&format!("foreign-{i}"));
        let secret: Secret =
            serde_json::from_value(json!({"metadata": meta, "stringData": {"blob": payload}}))
                .expect("secret");
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("foreign Secret");
        let map: ConfigMap =
            serde_json::from_value(json!({"metadata": meta, "data": {"blob": payload}}))
                .expect("config map");
        maps.create(&PostParams::default(), &map)
            .await
            .expect("foreign ConfigMap");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_objects_labelled_as_ours_are_cached_as_metadata_only() {
    let caches = OperatorCaches::new();
    let env = start_with(SimConfig::default(), settings(), true, Some(caches.clone())).await;

    // Under the name of the console's Service, labelled as its child: the store holds it.
    let services: Api<Service> = Api::namespaced(env.client.clone(), NS);
    let mut meta = labelled("ops-console");
    meta["labels"]["app.kubernetes.io/component"] = json!("console");
    meta["labels"]["app.kubernetes.io/instance"] = json!("ops");
    let foreign: Service =
        serde_json::from_value(json!({"metadata": meta, "spec": {"ports": [{"port": 80}]}}))
            .expect("service");
    let created = services
        .create(&PostParams::default(), &foreign)
        .await
        .expect("foreign Service");

    let payload = format!("{MARK}{}", "x".repeat(PAYLOAD - MARK.len()));
    create_foreign(&env.client, FOREIGN, &payload, labelled).await;

    // The console's pass finds the name taken from the cached metadata alone.
    env.console("ops", json!({"image": IMAGE})).await;
    let obj = env
        .wait("ops", "ConfigurationValid", "ResourceNotOwned")
        .await;
    assert_eq!(
        state(&obj, "Ready"),
        ("False".into(), "ResourceNotOwned".into())
    );
    let now = services.get("ops-console").await.expect("still there");
    assert_eq!(
        now.metadata.resource_version, created.metadata.resource_version,
        "untouched"
    );
    // The console's own children are kept whole: its ServiceAccount is controlled by it.
    let own = wait_for("the console's ServiceAccount cached", || async {
        caches
            .service_accounts
            .get(&ObjectKey::new(NS, "ops-console"))
            .ok_or_else(|| "not cached yet".to_owned())
    })
    .await;
    assert!(
        !own.metadata
            .owner_references
            .clone()
            .unwrap_or_default()
            .is_empty()
    );

    let dump: Value = wait_for("every foreign object cached", || async {
        let dump: Value = serde_json::from_str(&caches.dump()).expect("JSON");
        let secrets = named(&dump, "ownedSecrets", "foreign-").len();
        let maps = named(&dump, "configMaps", "foreign-").len();
        if secrets == FOREIGN && maps == FOREIGN {
            Ok(dump)
        } else {
            Err(format!("{secrets} Secrets, {maps} ConfigMaps cached"))
        }
    })
    .await;
    let text = dump.to_string();
    // Measured, not asserted beyond the payloads' absence: what the caches hold in all.
    eprintln!(
        "caches: {} bytes of JSON for {} foreign objects of {} bytes each",
        text.len(),
        2 * FOREIGN,
        PAYLOAD
    );
    for store in ["ownedSecrets", "configMaps"] {
        for object in named(&dump, store, "foreign-") {
            let name = &object["metadata"]["name"];
            assert!(object.get("data").is_none(), "{store} {name}: data kept");
            assert!(
                object["metadata"].get("annotations").is_none(),
                "{store} {name}: annotations kept"
            );
            assert_eq!(object["metadata"]["labels"][MANAGED_BY_LABEL], MANAGED_BY);
        }
    }
    let service = named(&dump, "services", "ops-console");
    assert_eq!(service.len(), 1, "{service:?}");
    assert!(service[0].get("spec").is_none(), "{}", service[0]);
    assert!(!text.contains(MARK), "a cache holds a foreign payload");

    // Fresh caches list over all of it, as a restarted operator does: with this many foreign
    // objects the children of ours are read one by one, and no foreign body is downloaded.
    env.sim.admin().reset_stats();
    let (fresh, _drain) = crate::harness::watched_caches(&env.client, NS);
    fresh
        .config_maps
        .wait_synced(std::time::Duration::from_secs(60))
        .await
        .expect("ConfigMaps listed");
    fresh
        .service_accounts
        .wait_synced(std::time::Duration::from_secs(60))
        .await
        .expect("ServiceAccounts listed");
    let listed = fresh
        .service_accounts
        .get_whole(&ObjectKey::new(NS, "ops-console"))
        .expect("the console's ServiceAccount, whole");
    assert_eq!(listed.metadata.uid, own.metadata.uid);
    let dump: Value = serde_json::from_str(&fresh.dump()).expect("JSON");
    assert_eq!(named(&dump, "configMaps", "foreign-").len(), FOREIGN);
    assert!(
        !dump.to_string().contains(MARK),
        "a fresh cache holds a foreign payload"
    );
    let stats = env.sim.stats();
    let reads = |what: &str| stats.by_verb_resource.get(what).copied().unwrap_or(0);
    // The ConfigMaps of ours (controlled by the console) were read one by one, no foreign one;
    // the ServiceAccounts, none foreign among them, came whole in one list.
    let ours = dump["stores"]["configMaps"]
        .as_array()
        .expect("configMaps")
        .iter()
        .filter(|o| o["metadata"].get("ownerReferences").is_some())
        .count() as u64;
    assert_eq!(
        reads("get configmaps"),
        ours,
        "{:?}",
        stats.by_verb_resource
    );
    assert_eq!(
        reads("get serviceaccounts"),
        0,
        "{:?}",
        stats.by_verb_resource
    );
}

/// The RoleBindings labelled for an access request are judged whoever made them (a foreign one
/// is deleted), so the store keeps their role and subjects; a namespace admin who labels many
/// of them cannot make it hold more: no annotations, no other label, at most two subjects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn role_bindings_labelled_for_a_request_are_kept_as_judged_only() {
    use k8s_openapi::api::rbac::v1::RoleBinding;
    use pgtoolbox_operator::testing::children::REQUEST_LABEL;
    use pgtoolbox_operator::testing::messages::KindKey;

    const BINDINGS: usize = 100;
    let (sim, client) = crate::sim_support::start_with(SimConfig::default()).await;
    crate::sim_support::namespace(&client, NS).await;
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), NS);
    let note = format!("{MARK}{}", "b".repeat(64 * 1024));
    for i in 0..BINDINGS {
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": format!("labelled-{i}"), "labels": {REQUEST_LABEL: "wanted", "extra": "x"},
                "annotations": {"note": note}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": (0..3).map(|s| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                "name": format!("user-{s}")})).collect::<Vec<_>>(),
        }))
        .expect("binding");
        bindings
            .create(&PostParams::default(), &binding)
            .await
            .expect("labelled RoleBinding");
    }
    let (caches, _drain) = crate::harness::watched_caches(&client, NS);
    caches
        .access_bindings
        .wait_synced(std::time::Duration::from_secs(60))
        .await
        .expect("RoleBindings listed");
    let kept = caches
        .access_bindings
        .children_of(&KindKey::new("PgAccessRequest", NS, "wanted"));
    assert_eq!(kept.len(), BINDINGS);
    for binding in &kept {
        assert_eq!(binding.metadata.annotations, None);
        assert_eq!(
            binding.metadata.labels,
            Some([(REQUEST_LABEL.to_string(), "wanted".to_string())].into())
        );
        assert_eq!(binding.subjects.as_ref().map(Vec::len), Some(2));
        assert_eq!(binding.role_ref.name, "view");
        assert!(binding.metadata.creation_timestamp.is_some());
    }
    assert!(
        !caches.dump().contains(MARK),
        "a cache holds a binding's annotation"
    );
    drop(sim);
}
