//! The OpenShift service CA (service-ca-operator): one simulated signing CA for the cluster; a
//! Service annotated `service.beta.openshift.io/serving-cert-secret-name: NAME` gets the
//! `kubernetes.io/tls` Secret NAME with a serving certificate for `<svc>.<ns>.svc` and
//! `<svc>.<ns>.svc.cluster.local`, and a ConfigMap annotated
//! `service.beta.openshift.io/inject-cabundle: "true"` gets the CA in `service-ca.crt`.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::apiserver::error::ApiError;
use crate::cluster::pki::{Ca, KeyUsage, PkiError, Subject, Usage};
use crate::cluster::secret_data::base64_encode;
use crate::cluster::{
    CONFIGMAPS, Component, Ctx, Kind, Next, SECRETS, SERVICES, WorkloadFault, key_of,
};
use crate::store::objects::{Event, ObjKey};

const BETA: &str = "service.beta.openshift.io";
const ALPHA: &str = "service.alpha.openshift.io";
pub const SERVING_CERT_SECRET_NAME: &str = "service.beta.openshift.io/serving-cert-secret-name";
pub const SIGNED_BY: &str = "service.beta.openshift.io/serving-cert-signed-by";
pub const GENERATION_ERROR: &str = "service.beta.openshift.io/serving-cert-generation-error";
pub const ORIGINATING_NAME: &str = "service.beta.openshift.io/originating-service-name";
pub const ORIGINATING_UID: &str = "service.beta.openshift.io/originating-service-uid";
pub const EXPIRY: &str = "service.beta.openshift.io/expiry";
pub const INJECT_CABUNDLE: &str = "service.beta.openshift.io/inject-cabundle";
pub const CABUNDLE_KEY: &str = "service-ca.crt";
/// Serving certificates live two years, as the operator issues them.
const SERVING_CERT_DAYS: i64 = 730;
const CA_DAYS: i64 = 790;

fn annotation<'a>(obj: &'a Value, name: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")?.get(name)?.as_str()
}

/// The shared signing CA, made on first use.
#[derive(Default)]
pub struct ServiceCa {
    ca: Mutex<Option<Arc<Ca>>>,
}

impl ServiceCa {
    pub fn get(&self, now: jiff::Timestamp) -> Result<Arc<Ca>, PkiError> {
        let mut slot = self.ca.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ca) = slot.as_ref() {
            return Ok(ca.clone());
        }
        let cn = signer_name(now);
        let ca = Arc::new(Ca::generate(
            &Subject {
                common_name: &cn,
                organizational_unit: None,
                not_before: now,
                not_after: now + jiff::SignedDuration::from_hours(24 * CA_DAYS),
            },
            &[
                KeyUsage::DigitalSignature,
                KeyUsage::KeyEncipherment,
                KeyUsage::KeyCertSign,
            ],
        )?);
        *slot = Some(ca.clone());
        Ok(ca)
    }
}

/// The signer's name, `openshift-service-serving-signer@<unix seconds>`.
pub fn signer_name(created: jiff::Timestamp) -> String {
    format!("openshift-service-serving-signer@{}", created.as_second())
}

/// The DNS names of a Service's serving certificate (headless Services also get wildcards).
pub fn serving_names(name: &str, namespace: &str, headless: bool) -> Vec<String> {
    let mut names = vec![
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}.svc.cluster.local"),
    ];
    if headless {
        names.push(format!("*.{name}.{namespace}.svc"));
        names.push(format!("*.{name}.{namespace}.svc.cluster.local"));
    }
    names
}

fn pki_err(e: PkiError) -> ApiError {
    ApiError::internal(e.to_string())
}

/// The serving-cert Secret for `service`.
pub fn serving_secret(
    service: &Value,
    secret_name: &str,
    ca: &Ca,
    now: jiff::Timestamp,
) -> Result<Value, PkiError> {
    let (ns, name) = key_of(service);
    let uid = service
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let headless = service.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None");
    let names = serving_names(&name, &ns, headless);
    let not_after = now + jiff::SignedDuration::from_hours(24 * SERVING_CERT_DAYS);
    let leaf = ca.issue(
        &Subject {
            common_name: &names[0],
            organizational_unit: None,
            not_before: now,
            not_after,
        },
        &names,
        Usage::Server,
    )?;
    // tls.crt carries the chain up to the signer, as the operator writes it.
    let chain = format!("{}{}", leaf.cert, ca.pem.cert);
    let b64 = |s: &str| json!(base64_encode(s.as_bytes()));
    let expiry = not_after.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": secret_name,
            "namespace": ns,
            "annotations": {
                format!("{ALPHA}/originating-service-name"): name,
                format!("{ALPHA}/originating-service-uid"): uid,
                format!("{ALPHA}/expiry"): expiry,
                ORIGINATING_NAME: name,
                ORIGINATING_UID: uid,
                EXPIRY: expiry,
            },
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": name, "uid": uid}],
        },
        "data": {"tls.crt": b64(&chain), "tls.key": b64(&leaf.key)},
    }))
}

/// The Secret a Service asks the service CA for (beta or alpha annotation).
fn serving_secret_name(svc: &Value) -> Option<String> {
    annotation(svc, SERVING_CERT_SECRET_NAME)
        .or_else(|| annotation(svc, &format!("{ALPHA}/serving-cert-secret-name")))
        .map(str::to_string)
}

