//! Issue 46, finding 4: anyone who may edit a namespace can put the operator's managed-by label
//! on objects, and the child stores watch by that label. Only an object one of our objects
//! controls is kept whole; any other one is kept as its metadata, which is all the applier
//! needs to report a child's name as taken (`ResourceNotOwned`).

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{Api, PostParams};
use pgtoolbox_operator::testing::children::{MANAGED_BY, MANAGED_BY_LABEL, OperatorCaches};
use pgtoolbox_operator::testing::k8s::{WatchClients, WatchScope};
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

    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), NS);
    let maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), NS);
    let payload = format!("{MARK}{}", "x".repeat(PAYLOAD - MARK.len()));
    for i in 0..FOREIGN {
        let name = format!("foreign-{i}");
        let secret: Secret = serde_json::from_value(
            json!({"metadata": labelled(&name), "stringData": {"blob": payload}}),
        )
        .expect("secret");
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("foreign Secret");
        let map: ConfigMap =
            serde_json::from_value(json!({"metadata": labelled(&name), "data": {"blob": payload}}))
                .expect("config map");
        maps.create(&PostParams::default(), &map)
            .await
            .expect("foreign ConfigMap");
    }

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
    let fresh = OperatorCaches::new();
    let scope = WatchScope::Namespaces(vec![NS.into()]);
    env.sim.admin().reset_stats();
    let wakeups: Vec<_> = fresh
        .watches()
        .into_iter()
        .flat_map(|start| start(&WatchClients::same(&env.client), &scope))
        .collect();
    let _drain = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
        let mut all = futures::stream::select_all(wakeups);
        while all.next().await.is_some() {}
    }));
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
