//! Helpers of the simulated-cluster component tests: a sim with controllers, dynamic APIs,
//! polling until a component has written what a test waits for, certificates from Secrets.

use std::future::Future;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use pgtoolbox_sim::{Sim, SimConfig};
use serde_json::Value;

use crate::kubectl_support::Kubectl;

/// A sim with the simulated cluster components running (and a short pod start).
pub async fn start_cluster() -> (Sim, kube::Client) {
    let sim = Sim::start(SimConfig {
        controllers: true,
        pod_start: Duration::from_millis(50),
        seed: Some(7),
        ..SimConfig::default()
    })
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

/// Poll `probe` until it answers `Some` (every 20 ms, at most 15 s: a component lagging that
/// long is a failure, not slowness).
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..750 {
        if let Some(v) = probe().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The object once `pred` holds for it (as JSON).
pub async fn wait_for(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, || async {
        let obj = api.get_opt(name).await.ok().flatten()?;
        let v = serde_json::to_value(&obj).ok()?;
        pred(&v).then_some(v)
    })
    .await
}

/// The condition of `type_` in `obj[pointer]`.
pub fn condition<'a>(obj: &'a Value, pointer: &str, type_: &str) -> Option<&'a Value> {
    obj.pointer(pointer)?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// kubectl against this sim, in a scratch directory.
pub fn kubectl(sim: &Sim) -> Kubectl {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    Kubectl { kubeconfig, dir }
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
