//! The `operator` provider's read of an EvidenceAgent pass: the certificate planned from the
//! Secret the agent controls and the operator's CA (read, or created, once).

use k8s_openapi::api::core::v1::Secret;

use super::ca::CaError;
use super::reconciler::{EvidenceAgentReconciler, EvidenceError};
use crate::actors::{ObjectContext, ReconcileError};
use crate::api::EvidenceAgent;
use crate::children::{ChildOwner, Component};
use crate::messages::ObjectKey;
use crate::reconcile::evidence_agent::{CertificatePlan, ChildNames, plan_certificate};

/// Whether `secret` is controlled by the agent of `uid`.
fn controlled_by(secret: &Secret, uid: Option<&str>) -> bool {
    uid.is_some_and(|uid| {
        secret
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.controller == Some(true) && r.uid == uid)
    })
}

/// A refused or failed read of the CA is the API's error (classified as such); the rest is ours.
fn ca_error(err: CaError) -> ReconcileError {
    match err {
        CaError::Kube(err) => ReconcileError::Kube(err),
        other => ReconcileError::other(other),
    }
}

impl EvidenceAgentReconciler {
    /// The `operator` provider's certificate for this pass, from the Secret the agent controls
    /// (a cached one another object controls is left to the applier's `NotOwned`) and the
    /// operator's CA.
    pub(super) async fn plan_certificate(
        &self,
        obj: &EvidenceAgent,
        cx: &ObjectContext,
        names: &ChildNames,
    ) -> Result<CertificatePlan, ReconcileError> {
        let settings = &cx.shared.settings;
        let ca = self
            .ca
            .get(
                &cx.client,
                &cx.writes,
                &settings.operator_namespace,
                settings.clock.now_jiff(),
            )
            .await
            .map_err(ca_error)?;
        let key = ObjectKey::new(cx.key.namespace.as_str(), names.tls_secret.as_str());
        let store = &self.caches.owned_secrets;
        let stored = store
            .get(&key)
            .filter(|s| controlled_by(s, obj.metadata.uid.as_deref()));
        let owner = ChildOwner::of(obj)
            .ok_or_else(|| ReconcileError::other(EvidenceError::NoUid(cx.key.name.clone())))?;
        // A Secret the applier would write is issued anew: its key is not kept to rewrite it.
        let unchanged = |secret: &Secret| {
            crate::children::unchanged(store, &owner, Component::EvidenceAgent, secret.clone())
                .unwrap_or(false)
        };
        plan_certificate(
            &cx.key.name,
            &cx.key.namespace,
            stored.as_deref(),
            &ca,
            settings.clock.now_jiff(),
            settings.evidence_certificate_validity,
            &unchanged,
        )
        .map_err(|e| ReconcileError::other(EvidenceError::Certificate(cx.key.name.clone(), e)))
    }
}
