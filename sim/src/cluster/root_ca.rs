//! The root CA publisher (kube-controller-manager's `root-ca-cert-publisher`): every namespace
//! holds a ConfigMap `kube-root-ca.crt` whose `ca.crt` is the cluster's CA certificate, the
//! source the `kube-api-access-*` volume ServiceAccount admission adds to Pods projects. A
//! deleted or changed copy is written back; a terminating namespace gets none.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::pki::{Ca, KeyUsage as KeyUsagePurpose, Subject};
use super::util::is_deleting;
use super::{CONFIGMAPS, Component, Ctx, Kind, NAMESPACES, Next, key_of};
use crate::apiserver::error::ApiError;
use crate::store::objects::{Event, ObjKey};

pub const NAME: &str = "kube-root-ca.crt";
const MANAGER: &str = "kube-controller-manager";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Publishes the cluster CA, made on first use, into every namespace.
#[derive(Default)]
pub struct RootCa {
    cert: Mutex<Option<Arc<String>>>,
}

impl RootCa {
    fn cert(&self, ctx: &Ctx) -> Result<Arc<String>, ApiError> {
        let mut slot = self.cert.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cert) = slot.as_ref() {
            return Ok(cert.clone());
        }
        let now = ctx.clock.now();
        let ca = Ca::generate(
            &Subject {
                common_name: "kubernetes",
                organizational_unit: None,
                not_before: now,
                not_after: now + jiff::SignedDuration::from_hours(24 * 3650),
            },
            &[
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
                KeyUsagePurpose::KeyCertSign,
            ],
        )
        .map_err(|e| ApiError::internal(format!("cluster CA: {e}")))?;
        let cert = Arc::new(ca.pem.cert);
        *slot = Some(cert.clone());
        Ok(cert)
    }
}

impl Component for RootCa {
    fn name(&self) -> &'static str {
        MANAGER
    }

    fn primary(&self) -> Kind {
        NAMESPACES
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![CONFIGMAPS]
    }

    fn map(&self, _ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if NAMESPACES.is(&event.res) {
            return vec![key_of(&event.object)];
        }
        if key_of(&event.object).1 == NAME {
            return vec![(String::new(), event.namespace.clone())];
        }
        Vec::new()
    }

    fn setup(&self, ctx: &Ctx) -> Result<(), ApiError> {
        let namespaces: Vec<ObjKey> = ctx
            .tx(MANAGER)
            .list(NAMESPACES, None)
            .iter()
            .map(|ns| key_of(ns))
            .collect();
        for key in namespaces {
            self.reconcile(ctx, &key)?;
        }
        Ok(())
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let namespace = key.1.as_str();
        let cert = self.cert(ctx)?;
        let mut tx = ctx.tx(MANAGER);
        let Some(ns) = tx.get(NAMESPACES, "", namespace) else {
            return Ok(Next::Done);
        };
        if is_deleting(&ns) {
            return Ok(Next::Done);
        }
        let data = json!({"ca.crt": cert.as_str()});
        match tx.get(CONFIGMAPS, namespace, NAME) {
            None => {
                tx.create(
                    CONFIGMAPS,
                    namespace,
                    json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": NAME, "namespace": namespace,
                            "annotations": {"kubernetes.io/description": DESCRIPTION}},
                        "data": data,
                    }),
                )?;
            }
            Some(current) if current.get("data") != Some(&data) && !is_deleting(&current) => {
                let mut fixed: Value = (*current).clone();
                fixed["data"] = data;
                tx.update(CONFIGMAPS, fixed)?;
            }
            Some(_) => {}
        }
        Ok(Next::Done)
    }
}
