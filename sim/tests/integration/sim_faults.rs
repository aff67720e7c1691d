//! Each fault as a client sees it, and the request counters.

use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, PostParams};
use pgtoolbox_sim::{DenyRule, SimConfig};
use serde_json::json;

use crate::sim_support::{cnpg_clusters, code_of, namespace, raw, start, start_with};

fn review(verb: &str, resource: &str, ns: &str) -> SelfSubjectAccessReview {
    serde_json::from_value(json!({"spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": ns, "group": ""}}})).unwrap()
}

#[tokio::test]
async fn deny_rules_answer_403_and_access_reviews_agree() {
    let config = SimConfig {
        deny: vec![DenyRule::parse("create:secrets:team-d").unwrap()],
        ..Default::default()
    };
    let (sim, client) = start_with(config).await;
    namespace(&client, "team-d").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "team-d");
    let s: Secret = serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();
    let (code, reason) = code_of(secrets.create(&PostParams::default(), &s).await);
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert!(
        secrets.list(&ListParams::default()).await.is_ok(),
        "other verbs pass"
    );

    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let denied = reviews
        .create(
            &PostParams::default(),
            &review("create", "secrets", "team-d"),
        )
        .await
        .unwrap();
    assert!(!denied.status.unwrap().allowed);
    let allowed = reviews
        .create(&PostParams::default(), &review("get", "secrets", "team-d"))
        .await
        .unwrap();
    assert!(allowed.status.unwrap().allowed);

    sim.admin().clear_deny();
    secrets.create(&PostParams::default(), &s).await.unwrap();
    // A subresource rule denies status writes only.
    let clusters = cnpg_clusters(&client, "default");
    clusters
        .create(
            &PostParams::default(),
            &crate::sim_support::cluster("pg", json!({})),
        )
        .await
        .unwrap();
    sim.admin()
        .deny("patch:postgresql.cnpg.io/clusters/status:*")
        .unwrap();
    let pp = kube::api::PatchParams::default();
    let status = kube::api::Patch::Merge(json!({"status": {"phase": "x"}}));
    assert_eq!(
        code_of(clusters.patch_status("pg", &pp, &status).await).0,
        403
    );
    let spec = kube::api::Patch::Merge(json!({"spec": {"instances": 2}}));
    assert!(clusters.patch("pg", &pp, &spec).await.is_ok());
    sim.admin().deny("*:postgresql.cnpg.io/clusters:*").unwrap();
    assert_eq!(
        code_of(
            cnpg_clusters(&client, "default")
                .list(&ListParams::default())
                .await
        )
        .0,
        403
    );
}

