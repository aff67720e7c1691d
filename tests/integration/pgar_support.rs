//! The embedded API server with our CRDs and the operator running in-process, and the few
//! verbs a console (or a user with kubectl) performs on PgAccessRequests.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::PgAccessRequest;
use pgtoolbox_operator::testing::actors::Shared;
use pgtoolbox_operator::testing::actors::access_request::REQUEST_LABEL;
use pgtoolbox_operator::testing::supervisor::{Operator, OperatorSettings};
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::json;

use super::harness::{TestOperator, Wiring, create_object};

pub const NS: &str = "team-a";
pub const ROLE: &str = "cnpg-viewer";

/// The ClusterRole [`ROLE`] as an installation has it: a request for a ClusterRole that does not
/// exist reports `ClusterRoleNotFound`.
pub const ROLE_MANIFEST: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n\
    metadata:\n  name: cnpg-viewer\nrules:\n- apiGroups: [postgresql.cnpg.io]\n  \
    resources: [clusters]\n  verbs: [get, list, watch]\n";

pub struct Env {
    pub sim: Sim,
    pub client: kube::Client,
    pub settings: OperatorSettings,
    operator: Option<Operator>,
    /// The running operator's shared state (its pass counters).
    shared: Option<Arc<Shared>>,
}

pub async fn start() -> Env {
    let mut env = start_without_operator().await;
    env.start_operator().await;
    env
}

pub async fn start_without_operator() -> Env {
    start_with_crds(super::harness::crds()).await
}

/// The embedded API server with these CRDs (our kinds' as rendered, or altered by a test), and
/// no operator yet.
pub async fn start_with_crds(crds: String) -> Env {
    let started = TestOperator::new()
        .our_crds(crds)
        .sim(SimConfig {
            extra_crds: vec![ROLE_MANIFEST.to_string()],
            ..SimConfig::default()
        })
        .namespace(NS)
        .without_operator()
        .start()
        .await;
    let settings = OperatorSettings {
        access_request_orphan_grace: Duration::from_secs(2),
        startup_jitter: Duration::ZERO,
        ..OperatorSettings::default()
    };
    Env {
        sim: started.sim,
        client: started.client,
        settings,
        operator: None,
        shared: None,
    }
}

impl Env {
    /// The operator on a bare shared state of `settings` (no shared actors).
    pub async fn start_operator(&mut self) {
        let running = Wiring::with(self.settings.clone())
            .bare()
            .start(&self.client)
            .await;
        self.operator = Some(running.operator);
        self.shared = Some(running.shared);
    }

    /// Waits until the running operator has ended `count` PgAccessRequest passes.
    pub async fn until_passes(&self, count: u64, what: &str) {
        let shared = self.shared.as_ref().expect("an operator started");
        super::wait_support::until_passes(shared, "PgAccessRequest", 0, count, what).await;
    }

    /// The running operator's metrics in the exposition format.
    pub fn metrics_text(&self) -> String {
        let shared = self.shared.as_ref().expect("an operator started");
        shared.metrics.encode().expect("metrics encode")
    }

    pub async fn stop_operator(&mut self) {
        if let Some(operator) = self.operator.take() {
            operator.shutdown(Duration::from_secs(5)).await;
        }
    }

    pub fn requests(&self) -> Api<PgAccessRequest> {
        Api::namespaced(self.client.clone(), NS)
    }

    pub fn bindings(&self) -> Api<RoleBinding> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// A request by user `alice` for [`ROLE`], expiring `expires_in` from now (negative: past).
    pub async fn request(&self, name: &str, expires_in_secs: i64) -> PgAccessRequest {
        self.request_for(name, ROLE, expires_in_secs).await
    }

    /// A request by user `alice` for the ClusterRole `role`, expiring `expires_in` from now.
    pub async fn request_for(
        &self,
        name: &str,
        role: &str,
        expires_in_secs: i64,
    ) -> PgAccessRequest {
        let expires = Timestamp::now() + SignedDuration::from_secs(expires_in_secs);
        let spec = json!({
            "subject": {"kind": "User", "name": "alice"},
            "clusterRole": role,
            "expiresAt": expires.to_string(),
            "reason": "incident 42",
        });
        create_object(
            &self.requests(),
            json!({"name": name, "namespace": NS}),
            spec,
        )
        .await
    }

