//! The readiness probe of the programs we deploy: an HTTP GET of their `/readyz`.

use k8s_openapi::api::core::v1::{HTTPGetAction, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// A GET of `path` on the named container port over `scheme` (`HTTP` or `HTTPS`), with the
/// fields the API server would default stated, so the rendered container compares whole with
/// the stored one. Without a readiness probe a crash-looping program turns Ready at each
/// restart.
pub fn readiness_probe(path: &str, port_name: &str, scheme: &str) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String(port_name.into()),
            scheme: Some(scheme.into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(10),
        timeout_seconds: Some(1),
        success_threshold: Some(1),
        failure_threshold: Some(3),
        ..Probe::default()
    }
}