/// Does a ConfigMap ask for the CA bundle?
fn wants_bundle(cm: &Value) -> bool {
    annotation(cm, INJECT_CABUNDLE).or_else(|| annotation(cm, &format!("{ALPHA}/inject-cabundle")))
        == Some("true")
}

/// Issues serving certificates for annotated Services.
pub struct ServingCertController {
    pub ca: Arc<ServiceCa>,
}

impl Component for ServingCertController {
    fn name(&self) -> &'static str {
        "service-ca-controller"
    }

    fn primary(&self) -> Kind {
        SERVICES
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![SECRETS]
    }

    /// Annotated Services, and the Service of a serving Secret that changed or went; other
    /// writes never take the store lock here (the write-rate benchmark writes many).
    fn map(&self, _ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if SERVICES.is(&event.res) {
            return if serving_secret_name(&event.object).is_some() {
                vec![key_of(&event.object)]
            } else {
                Vec::new()
            };
        }
        annotation(&event.object, ORIGINATING_NAME)
            .map(|svc| vec![(event.namespace.clone(), svc.to_string())])
            .unwrap_or_default()
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(svc) = tx.get_key(SERVICES, key) else {
            return Ok(Next::Done);
        };
        let Some(secret_name) = serving_secret_name(&svc) else {
            return Ok(Next::Done);
        };
        if ctx.fault(WorkloadFault::ServiceCaPaused, &svc) {
            return Ok(Next::Done);
        }
        let uid = svc
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        let now = ctx.clock.now();
        let ca = self.ca.get(now).map_err(pki_err)?;
        let signer = signer_name_of(&ca);
        let mut annotations = svc
            .pointer("/metadata/annotations")
            .cloned()
            .unwrap_or_else(|| json!({}));
        match tx.get(SECRETS, &key.0, &secret_name) {
            Some(existing) if annotation(&existing, ORIGINATING_UID) == Some(uid) => {
                annotations[SIGNED_BY] = json!(signer);
                annotations[format!("{ALPHA}/serving-cert-signed-by")] = json!(signer);
            }
            Some(existing) => {
                let other = annotation(&existing, ORIGINATING_UID).unwrap_or("");
                annotations[GENERATION_ERROR] = json!(format!(
                    "secret/{secret_name} references serviceUID {other}, which does not match {uid}"
                ));
                annotations[format!("{BETA}/serving-cert-generation-error-num")] = json!("1");
            }
            None => {
                let secret = serving_secret(&svc, &secret_name, &ca, now).map_err(pki_err)?;
                tx.create(SECRETS, &key.0, secret)?;
                annotations[SIGNED_BY] = json!(signer);
                annotations[format!("{ALPHA}/serving-cert-signed-by")] = json!(signer);
                if let Some(m) = annotations.as_object_mut() {
                    m.remove(GENERATION_ERROR);
                    m.remove(&format!("{BETA}/serving-cert-generation-error-num"));
                }
            }
        }
        if svc.pointer("/metadata/annotations") != Some(&annotations) {
            let mut next = (*svc).clone();
            next["metadata"]["annotations"] = annotations;
            tx.update(SERVICES, next)?;
        }
        Ok(Next::Done)
    }
}

fn signer_name_of(ca: &Ca) -> String {
    crate::cluster::pki::subject_common_name(&ca.pem.cert).unwrap_or_default()
}

/// Injects the CA bundle into annotated ConfigMaps.
pub struct CaBundleInjector {
    pub ca: Arc<ServiceCa>,
}

impl Component for CaBundleInjector {
    fn name(&self) -> &'static str {
        "service-ca-cabundle-injector"
    }

    fn primary(&self) -> Kind {
        CONFIGMAPS
    }

    /// Only annotated ConfigMaps: other writes never take the store lock here.
    fn map(&self, _ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if wants_bundle(&event.object) {
            vec![key_of(&event.object)]
        } else {
            Vec::new()
        }
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(self.name());
        let Some(cm) = tx.get_key(CONFIGMAPS, key) else {
            return Ok(Next::Done);
        };
        if !wants_bundle(&cm) || ctx.fault(WorkloadFault::ServiceCaPaused, &cm) {
            return Ok(Next::Done);
        }
        let ca = self.ca.get(ctx.clock.now()).map_err(pki_err)?;
        if cm.pointer("/data/service-ca.crt").and_then(Value::as_str) != Some(&ca.pem.cert) {
            let mut next = (*cm).clone();
            next["data"][CABUNDLE_KEY] = json!(ca.pem.cert);
            tx.update(CONFIGMAPS, next)?;
        }
        Ok(Next::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serving_secret_names_its_service_and_chains_to_the_signer() {
        let now = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        let ca = ServiceCa::default();
        let ca = ca.get(now).unwrap();
        let svc = json!({"metadata": {"namespace": "team-a", "name": "console", "uid": "u-1"}, "spec": {}});
        let secret = serving_secret(&svc, "console-tls", &ca, now).unwrap();
        assert_eq!(secret["type"], "kubernetes.io/tls");
        assert_eq!(secret["metadata"]["annotations"][ORIGINATING_UID], "u-1");
        assert_eq!(
            secret["metadata"]["annotations"][EXPIRY],
            "2029-01-14T08:00:00Z"
        );
        assert_eq!(secret["metadata"]["ownerReferences"][0]["kind"], "Service");
        assert_eq!(signer_name_of(&ca), signer_name(now));
        assert_eq!(
            serving_names("console", "team-a", false),
            vec!["console.team-a.svc", "console.team-a.svc.cluster.local"]
        );
        assert_eq!(serving_names("db", "a", true).len(), 4);
    }
}
