//! The workload fault registry: `/_sim/workloads/faults` and `sim.admin()` agree.

use pgtoolbox_sim::cluster::{WorkloadFault, WorkloadFaultRule};
use serde_json::json;

use crate::sim_support::{raw, start};

#[tokio::test]
async fn workload_faults_are_added_listed_and_cleared_over_http_and_admin() {
    let (sim, client) = start().await;
    let body = json!({"namespace": "team-a", "selector": "app=web", "fault": "ImagePullBackOff"});
    let (code, _) = raw(
        &client,
        "POST",
        "/_sim/workloads/faults",
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200);
    sim.admin()
        .add_workload_fault("", "", WorkloadFault::ServiceCaPaused)
        .unwrap();
    let (code, listed) = raw(&client, "GET", "/_sim/workloads/faults", "", vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(
        listed,
        json!([
            {"namespace": "team-a", "selector": "app=web", "fault": "ImagePullBackOff"},
            {"namespace": "", "selector": "", "fault": "ServiceCAPaused"},
        ])
    );

    let (code, bad) = raw(
        &client,
        "POST",
        "/_sim/workloads/faults",
        "application/json",
        json!({"fault": "Nope"}).to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 400, "{bad}");
    let (code, _) = raw(
        &client,
        "POST",
        "/_sim/workloads/faults",
        "application/json",
        json!({"selector": "a in (", "fault": "NotReady"})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(code, 400);

    let (code, removed) = raw(
        &client,
        "DELETE",
        "/_sim/workloads/faults",
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!((code, removed["removed"].clone()), (200, json!(1)));
    assert_eq!(
        sim.admin().workload_faults(),
        vec![WorkloadFaultRule {
            namespace: String::new(),
            selector: String::new(),
            fault: WorkloadFault::ServiceCaPaused,
        }]
    );
    let (code, _) = raw(&client, "DELETE", "/_sim/workloads/faults", "", vec![]).await;
    assert_eq!(code, 200);
    assert!(sim.admin().workload_faults().is_empty());
}
