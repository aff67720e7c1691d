//! The fan-out world: N ConfigMaps, each naming a few of M Secrets in an annotation; who uses
//! which Secret; and the pass counter both drivers' reconcilers feed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use pgtoolbox_operator::testing::messages::ObjectKey;
use serde_json::json;
use tokio::sync::Notify;

pub const NAMESPACE: &str = "fanout";
/// Only the bench's ConfigMaps carry it; both drivers select by it.
pub const LABEL: &str = "bench.pgtoolbox.fyannk.dev/fanout";
/// The Secrets an object uses, comma-separated: what its pass reads and registers.
pub const USES: &str = "bench.pgtoolbox.fyannk.dev/uses";
/// Concurrent clients seeding the world (not timed).
const SEEDERS: usize = 32;

#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub objects: usize,
    pub secrets: usize,
    pub uses: usize,
    pub changes: usize,
}

impl Scale {
    /// The Secrets object `i` uses: `uses` distinct ones, spread so that every Secret has
    /// about `objects * uses / secrets` users.
    pub fn uses_of(&self, i: usize) -> Vec<usize> {
        let mut used = Vec::with_capacity(self.uses);
        for j in 0..self.uses {
            let mut s = (i * (2 * j + 1) + j * 7919) % self.secrets;
            while used.contains(&s) {
                s = (s + 1) % self.secrets;
            }
            used.push(s);
        }
        used
    }

    /// For each Secret, the objects that use it.
    pub fn users(&self) -> Vec<Vec<u32>> {
        let mut users = vec![Vec::new(); self.secrets];
        for i in 0..self.objects {
            for s in self.uses_of(i) {
                users[s].push(i as u32);
            }
        }
        users
    }

    /// The Secret changed by change `c`: `changes` distinct ones spread over all of them.
    pub fn changed_secret(&self, c: usize) -> usize {
        c * self.secrets / self.changes.max(1)
    }
}

pub fn object_name(i: usize) -> String {
    format!("o-{i:06}")
}

pub fn secret_name(s: usize) -> String {
    format!("s-{s:05}")
}

fn object_index(name: &str) -> Option<usize> {
    name.strip_prefix("o-")?.parse().ok()
}

/// Creates the namespace, the Secrets and the objects.
pub async fn seed(client: &kube::Client, scale: Scale) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).expect("namespace");
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    futures::stream::iter(0..scale.secrets)
        .map(|s| {
            let secrets = secrets.clone();
            async move {
                let secret: Secret = serde_json::from_value(json!({
                    "metadata": {"name": secret_name(s)},
                    "stringData": {"password": "initial"},
                }))
                .expect("secret");
                secrets
                    .create(&PostParams::default(), &secret)
                    .await
                    .expect("secret created");
            }
        })
        .buffer_unordered(SEEDERS)
        .collect::<Vec<_>>()
        .await;
    let objects: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    futures::stream::iter(0..scale.objects)
        .map(|i| {
            let objects = objects.clone();
            async move {
                let uses: Vec<String> = scale.uses_of(i).into_iter().map(secret_name).collect();
                let object: ConfigMap = serde_json::from_value(json!({
                    "metadata": {
                        "name": object_name(i),
                        "labels": {LABEL: "yes"},
                        "annotations": {USES: uses.join(",")},
                    },
                    "data": {"value": "1"},
                }))
                .expect("configmap");
                objects
                    .create(&PostParams::default(), &object)
                    .await
                    .expect("configmap created");
            }
        })
        .buffer_unordered(SEEDERS)
        .collect::<Vec<_>>()
        .await;
}

/// One Secret change: a new version of its data.
pub async fn change_secret(secrets: &Api<Secret>, s: usize, revision: usize) {
    let patch = json!({"stringData": {"password": format!("rev-{revision}")}});
    secrets
        .patch(
            &secret_name(s),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .expect("secret changed");
}

/// Passes per object, fed by both drivers' reconcilers; a waiter is told of every pass.
pub struct Passes {
    counts: Vec<AtomicU32>,
    passed: Notify,
}

impl Passes {
    pub fn new(objects: usize) -> Arc<Self> {
        Arc::new(Self {
            counts: (0..objects).map(|_| AtomicU32::new(0)).collect(),
            passed: Notify::new(),
        })
    }

    fn record(&self, name: &str) {
        if let Some(count) = object_index(name).and_then(|i| self.counts.get(i)) {
            count.fetch_add(1, Ordering::AcqRel);
            self.passed.notify_waiters();
        }
    }

    pub fn snapshot(&self) -> Vec<u32> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .collect()
    }

    pub fn total(&self) -> u64 {
        self.counts
            .iter()
            .map(|c| u64::from(c.load(Ordering::Acquire)))
            .sum()
    }

    fn all_passed_since(&self, users: &[u32], before: &[u32]) -> bool {
        users
            .iter()
            .zip(before)
            .all(|(&u, &b)| self.counts[u as usize].load(Ordering::Acquire) > b)
    }

    /// Counts of `users` now.
    pub fn of(&self, users: &[u32]) -> Vec<u32> {
        users
            .iter()
            .map(|&u| self.counts[u as usize].load(Ordering::Acquire))
            .collect()
    }

    /// Waits until each of `users` passed at least once more than `before` says.
    pub async fn passed_since(&self, users: &[u32], before: &[u32]) {
        loop {
            let notified = self.passed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.all_passed_since(users, before) {
                return;
            }
            notified.await;
        }
    }

    /// Waits until every object passed at least once (polled: not a latency figure).
    pub async fn all_passed_once(&self) {
        while self.counts.iter().any(|c| c.load(Ordering::Acquire) == 0) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// The reconciler work both drivers do: read which Secrets the object uses, register them (so
/// a change of one wakes the object), count the pass.
pub fn pass(obj: &ConfigMap, passes: &Passes, register: impl FnOnce(Vec<ObjectKey>)) {
    let namespace = obj.namespace().unwrap_or_default();
    let uses = obj
        .annotations()
        .get(USES)
        .map(|list| {
            list.split(',')
                .filter(|n| !n.is_empty())
                .map(|n| ObjectKey::new(&namespace, n))
                .collect()
        })
        .unwrap_or_default();
    register(uses);
    passes.record(&obj.name_any());
}
