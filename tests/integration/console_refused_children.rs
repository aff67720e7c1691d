//! A console whose workload child the API server refuses (issue 46, finding 14): refused by a
//! ResourceQuota the pass ends `QuotaExceeded`, refused by an admission policy it ends
//! `AdmissionDenied`, each as `Ready=False ReconcileError` with the class first in the message
//! and a Warning Event of that reason; once the refusal goes, the console is Ready.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::console_support::{IMAGE, NS, message, settings, start, state, with_controllers};
use super::wait_support::wait_event_of;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_that_refuses_the_deployment_is_quota_exceeded_until_lifted() {
    let env = start(with_controllers(), settings(), true).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(env.client.clone(), NS);
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "no-deployments", "namespace": NS},
        "spec": {"hard": {"count/deployments.apps": "0"}},
    }))
    .expect("quota");
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("quota created");
    env.console("capped", json!({"image": IMAGE})).await;
    let failed = env.wait("capped", "Ready", "ReconcileError").await;
    assert_eq!(state(&failed, "Ready").0, "False");
    let why = message(&failed, "Ready");
    assert!(why.starts_with("QuotaExceeded: "), "{why}");
    assert!(why.contains("exceeded quota: no-deployments"), "{why}");
    let (kind, _, note) = wait_event_of(&env.client, NS, "capped", "QuotaExceeded").await;
    assert_eq!(kind, "Warning");
    assert!(note.contains("exceeded quota"), "{note}");

    quotas
        .delete("no-deployments", &DeleteParams::default())
        .await
        .expect("quota deleted");
    env.ready("capped").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_policy_that_refuses_the_deployment_is_admission_denied_until_lifted() {
    let env = start(with_controllers(), settings(), true).await;
    let lift = deny_deployments(&env.client, "-console", "no consoles here").await;
    env.console("denied", json!({"image": IMAGE})).await;
    let failed = env.wait("denied", "Ready", "ReconcileError").await;
    assert_eq!(state(&failed, "Ready").0, "False");
    let why = message(&failed, "Ready");
    assert!(why.starts_with("AdmissionDenied: "), "{why}");
    assert!(why.contains("no consoles here"), "{why}");
    let (kind, _, note) = wait_event_of(&env.client, NS, "denied", "AdmissionDenied").await;
    assert_eq!(kind, "Warning");
    assert!(note.contains("no consoles here"), "{note}");

    lift.await;
    env.ready("denied").await;
}

/// A ValidatingAdmissionPolicy (and its binding) refusing every Deployment whose name ends
/// with `suffix`, with `message`; the future returned lifts it (deletes the binding).
pub async fn deny_deployments(
    client: &kube::Client,
    suffix: &str,
    message: &str,
) -> impl std::future::Future<Output = ()> + use<> {
    let name = format!("no{suffix}");
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": format!("!object.metadata.name.endsWith('{suffix}')"),
                             "message": message}]
        }
    }))
    .expect("policy");
    policies
        .create(&PostParams::default(), &policy)
        .await
        .expect("policy created");
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]}
    }))
    .expect("binding");
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding created");
    async move {
        bindings
            .delete(&name, &DeleteParams::default())
            .await
            .expect("binding deleted");
    }
}
