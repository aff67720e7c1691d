//! The child applier against the embedded API server: create, no write when the cache already
//! matches, server-side apply on a difference, deletion of what is no longer desired, a foreign
//! object under a desired name left byte-identical, a refusal returned as data, a child created
//! or applied once even when the next pass runs before the watch reports it, a child rebuilt
//! from a kept copy (a store that keeps less than the object) never written.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use pgtoolbox_operator::testing::children::{
    Applier, ChildOwner, ChildStore, ChildVerdict, Component, Desired, FIELD_MANAGER, MANAGED_BY,
    MANAGED_BY_LABEL, OwnerOf,
};
use pgtoolbox_operator::testing::k8s::{WatchScope, WriteBudget};
use pgtoolbox_operator::testing::messages::{KindKey, ObjectKey};

use super::wait_support::{DEADLINE, eventually};

const NS: &str = "apps";

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("key".to_string(), value.to_string())].into()),
        ..Default::default()
    }
}

fn desired(name: &str, value: &str) -> Desired<ConfigMap> {
    Desired {
        component: Component::Console,
        object: config_map(name, value),
    }
}

/// Any controller reference names the owner (the test's owner is a ConfigMap).
fn any_controller() -> OwnerOf<ConfigMap> {
    Arc::new(|child: &ConfigMap| {
        let owner = child
            .owner_references()
            .iter()
            .find(|r| r.controller == Some(true))?;
        Some(KindKey::new(&owner.kind, &child.namespace()?, &owner.name))
    })
}

/// A store of our ConfigMaps in `NS`, fed by its watch; the owners it woke. Sending `false`
/// on `open` holds the watch's events back (a watch lagging behind the writes) until `true`.
struct Watched {
    store: Arc<ChildStore<ConfigMap>>,
    woken: Arc<std::sync::Mutex<Vec<KindKey>>>,
    open: tokio::sync::watch::Sender<bool>,
    _drain: tokio_util::task::AbortOnDropHandle<()>,
}

fn watched(client: &kube::Client) -> Watched {
    let store = ChildStore::new("ConfigMaps", any_controller());
    let config = watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"));
    let watches = store.watch(client, &WatchScope::Namespaces(vec![NS.into()]), config);
    let woken = Arc::new(std::sync::Mutex::new(Vec::<KindKey>::new()));
    let sink = woken.clone();
    let (open, mut gate) = tokio::sync::watch::channel(true);
    let _drain = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
        let mut all = futures::stream::select_all(watches);
        let push = |owner| sink.lock().unwrap().push(owner);
        // Gated while a test holds `open`; a test that dropped it is never held back.
        loop {
            if gate.wait_for(|open| *open).await.is_err() {
                break;
            }
            // The events are applied to the store while the stream is polled: stop polling
            // as soon as the gate closes.
            tokio::select! {
                biased;
                closed = gate.wait_for(|open| !*open) => if closed.is_err() { break },
                owner = all.next() => match owner {
                    Some(owner) => push(owner),
                    None => return,
                },
            }
        }
        while let Some(owner) = all.next().await {
            push(owner);
        }
    }));
    Watched {
        store,
        woken,
        open,
        _drain,
    }
}

/// The sim, a client, the ConfigMaps of `NS` and the owner `web` created there.
async fn started() -> (pgtoolbox_sim::Sim, kube::Client, Api<ConfigMap>, ConfigMap) {
    let (sim, client) = super::sim_support::start().await;
    super::sim_support::namespace(&client, NS).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let owner_object = api
        .create(&PostParams::default(), &config_map("web", "owner"))
        .await
        .unwrap();
    (sim, client, api, owner_object)
}

async fn until(what: &str, check: impl Fn() -> bool) {
    eventually(DEADLINE, what, || std::future::ready(check())).await;
}

