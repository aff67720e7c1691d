//! The four-eyes admission policy of deploy/ as shipped, enforced by the embedded API server
//! on real identities: users holding the shipped approver role (so RBAC lets them write the
//! status), a member of a subject Group, a ServiceAccount, and the operator running as its own
//! ServiceAccount with its shipped RBAC.

use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::PgAccessRequest;
use pgtoolbox_operator::testing::k8s::apply_manifests;
use serde_json::json;

use super::pgar_support::{Env, NS, ROLE, start_without_operator};

const OPERATOR: &str = "system:serviceaccount:pgtoolbox-system:pgtoolbox-operator";
const POLICY: &str = "pgtoolbox-access-request-decisions";

use super::harness::deploy;

async fn apply(client: &kube::Client, yaml: &str) {
    for result in apply_manifests(client, yaml, "install").await {
        result.unwrap_or_else(|e| panic!("applied: {e}"));
    }
}

/// The install's RBAC and, when `policy`, the admission policy; the requested ClusterRole;
/// alice, bob and carol hold the shipped approver role in the namespace.
async fn install(env: &Env, policy: bool) {
    for file in [
        "00-namespace.yaml",
        "01-serviceaccount.yaml",
        "02-clusterrole.yaml",
        "03-leader-election.yaml",
        "06-user-roles.yaml",
    ] {
        apply(&env.client, &deploy(file)).await;
    }
    if policy {
        install_policy(env).await;
    }
    apply(
        &env.client,
        &format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {ROLE}\n\
             rules:\n- apiGroups: [postgresql.cnpg.io]\n  resources: [clusters]\n  verbs: [get]\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: approvers\n  namespace: {NS}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pgtoolbox-access-request-approver}}\n\
             subjects:\n- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}}\n\
             - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}}\n\
             - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}}\n\
             - {{kind: ServiceAccount, name: bot, namespace: {NS}}}\n"
        ),
    )
    .await;
}

async fn install_policy(env: &Env) {
    apply(&env.client, &deploy("08-access-request-admission.yaml")).await;
}

fn as_user(env: &Env, user: &str, groups: &[&str]) -> Api<PgAccessRequest> {
    let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    let client = env.sim.admin().client_for(user, &groups).expect("client");
    Api::namespaced(client, NS)
}

/// The operator, running as its ServiceAccount.
async fn start_operator(
    env: &Env,
) -> (
    pgtoolbox_operator::testing::supervisor::Operator,
    pgtoolbox_operator::testing::actors::shared::SharedActors,
) {
    let client = env
        .sim
        .admin()
        .client_for(OPERATOR, &[])
        .expect("operator client");
    super::operator_support::run_operator(
        &client,
        &["PgAccessRequest".to_string()],
        env.settings.clone(),
    )
    .await
}

async fn create_request(env: &Env, name: &str, subject: serde_json::Value, expires_in: i64) {
    let expires = Timestamp::now() + SignedDuration::from_secs(expires_in);
    let obj: PgAccessRequest = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"subject": subject, "clusterRole": ROLE, "expiresAt": expires.to_string(),
            "reason": "incident 42"},
    }))
    .expect("valid request");
    env.requests()
        .create(&PostParams::default(), &obj)
        .await
        .expect("request created");
}

