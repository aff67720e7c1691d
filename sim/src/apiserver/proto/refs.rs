//! The small reference types several core kinds embed (LocalObjectReference, the downward
//! API's field selectors).

use k8s_pb::api::core::v1 as core;
use serde_json::Value;

use super::ProtoError;
use super::json::Obj;

pub fn local_object_reference(mut m: core::LocalObjectReference) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("name", m.name.take());
    o.done(m, "LocalObjectReference")
}

pub fn object_field_selector(mut f: core::ObjectFieldSelector) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("apiVersion", f.api_version.take());
    o.ptr_str("fieldPath", f.field_path.take());
    o.done(f, "ObjectFieldSelector")
}

pub fn resource_field_selector(mut f: core::ResourceFieldSelector) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("containerName", f.container_name.take());
    o.ptr_str("resource", f.resource.take());
    o.quantity("divisor", f.divisor.take());
    o.done(f, "ResourceFieldSelector")
}
