//! Watch order and resume, 410 recovery by kube's watcher, metadata-only watch, bookmarks.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;

use crate::sim_support::{list_version, start};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

async fn next<S: futures::Stream + Unpin>(s: &mut S) -> S::Item {
    tokio::time::timeout(Duration::from_secs(5), s.next())
        .await
        .expect("event in time")
        .expect("stream open")
}

#[tokio::test]
async fn watch_sees_changes_in_order_and_resumes() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let start_rv = list_version(&api).await;
    let mut stream = api
        .watch(&WatchParams::default(), &start_rv)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("w")).await.unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();
    let mut kinds = Vec::new();
    let mut rvs = Vec::new();
    for _ in 0..3 {
        match next(&mut stream).await.unwrap() {
            WatchEvent::Added(o) => {
                kinds.push("ADDED");
                rvs.push(o.metadata.resource_version.unwrap());
            }
            WatchEvent::Modified(o) => {
                kinds.push("MODIFIED");
                rvs.push(o.metadata.resource_version.unwrap());
            }
            WatchEvent::Deleted(o) => {
                kinds.push("DELETED");
                rvs.push(o.metadata.resource_version.unwrap());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    // Resuming from the first event replays exactly what followed it.
    let mut resumed = api
        .watch(&WatchParams::default(), &rvs[0])
        .await
        .unwrap()
        .boxed();
    match next(&mut resumed).await.unwrap() {
        WatchEvent::Modified(o) => assert_eq!(o.metadata.resource_version.as_ref(), Some(&rvs[1])),
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        next(&mut resumed).await.unwrap(),
        WatchEvent::Deleted(_)
    ));
}

#[tokio::test]
async fn too_old_version_is_gone_and_kube_watcher_relists() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("before"))
        .await
        .unwrap();

    // A resume from a version the history no longer holds answers 410 Gone.
    sim.admin().force_gone_next_watch();
    let mut s = api
        .watch(&WatchParams::default(), "2")
        .await
        .unwrap()
        .boxed();
    match next(&mut s).await {
        Ok(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("expected 410, got {other:?}"),
    }

    let mut w = watcher(api.clone(), watcher::Config::default()).boxed();
    // Initial list.
    loop {
        if let watcher::Event::InitDone = next(&mut w).await.unwrap() {
            break;
        }
    }
    // Compact the history and end the watch: the watcher's resume gets 410 and relists.
    sim.admin().force_gone_next_watch();
    sim.admin().drop_watches();
    api.create(&PostParams::default(), &cm("after"))
        .await
        .unwrap();
    let mut saw_init = false;
    let mut saw_after = false;
    while !(saw_init && saw_after) {
        match next(&mut w).await {
            Ok(watcher::Event::Init) => saw_init = true,
            Ok(watcher::Event::InitApply(o) | watcher::Event::Apply(o))
                if o.metadata.name.as_deref() == Some("after") =>
            {
                saw_after = true
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "watcher error before recovery"),
        }
    }
    assert!(saw_init, "the watcher relisted after 410");
}

#[tokio::test]
async fn metadata_watch_returns_partial_object_metadata() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut s = api
        .watch_metadata(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("meta"))
        .await
        .unwrap();
    match next(&mut s).await.unwrap() {
        WatchEvent::Added(o) => {
            assert_eq!(o.types.as_ref().unwrap().kind, "PartialObjectMetadata");
            assert_eq!(o.metadata.name.as_deref(), Some("meta"));
        }
        other => panic!("unexpected {other:?}"),
    }
    let meta: Api<kube::core::PartialObjectMeta<ConfigMap>> =
        Api::namespaced(api.into_client(), "default");
    let objs: Vec<_> = watcher(meta, watcher::Config::default())
        .take_while(|e| futures::future::ready(!matches!(e, Ok(watcher::Event::InitDone))))
        .try_collect()
        .await
        .unwrap();
    assert!(objs.iter().any(
        |e| matches!(e, watcher::Event::InitApply(o) if o.metadata.name.as_deref() == Some("meta"))
    ));
}

