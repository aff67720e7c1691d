//! The other served core and coordination kinds clients write: PersistentVolumeClaim, Node,
//! Endpoints, core Event and Lease.

use std::mem::take;

use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use serde_json::Value;

use super::ProtoError;
use super::core::{object_reference, typed};
use super::json::{Obj, label_selector, object_meta};

pub fn decode(api_version: &str, kind: &str, raw: &[u8]) -> Result<Option<Value>, ProtoError> {
    match (api_version, kind) {
        ("v1", "PersistentVolumeClaim") => typed(raw, persistent_volume_claim),
        ("v1", "Node") => typed(raw, node),
        ("v1", "Endpoints") => typed(raw, endpoints),
        ("v1", "Event") => typed(raw, event),
        ("coordination.k8s.io/v1", "Lease") => typed(raw, lease),
        _ => Ok(None),
    }
}

pub fn persistent_volume_claim(mut m: core::PersistentVolumeClaim) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.strs("accessModes", take(&mut s.access_modes));
        o.msg("selector", s.selector.take(), label_selector)?;
        o.msg("resources", s.resources.take(), |mut r| {
            let mut o = Obj::new();
            o.quantities("limits", take(&mut r.limits));
            o.quantities("requests", take(&mut r.requests));
            o.done(r, "VolumeResourceRequirements")
        })?;
        o.str("volumeName", s.volume_name.take());
        o.ptr_str("storageClassName", s.storage_class_name.take());
        o.ptr_str("volumeMode", s.volume_mode.take());
        o.msg("dataSource", s.data_source.take(), |mut r| {
            let mut o = Obj::new();
            o.ptr_str("apiGroup", r.api_group.take());
            o.ptr_str("kind", r.kind.take());
            o.ptr_str("name", r.name.take());
            o.done(r, "TypedLocalObjectReference")
        })?;
        o.msg("dataSourceRef", s.data_source_ref.take(), |mut r| {
            let mut o = Obj::new();
            o.ptr_str("apiGroup", r.api_group.take());
            o.ptr_str("kind", r.kind.take());
            o.ptr_str("name", r.name.take());
            o.ptr_str("namespace", r.namespace.take());
            o.done(r, "TypedObjectReference")
        })?;
        o.ptr_str(
            "volumeAttributesClassName",
            s.volume_attributes_class_name.take(),
        );
        o.done(s, "PersistentVolumeClaimSpec")
    })?;
    m.status.take();
    o.done(m, "PersistentVolumeClaim")
}

fn node(mut m: core::Node) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.str("podCIDR", s.pod_cidr.take());
        o.strs("podCIDRs", take(&mut s.pod_cid_rs));
        o.str("providerID", s.provider_id.take());
        o.flag("unschedulable", s.unschedulable.take());
        o.msgs("taints", take(&mut s.taints), |mut t| {
            let mut o = Obj::new();
            o.ptr_str("key", t.key.take());
            o.str("value", t.value.take());
            o.ptr_str("effect", t.effect.take());
            o.time("timeAdded", t.time_added.take())?;
            o.done(t, "Taint")
        })?;
        o.str("externalID", s.external_id.take());
        o.done(s, "NodeSpec")
    })?;
    m.status.take();
    o.done(m, "Node")
}

fn endpoints(mut m: core::Endpoints) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msgs("subsets", take(&mut m.subsets), |mut s| {
        let mut o = Obj::new();
        o.msgs("addresses", take(&mut s.addresses), endpoint_address)?;
        o.msgs(
            "notReadyAddresses",
            take(&mut s.not_ready_addresses),
            endpoint_address,
        )?;
        o.msgs("ports", take(&mut s.ports), |mut p| {
            let mut o = Obj::new();
            o.str("name", p.name.take());
            o.ptr_int("port", p.port.take());
            o.str("protocol", p.protocol.take());
            o.ptr_str("appProtocol", p.app_protocol.take());
            o.done(p, "EndpointPort")
        })?;
        o.done(s, "EndpointSubset")
    })?;
    o.done(m, "Endpoints")
}

fn endpoint_address(mut a: core::EndpointAddress) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("ip", a.ip.take());
    o.str("hostname", a.hostname.take());
    o.ptr_str("nodeName", a.node_name.take());
    o.msg("targetRef", a.target_ref.take(), object_reference)?;
    o.done(a, "EndpointAddress")
}

fn event(mut m: core::Event) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("involvedObject", m.involved_object.take(), object_reference)?;
    o.str("reason", m.reason.take());
    o.str("message", m.message.take());
    o.msg("source", m.source.take(), |mut s| {
        let mut o = Obj::new();
        o.str("component", s.component.take());
        o.str("host", s.host.take());
        o.done(s, "EventSource")
    })?;
    o.time("firstTimestamp", m.first_timestamp.take())?;
    o.time("lastTimestamp", m.last_timestamp.take())?;
    o.int("count", m.count.take());
    o.str("type", m.r#type.take());
    o.micro_time("eventTime", m.event_time.take())?;
    o.msg("series", m.series.take(), |mut s| {
        let mut o = Obj::new();
        o.int("count", s.count.take());
        o.micro_time("lastObservedTime", s.last_observed_time.take())?;
        o.done(s, "EventSeries")
    })?;
    o.str("action", m.action.take());
    o.msg("related", m.related.take(), object_reference)?;
    o.str("reportingComponent", m.reporting_component.take());
    o.str("reportingInstance", m.reporting_instance.take());
    o.done(m, "Event")
}

fn lease(mut m: coordination::Lease) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.ptr_str("holderIdentity", s.holder_identity.take());
        o.ptr_int("leaseDurationSeconds", s.lease_duration_seconds.take());
        o.micro_time("acquireTime", s.acquire_time.take())?;
        o.micro_time("renewTime", s.renew_time.take())?;
        o.ptr_int("leaseTransitions", s.lease_transitions.take());
        o.ptr_str("strategy", s.strategy.take());
        o.ptr_str("preferredHolder", s.preferred_holder.take());
        o.done(s, "LeaseSpec")
    })?;
    o.done(m, "Lease")
}

#[cfg(test)]
mod tests {
    use super::super::{decode as decode_body, encode};
    use super::*;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::MicroTime;
    use serde_json::json;

    #[test]
    fn lease_times_keep_microseconds() {
        let l = coordination::Lease {
            spec: Some(coordination::LeaseSpec {
                holder_identity: Some("op-1".into()),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime {
                    seconds: Some(1_700_000_000),
                    nanos: Some(123_456_789),
                }),
                lease_transitions: Some(0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = decode_body(&encode("coordination.k8s.io/v1", "Lease", &l)).unwrap();
        assert_eq!(
            v["spec"],
            json!({"holderIdentity": "op-1", "leaseDurationSeconds": 15,
                   "renewTime": "2023-11-14T22:13:20.123456Z", "leaseTransitions": 0})
        );
    }
}
