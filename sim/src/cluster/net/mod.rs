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

use super::Component;

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
