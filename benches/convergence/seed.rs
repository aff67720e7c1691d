//! The fleet of PgAccessRequests every driver starts from: the same mix, created through the
//! API before the timed part begins.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use pgtoolbox_operator::api::PgAccessRequest;
use pgtoolbox_operator::testing::actors::access_request::REQUEST_LABEL;
use serde_json::json;

/// Requests are spread over this many namespaces: `SEED_NAMESPACES`, 10 by default.
pub fn namespaces() -> usize {
    static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *COUNT.get_or_init(|| {
        std::env::var("SEED_NAMESPACES")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(10)
    })
}

/// Every namespace requests are seeded in.
pub fn namespace_names() -> Vec<String> {
    (0..namespaces()).map(|ns| format!("bench-{ns}")).collect()
}
pub const ROLE: &str = "cnpg-viewer";
/// Concurrent clients seeding the fleet (not timed).
const SEEDERS: usize = 32;

/// What a request looks like before the operator sees it, and so what it must converge to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// 40%: no decision yet.
    Pending,
    /// 30%: approved by `bob`, with its RoleBinding.
    Approved,
    /// 20%: denied.
    Denied,
    /// 5%: pending, expiring during the run.
    ExpiringPending,
    /// 5%: approved with its RoleBinding, expiring during the run (the binding is deleted).
    ExpiringApproved,
}

impl Shape {
    pub fn of(index: usize) -> Self {
        match index % 10 {
            0..=3 => Self::Pending,
            4..=6 => Self::Approved,
            7 | 8 => Self::Denied,
            _ if (index / 10).is_multiple_of(2) => Self::ExpiringPending,
            _ => Self::ExpiringApproved,
        }
    }

    /// The RoleBindingSynced reason the request must end with.
    pub fn final_reason(self) -> &'static str {
        match self {
            Self::Pending => "AwaitingDecision",
            Self::Approved => "AccessGranted",
            Self::Denied => "AccessDenied",
            Self::ExpiringPending | Self::ExpiringApproved => "AccessExpired",
        }
    }

    pub fn expiring(self) -> bool {
        matches!(self, Self::ExpiringPending | Self::ExpiringApproved)
    }

    pub fn approved(self) -> bool {
        matches!(self, Self::Approved | Self::ExpiringApproved)
    }
}

pub fn name(index: usize) -> String {
    format!("req-{index:06}")
}

pub fn namespace(index: usize) -> String {
    format!("bench-{}", index % namespaces())
}

/// The index a request name encodes.
pub fn index_of(name: &str) -> Option<usize> {
    name.strip_prefix("req-")?.parse().ok()
}

/// One seeded request as stored, with its RoleBinding when approved.
#[derive(Clone)]
pub struct Seeded {
    pub request: PgAccessRequest,
    pub binding: Option<RoleBinding>,
}

pub fn user(name: &str) -> Subject {
    Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "User".into(),
        name: name.into(),
        namespace: None,
    }
}

pub fn binding_of(index: usize, users: &[&str]) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(format!("pgar-{}", name(index))),
            namespace: Some(namespace(index)),
            labels: Some([(REQUEST_LABEL.to_string(), name(index))].into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: ROLE.into(),
        },
        subjects: Some(users.iter().map(|u| user(u)).collect()),
    }
}

/// Makes the RoleBinding of the approved request at `index` bind a second user besides its
/// subject, a drift the operator repairs by deleting it; answers when the change was sent.
pub async fn drift_binding(client: &kube::Client, index: usize) -> std::time::Instant {
    let api: Api<RoleBinding> = Api::namespaced(client.clone(), &namespace(index));
    let name = format!("pgar-{}", name(index));
    let mut binding = api
        .get(&name)
        .await
        .expect("binding of the changed request");
    binding.subjects = Some(vec![user("alice"), user("mallory")]);
    let sent = std::time::Instant::now();
    api.replace(&name, &PostParams::default(), &binding)
        .await
        .expect("binding replaced");
    sent
}