#[tokio::test]
async fn the_applier_writes_only_differences_deletes_the_undesired_and_never_touches_a_foreign_object()
 {
    let (sim, client, api, owner_object) = started().await;
    let foreign = api
        .create(&PostParams::default(), &config_map("web-taken", "theirs"))
        .await
        .unwrap();
    let foreign_before = serde_json::to_string(&foreign).unwrap();

    let Watched {
        store,
        woken,
        _drain,
        ..
    } = watched(&client);

    let owner = ChildOwner::of(&owner_object).expect("owner has a uid");
    let writes = WriteBudget::new(4);
    let applier = Applier {
        client: &client,
        writes: &writes,
    };

    // First apply: one created, one name taken by an object we do not control.
    let report = applier
        .apply(
            &store,
            &owner,
            vec![desired("web-settings", "1"), desired("web-taken", "ours")],
        )
        .await
        .unwrap();
    assert_eq!(
        report.verdicts,
        vec![
            ChildVerdict::Applied {
                name: "web-settings".into()
            },
            ChildVerdict::NotOwned {
                kind: "ConfigMap".into(),
                name: "web-taken".into()
            },
        ]
    );
    let after = serde_json::to_string(&api.get("web-taken").await.unwrap()).unwrap();
    assert_eq!(
        foreign_before, after,
        "the foreign object is byte-identical"
    );
    let created = api.get("web-settings").await.unwrap();
    let labels = created.labels();
    assert_eq!(
        labels.get(MANAGED_BY_LABEL).map(String::as_str),
        Some(MANAGED_BY)
    );
    assert_eq!(
        labels.get("app.kubernetes.io/instance").map(String::as_str),
        Some("web")
    );
    assert_eq!(
        labels
            .get("app.kubernetes.io/component")
            .map(String::as_str),
        Some("console")
    );
    assert_eq!(created.owner_references()[0].uid, owner.reference.uid);
    // The store serves our write at once; the watch reports it (and wakes the owner) later.
    assert!(store.get(&ObjectKey::new(NS, "web-settings")).is_some());
    until("the watch to report the child", || {
        store.writes_in_flight() == 0 && woken.lock().unwrap().contains(&owner.key)
    })
    .await;
    assert!(
        woken.lock().unwrap().contains(&owner.key),
        "the owner was woken"
    );

    // Unchanged: no request at all.
    sim.admin().reset_stats();
    let report = applier
        .apply(&store, &owner, vec![desired("web-settings", "1")])
        .await
        .unwrap();
    assert!(report.converged(), "{report:?}");
    assert_eq!(sim.stats().total, 0, "{:#?}", sim.stats().by_verb_resource);

    // Different, the first change: the creation's entry adopted, then one server-side apply.
    let report = applier
        .apply(&store, &owner, vec![desired("web-settings", "2")])
        .await
        .unwrap();
    assert_eq!(
        report.verdicts,
        vec![ChildVerdict::Applied {
            name: "web-settings".into()
        }]
    );
    assert_eq!(sim.stats().by_verb.get("patch"), Some(&2));
    let applied = api.get("web-settings").await.unwrap();
    assert_eq!(
        applied.data.unwrap().get("key").map(String::as_str),
        Some("2")
    );
    until("the store to see the new version", || {
        store
            .get(&ObjectKey::new(NS, "web-settings"))
            .and_then(|c| c.data.clone())
            .is_some_and(|d| d.get("key").map(String::as_str) == Some("2"))
    })
    .await;

    // A key dropped from the desired object goes: every field is the one apply manager's.
    let mut renamed = config_map("web-settings", "3");
    renamed.data = Some([("other".to_string(), "3".to_string())].into());
    applier
        .apply(
            &store,
            &owner,
            vec![Desired {
                component: Component::Console,
                object: renamed,
            }],
        )
        .await
        .unwrap();
    let data = api.get("web-settings").await.unwrap().data.unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), vec!["other"], "{data:?}");
    until("the store to see the rename", || {
        store
            .get(&ObjectKey::new(NS, "web-settings"))
            .and_then(|c| c.data.clone())
            .is_some_and(|d| d.contains_key("other"))
    })
    .await;

    // No longer desired: deleted (pinned), and hidden from the next pass at once.
    let report = applier.apply(&store, &owner, vec![]).await.unwrap();
    assert_eq!(report.deleted, vec!["web-settings".to_string()]);
    assert!(store.children_of(&owner.key).is_empty());
    assert!(api.get_opt("web-settings").await.unwrap().is_none());
    assert!(
        api.get_opt("web-taken").await.unwrap().is_some(),
        "never ours to delete"
    );

    // Refused by the server: returned as data.
    let report = applier
        .apply(&store, &owner, vec![desired("Not_A_Valid_Name", "1")])
        .await
        .unwrap();
    match &report.verdicts[..] {
        [ChildVerdict::Refused { code, message, .. }] => {
            assert_eq!(*code, 422, "{message}");
            assert!(!message.is_empty());
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A foreign object created while the applier is creating the same name is never merged into:
/// the applier creates with POST, so one of the two creations fails with AlreadyExists. (Reading
/// then applying would merge: the apply here is held back by latency while the foreign create
/// lands.) A creation leaves every field to the one apply manager.
#[tokio::test]
async fn a_foreign_object_created_during_our_creation_is_never_merged_into() {
    let (sim, client, api, owner_object) = started().await;
    let Watched { store, _drain, .. } = watched(&client);
    let owner = ChildOwner::of(&owner_object).expect("owner has a uid");
    let writes = WriteBudget::new(4);

    sim.admin()
        .inject_latency(
            &format!("patch:configmaps:{NS}"),
            Duration::from_millis(600),
            None,
        )
        .unwrap();
    let ours = {
        let (client, store, owner) = (client.clone(), store.clone(), owner.clone());
        tokio::spawn(async move {
            let writes = writes;
            let applier = Applier {
                client: &client,
                writes: &writes,
            };
            applier
                .apply(&store, &owner, vec![desired("web-race", "ours")])
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let theirs = api
        .create(&PostParams::default(), &config_map("web-race", "theirs"))
        .await;
    let report = ours.await.unwrap().unwrap();
    sim.admin().clear_faults();
    let stored = api.get("web-race").await.unwrap();
    match theirs {
        Ok(foreign) => {
            assert_eq!(
                report.verdicts,
                vec![ChildVerdict::NotOwned {
                    kind: "ConfigMap".into(),
                    name: "web-race".into()
                }]
            );
            assert_eq!(
                serde_json::to_string(&foreign).unwrap(),
                serde_json::to_string(&stored).unwrap(),
                "the foreign object is byte-identical"
            );
        }
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.reason, "AlreadyExists", "{status:?}");
            assert_eq!(
                report.verdicts,
                vec![ChildVerdict::Applied {
                    name: "web-race".into()
                }]
            );
            assert_eq!(stored.owner_references()[0].uid, owner.reference.uid);
            let managers: Vec<_> = stored
                .managed_fields()
                .iter()
                .map(|e| (e.manager.clone(), e.operation.clone()))
                .collect();
            assert_eq!(
                managers,
                vec![(Some(FIELD_MANAGER.into()), Some("Update".into()))],
                "the creation's fields belong to the operator's manager"
            );
        }
        Err(other) => panic!("foreign create failed oddly: {other}"),
    }
}

/// A pass that runs before the watch reported the child the previous pass created (or the
/// version it applied) judges what the server answered, not a stale copy or none: no second
/// POST answered 409 AlreadyExists, no second apply. Once the watch catches up, the store
/// forgets the written copies.
#[tokio::test]
async fn a_child_is_created_and_applied_once_while_the_watch_lags() {
    let (sim, client, api, owner_object) = started().await;
    let Watched {
        store,
        open,
        _drain,
        ..
    } = watched(&client);
    store
        .wait_synced(Duration::from_secs(10))
        .await
        .expect("the store lists first");
    let owner = ChildOwner::of(&owner_object).expect("owner has a uid");
    let writes = WriteBudget::new(4);
    let applier = Applier {
        client: &client,
        writes: &writes,
    };
    let key = ObjectKey::new(NS, "web-once");
    open.send(false).unwrap();

    let first = applier
        .apply(&store, &owner, vec![desired("web-once", "1")])
        .await
        .unwrap();
    assert_eq!(
        first.verdicts,
        vec![ChildVerdict::Applied {
            name: "web-once".into()
        }]
    );
    // The watch has not delivered it; the next pass must not create it again.
    sim.admin().reset_stats();
    let second = applier
        .apply(&store, &owner, vec![desired("web-once", "1")])
        .await
        .unwrap();
    let stats = sim.stats();
    assert_eq!(
        stats.by_code.get(&409),
        None,
        "{:#?}",
        stats.by_verb_resource
    );
    assert_eq!(stats.total, 0, "{:#?}", stats.by_verb_resource);
    assert!(second.converged(), "{second:?}");
    assert_eq!(
        store.children_of(&owner.key).len(),
        1,
        "the owner's children include the one just created"
    );

    // Changed: applied once, and the pass right after sees the applied version.
    applier
        .apply(&store, &owner, vec![desired("web-once", "2")])
        .await
        .unwrap();
    sim.admin().reset_stats();
    let again = applier
        .apply(&store, &owner, vec![desired("web-once", "2")])
        .await
        .unwrap();
    assert!(again.converged(), "{again:?}");
    assert_eq!(sim.stats().total, 0, "{:#?}", sim.stats().by_verb_resource);

    // The watch catches up: the written copies are forgotten, the watched one is served.
    open.send(true).unwrap();
    until("the watch to catch up with our writes", || {
        store.writes_in_flight() == 0
    })
    .await;
    let served = store.get(&key).expect("watched");
    assert_eq!(
        served
            .data
            .as_ref()
            .and_then(|d| d.get("key"))
            .map(String::as_str),
        Some("2")
    );
    assert_eq!(
        api.get("web-once").await.unwrap().resource_version(),
        served.resource_version(),
        "the store serves the server's latest version"
    );
}

/// keeps only a judgement of a key): "kept:<length>".
fn hide(mut cm: ConfigMap) -> ConfigMap {
    for value in cm.data.iter_mut().flat_map(|d| d.values_mut()) {
        if !value.starts_with("kept:") {
            *value = format!("kept:{}", value.len());
        }
    }
    cm
}

fn whole(cm: &ConfigMap) -> bool {
    !cm.data
        .iter()
        .flatten()
        .any(|(_, v)| v.starts_with("kept:"))
}

#[tokio::test]
async fn a_child_rebuilt_from_its_kept_copy_is_never_written_nor_taken_for_an_orphan() {
    use pgtoolbox_operator::testing::children::{ApplyError, Ingest};
    let (_sim, client, api, owner_object) = started().await;
    let store = ChildStore::with_ingest(
        "ConfigMaps",
        any_controller(),
        Ingest {
            keep: hide,
            complete: whole,
        },
    );
    let config = watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"));
    let watches = store.watch(&client, &WatchScope::Namespaces(vec![NS.into()]), config);
    let _drain = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
        let mut all = futures::stream::select_all(watches);
        while all.next().await.is_some() {}
    }));
    let owner = ChildOwner::of(&owner_object).expect("owner has a uid");
    let writes = WriteBudget::new(4);
    let applier = Applier {
        client: &client,
        writes: &writes,
    };
    let key = ObjectKey::new(NS, "web-secret");
    let report = applier
        .apply(&store, &owner, vec![desired("web-secret", "s3cret-value")])
        .await
        .unwrap();
    assert_eq!(
        report.verdicts,
        vec![ChildVerdict::Applied {
            name: "web-secret".into()
        }]
    );
    until("the child cached", || store.get(&key).is_some()).await;
    let cached = store.get(&key).unwrap();
    assert_eq!(
        cached.data.as_ref().unwrap()["key"],
        "kept:12",
        "the value is not kept"
    );
    let written = api.get("web-secret").await.unwrap();
    assert_eq!(written.data.as_ref().unwrap()["key"], "s3cret-value");

    // Rebuilt from the kept copy, or whole: nothing written, nothing deleted.
    for value in ["kept:12", "s3cret-value"] {
        let report = applier
            .apply(&store, &owner, vec![desired("web-secret", value)])
            .await
            .unwrap();
        assert!(report.converged(), "{value}: {report:?}");
    }
    // Rebuilt from a kept copy that no longer matches: refused, never written.
    let refused = applier
        .apply(&store, &owner, vec![desired("web-secret", "kept:99")])
        .await;
    assert!(
        matches!(refused, Err(ApplyError::Incomplete { ref name }) if name == "web-secret"),
        "{refused:?}"
    );
    let after = api.get("web-secret").await.unwrap();
    assert_eq!(after.resource_version(), written.resource_version());
    assert_eq!(after.data.as_ref().unwrap()["key"], "s3cret-value");
}

