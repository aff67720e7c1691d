//! The desired exposure objects, byte-stable: the same spec always renders the same JSON, so
//! the applier can compare it with the cached object and write nothing when nothing changed.
//! Ownership (the controller ownerReference) is the applier's to stamp.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec, IngressTLS, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::view::ExposureView;

/// The Service port the exposure sends traffic to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackendPort<'a> {
    pub name: &'a str,
    pub number: i32,
}

fn metadata(name: &str, namespace: &str, labels: &BTreeMap<String, String>) -> Value {
    json!({ "name": name, "namespace": namespace, "labels": labels })
}

/// An OpenShift Route (route.openshift.io/v1) to the Service, edge-terminated when TLS is
/// asked for (plain HTTP redirected), with a named certificate Secret when one is given.
pub fn desired_route(
    name: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    exposure: &ExposureView<'_>,
    service: &str,
    port: BackendPort<'_>,
) -> Value {
    let mut spec = json!({
        "port": { "targetPort": port.name },
        "to": { "kind": "Service", "name": service, "weight": 100 },
        "wildcardPolicy": "None",
    });
    if let Some(host) = exposure.hostname {
        spec["host"] = json!(host);
    }
    if let Some(tls) = exposure.tls {
        let mut t = json!({ "termination": "edge", "insecureEdgeTerminationPolicy": "Redirect" });
        if let Some(secret) = &tls.secret_name {
            t["externalCertificate"] = json!({ "name": secret });
        }
        spec["tls"] = t;
    }
    json!({
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": metadata(name, namespace, labels),
        "spec": spec,
    })
}

/// A networking.k8s.io/v1 Ingress: one rule for the hostname, every path to the Service; TLS
/// for the hostname when asked for (the controller's default certificate without a Secret).
pub fn desired_ingress(
    name: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    exposure: &ExposureView<'_>,
    service: &str,
    port: BackendPort<'_>,
) -> Ingress {
    let backend = IngressBackend {
        service: Some(IngressServiceBackend {
            name: service.to_owned(),
            port: Some(ServiceBackendPort {
                name: Some(port.name.to_owned()),
                number: None,
            }),
        }),
        resource: None,
    };
    let rule = IngressRule {
        host: exposure.hostname.map(str::to_owned),
        http: Some(HTTPIngressRuleValue {
            paths: vec![HTTPIngressPath {
                path: Some("/".to_owned()),
                path_type: "Prefix".to_owned(),
                backend,
            }],
        }),
    };
    let tls = exposure.tls.map(|tls| {
        vec![IngressTLS {
            hosts: exposure.hostname.map(|h| vec![h.to_owned()]),
            secret_name: tls.secret_name.clone(),
        }]
    });
    Ingress {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(IngressSpec {
            ingress_class_name: exposure.ingress_class_name.map(str::to_owned),
            rules: Some(vec![rule]),
            tls,
            default_backend: None,
        }),
        status: None,
    }
}

/// A Gateway API HTTPRoute (gateway.networking.k8s.io/v1) attached to the named Gateway (and
/// listener), for the hostname, to the Service port. TLS is the Gateway listener's business.
pub fn desired_http_route(
    name: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    exposure: &ExposureView<'_>,
    service: &str,
    port: BackendPort<'_>,
) -> Value {
    let mut parent_refs = Vec::new();
    if let Some(parent) = exposure.gateway {
        let mut r = json!({
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": parent.name,
        });
        if let Some(ns) = &parent.namespace {
            r["namespace"] = json!(ns);
        }
        if let Some(section) = &parent.section_name {
            r["sectionName"] = json!(section);
        }
        parent_refs.push(r);
    }
    let mut spec = json!({
        "parentRefs": parent_refs,
        "rules": [{
            "backendRefs": [{ "group": "", "kind": "Service", "name": service, "port": port.number, "weight": 1 }],
            "matches": [{ "path": { "type": "PathPrefix", "value": "/" } }],
        }],
    });
    if let Some(host) = exposure.hostname {
        spec["hostnames"] = json!([host]);
    }
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": metadata(name, namespace, labels),
        "spec": spec,
    })
}
