//! Helpers of the simulated-cluster component tests: a sim with controllers, dynamic APIs,
//! polling until a component has written what a test waits for, certificates from Secrets.

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use pgtoolbox_sim::Sim;
use serde_json::Value;

/// A sim with the simulated cluster components running (and a short pod start).
pub async fn start_cluster() -> (Sim, kube::Client) {
    let sim = Sim::start(super::harness::cluster_config(7))
        .await
        .expect("sim starts");
    let client = sim.client();
    (sim, client)
}

pub fn api(
    client: &kube::Client,
    ns: Option<&str>,
    group: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    let ar = ApiResource::from_gvk_with_plural(&gvk, plural);
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// Create an object from JSON.
pub async fn create(api: &Api<DynamicObject>, obj: Value) -> DynamicObject {
    let obj: DynamicObject = serde_json::from_value(obj).expect("valid object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("created")
}

/// The condition of `type_` in `obj[pointer]`.
pub fn condition<'a>(obj: &'a Value, pointer: &str, type_: &str) -> Option<&'a Value> {
    obj.pointer(pointer)?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// The DER of every certificate of a PEM text.
pub fn certificates(pem_text: &[u8]) -> Vec<Vec<u8>> {
    x509_parser::pem::Pem::iter_from_buffer(pem_text)
        .map(|p| p.expect("PEM block").contents)
        .collect()
}

/// A Secret's data value as bytes.
pub fn secret_bytes(secret: &Value, key: &str) -> Vec<u8> {
    use base64::Engine;
    let b64 = secret["data"][key].as_str().expect("secret key present");
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64 data")
}

/// DNS names of a certificate's subjectAltName.
pub fn dns_names(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    cert.subject_alternative_name()
        .expect("SAN parses")
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    GeneralName::DNSName(d) => Some(d.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}