/// A child the cache does not hold costs one write, its POST: the creation's fields belong to
/// our manager's `Update` entry. The first apply that changes it turns that entry into our
/// `Apply` entry first (a read and a write), so a value dropped from the desired object is
/// removed as server-side apply removes it, and the child ends as an apply would leave it.
#[tokio::test]
async fn a_created_child_costs_one_write_and_its_first_change_adopts_the_creation() {
    let (sim, client, api, owner_object) = started().await;
    let Watched { store, _drain, .. } = watched(&client);
    store
        .wait_synced(Duration::from_secs(10))
        .await
        .expect("the store lists first");
    let owner = ChildOwner::of(&owner_object).expect("owner has a uid");
    let writes = WriteBudget::new(4);
    let applier = Applier {
        client: &client,
        writes: &writes,
    };
    let mut two_keys = desired("web-adopted", "1");
    two_keys
        .object
        .data
        .get_or_insert_default()
        .insert("extra".into(), "x".into());

    sim.admin().reset_stats();
    let report = applier.apply(&store, &owner, vec![two_keys]).await.unwrap();
    assert_eq!(
        report.verdicts,
        vec![ChildVerdict::Applied {
            name: "web-adopted".into()
        }]
    );
    let stats = sim.stats();
    assert_eq!(
        (
            stats.writes(),
            stats.by_verb.get("create"),
            stats.by_verb.get("patch")
        ),
        (1, Some(&1), None),
        "{:#?}",
        stats.by_verb_resource
    );
    let operations = |object: &ConfigMap| -> Vec<(Option<String>, Option<String>)> {
        object
            .managed_fields()
            .iter()
            .map(|e| (e.manager.clone(), e.operation.clone()))
            .collect()
    };
    let created = api.get("web-adopted").await.unwrap();
    assert_eq!(
        operations(&created),
        vec![(Some(FIELD_MANAGER.into()), Some("Update".into()))]
    );

    sim.admin().reset_stats();
    let report = applier
        .apply(&store, &owner, vec![desired("web-adopted", "1")])
        .await
        .unwrap();
    assert_eq!(
        report.verdicts,
        vec![ChildVerdict::Applied {
            name: "web-adopted".into()
        }]
    );
    let stats = sim.stats();
    assert_eq!(
        (stats.writes(), stats.by_verb.get("get")),
        (2, Some(&1)),
        "the adoption's read and write, then the apply: {:#?}",
        stats.by_verb_resource
    );
    let changed = api.get("web-adopted").await.unwrap();
    assert_eq!(
        changed
            .data
            .clone()
            .unwrap_or_default()
            .keys()
            .collect::<Vec<_>>(),
        vec!["key"],
        "the dropped value is removed"
    );
    assert_eq!(
        operations(&changed),
        vec![(Some(FIELD_MANAGER.into()), Some("Apply".into()))]
    );

    // The same content applied under another name: the fields an apply owns.
    let mut control = serde_json::to_value(&changed).unwrap();
    let meta = control["metadata"].as_object_mut().unwrap();
    meta.retain(|k, _| ["labels", "annotations", "ownerReferences"].contains(&k.as_str()));
    meta.insert("name".into(), "web-control".into());
    control["apiVersion"] = "v1".into();
    control["kind"] = "ConfigMap".into();
    let applied = api
        .patch(
            "web-control",
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(&control),
        )
        .await
        .unwrap();
    assert_eq!(
        changed.managed_fields()[0].fields_v1,
        applied.managed_fields()[0].fields_v1,
        "owned as an apply of the same content owns it"
    );

    // Changed again: the read finds no creation entry left, so the apply is the one write.
    sim.admin().reset_stats();
    applier
        .apply(&store, &owner, vec![desired("web-adopted", "2")])
        .await
        .unwrap();
    let stats = sim.stats();
    assert_eq!(
        (stats.writes(), stats.by_verb.get("get")),
        (1, Some(&1)),
        "{:#?}",
        stats.by_verb_resource
    );
}
