//! The composition root: which kinds the operator runs and the shared caches they read.

use crate::actors::access_request::{AccessCaches, AccessRequestReconciler};
use crate::actors::evidence_agent::{EvidenceAgentReconciler, EvidenceCaches};
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
    let evidence = EvidenceCaches::new();
    let builder = evidence
        .watches()
        .into_iter()
        .fold(builder, |builder, start| builder.cache(start));
    builder
        .cache(access.binding_watch())
        .cache(access.cluster_watch())
        .register(Kind::new(AccessRequestReconciler::new(access, events.clone())).options(options))
        .register(Kind::new(EvidenceAgentReconciler::new(evidence, events)).options(options))
}
