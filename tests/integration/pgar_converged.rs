//! A pass over a converged PgAccessRequest reads only caches and writes nothing: zero API
//! requests, counted by the embedded server.

use std::sync::Arc;

use kube::api::PostParams;
use pgtoolbox_operator::testing::actors::access_request::AccessRequestReconciler;
use pgtoolbox_operator::testing::actors::{ObjectContext, PassEnv, Reconciler, Shared};
use pgtoolbox_operator::testing::k8s::{EventSink, WriteBudget};
use pgtoolbox_operator::testing::messages::ObjectKey;
use serde_json::json;

use super::pgar_support::{self as support, NS, state};
use super::wait_support::wait_for;

#[tokio::test]
async fn a_pass_over_a_converged_request_makes_no_api_request() {
    let env = support::start_without_operator().await;
    super::sim_support::cnpg_clusters(&env.client, NS)
        .create(
            &PostParams::default(),
            &super::sim_support::cluster("orders", json!({"instances": 1})),
        )
        .await
        .unwrap();
    let placeholder = env.request("placeholder", 3600).await;
    env.request_on_cluster(placeholder, "steady", "orders")
        .await;
    env.approve("steady", "bob").await;

    // The kind's caches and reconciler, driven pass by pass.
    let (caches, _drain) = crate::harness::watched_caches(&env.client, NS);
    let reconciler = AccessRequestReconciler::new(caches, EventSink::new(env.client.clone()));
    let pass_env = Arc::new(PassEnv {
        client: env.client.clone(),
        writes: WriteBudget::new(4),
        shared: Arc::new(Shared::new(env.settings.clone())),
    });
    let cx = ObjectContext::new(ObjectKey::new(NS, "steady"), pass_env, 0);
    let pass_requests = || async {
        let current = env.requests().get("steady").await.unwrap();
        env.sim.admin().reset_stats();
        reconciler.reconcile(Arc::new(current), &cx).await.unwrap();
        env.sim.stats()
    };

    // Converge: the first passes write the status and adopt the RoleBinding; a pass that finds
    // nothing to do makes no request.
    wait_for("a pass that makes no request", || async {
        let stats = pass_requests().await;
        if stats.total == 0 {
            Ok(())
        } else {
            Err(format!("the last pass made {:#?}", stats.by_verb_resource))
        }
    })
    .await;
    let granted = env.requests().get("steady").await.unwrap();
    assert_eq!(state(&granted, "RoleBindingSynced").1, "AccessGranted");
    assert_eq!(state(&granted, "Ready").0, "True");
    let binding = env.bindings().get("pgar-steady").await.unwrap();
    assert!(
        binding
            .metadata
            .owner_references
            .is_some_and(|o| !o.is_empty()),
        "adopted"
    );
    for _ in 0..3 {
        let stats = pass_requests().await;
        assert_eq!(stats.total, 0, "{:#?}", stats.by_verb_resource);
    }
}

/// A sim without operator, a request `name` in it, a fresh status writer, and the request as
/// created (the test drives the writer over it).
async fn status_writer_over(
    name: &str,
) -> (
    support::Env,
    pgtoolbox_operator::testing::status::StatusWriter<pgtoolbox_operator::api::PgAccessRequest>,
    ObjectKey,
    WriteBudget,
    pgtoolbox_operator::api::PgAccessRequest,
) {
    use pgtoolbox_operator::api::PgAccessRequest;
    use pgtoolbox_operator::testing::status::StatusWriter;
    let env = support::start_without_operator().await;
    env.request(name, 3600).await;
    let writer = StatusWriter::<PgAccessRequest>::new(EventSink::new(env.client.clone()));
    let first = env.requests().get(name).await.unwrap();
    (
        env,
        writer,
        ObjectKey::new(NS, name),
        WriteBudget::new(1),
        first,
    )
}