    /// `request`'s spec created again as `name`, naming the CloudNativePG Cluster `cluster`
    /// (the spec is immutable after creation).
    pub async fn request_on_cluster(
        &self,
        mut request: PgAccessRequest,
        name: &str,
        cluster: &str,
    ) {
        request.metadata = ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..ObjectMeta::default()
        };
        request.spec.cluster = Some(cluster.into());
        request.status = None;
        self.requests()
            .create(&PostParams::default(), &request)
            .await
            .unwrap();
    }

    /// A RoleBinding of the request (labelled for it) binding these users to `role`.
    pub async fn bind(&self, request: &str, users: &[&str], role: &str) -> RoleBinding {
        let rb = RoleBinding {
            metadata: ObjectMeta {
                name: Some(format!("pgar-{request}")),
                namespace: Some(NS.into()),
                labels: Some([(REQUEST_LABEL.to_string(), request.to_string())].into()),
                ..ObjectMeta::default()
            },
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "ClusterRole".into(),
                name: role.into(),
            },
            subjects: Some(users.iter().map(|u| user(u)).collect()),
        };
        self.bindings()
            .create(&PostParams::default(), &rb)
            .await
            .expect("rolebinding created")
    }

    /// What a console records when it decides.
    pub async fn decide(&self, request: &str, phase: &str, approver: &str) {
        let patch = json!({"status": {
            "phase": phase,
            "approver": approver,
            "decidedAt": Timestamp::now().to_string(),
            "roleBindingName": format!("pgar-{request}"),
        }});
        self.requests()
            .patch_status(request, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("decision recorded");
    }

    /// Approve as a console does: the RoleBinding first, then the decision.
    pub async fn approve(&self, request: &str, approver: &str) {
        self.bind(request, &["alice"], ROLE).await;
        self.decide(request, "Approved", approver).await;
    }

    /// A request granted for `expires_in_secs`, whose RoleBinding then gains a second subject
    /// ("mallory") behind the operator's back: the drift the operator must undo.
    pub async fn grant_then_drift(&self, request: &str, expires_in_secs: i64) {
        self.request(request, expires_in_secs).await;
        self.approve(request, "bob").await;
        self.wait_reason(request, "RoleBindingSynced", "AccessGranted")
            .await;
        self.drift(request).await;
    }

    /// The request's RoleBinding gains a second subject ("mallory") behind the operator's back.
    pub async fn drift(&self, request: &str) {
        let name = format!("pgar-{request}");
        let mut rb = self.bindings().get(&name).await.expect("binding readable");
        rb.subjects
            .get_or_insert_with(Vec::new)
            .push(user("mallory"));
        self.bindings()
            .replace(&name, &PostParams::default(), &rb)
            .await
            .expect("binding replaced");
    }

    /// Polls until `condition` of `request` has `reason` (and returns the request).
    pub async fn wait_reason(
        &self,
        request: &str,
        condition: &str,
        reason: &str,
    ) -> PgAccessRequest {
        wait_for(&format!("{request}: {condition} {reason}"), || async {
            let obj = self
                .requests()
                .get(request)
                .await
                .expect("request readable");
            if condition_of(&obj, condition).is_some_and(|c| c.reason == reason) {
                Ok(obj)
            } else {
                Err(format!("conditions: {:#?}", conditions(&obj)))
            }
        })
        .await
    }

    /// Whether the named RoleBinding exists now.
    pub async fn binding_exists(&self, name: &str) -> bool {
        self.bindings()
            .get_opt(name)
            .await
            .expect("readable")
            .is_some()
    }

    /// Polls until the named RoleBinding is gone.
    pub async fn wait_binding_gone(&self, name: &str) {
        wait_for(&format!("{name} deleted"), || async {
            match self.bindings().get_opt(name).await.expect("readable") {
                None => Ok(()),
                Some(_) => Err("it is still there".into()),
            }
        })
        .await
    }

    /// `(type, reason, note)` of the Events recorded on the request.
    pub async fn events(&self, request: &str) -> Vec<(String, String, String)> {
        events_of(&self.client, NS, request).await
    }

    /// Polls until an Event with `reason` was recorded on the request.
    pub async fn wait_event(&self, request: &str, reason: &str) -> (String, String, String) {
        wait_event_of(&self.client, NS, request, reason).await
    }
}

pub fn user(name: &str) -> Subject {
    Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "User".into(),
        name: name.into(),
        namespace: None,
    }
}

pub use super::wait_support::{condition_of, state};
use super::wait_support::{conditions, events_of, wait_event_of, wait_for};
