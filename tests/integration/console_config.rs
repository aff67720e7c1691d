//! Every ConfigurationValid reason of a console on the embedded server, each a stall, and how
//! each resolves: a Secret or ConfigMap appearing later is seen at once, a ClusterRole by the
//! (shortened) two-minute recheck, a refused ingress policy by the five-minute one.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::api::{Api, Patch, PatchParams, PostParams};
use pgtoolbox_operator::testing::supervisor::OperatorSettings;
use pgtoolbox_sim::SimConfig;
use serde_json::json;

use super::console_support::{IMAGE, NS, message, settings, start, state};
use super::wait_support::wait_for;

async fn stalled(env: &super::console_support::Env, name: &str, reason: &str, needles: &[&str]) {
    let obj = env.wait(name, "ConfigurationValid", reason).await;
    assert_eq!(state(&obj, "ConfigurationValid").0, "False");
    assert_eq!(state(&obj, "Ready"), ("False".into(), reason.into()));
    assert_eq!(state(&obj, "Stalled"), ("True".into(), reason.into()));
    let text = message(&obj, "ConfigurationValid");
    for needle in needles {
        assert!(text.contains(needle), "{reason}: {text:?} lacks {needle}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_image_required_and_not_allowed() {
    let env = start(
        SimConfig::default(),
        OperatorSettings {
            allowed_image_repositories: vec!["quay.io/fyannk".into()],
            ..settings()
        },
        true,
    )
    .await;
    env.console("noimage", json!({})).await;
    stalled(
        &env,
        "noimage",
        "ConsoleImageRequired",
        &["--default-console-image"],
    )
    .await;
    env.console("foreign", json!({"image": IMAGE})).await;
    stalled(
        &env,
        "foreign",
        "ImageNotAllowed",
        &["ghcr.io/pgtoolbox/console", "quay.io/fyannk"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_hostname_not_allowed_names_the_suffixes() {
    let env = start(
        SimConfig::default(),
        OperatorSettings {
            exposure_allowed_host_suffixes: vec!["apps.example.com".into()],
            ..settings()
        },
        true,
    )
    .await;
    env.console(
        "web",
        json!({"exposure": {"type": "route", "hostname": "web.evil.io"}}),
    )
    .await;
    // The image is refused too (none at all): the message names both.
    stalled(
        &env,
        "web",
        "HostnameNotAllowed",
        &["web.evil.io", "apps.example.com", "--default-console-image"],
    )
    .await;
    let obj = env.wait("web", "ExposureReady", "HostnameNotAllowed").await;
    assert_eq!(obj.status.and_then(|s| s.url), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_role_missing_is_rechecked_by_timer() {
    let env = start(SimConfig::default(), settings(), false).await;
    env.console(
        "ops",
        json!({"image": IMAGE, "restoreDrills": {"enabled": true}}),
    )
    .await;
    stalled(
        &env,
        "ops",
        "ConsoleRoleMissing",
        &[
            "pgtoolbox-console",
            "pgtoolbox-console-pod-logs",
            "pgtoolbox-console-restore-drills",
        ],
    )
    .await;
    // ClusterRoles are not watched: nothing but the recheck timer notices them.
    env.install_roles().await;
    let obj = env.wait("ops", "ConfigurationValid", "AsExpected").await;
    assert_eq!(state(&obj, "Stalled").0, "False");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_secret_not_found_resolves_when_the_secret_appears() {
    // Long rechecks: only the Secret's watch can resolve the stall in time.
    let env = start(
        SimConfig::default(),
        OperatorSettings {
            stall_rechecks: (
                std::time::Duration::from_secs(600),
                std::time::Duration::from_secs(600),
            ),
            ..settings()
        },
        true,
    )
    .await;
    env.console(
        "ops",
        json!({"image": IMAGE, "authentication": {"oidc": {
            "issuerURL": "https://id.example.com", "clientID": "console",
            "clientSecretRef": {"name": "ops-oidc", "key": "clientSecret"}}}}),
    )
    .await;
    stalled(
        &env,
        "ops",
        "SecretNotFound",
        &["ops-oidc", "spec.authentication.oidc.clientSecretRef"],
    )
    .await;
    env.secret("ops-oidc", json!({"clientSecret": "s3cr3t"}))
        .await;
    env.wait("ops", "ConfigurationValid", "AsExpected").await;

    env.merge(
        "ops",
        json!({"spec": {"extraSecrets": [{"name": "extra", "mountPath": "/etc/extra"}]}}),
    )
    .await;
    stalled(
        &env,
        "ops",
        "SecretNotFound",
        &["extra", "spec.extraSecrets[0]"],
    )
    .await;
    env.secret("extra", json!({"a": "b"})).await;
    env.wait("ops", "ConfigurationValid", "AsExpected").await;

    // A changed Secret the Pods consume rolls the workload (its digest is in the hash).
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), NS);
    let hash = || async {
        deployments
            .get_opt("ops-console")
            .await
            .expect("get")
            .and_then(|d| d.spec.template.metadata)
            .and_then(|m| m.annotations)
            .and_then(|a| a.get("pgtoolbox.fyannk.dev/workload-hash").cloned())
    };
    let before = wait_for("the Deployment carries a workload hash", || async {
        hash().await.ok_or_else(|| "no hash yet".to_owned())
    })
    .await;
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .patch(
            "extra",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"a": "c"}})),
        )
        .await
        .expect("secret changed");
    wait_for("the workload hash changes with the Secret", || async {
        match hash().await {
            Some(now) if now != before => Ok(()),
            now => Err(format!("the hash is {now:?}")),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_config_map_not_found_resolves() {
    let env = start(SimConfig::default(), settings(), true).await;
    env.console(
        "ops",
        json!({"image": IMAGE, "instanceCABundleRef": {"name": "corp-ca", "key": "ca.crt"}}),
    )
    .await;
    stalled(
        &env,
        "ops",
        "ConfigMapNotFound",
        &["corp-ca", "spec.instanceCABundleRef"],
    )
    .await;
    env.config_map("corp-ca").await;
    let obj = env.wait("ops", "ConfigurationValid", "AsExpected").await;
    // A named bundle: nothing mirrored, no advisory about it.
    assert_eq!(
        state(&obj, "InstanceCABundleComplete"),
        (String::new(), String::new())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_resource_not_owned_leaves_the_foreign_object_alone() {
    let env = start(SimConfig::default(), settings(), true).await;
    let services: Api<Service> = Api::namespaced(env.client.clone(), NS);
    let foreign: Service = serde_json::from_value(json!({
        "metadata": {"name": "ops-console", "namespace": NS, "labels": {"team": "a"}},
        "spec": {"ports": [{"port": 80}]},
    }))
    .expect("service");
    let created = services
        .create(&PostParams::default(), &foreign)
        .await
        .expect("created");
    env.console("ops", json!({"image": IMAGE})).await;
    stalled(&env, "ops", "ResourceNotOwned", &["Service ops-console"]).await;
    let now = services.get("ops-console").await.expect("still there");
    assert_eq!(
        now.metadata.resource_version, created.metadata.resource_version,
        "untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_exposure_policy_invalid_is_retried() {
    let env = super::console_support::routed_with_a_refused_ingress_policy(settings()).await;
    stalled(
        &env,
        "ops",
        "ExposurePolicyInvalid",
        &["ops-ingress", "422"],
    )
    .await;
    // Nothing is published while the policy is refused: no Route, no URL, no confinement.
    let routes = super::sim_net_support::api(
        &env.client,
        Some(NS),
        "route.openshift.io",
        "Route",
        "routes",
    );
    assert!(
        routes
            .get_opt("ops-console")
            .await
            .expect("readable")
            .is_none(),
        "a Route published without its policy"
    );
    let obj = env.consoles().get("ops").await.expect("console");
    let status = obj.status.clone().expect("status");
    assert_eq!(status.url, None);
    assert!(status.published_exposure_kinds.is_empty(), "{status:?}");
    assert!(super::console_support::condition_of(&obj, "ExposureConfined").is_none());
    env.sim.admin().clear_faults();
    // Nothing the operator watches changes: the (shortened) five-minute recheck applies it.
    env.wait("ops", "ConfigurationValid", "AsExpected").await;
}

/// The console's Events of a reason.
async fn warnings(env: &super::console_support::Env, name: &str, reason: &str) -> usize {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(env.client.clone(), NS);
    let list = api
        .list(&kube::api::ListParams::default())
        .await
        .expect("events");
    list.items
        .iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.reason.as_deref() == Some(reason)
        })
        .map(|e| e.deprecated_count.unwrap_or(1).max(1) as usize)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_with_an_allowed_image_and_a_refused_hostname_stalls_and_withdraws() {
    let env = start(
        super::console_support::with_controllers(),
        OperatorSettings {
            exposure_allowed_host_suffixes: vec!["apps.example.com".into()],
            ..settings()
        },
        true,
    )
    .await;
    env.console(
        "web",
        json!({"image": IMAGE, "exposure": {"type": "ingress", "hostname": "web.apps.example.com"}}),
    )
    .await;
    let obj = env.ready("web").await;
    assert!(obj.status.and_then(|s| s.url).is_some(), "served first");

    // Changed to a refused hostname: a stall with the hostname's words, the URL gone.
    env.merge(
        "web",
        json!({"spec": {"exposure": {"hostname": "web.evil.io"}}}),
    )
    .await;
    stalled(
        &env,
        "web",
        "HostnameNotAllowed",
        &["web.evil.io", "apps.example.com"],
    )
    .await;
    let obj = env.wait("web", "ExposureReady", "HostnameNotAllowed").await;
    assert_eq!(state(&obj, "ExposureReady").0, "False");
    let status = obj.status.expect("status");
    assert_eq!(status.url, None);
    assert!(status.published_exposure_kinds.is_empty());
    assert_eq!(warnings(&env, "web", "HostnameNotAllowed").await, 1);
    assert_eq!(warnings(&env, "web", "ReconciliationFailed").await, 0);

    // Allowed again, then paused, then refused while paused: nothing stale stays on show.
    env.merge(
        "web",
        json!({"spec": {"exposure": {"hostname": "web.apps.example.com"}}}),
    )
    .await;
    let obj = env.ready("web").await;
    assert!(obj.status.and_then(|s| s.url).is_some(), "served again");
    env.merge(
        "web",
        json!({"metadata": {"annotations": {"pgtoolbox.fyannk.dev/reconcile": "skip"}}}),
    )
    .await;
    env.merge(
        "web",
        json!({"spec": {"exposure": {"hostname": "web.evil.io"}}}),
    )
    .await;
    let obj = wait_for(
        "withdrawn while paused under a refused hostname",
        || async {
            let obj = env.consoles().get("web").await.map_err(|e| e.to_string())?;
            let status = obj.status.clone().unwrap_or_default();
            let refused = state(&obj, "ExposureReady").1 == "HostnameNotAllowed";
            if refused && status.url.is_none() && status.published_exposure_kinds.is_empty() {
                Ok(obj)
            } else {
                Err(format!("still shown: {status:?}"))
            }
        },
    )
    .await;
    assert!(
        super::console_support::condition_of(&obj, "ExposureConfined").is_none(),
        "a stale ExposureConfined: {:?}",
        obj.status
    );
}

/// A ServiceAccount someone else created under the name of the console's: ResourceNotOwned,
/// and nothing of the console runs as it or grants to it (no Deployment, no RoleBinding); once
/// it is gone, the console's own account is created and the rest follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_never_runs_as_or_grants_to_a_foreign_service_account() {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::RoleBinding;
    let env = start(SimConfig::default(), settings(), true).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(env.client.clone(), NS);
    let foreign: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "ops-console", "namespace": NS}}))
            .expect("service account");
    accounts
        .create(&PostParams::default(), &foreign)
        .await
        .expect("foreign ServiceAccount");
    env.console("ops", json!({"image": IMAGE})).await;
    stalled(
        &env,
        "ops",
        "ResourceNotOwned",
        &["ServiceAccount ops-console"],
    )
    .await;
    let bound_to_it = |bindings: &[RoleBinding]| {
        bindings.iter().any(|b| {
            b.subjects
                .iter()
                .flatten()
                .any(|s| s.kind == "ServiceAccount" && s.name == "ops-console")
        })
    };
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), NS);
    let bindings: Api<RoleBinding> = Api::namespaced(env.client.clone(), NS);
    assert!(
        deployments
            .get_opt("ops-console")
            .await
            .expect("get")
            .is_none(),
        "no Deployment runs as the foreign account"
    );
    let listed = bindings.list(&Default::default()).await.expect("list");
    assert!(!bound_to_it(&listed.items), "no RoleBinding grants to it");

    accounts
        .delete("ops-console", &Default::default())
        .await
        .expect("foreign account removed");
    // A stall waits for a change of its own (or the recheck): an annotation is one.
    let consoles: Api<pgtoolbox_operator::api::PgToolBoxConsole> =
        Api::namespaced(env.client.clone(), NS);
    consoles
        .patch(
            "ops",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"touched": "1"}}})),
        )
        .await
        .expect("touched");
    wait_for("the console's own Deployment", || async {
        match deployments.get_opt("ops-console").await {
            Ok(Some(_)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let listed = bindings.list(&Default::default()).await.expect("list");
    assert!(bound_to_it(&listed.items), "its own account is bound");
}

const SERVED_HOST: &str = "ops.apps.sim.local";

/// A console served over a Route, confined, its Pods granted the trust; returns the env.
async fn served_and_granted() -> super::console_support::Env {
    let env = start(
        super::console_support::with_controllers(),
        super::console_support::settings_allowing_sim_hosts(),
        true,
    )
    .await;
    env.console(
        "ops",
        json!({"image": IMAGE, "exposure": {"type": "route", "hostname": SERVED_HOST}}),
    )
    .await;
    env.wait("ops", "ExposureConfined", "AsExpected").await;
    let obj = env.ready("ops").await;
    assert!(obj.status.and_then(|s| s.url).is_some(), "served first");
    wait_for("the Pods run with the trust", || async {
        match trust_env(&env).await.as_deref() {
            Some("true") => Ok(()),
            other => Err(format!("{} is {other:?}", "CONSOLE_TRUST_X_FORWARDED_FOR")),
        }
    })
    .await;
    // The Route's peers are the router namespaces (a selector): the console believes them
    // from the Pod network, the Nodes' podCIDRs.
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(env.client.clone())
        .list(&Default::default())
        .await
        .expect("nodes");
    let mut cidrs: Vec<String> = nodes
        .items
        .iter()
        .flat_map(|n| n.spec.iter().flat_map(|s| s.pod_cidrs.iter().flatten()))
        .cloned()
        .collect();
    cidrs.sort();
    cidrs.dedup();
    assert!(!cidrs.is_empty(), "the sim's Nodes have podCIDRs");
    assert_eq!(
        env_var(&env, "CONSOLE_TRUSTED_PROXIES").await,
        Some(cidrs.join(","))
    );
    env
}

/// CONSOLE_TRUST_X_FORWARDED_FOR as the Deployment's Pods run with it.
async fn trust_env(env: &super::console_support::Env) -> Option<String> {
    env_var(env, "CONSOLE_TRUST_X_FORWARDED_FOR").await
}

/// A variable of the console container as the Deployment renders it.
async fn env_var(env: &super::console_support::Env, name: &str) -> Option<String> {
    let d = Api::<Deployment>::namespaced(env.client.clone(), NS)
        .get("ops-console")
        .await
        .ok()?;
    d.spec
        .template
        .spec?
        .containers
        .iter()
        .flat_map(|c| c.env.iter().flatten())
        .find(|e| e.name == name)
        .and_then(|e| e.value.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_refused_policy_withdraws_and_exposure_ready_says_so() {
    let env = served_and_granted().await;
    // The policy is gone (deleted by hand) and its re-creation refused: the exposure is
    // withdrawn, and ExposureReady no longer says where it was served.
    env.sim
        .admin()
        .inject_errors(
            "create:networking.k8s.io/networkpolicies:team-a",
            422,
            10_000,
        )
        .expect("fault");
    Api::<k8s_openapi::api::networking::v1::NetworkPolicy>::namespaced(env.client.clone(), NS)
        .delete("ops-ingress", &Default::default())
        .await
        .expect("deleted");
    let obj = env
        .wait("ops", "ConfigurationValid", "ExposurePolicyInvalid")
        .await;
    assert_eq!(obj.status.as_ref().and_then(|s| s.url.clone()), None);
    assert_eq!(
        state(&obj, "ExposureReady"),
        ("False".into(), "ExposurePolicyInvalid".into()),
        "{}",
        message(&obj, "ExposureReady")
    );
    assert!(!message(&obj, "ExposureReady").contains("served at"));
    assert!(message(&obj, "ExposureReady").contains("ops-ingress"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_kept_policy_under_a_refused_hostname_says_the_pods_trust_its_peers() {
    let env = served_and_granted().await;
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"hostname": "ops.evil.io"}}}),
    )
    .await;
    stalled(&env, "ops", "HostnameNotAllowed", &["ops.evil.io"]).await;
    let obj = env
        .wait("ops", "ExposureConfined", "ExposurePolicyKept")
        .await;
    // The workload stays as it was: its Pods still trust the kept policy's peers, and the
    // condition says so.
    assert_eq!(trust_env(&env).await.as_deref(), Some("true"));
    let text = message(&obj, "ExposureConfined");
    assert!(
        text.contains("trust X-Forwarded-For from the peers the kept policy admits"),
        "{text}"
    );
    assert!(!text.contains("trusts no peer"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_paused_under_a_refused_hostname_says_its_policy_is_kept() {
    let env = served_and_granted().await;
    env.merge(
        "ops",
        json!({"metadata": {"annotations": {"pgtoolbox.fyannk.dev/reconcile": "skip"}}}),
    )
    .await;
    env.merge(
        "ops",
        json!({"spec": {"exposure": {"hostname": "ops.evil.io"}}}),
    )
    .await;
    let obj = env.wait("ops", "ExposureReady", "HostnameNotAllowed").await;
    assert_eq!(obj.status.as_ref().and_then(|s| s.url.clone()), None);
    assert_eq!(state(&obj, "Stalled").1, "HostnameNotAllowed");
    // The policy stays (paused: nothing else is touched), and the condition says it is kept.
    Api::<k8s_openapi::api::networking::v1::NetworkPolicy>::namespaced(env.client.clone(), NS)
        .get("ops-ingress")
        .await
        .expect("the policy stays");
    assert_eq!(
        state(&obj, "ExposureConfined"),
        ("False".into(), "ExposurePolicyKept".into()),
        "{:?}",
        obj.status
    );
    let text = message(&obj, "ExposureConfined");
    assert!(
        text.contains("trust X-Forwarded-For from the peers the kept policy admits"),
        "{text}"
    );
}