#[tokio::test]
async fn the_status_writer_writes_only_what_changed() {
    use pgtoolbox_operator::api::ReportsConditions;
    use pgtoolbox_operator::testing::status::{Extras, Target};

    let (env, writer, key, writes, first) = status_writer_over("quiet").await;
    let target = Target {
        client: &env.client,
        writes: &writes,
        key: &key,
        now: k8s_openapi::jiff::Timestamp::now(),
    };
    let facts = first.pass_facts();
    let written = writer
        .write(&first, &facts, Extras::default(), target)
        .await
        .unwrap();
    assert!(written.wrote, "first touch writes the conditions");
    assert!(!written.stalled);
    // The same facts over the object as written: nothing to write, no request.
    let fresh = writer.freshest(&key, Arc::new(first));
    env.sim.admin().reset_stats();
    let again = writer
        .write(&fresh, &fresh.pass_facts(), Extras::default(), target)
        .await
        .unwrap();
    assert!(!again.wrote);
    assert_eq!(env.sim.stats().total, 0);
}

/// A change of condition messages alone right after a write waits out the settle window (a
/// Settle timer brings the pass back), a change of reason does not wait, and once the window
/// has passed the message is written.
#[tokio::test]
async fn a_change_of_messages_alone_waits_for_the_settle_window() {
    use pgtoolbox_operator::api::ReportsConditions;
    use pgtoolbox_operator::testing::conditions::{
        ConditionType, Verdict, reasons::access_request, reasons::common,
    };
    use pgtoolbox_operator::testing::messages::TimerPurpose;
    use pgtoolbox_operator::testing::status::{Extras, SETTLE, Target};

    let (env, writer, key, writes, first) = status_writer_over("settle").await;
    let target = Target {
        client: &env.client,
        writes: &writes,
        key: &key,
        now: k8s_openapi::jiff::Timestamp::now(),
    };
    let facts = |obj: &pgtoolbox_operator::api::PgAccessRequest, config: &str, missing: bool| {
        let bound = if missing {
            Verdict::fails(
                access_request::ROLE_BINDING_MISSING,
                "the RoleBinding is gone",
            )
        } else {
            Verdict::holds(access_request::AWAITING_DECISION, "nothing is bound")
        };
        obj.pass_facts()
            .with_aspect(
                ConditionType::ConfigurationValid,
                Verdict::holds(common::AS_EXPECTED, config),
            )
            .and_then(|f| f.with_aspect(ConditionType::RoleBindingSynced, bound))
            .expect("aspects of the kind")
    };
    let written = writer
        .write(
            &first,
            &facts(&first, "one", false),
            Extras::default(),
            target,
        )
        .await
        .unwrap();
    assert!(written.wrote);

    // Only a message differs, right after the write: held back, a Settle timer within the window.
    let fresh = writer.freshest(&key, Arc::new(first.clone()));
    env.sim.admin().reset_stats();
    let held = writer
        .write(
            &fresh,
            &facts(&fresh, "two", false),
            Extras::default(),
            target,
        )
        .await
        .unwrap();
    assert!(!held.wrote, "a message-only change waits");
    assert_eq!(env.sim.stats().total, 0);
    let settle: Vec<_> = held
        .timers
        .iter()
        .filter(|(p, _)| *p == TimerPurpose::Settle)
        .collect();
    assert_eq!(settle.len(), 1, "{:?}", held.timers);
    assert!(settle[0].1 <= SETTLE && !settle[0].1.is_zero());

    // A reason change within the window is written at once.
    let moved = writer
        .write(
            &fresh,
            &facts(&fresh, "two", true),
            Extras::default(),
            target,
        )
        .await
        .unwrap();
    assert!(moved.wrote, "a reason change does not wait");

    // After the window, a message-only change is written.
    tokio::time::sleep(SETTLE).await;
    let fresh = writer.freshest(&key, Arc::new(first));
    let later = writer
        .write(
            &fresh,
            &facts(&fresh, "three", true),
            Extras::default(),
            target,
        )
        .await
        .unwrap();
    assert!(
        later.wrote,
        "once the window has passed, the message is written"
    );
    assert!(!later.timers.iter().any(|(p, _)| *p == TimerPurpose::Settle));
    let stored = env.requests().get("settle").await.unwrap();
    let config = stored
        .stored_status()
        .conditions
        .iter()
        .find(|c| c.type_ == "ConfigurationValid")
        .map(|c| c.message.clone());
    assert_eq!(config.as_deref(), Some("three"));
}

