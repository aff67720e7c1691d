//! core/v1 kinds.

use std::mem::take;

use k8s_pb::api::core::v1 as core;
use prost::Message;
use serde_json::Value;

use super::ProtoError;
use super::json::{Conv, Obj, object_meta};
use super::pod::pod_spec;
use super::refs::local_object_reference;

pub fn typed<M: Message + Default>(raw: &[u8], conv: Conv<M>) -> Result<Option<Value>, ProtoError> {
    Ok(Some(conv(M::decode(raw)?)?))
}

pub fn decode(api_version: &str, kind: &str, raw: &[u8]) -> Result<Option<Value>, ProtoError> {
    if api_version != "v1" {
        return Ok(None);
    }
    match kind {
        "Namespace" => typed(raw, namespace),
        "Secret" => typed(raw, secret),
        "ConfigMap" => typed(raw, config_map),
        "ServiceAccount" => typed(raw, service_account),
        "ResourceQuota" => typed(raw, resource_quota),
        "LimitRange" => typed(raw, limit_range),
        "Pod" => typed(raw, pod),
        "Service" => typed(raw, service),
        _ => Ok(None),
    }
}

fn namespace(mut m: core::Namespace) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.strs("finalizers", take(&mut s.finalizers));
        o.done(s, "NamespaceSpec")
    })?;
    // A client's status is reset by the server; an empty one is what kubectl sends.
    m.status.take();
    o.done(m, "Namespace")
}

fn secret(mut m: core::Secret) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.ptr_bool("immutable", m.immutable.take());
    o.bytes_map("data", take(&mut m.data));
    o.str_map("stringData", take(&mut m.string_data));
    o.str("type", m.r#type.take());
    o.done(m, "Secret")
}

fn config_map(mut m: core::ConfigMap) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.ptr_bool("immutable", m.immutable.take());
    o.str_map("data", take(&mut m.data));
    o.bytes_map("binaryData", take(&mut m.binary_data));
    o.done(m, "ConfigMap")
}

fn service_account(mut m: core::ServiceAccount) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msgs("secrets", take(&mut m.secrets), object_reference)?;
    o.msgs(
        "imagePullSecrets",
        take(&mut m.image_pull_secrets),
        local_object_reference,
    )?;
    o.ptr_bool(
        "automountServiceAccountToken",
        m.automount_service_account_token.take(),
    );
    o.done(m, "ServiceAccount")
}

pub fn object_reference(mut m: core::ObjectReference) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("kind", m.kind.take());
    o.str("namespace", m.namespace.take());
    o.str("name", m.name.take());
    o.str("uid", m.uid.take());
    o.str("apiVersion", m.api_version.take());
    o.str("resourceVersion", m.resource_version.take());
    o.str("fieldPath", m.field_path.take());
    o.done(m, "ObjectReference")
}

fn resource_quota(mut m: core::ResourceQuota) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.quantities("hard", take(&mut s.hard));
        o.strs("scopes", take(&mut s.scopes));
        o.msg("scopeSelector", s.scope_selector.take(), |mut sel| {
            let mut o = Obj::new();
            o.msgs(
                "matchExpressions",
                take(&mut sel.match_expressions),
                |mut r| {
                    let mut o = Obj::new();
                    o.str("scopeName", r.scope_name.take());
                    o.str("operator", r.operator.take());
                    o.strs("values", take(&mut r.values));
                    o.done(r, "ScopedResourceSelectorRequirement")
                },
            )?;
            o.done(sel, "ScopeSelector")
        })?;
        o.done(s, "ResourceQuotaSpec")
    })?;
    m.status.take();
    o.done(m, "ResourceQuota")
}

fn limit_range(mut m: core::LimitRange) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.msgs("limits", take(&mut s.limits), |mut i| {
            let mut o = Obj::new();
            o.str("type", i.r#type.take());
            o.quantities("max", take(&mut i.max));
            o.quantities("min", take(&mut i.min));
            o.quantities("default", take(&mut i.default));
            o.quantities("defaultRequest", take(&mut i.default_request));
            o.quantities("maxLimitRequestRatio", take(&mut i.max_limit_request_ratio));
            o.done(i, "LimitRangeItem")
        })?;
        o.done(s, "LimitRangeSpec")
    })?;
    o.done(m, "LimitRange")
}

fn pod(mut m: core::Pod) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), pod_spec)?;
    // `kubectl run` sends an empty status; the server owns it.
    m.status.take();
    o.done(m, "Pod")
}

fn service(mut m: core::Service) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), service_spec)?;
    m.status.take();
    o.done(m, "Service")
}

