//! The composition root: which kinds the operator runs and the shared caches they read.

use crate::actors::access_request::{AccessCaches, AccessRequestReconciler};
use crate::k8s::EventSink;
use crate::supervisor::{Kind, KindOptions, OperatorBuilder};

/// Every kind the operator manages. Registering a kind is one line here.
pub fn register_all(builder: OperatorBuilder) -> OperatorBuilder {
    let options = KindOptions {
        startup_jitter: builder.shared().settings.startup_jitter,
        ..KindOptions::default()
    };
    let events = EventSink::new(builder.client().clone());
    let access = AccessCaches::new();
    builder
        .cache(access.binding_watch())
        .cache(access.cluster_watch())
        .register(Kind::new(AccessRequestReconciler::new(access, events)).options(options))
}