/// A console's decision, written by whoever `api` acts as.
async fn decide(
    api: &Api<PgAccessRequest>,
    request: &str,
    phase: &str,
    approver: &str,
) -> Result<PgAccessRequest, kube::Error> {
    let patch = json!({"status": {
        "phase": phase,
        "approver": approver,
        "decidedAt": Timestamp::now().to_string(),
        "roleBindingName": format!("pgar-{request}"),
    }});
    api.patch_status(request, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}

fn refusal(result: Result<PgAccessRequest, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn phase(obj: &PgAccessRequest) -> String {
    obj.status
        .as_ref()
        .map(|s| s.phase.as_str().to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_approval_under_a_forged_approver_is_refused_at_admission() {
    let env = start_without_operator().await;
    install(&env, true).await;
    create_request(&env, "self", json!({"kind": "User", "name": "alice"}), 3600).await;
    let alice = as_user(&env, "alice", &[]);

    let status = refusal(decide(&alice, "self", "Approved", "bob").await);
    assert_eq!(status.code, 403);
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(
        status.message,
        format!(
            "pgaccessrequests.pgtoolbox.fyannk.dev \"self\" is forbidden: ValidatingAdmissionPolicy \
             '{POLICY}' with binding '{POLICY}' denied request: status.approver must name the \
             identity that writes the decision (alice), not bob"
        )
    );
    // Under her own name she is the subject: refused too.
    let status = refusal(decide(&alice, "self", "Approved", "alice").await);
    assert!(
        status.message.ends_with(
            "alice is the subject of this request (or a member of its subject Group) and may not approve or deny it (four eyes)"
        ),
        "{}",
        status.message
    );
    // Nothing was stored.
    let stored = env.requests().get("self").await.expect("readable");
    assert!(
        stored.status.as_ref().is_none_or(|s| s.approver.is_none()),
        "{stored:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_of_the_subject_group_may_not_approve_and_an_outsider_may() {
    let env = start_without_operator().await;
    install(&env, true).await;
    create_request(&env, "dbas", json!({"kind": "Group", "name": "dbas"}), 3600).await;

    let carol = as_user(&env, "carol", &["dbas"]);
    let status = refusal(decide(&carol, "dbas", "Approved", "carol").await);
    assert_eq!(status.code, 403);
    assert!(
        status
            .message
            .contains("carol is the subject of this request"),
        "{}",
        status.message
    );
    // The same approval by someone outside the group is admitted.
    let bob = as_user(&env, "bob", &["ops"]);
    let stored = decide(&bob, "dbas", "Approved", "bob")
        .await
        .expect("bob approves");
    assert_eq!(phase(&stored), "Approved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_subject_may_not_approve_itself() {
    let env = start_without_operator().await;
    install(&env, true).await;
    create_request(
        &env,
        "bot",
        json!({"kind": "ServiceAccount", "name": "bot", "namespace": NS}),
        3600,
    )
    .await;
    // Acting with a token minted for the ServiceAccount (`kubectl create token bot`).
    let accounts: Api<ServiceAccount> = Api::namespaced(env.client.clone(), NS);
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "bot"}})).expect("account");
    accounts
        .create(&PostParams::default(), &account)
        .await
        .expect("ServiceAccount created");
    let request: TokenRequest = serde_json::from_value(json!({"spec": {}})).expect("request");
    let token = accounts
        .create_token_request("bot", &PostParams::default(), &request)
        .await
        .expect("token minted")
        .status
        .expect("token status")
        .token
        .expect("token");
    let mut config = kube::Config::new(env.sim.url().parse().expect("uri"));
    config.auth_info.token = Some(token.into());
    let bot: Api<PgAccessRequest> =
        Api::namespaced(kube::Client::try_from(config).expect("client"), NS);
    let me = format!("system:serviceaccount:{NS}:bot");
    let status = refusal(decide(&bot, "bot", "Approved", &me).await);
    assert!(
        status.message.contains("is the subject of this request"),
        "{}",
        status.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_as_its_service_account_grants_and_expires_under_the_policy() {
    let env = start_without_operator().await;
    install(&env, true).await;
    let (operator, shared) = start_operator(&env).await;

    // A legitimate approval: the RoleBinding (a console's), then bob's decision.
    create_request(
        &env,
        "granted",
        json!({"kind": "User", "name": "alice"}),
        3600,
    )
    .await;
    env.bind("granted", &["alice"], ROLE).await;
    let bob = as_user(&env, "bob", &[]);
    decide(&bob, "granted", "Approved", "bob")
        .await
        .expect("bob approves");
    env.wait_reason("granted", "RoleBindingSynced", "AccessGranted")
        .await;

    // Expiry: the operator writes Expired and deletes the RoleBinding. The request is granted
    // first, then its end moved to now (expiresAt may move earlier).
    create_request(
        &env,
        "brief",
        json!({"kind": "User", "name": "alice"}),
        3600,
    )
    .await;
    env.bind("brief", &["alice"], ROLE).await;
    decide(&bob, "brief", "Approved", "bob")
        .await
        .expect("bob approves");
    env.wait_reason("brief", "RoleBindingSynced", "AccessGranted")
        .await;
    let now = json!({"spec": {"expiresAt": Timestamp::now().to_string()}});
    env.requests()
        .patch("brief", &PatchParams::default(), &Patch::Merge(&now))
        .await
        .expect("expiresAt moved earlier");
    env.wait_reason("brief", "RoleBindingSynced", "AccessExpired")
        .await;
    assert_eq!(
        phase(&env.requests().get("brief").await.expect("readable")),
        "Expired"
    );
    env.wait_binding_gone("pgar-brief").await;

    // A revocation, recorded under the revoker's own name, and the operator withdraws it.
    decide(&bob, "granted", "Revoked", "bob")
        .await
        .expect("bob revokes");
    env.wait_reason("granted", "RoleBindingSynced", "AccessRevoked")
        .await;
    env.wait_binding_gone("pgar-granted").await;

    // The operator's identity decides nothing.
    create_request(
        &env,
        "pending",
        json!({"kind": "User", "name": "alice"}),
        3600,
    )
    .await;
    let op = as_user(&env, OPERATOR, &[]);
    let status = refusal(decide(&op, "pending", "Approved", OPERATOR).await);
    assert_eq!(status.code, 403, "{}", status.message);
    // A denial by someone else is admitted and reported.
    decide(&bob, "pending", "Denied", "bob")
        .await
        .expect("bob denies");
    env.wait_reason("pending", "RoleBindingSynced", "AccessDenied")
        .await;

    operator.shutdown(Duration::from_secs(5)).await;
    shared.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_revokes_a_self_approval_recorded_before_the_policy() {
    let env = start_without_operator().await;
    install(&env, false).await;
    // Recorded while nothing enforced four eyes (as an administrator could).
    create_request(&env, "old", json!({"kind": "User", "name": "alice"}), 3600).await;
    env.bind("old", &["alice"], ROLE).await;
    decide(&env.requests(), "old", "Approved", "alice")
        .await
        .expect("written without a policy");
    install_policy(&env).await;
    // The policy is in force from now on: the subject cannot rewrite the decision.
    let alice = as_user(&env, "alice", &[]);
    assert_eq!(
        refusal(decide(&alice, "old", "Denied", "alice").await).code,
        403
    );
    let (operator, shared) = start_operator(&env).await;
    env.wait_reason("old", "RoleBindingSynced", "SelfApprovalRefused")
        .await;
    assert_eq!(
        phase(&env.requests().get("old").await.expect("readable")),
        "Revoked"
    );
    env.wait_binding_gone("pgar-old").await;
    operator.shutdown(Duration::from_secs(5)).await;
    shared.stop().await;
}
