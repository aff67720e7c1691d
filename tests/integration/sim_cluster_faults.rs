//! Workload faults acted out by the simulated cluster, and recovery once they are cleared.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use pgtoolbox_sim::cluster::WorkloadFault;
use serde_json::json;

use crate::kubectl_support::{Kubectl, kubectl_present};
use crate::sim_cluster_support::{cluster, json, pod_condition, waiting};
use crate::sim_cluster_workloads::{available, deployment};
use crate::sim_support::raw;
use crate::wait_support::{until, wait_core_event};

fn pod(name: &str) -> Pod {
    json(json!({"metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}))
}

fn running_ready(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && pod_condition(p, "Ready").is_some_and(|c| c.0 == "True")
}

fn condition(v: &impl serde::Serialize, kind: &str) -> Option<(String, String, String)> {
    let v = serde_json::to_value(v).ok()?;
    let c = v
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)?
        .clone();
    let s = |f: &str| c[f].as_str().unwrap_or("").to_string();
    Some((s("status"), s("reason"), s("message")))
}

#[tokio::test]
async fn image_pull_back_off_then_recovery() {
    let (sim, client) = cluster("ipb").await;
    let body = json!({"namespace": "ipb", "selector": "app=web", "fault": "ImagePullBackOff"});
    let (code, _) = raw(
        &client,
        "POST",
        "/_sim/workloads/faults",
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ipb");
    pods.create(&PostParams::default(), &pod("web"))
        .await
        .unwrap();
    let p = until(&pods, "web", "ErrImagePull", |p: &Pod| {
        waiting(p).is_some_and(|w| w.0 == "ErrImagePull")
    })
    .await;
    assert!(
        waiting(&p)
            .unwrap()
            .1
            .starts_with("Failed to pull image \"nginx:1.27\": "),
        "{:?}",
        waiting(&p)
    );
    let p = until(&pods, "web", "ImagePullBackOff", |p: &Pod| {
        waiting(p).is_some_and(|w| w.0 == "ImagePullBackOff")
    })
    .await;
    assert_eq!(
        waiting(&p).unwrap().1,
        "Back-off pulling image \"nginx:1.27\""
    );
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
    assert_eq!(
        wait_core_event(&client, "ipb", "web", "BackOff").await,
        "Back-off pulling image \"nginx:1.27\""
    );
    assert_eq!(
        wait_core_event(&client, "ipb", "web", "Pulling").await,
        "Pulling image \"nginx:1.27\""
    );
    let events = crate::wait_support::core_events_of(&client, "ipb", "web").await;
    assert!(
        events
            .iter()
            .any(|e| e.0 == "Warning" && e.1 == "Failed" && e.2 == "Error: ErrImagePull"),
        "{events:?}"
    );
    // Another pod of the namespace is untouched.
    pods.create(&PostParams::default(), &pod("other"))
        .await
        .unwrap();
    until(&pods, "other", "running", running_ready).await;

    assert_eq!(sim.admin().clear_workload_faults(None), 1);
    until(
        &pods,
        "web",
        "running after the fault is cleared",
        running_ready,
    )
    .await;
}

#[tokio::test]
async fn crash_loop_back_off_then_recovery() {
    let (sim, client) = cluster("clb").await;
    sim.admin()
        .add_workload_fault("clb", "app=web", WorkloadFault::CrashLoopBackOff)
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "clb");
    pods.create(&PostParams::default(), &pod("web"))
        .await
        .unwrap();
    let p = until(&pods, "web", "CrashLoopBackOff", |p: &Pod| {
        waiting(p).is_some_and(|w| w.0 == "CrashLoopBackOff")
    })
    .await;
    let uid = p.metadata.uid.clone().unwrap();
    assert_eq!(
        waiting(&p).unwrap().1,
        format!("back-off 10s restarting failed container=app pod=web_clb({uid})")
    );
    let st = p.status.clone().unwrap();
    assert_eq!(st.phase.as_deref(), Some("Running"));
    let cs = &st.container_statuses.unwrap()[0];
    assert!(cs.restart_count >= 1);
    let last = cs.last_state.as_ref().unwrap().terminated.clone().unwrap();
    assert_eq!((last.exit_code, last.reason.as_deref()), (1, Some("Error")));
    assert!(last.finished_at.is_some());
    assert_eq!(pod_condition(&p, "Ready").unwrap().1, "ContainersNotReady");
    assert_eq!(
        wait_core_event(&client, "clb", "web", "BackOff").await,
        format!("Back-off restarting failed container app in pod web_clb({uid})")
    );
    sim.admin().clear_workload_faults(None);
    let p = until(
        &pods,
        "web",
        "running after the fault is cleared",
        running_ready,
    )
    .await;
    assert!(
        p.status.unwrap().container_statuses.unwrap()[0].restart_count >= 1,
        "restarts are remembered"
    );
}

#[tokio::test]
async fn not_ready_makes_a_deployment_unavailable_until_cleared() {
    let (sim, client) = cluster("nr").await;
    sim.admin()
        .add_workload_fault("nr", "app=web", WorkloadFault::NotReady)
        .unwrap();
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "nr");
    deps.create(&PostParams::default(), &deployment("web", 3, "nginx"))
        .await
        .unwrap();
    let d = until(
        &deps,
        "web",
        "MinimumReplicasUnavailable",
        |d: &Deployment| {
            condition(d, "Available").is_some_and(|c| c.1 == "MinimumReplicasUnavailable")
                && d.status.as_ref().and_then(|s| s.replicas) == Some(3)
        },
    )
    .await;
    assert_eq!(
        condition(&d, "Available").unwrap().2,
        "Deployment does not have minimum availability."
    );
    assert_eq!(d.status.as_ref().unwrap().unavailable_replicas, Some(3));
    let pods: Api<Pod> = Api::namespaced(client.clone(), "nr");
    let list = crate::wait_support::until_list(
        &pods,
        &Default::default(),
        "pods running",
        |l: &[Pod]| {
            l.len() == 3
                && l.iter()
                    .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        },
    )
    .await;
    let p = &list[0];
    assert_eq!(p.status.as_ref().unwrap().phase.as_deref(), Some("Running"));
    let (status, reason, message) = pod_condition(p, "Ready").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str(), message.as_str()),
        (
            "False",
            "ContainersNotReady",
            "containers with unready status: [app]"
        )
    );
    sim.admin().clear_workload_faults(None);
    until(
        &deps,
        "web",
        "Available after the fault is cleared",
        available,
    )
    .await;
}

