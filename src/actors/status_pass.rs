//! What every kind of the operator does the same around its pass, written once: the caches a
//! kind declares are listed before its pass, the pass reads the freshest copy of the object (its
//! own last status write may be newer than the watch's), a failure is shown through the
//! conditions engine, and a stopping object is forgotten by every reference index and by the
//! status writer. A kind implements [`StatusPass`]; the
//! [`Reconciler`] the runtime drives follows from it.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;

use kube::Resource;
use kube::core::NamespaceResourceScope;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ObjectContext, Outcome, PassEnv, PassFailure, ReconcileError, Reconciler};
use crate::api::ReportsConditions;
use crate::children::{CACHE_WAIT, OperatorCaches, Synced, wait_synced};
use crate::messages::{KindKey, ObjectKey};
use crate::runtime::Reported;
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
    fn on_listed(
        &self,
        _known: &HashSet<ObjectKey>,
        _env: &Arc<PassEnv>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// The object as a user of the reference indexes: its kind and key.
pub fn user_of<K: Resource<DynamicType = ()>>(key: &ObjectKey) -> KindKey {
    KindKey::new(&K::kind(&()), &key.namespace, &key.name)
}

impl<P: StatusPass> Reconciler for P {
    type Object = P::Object;

    fn reported(obj: &P::Object) -> Reported {
        <P as StatusPass>::reported(obj)
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

    async fn on_listed(&self, known: &HashSet<ObjectKey>, env: &Arc<PassEnv>) {
        StatusPass::on_listed(self, known, env).await;
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