#[tokio::test]
async fn bookmarks_label_filtering_and_timeout() {
    let config = pgtoolbox_sim::SimConfig {
        bookmark_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let (_sim, client) = crate::sim_support::start_with(config).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let rv = list_version(&api).await;
    let wp = WatchParams {
        bookmarks: true,
        ..WatchParams::default()
    }
    .labels("pick=yes")
    .timeout(1);
    let mut s = api.watch(&wp, &rv).await.unwrap().boxed();
    api.create(&PostParams::default(), &cm("skip"))
        .await
        .unwrap();
    let mut picked = cm("take");
    picked.metadata.labels = Some([("pick".to_string(), "yes".to_string())].into());
    api.create(&PostParams::default(), &picked).await.unwrap();
    let mut names = Vec::new();
    let mut bookmarks = 0;
    // The stream ends by itself after timeoutSeconds.
    while let Some(e) = tokio::time::timeout(Duration::from_secs(5), s.next())
        .await
        .expect("ends in time")
    {
        match e.unwrap() {
            WatchEvent::Added(o) => names.push(o.metadata.name.unwrap()),
            WatchEvent::Bookmark(_) => bookmarks += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(names, ["take"]);
    assert!(bookmarks >= 1);
}

#[tokio::test]
async fn objects_entering_and_leaving_a_label_selection_are_added_and_deleted() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("moving"))
        .await
        .unwrap();
    let rv = list_version(&api).await;
    let mut s = api
        .watch(&WatchParams::default().labels("sel=in"), &rv)
        .await
        .unwrap()
        .boxed();
    let pp = PatchParams::default();
    api.patch(
        "moving",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"sel": "in"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "moving",
        &pp,
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    api.patch(
        "moving",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"sel": "out"}}})),
    )
    .await
    .unwrap();
    let mut kinds = Vec::new();
    for _ in 0..3 {
        kinds.push(match next(&mut s).await.unwrap() {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_then_changes() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("first"))
        .await
        .unwrap();
    let mut w = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        match next(&mut w).await.unwrap() {
            watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, ["first"]);
    api.create(&PostParams::default(), &cm("second"))
        .await
        .unwrap();
    loop {
        if let watcher::Event::Apply(o) = next(&mut w).await.unwrap() {
            assert_eq!(o.metadata.name.as_deref(), Some("second"));
            break;
        }
    }
}

#[tokio::test]
async fn resuming_below_the_kept_history_is_gone() {
    let config = pgtoolbox_sim::SimConfig {
        history: 5,
        ..Default::default()
    };
    let (_sim, client) = crate::sim_support::start_with(config).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let early = api.create(&PostParams::default(), &cm("c0")).await.unwrap();
    for i in 1..10 {
        api.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .unwrap();
    }
    let rv = early.metadata.resource_version.unwrap();
    let mut s = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match next(&mut s).await {
        Ok(WatchEvent::Error(e)) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }
    assert!(
        tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .expect("closes")
            .is_none(),
        "stream ends after 410"
    );
}

#[tokio::test]
async fn dropped_watches_end_and_a_new_watch_resumes() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = list_version(&api).await;
    let mut s = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("one"))
        .await
        .unwrap();
    let seen_rv = match next(&mut s).await.unwrap() {
        WatchEvent::Added(o) => o.metadata.resource_version.unwrap(),
        other => panic!("unexpected {other:?}"),
    };
    // Over HTTP, like a test harness outside the process would do it.
    let (code, _) = crate::sim_support::raw(
        &client,
        "POST",
        "/_sim/watches/drop",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let ended = tokio::time::timeout(Duration::from_secs(5), s.next())
        .await
        .expect("ends in time");
    assert!(ended.is_none(), "stream closed by the fault");
    api.create(&PostParams::default(), &cm("two"))
        .await
        .unwrap();
    let mut resumed = api
        .watch(&WatchParams::default(), &seen_rv)
        .await
        .unwrap()
        .boxed();
    match next(&mut resumed).await.unwrap() {
        WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("two")),
        other => panic!("unexpected {other:?}"),
    }
    let _ = sim.stats();
}

#[tokio::test]
async fn a_watcher_that_falls_behind_is_closed_cleanly_and_resumes_without_loss() {
    use futures::stream;
    use pgtoolbox_sim::SimConfig;
    const N: usize = 3000;
    let (_sim, client) = crate::sim_support::start_with(SimConfig {
        watch_buffer: 4,
        ..SimConfig::default()
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let from = list_version(&api).await;
    let mut first = api
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    // Far more changes than the watch's buffers hold while nobody reads it (2 KB each).
    let filler = "x".repeat(2048);
    stream::iter(0..N)
        .for_each_concurrent(16, |i| {
            let (api, filler) = (api.clone(), filler.clone());
            async move {
                let cm: ConfigMap = serde_json::from_value(
                    json!({"metadata": {"name": format!("c{i:05}")}, "data": {"k": filler}}),
                )
                .unwrap();
                api.create(&PostParams::default(), &cm).await.unwrap();
            }
        })
        .await;
    let mut seen = Vec::new();
    let mut last = from;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(5), first.next())
        .await
        .expect("event or end in time")
    {
        match event.unwrap() {
            WatchEvent::Added(o) => {
                last = o.metadata.resource_version.clone().unwrap();
                seen.push(o.metadata.name.unwrap());
            }
            other => panic!("a lagging watch ends without an error event, got {other:?}"),
        }
    }
    assert!(seen.len() < N, "the watch fell behind and was closed");
    // Watching again from the last version seen delivers exactly the rest.
    let mut resumed = api
        .watch(&WatchParams::default(), &last)
        .await
        .unwrap()
        .boxed();
    while seen.len() < N {
        match next(&mut resumed).await.unwrap() {
            WatchEvent::Added(o) => seen.push(o.metadata.name.unwrap()),
            other => panic!("unexpected {other:?}"),
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), N, "every change once, none lost");
}
