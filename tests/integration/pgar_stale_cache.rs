//! Issue 45: no grant is deleted on a stale cache. A GitOps tool applies a RoleBinding and its
//! request as one `kubectl apply -f`, the RoleBinding first: the operator may see the binding
//! before the request's watch event. It deletes a binding as "of a request that does not
//! exist" only once the API server says the request does not exist; the approval that follows
//! ends `AccessGranted`, with one replica and with three members sharing the requests.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use pgtoolbox_operator::testing::actors::access_request::REQUEST_LABEL;
use pgtoolbox_operator::testing::children::OperatorCaches;
use pgtoolbox_operator::testing::supervisor::Operator;
use pgtoolbox_operator::testing::supervisor::members::Membership;

use super::kubectl_support::{Kubectl, kubectl_present};
use super::pgar_support::{self as support, Env, NS, ROLE};
use super::runtime_shards::{config, kill};

/// The RoleBinding first, then its request, in one file.
fn gitops_manifest(name: &str) -> String {
    let expires = Timestamp::now() + SignedDuration::from_secs(3600);
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pgar-{name}
  namespace: {NS}
  labels:
    {REQUEST_LABEL}: {name}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {ROLE}
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: User
    name: alice
---
apiVersion: pgtoolbox.fyannk.dev/v1alpha1
kind: PgAccessRequest
metadata:
  name: {name}
  namespace: {NS}
spec:
  subject:
    kind: User
    name: alice
  clusterRole: {ROLE}
  expiresAt: \"{expires}\"
  reason: incident 42
"
    )
}

/// Applies each request with its RoleBinding first, approves it, and checks it ends granted
/// with the binding kept (and adopted: the pass that owns it judged it).
async fn applied_binding_first_is_granted(env: &Env, names: &[String]) {
    let kubectl = Kubectl::for_sim(&env.sim);
    // Each approved at once: the tests' grace of an approval in flight is two seconds.
    for name in names {
        let file = kubectl.file(&format!("{name}.yaml"), &gitops_manifest(name));
        kubectl.ok(&["apply", "-f", &file]);
        env.decide(name, "Approved", "bob").await;
    }
    for name in names {
        let request = env
            .wait_reason(name, "RoleBindingSynced", "AccessGranted")
            .await;
        let uid = request.uid().expect("a uid");
        let binding = format!("pgar-{name}");
        super::wait_support::wait_for(&format!("{binding} adopted"), || async {
            match env.bindings().get_opt(&binding).await.expect("readable") {
                Some(rb) if rb.owner_references().iter().any(|o| o.uid == uid) => Ok(()),
                Some(_) => Err("not owned by its request yet".to_string()),
                None => Err("deleted".to_string()),
            }
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_applied_before_its_request_is_granted() {
    if !kubectl_present() {
        eprintln!("kubectl not installed: skipped");
        return;
    }
    let env = support::start().await;
    env.request("warm", 3600).await;
    env.wait_reason("warm", "RoleBindingSynced", "AwaitingDecision")
        .await;
    let names: Vec<String> = (0..4).map(|i| format!("gitops-{i}")).collect();
    applied_binding_first_is_granted(&env, &names).await;
}

struct Member {
    operator: Operator,
    membership: Membership,
}

async fn join(env: &Env, identity: &str) -> Member {
    let operator = super::runtime_shard_caches::member_wiring(env, OperatorCaches::new())
        .start(&env.client)
        .await
        .operator;
    let membership = Membership::join(env.client.clone(), config(identity), operator.resharder());
    Member {
        operator,
        membership,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_applied_before_its_request_is_granted_with_three_members() {
    if !kubectl_present() {
        eprintln!("kubectl not installed: skipped");
        return;
    }
    let env = support::start_without_operator().await;
    let members = [
        join(&env, "member-a").await,
        join(&env, "member-b").await,
        join(&env, "member-c").await,
    ];
    // The ring settled: requests spread over the members are each reconciled.
    for i in 0..6 {
        let name = format!("warm-{i}");
        env.request(&name, 3600).await;
        env.wait_reason(&name, "RoleBindingSynced", "AwaitingDecision")
            .await;
    }
    let names: Vec<String> = (0..9).map(|i| format!("gitops-{i}")).collect();
    applied_binding_first_is_granted(&env, &names).await;
    for member in members {
        kill(member.operator, member.membership).await;
    }
}