#[tokio::test]
async fn progress_deadline_exceeded_by_fault_and_by_deadline() {
    let (sim, client) = cluster("pde").await;
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "pde");
    // The real path: pods never start, the deadline (1 s) passes.
    sim.admin()
        .add_workload_fault("pde", "app=slow", WorkloadFault::ImagePullBackOff)
        .unwrap();
    let mut slow = deployment("slow", 1, "nginx");
    slow.spec.progress_deadline_seconds = Some(1);
    deps.create(&PostParams::default(), &slow).await.unwrap();
    let d = until(
        &deps,
        "slow",
        "ProgressDeadlineExceeded",
        |d: &Deployment| {
            condition(d, "Progressing").is_some_and(|c| c.1 == "ProgressDeadlineExceeded")
        },
    )
    .await;
    let (status, _, message) = condition(&d, "Progressing").unwrap();
    assert_eq!(status, "False");
    assert!(
        message.starts_with("ReplicaSet \"slow-")
            && message.ends_with("\" has timed out progressing."),
        "{message}"
    );

    // The fault: a Deployment reports the deadline exceeded whatever its pods do.
    sim.admin()
        .add_workload_fault("pde", "app=web", WorkloadFault::ProgressDeadlineExceeded)
        .unwrap();
    deps.create(&PostParams::default(), &deployment("web", 2, "nginx"))
        .await
        .unwrap();
    until(
        &deps,
        "web",
        "ProgressDeadlineExceeded",
        |d: &Deployment| {
            condition(d, "Progressing").is_some_and(|c| c.1 == "ProgressDeadlineExceeded")
        },
    )
    .await;
    if kubectl_present() {
        let k = Kubectl::for_sim(&sim);
        tokio::task::spawn_blocking(move || {
            k.refused(
                &[
                    "-n",
                    "pde",
                    "rollout",
                    "status",
                    "deployment/web",
                    "--timeout=10s",
                ],
                "exceeded its progress deadline",
            );
        })
        .await
        .unwrap();
    }
    sim.admin().clear_workload_faults(None);
    until(
        &deps,
        "web",
        "Available after the fault is cleared",
        available,
    )
    .await;
    until(&deps, "slow", "the slow one recovers too", available).await;
}

