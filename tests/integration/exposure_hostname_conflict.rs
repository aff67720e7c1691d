//! Two objects in two namespaces ask for one exposure hostname: the earlier keeps it, the later
//! reports HostnameConflict naming it and publishes nothing, and takes the name by itself once
//! the earlier one is gone.

use kube::api::{Api, DeleteParams, PostParams};
use pgtoolbox_operator::api::PgToolBoxConsole;
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use serde_json::json;

use super::console_support::{IMAGE, NS, start, state, with_controllers};
use super::wait_support::{condition_of, conditions, events_of, wait_event_of, wait_for};

const HOST: &str = "ops.apps.sim.local";
const LATER_NS: &str = "team-b";

async fn until_reason(
    api: &Api<PgToolBoxConsole>,
    name: &str,
    condition: &str,
    reason: &str,
) -> PgToolBoxConsole {
    wait_for(&format!("{name}: {condition} {reason}"), || async {
        let obj = api.get(name).await.expect("console readable");
        if condition_of(&obj, condition).is_some_and(|c| c.reason == reason) {
            Ok(obj)
        } else {
            Err(format!("conditions: {:#?}", conditions(&obj)))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_later_claimant_of_a_hostname_waits_and_takes_it_once_released() {
    let env = start(
        with_controllers(),
        super::console_support::settings_allowing_sim_hosts(),
        true,
    )
    .await;
    super::sim_support::namespace(&env.client, LATER_NS).await;
    let spec = json!({"image": IMAGE, "exposure": {"type": "route", "hostname": HOST}});
    env.console("ops", spec.clone()).await;
    let earlier = env.ready("ops").await;
    assert!(earlier.status.and_then(|s| s.url).is_some(), "served");

    // The same name from another namespace, created later (and after team-a by name on a tie).
    let later_api: Api<PgToolBoxConsole> = Api::namespaced(env.client.clone(), LATER_NS);
    let later: PgToolBoxConsole = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgToolBoxConsole",
        "metadata": {"name": "ops", "namespace": LATER_NS},
        "spec": spec,
    }))
    .expect("valid console");
    later_api
        .create(&PostParams::default(), &later)
        .await
        .expect("created");
    let obj = until_reason(&later_api, "ops", "ExposureReady", "HostnameConflict").await;
    let exposure = condition_of(&obj, "ExposureReady").expect("ExposureReady");
    assert_eq!(exposure.status, "False");
    assert!(
        exposure
            .message
            .contains(&format!("PgToolBoxConsole {NS}/ops")),
        "{}",
        exposure.message
    );
    assert!(exposure.message.contains(HOST), "{}", exposure.message);
    // Ready copies it once the aspects before it (the workload) hold.
    let obj = until_reason(&later_api, "ops", "Ready", "HostnameConflict").await;
    assert_eq!(state(&obj, "Ready").0, "False");
    assert_eq!(state(&obj, "Stalled").0, "False", "not a stall");
    assert_eq!(obj.status.as_ref().and_then(|s| s.url.clone()), None);
    let (type_, _, note) = wait_event_of(&env.client, LATER_NS, "ops", "HostnameConflict").await;
    assert_eq!(type_, "Warning");
    assert!(note.contains(&format!("{NS}/ops")), "{note}");
    let routes = super::sim_net_support::api(
        &env.client,
        Some(LATER_NS),
        "route.openshift.io",
        "Route",
        "routes",
    );
    assert!(
        routes.get_opt("ops-console").await.expect("read").is_none(),
        "the later one published a Route"
    );
    // The earlier one keeps its exposure, and nothing about the later one is said on it.
    let earlier = env.ready("ops").await;
    assert!(earlier.status.and_then(|s| s.url).is_some(), "still served");
    let told = events_of(&env.client, NS, "ops").await;
    assert!(told.iter().all(|e| e.1 != "HostnameConflict"), "{told:#?}");

    // The earlier one goes: the later one takes the name without being touched.
    env.consoles()
        .delete("ops", &DeleteParams::default())
        .await
        .expect("deleted");
    let obj = until_reason(&later_api, "ops", "Ready", "AsExpected").await;
    assert_eq!(state(&obj, "Ready").0, "True");
    assert_eq!(
        obj.status.and_then(|s| s.url).as_deref(),
        Some("http://ops.apps.sim.local")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pgadmin_after_a_console_waits_until_the_console_changes_its_hostname() {
    use super::pgadmin_support as pga;
    let env = pga::start(pga::cluster_config(), OperatorSettings::default()).await;
    for result in pgtoolbox_operator::testing::k8s::apply_manifests(
        &env.client,
        super::console_support::ROLES,
        "test",
    )
    .await
    {
        result.expect("ClusterRole applied");
    }
    // The console in team-b holds the name first; the PgAdmin of team-a asks for it later.
    let consoles: Api<PgToolBoxConsole> = Api::namespaced(env.client.clone(), pga::OTHER);
    let console: PgToolBoxConsole = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgToolBoxConsole",
        "metadata": {"name": "ops", "namespace": pga::OTHER},
        "spec": {"image": IMAGE, "exposure": {"type": "route", "hostname": HOST}},
    }))
    .expect("valid console");
    consoles
        .create(&PostParams::default(), &console)
        .await
        .expect("created");
    let holder = until_reason(&consoles, "ops", "ExposureReady", "AsExpected").await;
    // Created in a later second (else the tie would go to team-a, the PgAdmin's namespace).
    let created = holder.metadata.creation_timestamp.expect("created").0;
    wait_for("a second after the console's creation", || async {
        let now = k8s_openapi::jiff::Timestamp::now();
        if now.as_second() > created.as_second() {
            Ok(())
        } else {
            Err(format!("it is {now}, the console was created at {created}"))
        }
    })
    .await;
    env.cluster(pga::NS, "orders", json!({"team": "a"}), 1)
        .await;
    env.pgadmin(
        "p",
        json!({"image": pga::IMAGE, "clusterSelector": {"matchLabels": {"team": "a"}},
            "exposure": {"type": "route", "hostname": HOST}}),
    )
    .await;
    let obj = env
        .wait_reason("p", "ExposureReady", "HostnameConflict")
        .await;
    let exposure = condition_of(&obj, "ExposureReady").expect("ExposureReady");
    assert_eq!(exposure.status, "False");
    assert!(
        exposure
            .message
            .contains(&format!("PgToolBoxConsole {}/ops", pga::OTHER)),
        "{}",
        exposure.message
    );
    env.wait_event("p", "HostnameConflict").await;

    // The console moves to another name: the PgAdmin publishes under this one by itself.
    consoles
        .patch(
            "ops",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"spec": {"exposure": {"hostname": "ops2.apps.sim.local"}}}),
            ),
        )
        .await
        .expect("patched");
    let obj = env.wait_reason("p", "ExposureReady", "AsExpected").await;
    assert_eq!(
        obj.status.and_then(|s| s.url).as_deref(),
        Some("http://ops.apps.sim.local")
    );
}
