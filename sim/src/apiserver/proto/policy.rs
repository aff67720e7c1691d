//! autoscaling HorizontalPodAutoscaler (`kubectl autoscale`), policy/v1 PodDisruptionBudget and
//! Eviction (`kubectl drain`), scheduling.k8s.io/v1 PriorityClass.

use std::mem::take;

use k8s_pb::api::autoscaling::{v1 as hpa_v1, v2 as hpa_v2};
use k8s_pb::api::policy::v1 as policy;
use k8s_pb::api::scheduling::v1 as scheduling;
use serde_json::Value;

use super::ProtoError;
use super::core::typed;
use super::json::{Obj, delete_options, label_selector, object_meta};

pub fn decode(api_version: &str, kind: &str, raw: &[u8]) -> Result<Option<Value>, ProtoError> {
    match (api_version, kind) {
        ("autoscaling/v1", "HorizontalPodAutoscaler") => typed(raw, hpa_v1),
        ("autoscaling/v2", "HorizontalPodAutoscaler") => typed(raw, hpa_v2),
        ("policy/v1", "PodDisruptionBudget") => typed(raw, pod_disruption_budget),
        ("policy/v1", "Eviction") => typed(raw, |mut m: policy::Eviction| {
            let mut o = Obj::new();
            o.msg("metadata", m.metadata.take(), object_meta)?;
            o.msg("deleteOptions", m.delete_options.take(), delete_options)?;
            o.done(m, "Eviction")
        }),
        ("scheduling.k8s.io/v1", "PriorityClass") => typed(raw, priority_class),
        _ => Ok(None),
    }
}

fn target_ref(mut r: hpa_v1::CrossVersionObjectReference) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("kind", r.kind.take());
    o.ptr_str("name", r.name.take());
    o.str("apiVersion", r.api_version.take());
    o.done(r, "CrossVersionObjectReference")
}

fn hpa_v1(mut m: hpa_v1::HorizontalPodAutoscaler) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.msg("scaleTargetRef", s.scale_target_ref.take(), target_ref)?;
        o.ptr_int("minReplicas", s.min_replicas.take());
        o.ptr_int("maxReplicas", s.max_replicas.take());
        o.ptr_int(
            "targetCPUUtilizationPercentage",
            s.target_cpu_utilization_percentage.take(),
        );
        o.done(s, "HorizontalPodAutoscalerSpec")
    })?;
    m.status.take();
    o.done(m, "HorizontalPodAutoscaler")
}

/// The v2 spec with resource metrics (what CPU and memory targets use); other metric sources
/// and `behavior` are refused by [`Obj::done`].
fn hpa_v2(mut m: hpa_v2::HorizontalPodAutoscaler) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.msg("scaleTargetRef", s.scale_target_ref.take(), |mut r| {
            let mut o = Obj::new();
            o.ptr_str("kind", r.kind.take());
            o.ptr_str("name", r.name.take());
            o.str("apiVersion", r.api_version.take());
            o.done(r, "CrossVersionObjectReference")
        })?;
        o.ptr_int("minReplicas", s.min_replicas.take());
        o.ptr_int("maxReplicas", s.max_replicas.take());
        o.msgs("metrics", take(&mut s.metrics), |mut spec| {
            let mut o = Obj::new();
            o.ptr_str("type", spec.r#type.take());
            o.msg("resource", spec.resource.take(), |mut r| {
                let mut o = Obj::new();
                o.ptr_str("name", r.name.take());
                o.msg("target", r.target.take(), |mut t| {
                    let mut o = Obj::new();
                    o.ptr_str("type", t.r#type.take());
                    o.quantity("value", t.value.take());
                    o.quantity("averageValue", t.average_value.take());
                    o.ptr_int("averageUtilization", t.average_utilization.take());
                    o.done(t, "MetricTarget")
                })?;
                o.done(r, "ResourceMetricSource")
            })?;
            o.done(spec, "MetricSpec")
        })?;
        o.done(s, "HorizontalPodAutoscalerSpec")
    })?;
    m.status.take();
    o.done(m, "HorizontalPodAutoscaler")
}

fn pod_disruption_budget(mut m: policy::PodDisruptionBudget) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.int_or_string("minAvailable", s.min_available.take());
        o.msg("selector", s.selector.take(), label_selector)?;
        o.int_or_string("maxUnavailable", s.max_unavailable.take());
        o.ptr_str(
            "unhealthyPodEvictionPolicy",
            s.unhealthy_pod_eviction_policy.take(),
        );
        o.done(s, "PodDisruptionBudgetSpec")
    })?;
    m.status.take();
    o.done(m, "PodDisruptionBudget")
}

fn priority_class(mut m: scheduling::PriorityClass) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    // `value` has no omitempty in Go: a priority of 0 is written.
    o.ptr_int("value", m.value.take());
    o.flag("globalDefault", m.global_default.take());
    o.str("description", m.description.take());
    o.ptr_str("preemptionPolicy", m.preemption_policy.take());
    o.done(m, "PriorityClass")
}

#[cfg(test)]
mod tests {
    use super::super::{decode as decode_body, encode};
    use super::*;
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    use serde_json::json;

    #[test]
    fn a_pdb_keeps_its_int_or_string_bounds() {
        let pdb = policy::PodDisruptionBudget {
            spec: Some(policy::PodDisruptionBudgetSpec {
                min_available: Some(IntOrString {
                    r#type: Some(1),
                    int_val: Some(0),
                    str_val: Some("50%".into()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = decode_body(&encode("policy/v1", "PodDisruptionBudget", &pdb)).unwrap();
        assert_eq!(v["spec"], json!({"minAvailable": "50%"}));
    }

    #[test]
    fn a_priority_class_of_zero_keeps_its_value() {
        let pc = scheduling::PriorityClass {
            value: Some(0),
            global_default: Some(false),
            description: Some(String::new()),
            ..Default::default()
        };
        let v = decode_body(&encode("scheduling.k8s.io/v1", "PriorityClass", &pc)).unwrap();
        assert_eq!(v["value"], 0);
        assert!(v.get("globalDefault").is_none());
    }
}