fn service_spec(mut s: core::ServiceSpec) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msgs("ports", take(&mut s.ports), |mut p| {
        let mut o = Obj::new();
        o.str("name", p.name.take());
        o.str("protocol", p.protocol.take());
        o.ptr_str("appProtocol", p.app_protocol.take());
        o.int("port", p.port.take());
        o.int_or_string("targetPort", p.target_port.take());
        o.int("nodePort", p.node_port.take());
        o.done(p, "ServicePort")
    })?;
    o.str_map("selector", take(&mut s.selector));
    o.str("clusterIP", s.cluster_ip.take());
    o.strs("clusterIPs", take(&mut s.cluster_ips));
    o.str("type", s.r#type.take());
    o.strs("externalIPs", take(&mut s.external_ips));
    o.str("sessionAffinity", s.session_affinity.take());
    o.str("loadBalancerIP", s.load_balancer_ip.take());
    o.strs(
        "loadBalancerSourceRanges",
        take(&mut s.load_balancer_source_ranges),
    );
    o.str("externalName", s.external_name.take());
    o.str("externalTrafficPolicy", s.external_traffic_policy.take());
    o.int("healthCheckNodePort", s.health_check_node_port.take());
    o.flag(
        "publishNotReadyAddresses",
        s.publish_not_ready_addresses.take(),
    );
    o.msg(
        "sessionAffinityConfig",
        s.session_affinity_config.take(),
        |mut c| {
            let mut o = Obj::new();
            o.msg("clientIP", c.client_ip.take(), |mut ip| {
                let mut o = Obj::new();
                o.ptr_int("timeoutSeconds", ip.timeout_seconds.take());
                o.done(ip, "ClientIPConfig")
            })?;
            o.done(c, "SessionAffinityConfig")
        },
    )?;
    o.strs("ipFamilies", take(&mut s.ip_families));
    o.ptr_str("ipFamilyPolicy", s.ip_family_policy.take());
    o.ptr_bool(
        "allocateLoadBalancerNodePorts",
        s.allocate_load_balancer_node_ports.take(),
    );
    o.ptr_str("loadBalancerClass", s.load_balancer_class.take());
    o.ptr_str("internalTrafficPolicy", s.internal_traffic_policy.take());
    o.ptr_str("trafficDistribution", s.traffic_distribution.take());
    o.done(s, "ServiceSpec")
}

#[cfg(test)]
mod tests {
    use super::super::{decode as decode_body, encode};
    use super::*;
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use serde_json::json;

    /// ObjectMeta as Go's encoder writes it: every non-pointer field present.
    fn go_meta(name: &str) -> Option<ObjectMeta> {
        Some(ObjectMeta {
            name: Some(name.into()),
            generate_name: Some(String::new()),
            namespace: Some(String::new()),
            self_link: Some(String::new()),
            uid: Some(String::new()),
            resource_version: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(Time::default()),
            ..Default::default()
        })
    }

    #[test]
    fn secret_bytes_become_base64() {
        let s = core::Secret {
            metadata: go_meta("db"),
            data: [("password".to_string(), b"s3cr\xffet".to_vec())].into(),
            r#type: Some("Opaque".into()),
            ..Default::default()
        };
        let v = decode_body(&encode("v1", "Secret", &s)).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                   "data": {"password": "czNjcv9ldA=="}, "type": "Opaque"})
        );
    }

    #[test]
    fn a_pod_keeps_quantities_ports_and_volumes() {
        let container = core::Container {
            name: Some("app".into()),
            image: Some("nginx".into()),
            ports: vec![core::ContainerPort {
                container_port: Some(80),
                host_port: Some(0),
                protocol: Some("TCP".into()),
                ..Default::default()
            }],
            resources: Some(core::ResourceRequirements {
                requests: [(
                    "cpu".to_string(),
                    Quantity {
                        string: Some("250m".into()),
                    },
                )]
                .into(),
                ..Default::default()
            }),
            stdin: Some(false),
            ..Default::default()
        };
        let pod = core::Pod {
            metadata: go_meta("p"),
            spec: Some(core::PodSpec {
                containers: vec![container],
                restart_policy: Some("Always".into()),
                host_network: Some(false),
                volumes: vec![core::Volume {
                    name: Some("cfg".into()),
                    volume_source: Some(core::VolumeSource {
                        secret: Some(core::SecretVolumeSource {
                            secret_name: Some("db".into()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                }],
                ..Default::default()
            }),
            status: Some(core::PodStatus::default()),
        };
        let v = decode_body(&encode("v1", "Pod", &pod)).unwrap();
        assert_eq!(
            v["spec"],
            json!({
                "containers": [{"name": "app", "image": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "250m"}}}],
                "restartPolicy": "Always",
                "volumes": [{"name": "cfg", "secret": {"secretName": "db"}}],
            })
        );
        assert!(v.get("status").is_none());
    }

    #[test]
    fn an_unconverted_volume_source_is_refused() {
        let pod = core::Pod {
            spec: Some(core::PodSpec {
                volumes: vec![core::Volume {
                    name: Some("nfs".into()),
                    volume_source: Some(core::VolumeSource {
                        nfs: Some(core::NfsVolumeSource::default()),
                        ..Default::default()
                    }),
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let err = decode_body(&encode("v1", "Pod", &pod)).unwrap_err();
        assert!(matches!(err, ProtoError::Unsupported(m) if m == "VolumeSource"));
    }
}
