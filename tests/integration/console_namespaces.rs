//! NamespaceNotWatched has a consumer now: a console in a namespace of WATCH_NAMESPACES where
//! the operator lacks a permission the console needs is told so once at start and left alone,
//! while a console of a watched namespace is reconciled to Ready.

use kube::api::{Api, Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::PgToolBoxConsole;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::SimConfig;
use serde_json::json;

use super::console_support::{Env, IMAGE, ROLES, message, settings, state, with_controllers};
use super::harness::TestOperator;

async fn console(client: &kube::Client, ns: &str, name: &str) {
    let obj: PgToolBoxConsole = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgToolBoxConsole",
        "metadata": {"name": name, "namespace": ns}, "spec": {"image": IMAGE},
    }))
    .expect("console");
    Api::<PgToolBoxConsole>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &obj)
        .await
        .expect("created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_in_a_dropped_namespace_is_marked_namespace_not_watched() {
    let started = TestOperator::new()
        .sim(SimConfig {
            deny: vec![
                pgtoolbox_sim::DenyRule::parse("create:networking.k8s.io/networkpolicies:team-b")
                    .expect("rule"),
            ],
            ..with_controllers()
        })
        .namespace("team-a")
        .namespace("team-b")
        .manifest(ROLES)
        .without_operator()
        .start()
        .await;
    let (sim, client) = (started.sim, started.client);
    console(&client, "team-a", "kept").await;
    console(&client, "team-b", "left-out").await;
    let (operator, shared) = crate::console_support::run_operator(
        &client,
        OperatorSettings {
            watch_namespaces: vec!["team-a".into(), "team-b".into()],
            ..settings()
        },
    )
    .await;
    let env = Env {
        sim,
        client: client.clone(),
        operator: Some(operator),
        shared: Some(shared),
    };
    env.ready("kept").await;

    let left: Api<PgToolBoxConsole> = Api::namespaced(client.clone(), "team-b");
    let obj = left.get("left-out").await.expect("get");
    assert_eq!(
        state(&obj, "Ready"),
        ("Unknown".into(), "NamespaceNotWatched".into())
    );
    let text = message(&obj, "Ready");
    assert!(
        text.contains("team-b") && text.contains("networkpolicies"),
        "{text}"
    );
    // Left alone: no condition of its own aspects is ever written there, not even after a
    // change of it and a pass of the operator since (the watched console's, woken alike).
    let seen = env.passes();
    for (api, name) in [(&left, "left-out"), (&env.consoles(), "kept")] {
        let touched = json!({"metadata": {"labels": {"touched": "yes"}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&touched))
            .await
            .expect("labelled");
    }
    env.until_passes(seen, 1, "a pass after the change").await;
    let obj = left.get("left-out").await.expect("get");
    assert_eq!(
        state(&obj, "ConfigurationValid"),
        (String::new(), String::new())
    );
    assert_eq!(state(&obj, "Ready").1, "NamespaceNotWatched");
}
