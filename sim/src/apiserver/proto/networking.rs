//! networking.k8s.io/v1 Ingress (`kubectl create ingress`) and the authentication.k8s.io/v1
//! TokenRequest (`kubectl create token`) and SelfSubjectReview (`kubectl auth whoami`).

use std::mem::take;

use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::networking::v1 as net;
use serde_json::Value;

use super::ProtoError;
use super::core::typed;
use super::json::{Obj, object_meta};

pub fn decode(api_version: &str, kind: &str, raw: &[u8]) -> Result<Option<Value>, ProtoError> {
    match (api_version, kind) {
        ("networking.k8s.io/v1", "Ingress") => typed(raw, ingress),
        ("authentication.k8s.io/v1", "TokenRequest") => typed(raw, token_request),
        ("authentication.k8s.io/v1", "SelfSubjectReview") => {
            typed(raw, |mut m: authn::SelfSubjectReview| {
                let mut o = Obj::new();
                o.msg("metadata", m.metadata.take(), object_meta)?;
                // The status is the server's answer.
                m.status.take();
                o.done(m, "SelfSubjectReview")
            })
        }
        _ => Ok(None),
    }
}

fn ingress(mut m: net::Ingress) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.ptr_str("ingressClassName", s.ingress_class_name.take());
        o.msg("defaultBackend", s.default_backend.take(), backend)?;
        o.msgs("tls", take(&mut s.tls), |mut t| {
            let mut o = Obj::new();
            o.strs("hosts", take(&mut t.hosts));
            o.str("secretName", t.secret_name.take());
            o.done(t, "IngressTLS")
        })?;
        o.msgs("rules", take(&mut s.rules), |mut r| {
            let mut o = Obj::new();
            o.str("host", r.host.take());
            // The rule value is inlined in JSON: `http` sits beside `host`.
            o.inline(r.ingress_rule_value.take(), |mut v| {
                let mut o = Obj::new();
                o.msg("http", v.http.take(), |mut h| {
                    let mut o = Obj::new();
                    o.msgs("paths", take(&mut h.paths), |mut p| {
                        let mut o = Obj::new();
                        o.str("path", p.path.take());
                        o.ptr_str("pathType", p.path_type.take());
                        o.msg("backend", p.backend.take(), backend)?;
                        o.done(p, "HTTPIngressPath")
                    })?;
                    o.done(h, "HTTPIngressRuleValue")
                })?;
                o.done(v, "IngressRuleValue")
            })?;
            o.done(r, "IngressRule")
        })?;
        o.done(s, "IngressSpec")
    })?;
    m.status.take();
    o.done(m, "Ingress")
}

fn backend(mut b: net::IngressBackend) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("service", b.service.take(), |mut s| {
        let mut o = Obj::new();
        o.ptr_str("name", s.name.take());
        o.msg("port", s.port.take(), |mut p| {
            let mut o = Obj::new();
            o.str("name", p.name.take());
            o.int("number", p.number.take());
            o.done(p, "ServiceBackendPort")
        })?;
        o.done(s, "IngressServiceBackend")
    })?;
    o.msg("resource", b.resource.take(), |mut r| {
        let mut o = Obj::new();
        o.ptr_str("apiGroup", r.api_group.take());
        o.ptr_str("kind", r.kind.take());
        o.ptr_str("name", r.name.take());
        o.done(r, "TypedLocalObjectReference")
    })?;
    o.done(b, "IngressBackend")
}

fn token_request(mut m: authn::TokenRequest) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.strs("audiences", take(&mut s.audiences));
        o.ptr_int("expirationSeconds", s.expiration_seconds.take());
        o.msg("boundObjectRef", s.bound_object_ref.take(), |mut r| {
            let mut o = Obj::new();
            o.str("kind", r.kind.take());
            o.str("apiVersion", r.api_version.take());
            o.str("name", r.name.take());
            o.str("uid", r.u_id.take());
            o.done(r, "BoundObjectReference")
        })?;
        o.done(s, "TokenRequestSpec")
    })?;
    m.status.take();
    o.done(m, "TokenRequest")
}

#[cfg(test)]
mod tests {
    use super::super::{decode as decode_body, encode};
    use super::*;
    use serde_json::json;

    #[test]
    fn ingress_rules_inline_their_http_value() {
        let svc = |port: i32| net::IngressBackend {
            service: Some(net::IngressServiceBackend {
                name: Some("web".into()),
                port: Some(net::ServiceBackendPort {
                    name: Some(String::new()),
                    number: Some(port),
                }),
            }),
            resource: None,
        };
        let ing = net::Ingress {
            spec: Some(net::IngressSpec {
                rules: vec![net::IngressRule {
                    host: Some("foo.com".into()),
                    ingress_rule_value: Some(net::IngressRuleValue {
                        http: Some(net::HttpIngressRuleValue {
                            paths: vec![net::HttpIngressPath {
                                path: Some("/bar".into()),
                                path_type: Some("Exact".into()),
                                backend: Some(svc(80)),
                            }],
                        }),
                    }),
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = decode_body(&encode("networking.k8s.io/v1", "Ingress", &ing)).unwrap();
        assert_eq!(
            v["spec"]["rules"],
            json!([{"host": "foo.com", "http": {"paths": [{"path": "/bar", "pathType": "Exact",
                "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}])
        );
    }
}
