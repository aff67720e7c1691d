//! Networking and certificate components of the simulated cluster: the OpenShift router, an
//! Ingress controller, a Gateway API controller and the OpenShift service CA.

pub mod conditions;
pub mod gateway;
pub mod gateway_rules;
pub mod ingress;
pub mod route_tls;
pub mod router;
pub mod service_ca;

use std::sync::Arc;

use serde_json::Value;

use super::Component;

/// The string at a JSON pointer, or `""` (Go's zero value, which the simulated components
/// compare against as their Go originals do).
pub fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The components of this module, in start order.
pub fn components() -> Vec<Arc<dyn Component>> {
    let ca = Arc::new(service_ca::ServiceCa::default());
    vec![
        Arc::new(router::OpenShiftRouter),
        Arc::new(ingress::IngressController),
        Arc::new(gateway::GatewayClassController),
        Arc::new(gateway::GatewayController),
        Arc::new(gateway::HttpRouteController),
        Arc::new(service_ca::ServingCertController { ca: ca.clone() }),
        Arc::new(service_ca::CaBundleInjector { ca }),
    ]
}