/// Issue 16's slim cache: a hibernated request's copy keeps its condition messages as digests.
/// Over such a copy the writer writes nothing when nothing changed (no request), rewrites a
/// message someone else changed, and reads the text back before a write that carries stored
/// conditions over, so the API never sees a digest.
#[tokio::test]
async fn the_status_writer_judges_a_slim_copy_through_its_digests() {
    use kube::api::{Patch, PatchParams};
    use pgtoolbox_operator::api::{PgAccessRequest, ReportsConditions};
    use pgtoolbox_operator::testing::conditions::is_digest;
    use pgtoolbox_operator::testing::k8s::Packed;
    use pgtoolbox_operator::testing::status::{Extras, Target};

    let slim = |obj: &PgAccessRequest| -> Arc<PgAccessRequest> {
        Arc::new(Packed::pack_slim(obj).unwrap().decode().unwrap())
    };
    let messages = |obj: &PgAccessRequest| -> Vec<String> {
        obj.common_status()
            .map(|s| s.conditions.iter().map(|c| c.message.clone()).collect())
            .unwrap_or_default()
    };
    let (env, writer, key, writes, first) = status_writer_over("slim").await;
    let target = Target {
        client: &env.client,
        writes: &writes,
        key: &key,
        now: k8s_openapi::jiff::Timestamp::now(),
    };
    let facts = first.pass_facts();
    let wrote = writer
        .write(&first, &facts, Extras::default(), target)
        .await;
    assert!(wrote.unwrap().wrote);
    let written = env.requests().get("slim").await.unwrap();
    let text = messages(&written);
    assert!(!text.is_empty() && text.iter().all(|m| !is_digest(m)));

    // The same facts over the slim copy: nothing to write, no request.
    let copy = slim(&written);
    assert!(messages(&copy).iter().all(|m| is_digest(m)));
    env.sim.admin().reset_stats();
    let facts = copy.pass_facts();
    let quiet = writer.write(&copy, &facts, Extras::default(), target).await;
    assert!(!quiet.unwrap().wrote);
    assert_eq!(env.sim.stats().total, 0);

    // Someone else rewrites a message of ours: the pass over the slim copy writes it back
    // (once the settle window after our own last write has passed: a change of messages alone
    // waits that long).
    tokio::time::sleep(pgtoolbox_operator::testing::status::SETTLE).await;
    let mut edited = written.common_status().unwrap().conditions.clone();
    edited[0].message = "edited by hand".into();
    env.requests()
        .patch_status(
            "slim",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": edited}})),
        )
        .await
        .unwrap();
    let copy = slim(&env.requests().get("slim").await.unwrap());
    let facts = copy.pass_facts();
    let rewrite = writer.write(&copy, &facts, Extras::default(), target).await;
    assert!(rewrite.unwrap().wrote);
    let rewritten = env.requests().get("slim").await.unwrap();
    assert_eq!(messages(&rewritten), text);

    // A status field forces a write while the aspects (not evaluated) are carried over as
    // stored: the writer reads their text back first, the API never sees a digest.
    let copy = slim(&rewritten);
    let mut extras = Extras::default();
    extras
        .fields
        .insert("roleBindingName".into(), json!("pgar-slim"));
    env.sim.admin().reset_stats();
    let facts = copy.pass_facts();
    let carried = writer.write(&copy, &facts, extras, target).await;
    assert!(carried.unwrap().wrote);
    assert!(env.sim.stats().total >= 2, "a read, then the write");
    let after = env.requests().get("slim").await.unwrap();
    assert_eq!(messages(&after), text);
}