#[tokio::test]
async fn job_failed_exceeds_the_backoff_limit_and_a_new_job_succeeds_after_clearing() {
    let (sim, client) = cluster("jf").await;
    sim.admin()
        .add_workload_fault("jf", "", WorkloadFault::JobFailed)
        .unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), "jf");
    let job = |name: &str| -> Job {
        json(
            json!({"metadata": {"name": name}, "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}}}}),
        )
    };
    jobs.create(&PostParams::default(), &job("bad"))
        .await
        .unwrap();
    let j = until(&jobs, "bad", "Failed", |j: &Job| {
        condition(j, "Failed").is_some_and(|c| c.0 == "True")
    })
    .await;
    assert_eq!(condition(&j, "Failed").unwrap().1, "BackoffLimitExceeded");
    assert_eq!(
        condition(&j, "Failed").unwrap().2,
        "Job has reached the specified backoff limit"
    );
    assert_eq!(
        condition(&j, "FailureTarget").unwrap().1,
        "BackoffLimitExceeded"
    );
    assert_eq!(j.status.as_ref().unwrap().failed, Some(1));
    assert!(j.status.unwrap().completion_time.is_none());
    assert_eq!(
        wait_core_event(&client, "jf", "bad", "BackoffLimitExceeded").await,
        "Job has reached the specified backoff limit"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "jf");
    let failed = pods
        .list(&kube::api::ListParams::default().labels("batch.kubernetes.io/job-name=bad"))
        .await
        .unwrap()
        .items;
    let term = failed[0]
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0]
        .state
        .as_ref()
        .unwrap()
        .terminated
        .clone()
        .unwrap();
    assert_eq!((term.exit_code, term.reason.as_deref()), (1, Some("Error")));
    assert_eq!(
        failed[0].status.as_ref().unwrap().phase.as_deref(),
        Some("Failed")
    );

    sim.admin().clear_workload_faults(None);
    jobs.create(&PostParams::default(), &job("good"))
        .await
        .unwrap();
    until(&jobs, "good", "Complete", |j: &Job| {
        condition(j, "Complete").is_some_and(|c| c.0 == "True")
    })
    .await;
}

#[tokio::test]
async fn stuck_terminating_keeps_a_deleted_pod_until_cleared() {
    let (sim, client) = cluster("st").await;
    sim.admin()
        .add_workload_fault("st", "app=web", WorkloadFault::StuckTerminating)
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "st");
    pods.create(&PostParams::default(), &pod("web"))
        .await
        .unwrap();
    until(&pods, "web", "running", running_ready).await;
    pods.delete("web", &DeleteParams::default()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let p = pods.get("web").await.expect("still there");
    assert!(p.metadata.deletion_timestamp.is_some());
    // A second delete does not finish it either.
    pods.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(pods.get_opt("web").await.unwrap().is_some());
    sim.admin().clear_workload_faults(None);
    for _ in 0..100 {
        if pods.get_opt("web").await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the pod stayed after the fault was cleared");
}