/// Creates the namespaces and `n` requests (with bindings and decisions) through the API.
pub async fn seed(client: &kube::Client, n: usize) -> Vec<Seeded> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in namespace_names() {
        let obj: Namespace =
            serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace manifest");
        namespaces
            .create(&PostParams::default(), &obj)
            .await
            .expect("namespace created");
    }
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..SEEDERS {
        let client = client.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut made = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= n {
                    break;
                }
                made.push((index, seed_one(&client, index).await));
            }
            made
        }));
    }
    let mut all: Vec<Option<Seeded>> = vec![None; n];
    for task in tasks {
        for (index, seeded) in task.await.expect("seeder") {
            all[index] = Some(seeded);
        }
    }
    all.into_iter()
        .map(|s| s.expect("every index seeded"))
        .collect()
}

async fn seed_one(client: &kube::Client, index: usize) -> Seeded {
    let shape = Shape::of(index);
    let ns = namespace(index);
    let requests: Api<PgAccessRequest> = Api::namespaced(client.clone(), &ns);
    // Far enough that nothing expires unless `arm_expiries` moves it.
    let expires = Timestamp::now() + SignedDuration::from_hours(24);
    let obj: PgAccessRequest = serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAccessRequest",
        "metadata": {"name": name(index), "namespace": ns},
        "spec": {
            "subject": {"kind": "User", "name": "alice"},
            "clusterRole": ROLE,
            "expiresAt": expires.to_string(),
            "reason": "benchmark",
        },
    }))
    .expect("request manifest");
    let mut request = requests
        .create(&PostParams::default(), &obj)
        .await
        .expect("request created");
    let mut binding = None;
    if shape.approved() {
        let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), &ns);
        binding = Some(
            bindings
                .create(&PostParams::default(), &binding_of(index, &["alice"]))
                .await
                .expect("binding created"),
        );
    }
    let phase = match shape {
        Shape::Approved | Shape::ExpiringApproved => Some("Approved"),
        Shape::Denied => Some("Denied"),
        Shape::Pending | Shape::ExpiringPending => None,
    };
    if let Some(phase) = phase {
        let decision = json!({"status": {
            "phase": phase,
            "approver": "bob",
            "decidedAt": Timestamp::now().to_string(),
            "roleBindingName": format!("pgar-{}", name(index)),
        }});
        request = requests
            .patch_status(
                &name(index),
                &PatchParams::default(),
                &Patch::Merge(&decision),
            )
            .await
            .expect("decision recorded");
    }
    Seeded { request, binding }
}

/// Moves `spec.expiresAt` of the expiring requests to `after` from now; returns the instant.
pub async fn arm_expiries(
    client: &kube::Client,
    fleet: &mut [Seeded],
    after: Duration,
) -> Timestamp {
    let at = Timestamp::now() + SignedDuration::try_from(after).expect("small duration");
    let patch = json!({"spec": {"expiresAt": at.to_string()}});
    let mut tasks = Vec::new();
    let indices: Vec<usize> = (0..fleet.len())
        .filter(|i| Shape::of(*i).expiring())
        .collect();
    for chunk in indices.chunks(indices.len().div_ceil(SEEDERS).max(1)) {
        let client = client.clone();
        let chunk = chunk.to_vec();
        let patch = patch.clone();
        tasks.push(tokio::spawn(async move {
            let mut moved = Vec::new();
            for index in chunk {
                let api: Api<PgAccessRequest> = Api::namespaced(client.clone(), &namespace(index));
                let obj = api
                    .patch(&name(index), &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .expect("expiry moved");
                moved.push((index, obj));
            }
            moved
        }));
    }
    for task in tasks {
        for (index, obj) in task.await.expect("expiry task") {
            fleet[index].request = obj;
        }
    }
    at
}
