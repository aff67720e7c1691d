//! What every kind of the operator does the same around its pass, written once: the caches a
//! kind declares are listed before its pass, the pass reads the freshest copy of the object (its
//! own last status write may be newer than the watch's), a failure is shown through the
//! conditions engine, and a stopping object is forgotten by every reference index and by the
//! status writer. A kind implements [`StatusPass`]; the
//! [`Reconciler`] the runtime drives follows from it.

use std::fmt::Debug;
use std::sync::Arc;

use kube::Resource;
use kube::core::NamespaceResourceScope;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Listed, ObjectContext, Outcome, PassEnv, PassFailure, ReconcileError, Reconciler};
use crate::api::Reported;
use crate::api::ReportsConditions;
use crate::children::{CACHE_WAIT, OperatorCaches, Synced, wait_synced};
use crate::messages::{KindKey, ObjectKey};
use crate::status::StatusWriter;

/// One kind of the operator: its pass, and what it keeps beside the shared caches.
pub trait StatusPass: Send + Sync + 'static {
    type Object: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + ReportsConditions
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static;

    /// See [`Reconciler::UNDECODABLE`].
    const UNDECODABLE: &'static str = "it is not reconciled until it can be decoded";

    fn status(&self) -> &StatusWriter<Self::Object>;

    fn caches(&self) -> &OperatorCaches;

    /// The caches a pass over the object in `cx` reads: the runtime waits for their first
    /// lists before every pass (before that, "not listed yet" would read as "absent").
    fn reads<'a>(&'a self, cx: &ObjectContext) -> Vec<&'a Synced>;

    /// One pass over the freshest copy of the object.
    fn run(
        &self,
        obj: &Self::Object,
        cx: &ObjectContext,
    ) -> impl Future<Output = Result<Outcome, ReconcileError>> + Send;

    /// What the stored status reports to the object gauges (see [`Reconciler::reported`]).
    fn reported(obj: &Self::Object) -> Reported {
        obj.reported()
    }

    /// What else a stopping object leaves in the kind's own memory (the caches and the status
    /// writer are cleared already).
    fn forget(&self, _key: &ObjectKey) {}

    /// See [`Reconciler::on_orphan`].
    fn on_orphan(&self, _key: &ObjectKey, _cx: &ObjectContext) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// See [`Reconciler::on_listed`].
    fn on_listed(&self, _listed: &Listed, _env: &Arc<PassEnv>) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// The object as a user of the reference indexes: its kind and key.
pub fn user_of<K: Resource<DynamicType = ()>>(key: &ObjectKey) -> KindKey {
    KindKey::new(&K::kind(&()), &key.namespace, &key.name)
}

impl<P: StatusPass> Reconciler for P {
    type Object = P::Object;
    const UNDECODABLE: &'static str = <P as StatusPass>::UNDECODABLE;

    fn reported(obj: &P::Object) -> Reported {
        <P as StatusPass>::reported(obj)
    }

    fn settled(obj: &P::Object) -> bool {
        obj.settled()
    }

    async fn reconcile(
        &self,
        obj: Arc<P::Object>,
        cx: &ObjectContext,
    ) -> Result<Outcome, ReconcileError> {
        wait_synced(CACHE_WAIT, &self.reads(cx))
            .await
            .map_err(ReconcileError::other)?;
        let obj = self.status().freshest(&cx.key, obj);
        self.run(&obj, cx).await
    }

    async fn on_stop(&self, key: &ObjectKey, _cx: &ObjectContext) {
        self.caches().forget_user(&user_of::<P::Object>(key));
        self.status().forget(key);
        self.forget(key);
    }

    async fn on_orphan(&self, key: &ObjectKey, cx: &ObjectContext) {
        StatusPass::on_orphan(self, key, cx).await;
    }

    async fn on_listed(&self, listed: &Listed, env: &Arc<PassEnv>) {
        StatusPass::on_listed(self, listed, env).await;
    }

    async fn report_error(
        &self,
        obj: Arc<P::Object>,
        failure: PassFailure<'_>,
        cx: &ObjectContext,
    ) {
        self.status()
            .report_error(obj, failure.classify(), cx.target())
            .await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::actors::Shared;
    use crate::api::PgAccessRequest;
    use crate::k8s::{EventSink, WriteBudget};

    /// A kind whose pass reads one cache of its own and only counts its runs.
    struct Gated {
        caches: OperatorCaches,
        status: StatusWriter<PgAccessRequest>,
        cache: Synced,
        runs: AtomicUsize,
    }

    impl StatusPass for Gated {
        type Object = PgAccessRequest;

        fn status(&self) -> &StatusWriter<PgAccessRequest> {
            &self.status
        }

        fn caches(&self) -> &OperatorCaches {
            &self.caches
        }

        fn reads<'a>(&'a self, _cx: &ObjectContext) -> Vec<&'a Synced> {
            vec![&self.cache]
        }

        async fn run(
            &self,
            _obj: &PgAccessRequest,
            _cx: &ObjectContext,
        ) -> Result<Outcome, ReconcileError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Ok(Outcome::done())
        }
    }

    fn setup() -> (Arc<Gated>, ObjectContext, Arc<PgAccessRequest>) {
        // Never reached: the pass under test makes no request.
        let url = "http://127.0.0.1:9".parse().expect("url");
        let client = kube::Client::try_from(kube::Config::new(url)).expect("client");
        let kind = Arc::new(Gated {
            caches: OperatorCaches::new(),
            status: StatusWriter::new(EventSink::new(client.clone())),
            cache: Synced::new("test cache"),
            runs: AtomicUsize::new(0),
        });
        let env = Arc::new(PassEnv {
            client,
            writes: WriteBudget::new(1),
            shared: Arc::new(Shared::default()),
        });
        let cx = ObjectContext::new(ObjectKey::new("team-a", "demo"), env, 0);
        let obj: PgAccessRequest = serde_json::from_value(serde_json::json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
            "kind": "PgAccessRequest",
            "metadata": {"name": "demo", "namespace": "team-a", "uid": "u-1"},
            "spec": {"subject": {"kind": "User", "name": "alice"}, "clusterRole": "view",
                     "expiresAt": "2026-12-01T07:14:24Z", "reason": "test"},
        }))
        .expect("request");
        (kind, cx, Arc::new(obj))
    }

    #[tokio::test(start_paused = true)]
    async fn a_pass_runs_once_the_caches_it_declares_have_listed() {
        let (kind, cx, obj) = setup();
        let pass = tokio::spawn({
            let (kind, cx) = (kind.clone(), cx.clone());
            async move { kind.reconcile(obj, &cx).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(kind.runs.load(Ordering::SeqCst), 0, "ran before the list");
        kind.cache.expect(1);
        kind.cache.one_done();
        pass.await.expect("joined").expect("the pass succeeds");
        assert_eq!(kind.runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cache_that_never_lists_fails_the_pass_without_running_it() {
        let (kind, cx, obj) = setup();
        let failed = kind.reconcile(obj, &cx).await;
        assert!(failed.is_err(), "a pass over an unlisted cache failed");
        assert_eq!(kind.runs.load(Ordering::SeqCst), 0);
    }
}