#[tokio::test]
async fn unserved_groups_answer_404_and_leave_discovery() {
    let config = SimConfig {
        unserve: vec!["route.openshift.io".into()],
        ..Default::default()
    };
    let (sim, client) = start_with(config).await;
    assert_eq!(
        raw(
            &client,
            "GET",
            "/apis/route.openshift.io/v1/routes",
            "application/json",
            vec![]
        )
        .await
        .0,
        404
    );
    let (_, groups) = raw(&client, "GET", "/apis", "application/json", vec![]).await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(!names.contains(&"route.openshift.io") && names.contains(&"postgresql.cnpg.io"));
    sim.admin().unserve("postgresql.cnpg.io");
    assert_eq!(
        code_of(
            cnpg_clusters(&client, "default")
                .list(&ListParams::default())
                .await
        )
        .0,
        404
    );
    // As kube-apiserver's last handler (Go's http.NotFound) answers a path nothing serves: plain
    // text, no Status, so no client reads it as "this object does not exist".
    let (code, body) = raw(
        &client,
        "GET",
        "/apis/postgresql.cnpg.io/v1/namespaces/default/clusters/main",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!((code, body), (404, serde_json::Value::Null));
    let got = cnpg_clusters(&client, "default").get_opt("main").await;
    assert!(
        matches!(&got, Err(kube::Error::Api(s)) if s.code == 404 && !s.is_not_found()),
        "{got:?}"
    );
    sim.admin().serve("postgresql.cnpg.io");
    assert!(
        cnpg_clusters(&client, "default")
            .list(&ListParams::default())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn unauthorized_answers_401_everywhere() {
    let (sim, client) = start_with(SimConfig {
        unauthorized: true,
        ..Default::default()
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        code_of(api.list(&ListParams::default()).await),
        (401, "Unauthorized".into())
    );
    assert_eq!(
        raw(&client, "GET", "/apis", "application/json", vec![])
            .await
            .0,
        401
    );
    sim.admin().set_unauthorized(false);
    assert!(api.list(&ListParams::default()).await.is_ok());
}

#[tokio::test]
async fn injected_errors_and_latency_and_http_admin() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let (code, _) = raw(
        &client,
        "POST",
        "/_sim/errors",
        "application/json",
        serde_json::to_vec(&json!({"match": "list:configmaps:*", "code": 500, "count": 2}))
            .unwrap(),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        code_of(api.list(&ListParams::default()).await),
        (500, "InternalError".into())
    );
    assert_eq!(code_of(api.list(&ListParams::default()).await).0, 500);
    assert!(
        api.list(&ListParams::default()).await.is_ok(),
        "injection used up"
    );
    // kube's client retries 503 by itself: the caller succeeds, the server saw the failures.
    sim.admin()
        .inject_errors("get:configmaps:default", 503, 2)
        .unwrap();
    assert_eq!(code_of(api.get("absent").await).0, 404);
    assert_eq!(sim.stats().by_code.get(&503), Some(&2));
    // Each error answer is also counted by what was asked.
    let errors = sim.stats().errors_by_verb_resource;
    assert_eq!(errors.get("500 list configmaps"), Some(&2), "{errors:?}");
    assert_eq!(errors.get("503 get configmaps"), Some(&2), "{errors:?}");
    assert_eq!(errors.get("404 get configmaps"), Some(&1), "{errors:?}");

    sim.admin()
        .inject_latency("get:configmaps:*", Duration::from_millis(300), Some(1))
        .unwrap();
    let t = Instant::now();
    let _ = api.get("missing").await;
    assert!(t.elapsed() >= Duration::from_millis(300));

    let (code, state) = raw(&client, "GET", "/_sim/faults", "application/json", vec![]).await;
    assert_eq!(code, 200);
    assert!(state["deny"].as_array().unwrap().is_empty());
    let rule = serde_json::to_vec(&json!({"rule": "get:configmaps:default"})).unwrap();
    assert_eq!(
        raw(&client, "POST", "/_sim/deny", "application/json", rule)
            .await
            .0,
        200
    );
    assert_eq!(code_of(api.get("x").await).0, 403);
    assert_eq!(
        raw(&client, "POST", "/_sim/clear", "application/json", vec![])
            .await
            .0,
        200
    );
    assert_eq!(code_of(api.get("x").await).0, 404);
    assert_eq!(
        raw(
            &client,
            "POST",
            "/_sim/deny",
            "application/json",
            b"{\"rule\": \"bad\"}".to_vec()
        )
        .await
        .0,
        400
    );
}

#[tokio::test]
async fn stats_count_by_verb_resource_and_namespace() {
    let (sim, client) = start().await;
    sim.admin().reset_stats();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let c: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();
    api.create(&PostParams::default(), &c).await.unwrap();
    api.get("s").await.unwrap();
    api.list(&ListParams::default()).await.unwrap();
    let stats = sim.stats();
    assert_eq!(stats.by_verb.get("create"), Some(&1));
    assert_eq!(stats.by_verb.get("get"), Some(&1));
    assert_eq!(stats.by_resource.get("configmaps"), Some(&3));
    assert_eq!(stats.by_namespace.get("default"), Some(&3));
    assert_eq!(stats.writes(), 1);
    let (code, body) = raw(&client, "GET", "/_sim/stats", "application/json", vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(body["by_verb_resource"]["create configmaps"], 1);
}
