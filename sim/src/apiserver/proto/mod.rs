//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`) of the built-in kinds,
//! decoded into the JSON object the same client would have sent as JSON.
//!
//! The wire format is the Kubernetes envelope: the magic `k8s\0`, then a `runtime.Unknown`
//! whose `typeMeta` names the kind and whose `raw` holds the typed message. The typed messages
//! are the generated ones of the `k8s-pb` crate; `json` turns them into JSON.

mod cluster;
mod core;
mod json;
mod networking;
mod pod;
mod policy;
mod refs;
mod scheduling;
mod volumes;
mod workloads;

use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::Value;

use crate::apiserver::error::ApiError;

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("the body does not start with the Kubernetes protobuf magic")]
    NoMagic,
    #[error("malformed protobuf: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("malformed protobuf: {0}")]
    Malformed(String),
    #[error("content encoding {0:?} is not supported")]
    Encoding(String),
    #[error("protobuf bodies of {0} are not supported by the sim; send JSON")]
    Kind(String),
    #[error("fields of {0} in protobuf are not supported by the sim; send JSON")]
    Unsupported(String),
}

impl From<ProtoError> for ApiError {
    fn from(e: ProtoError) -> Self {
        match e {
            ProtoError::Kind(_) | ProtoError::Unsupported(_) | ProtoError::Encoding(_) => {
                ApiError::new(415, "UnsupportedMediaType", e.to_string())
            }
            _ => ApiError::bad_request(e.to_string()),
        }
    }
}

/// Decode a protobuf request body into the object's JSON form.
pub fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    let rest = body.strip_prefix(MAGIC).ok_or(ProtoError::NoMagic)?;
    let unknown = Unknown::decode(rest)?;
    if let Some(enc) = unknown.content_encoding.filter(|e| !e.is_empty()) {
        return Err(ProtoError::Encoding(enc));
    }
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let mut obj = typed(&api_version, &kind, &raw)?
        .ok_or_else(|| ProtoError::Kind(format!("{api_version} {kind}")))?;
    obj["apiVersion"] = Value::String(api_version);
    obj["kind"] = Value::String(kind);
    Ok(obj)
}

fn typed(api_version: &str, kind: &str, raw: &[u8]) -> Result<Option<Value>, ProtoError> {
    if kind == "DeleteOptions" && matches!(api_version, "v1" | "meta.k8s.io/v1") {
        return core::typed(raw, json::delete_options);
    }
    if let Some(v) = core::decode(api_version, kind, raw)? {
        return Ok(Some(v));
    }
    if let Some(v) = workloads::decode(api_version, kind, raw)? {
        return Ok(Some(v));
    }
    if let Some(v) = networking::decode(api_version, kind, raw)? {
        return Ok(Some(v));
    }
    if let Some(v) = cluster::decode(api_version, kind, raw)? {
        return Ok(Some(v));
    }
    policy::decode(api_version, kind, raw)
}

/// Wrap a typed message in the envelope, as client-go does (tests and tools).
pub fn encode<M: Message>(api_version: &str, kind: &str, message: &M) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
            api_version: Some(api_version.to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(message.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::api::core::v1::Namespace;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    #[test]
    fn the_envelope_names_the_kind() {
        let ns = Namespace {
            metadata: Some(ObjectMeta {
                name: Some("team-b".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = decode(&encode("v1", "Namespace", &ns)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}})
        );
    }

    #[test]
    fn delete_options_keep_policy_and_preconditions() {
        use k8s_pb::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Preconditions};
        let opts = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some("u-1".into()),
                resource_version: None,
            }),
            propagation_policy: Some("Foreground".into()),
            ..Default::default()
        };
        let v = decode(&encode("meta.k8s.io/v1", "DeleteOptions", &opts)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
                "gracePeriodSeconds": 0, "preconditions": {"uid": "u-1"},
                "propagationPolicy": "Foreground"})
        );
    }

    #[test]
    fn bodies_without_magic_or_of_unknown_kinds_are_refused() {
        assert!(matches!(decode(b"{}"), Err(ProtoError::NoMagic)));
        let err = decode(&encode("example.com/v1", "Widget", &Namespace::default())).unwrap_err();
        assert!(matches!(err, ProtoError::Kind(_)));
        assert_eq!(ApiError::from(err).code, 415);
        assert!(matches!(
            decode(b"k8s\0\x0a\xff"),
            Err(ProtoError::Decode(_))
        ));
    }
}
