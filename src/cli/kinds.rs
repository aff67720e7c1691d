//! The composition root: which kinds the operator runs and the one cache set they share.

use crate::actors::access_request::AccessRequestReconciler;
use crate::actors::console::ConsoleReconciler;
use crate::actors::evidence_agent::EvidenceAgentReconciler;
use crate::actors::pgadmin::PgAdminReconciler;
use crate::children::OperatorCaches;
use crate::k8s::EventSink;
use crate::supervisor::{Kind, KindOptions, OperatorBuilder};

/// Every kind the operator manages. Registering a kind is one line here.
pub fn register_all(builder: OperatorBuilder) -> OperatorBuilder {
    let caches = OperatorCaches::new().sharing_secrets(builder.shared().secrets.routed_index());
    register_all_with(builder, caches)
}

/// [`register_all`] over caches the caller keeps (a simulation test reads their index).
pub fn register_all_with(builder: OperatorBuilder, caches: OperatorCaches) -> OperatorBuilder {
    let options = KindOptions {
        startup_jitter: builder.shared().settings.startup_jitter,
        first_passes_at_once: builder.shared().settings.first_passes_at_once,
        retry: builder.shared().settings.retry,
        ..KindOptions::default()
    };
    let events = EventSink::new(builder.client().clone());
    let builder = caches
        .watches()
        .into_iter()
        .fold(builder, |builder, start| builder.cache(start))
        .sharded_cache(std::sync::Arc::new(caches.clone()));
    builder
        .register(
            Kind::new(AccessRequestReconciler::new(caches.clone(), events.clone()))
                .options(options),
        )
        .register(
            Kind::new(EvidenceAgentReconciler::new(caches.clone(), events.clone()))
                .options(options),
        )
        .register(
            Kind::new(PgAdminReconciler::new(caches.clone(), events.clone())).options(options),
        )
        .register(Kind::new(ConsoleReconciler::new(caches, events)).options(options))
}
