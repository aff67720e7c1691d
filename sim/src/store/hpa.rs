//! HorizontalPodAutoscaler is stored in its autoscaling/v2 shape, as a real server stores it;
//! autoscaling/v1 (what `kubectl autoscale` writes) is converted on the way in and out. The v1
//! CPU target is the v2 `Resource` metric for `cpu` with an `Utilization` target.

use serde_json::{Map, Value, json};

use crate::store::resources::ResourceInfo;

pub fn is_v1(info: &ResourceInfo) -> bool {
    !info.custom
        && info.group == "autoscaling"
        && info.version == "v1"
        && info.plural == "horizontalpodautoscalers"
}

fn cpu_metric(kind: &str, percent: &Value) -> Value {
    let value = json!({"type": "Utilization", "averageUtilization": percent});
    let value = if kind == "current" {
        json!({"averageUtilization": percent})
    } else {
        value
    };
    json!({"type": "Resource", "resource": {"name": "cpu", kind: value}})
}

/// The CPU utilization of a v2 metric list, if it has one.
fn cpu_utilization(metrics: Option<&Value>, kind: &str) -> Option<Value> {
    metrics?.as_array()?.iter().find_map(|m| {
        let r = m.get("resource")?;
        (m.get("type")? == "Resource" && r.get("name")? == "cpu")
            .then(|| r.pointer(&format!("/{kind}/averageUtilization")).cloned())
            .flatten()
    })
}

fn object_at<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    obj.get_mut(key)?.as_object_mut()
}

/// A v1 body in the v2 storage shape.
pub fn v1_to_v2(mut obj: Value) -> Value {
    if let Some(spec) = object_at(&mut obj, "spec")
        && let Some(percent) = spec.remove("targetCPUUtilizationPercentage")
    {
        spec.insert("metrics".into(), json!([cpu_metric("target", &percent)]));
    }
    if let Some(status) = object_at(&mut obj, "status")
        && let Some(percent) = status.remove("currentCPUUtilizationPercentage")
    {
        status.insert(
            "currentMetrics".into(),
            json!([cpu_metric("current", &percent)]),
        );
    }
    obj["apiVersion"] = json!("autoscaling/v2");
    obj
}

/// A stored (v2) object as autoscaling/v1 shows it: only the CPU target survives.
pub fn v2_to_v1(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(spec) = object_at(&mut obj, "spec") {
        let cpu = cpu_utilization(spec.get("metrics"), "target");
        spec.remove("metrics");
        spec.remove("behavior");
        if let Some(percent) = cpu {
            spec.insert("targetCPUUtilizationPercentage".into(), percent);
        }
    }
    if let Some(status) = object_at(&mut obj, "status") {
        let cpu = cpu_utilization(status.get("currentMetrics"), "current");
        status.remove("currentMetrics");
        status.remove("conditions");
        if let Some(percent) = cpu {
            status.insert("currentCPUUtilizationPercentage".into(), percent);
        }
    }
    obj["apiVersion"] = json!("autoscaling/v1");
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_target_round_trips_through_v2() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
            "status": {"currentReplicas": 1, "currentCPUUtilizationPercentage": 20}});
        let stored = v1_to_v2(v1.clone());
        assert_eq!(
            stored["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}])
        );
        assert_eq!(
            stored["status"]["currentMetrics"][0]["resource"]["current"],
            json!({"averageUtilization": 20})
        );
        assert_eq!(stored["apiVersion"], "autoscaling/v2");
        assert_eq!(v2_to_v1(&stored), v1);
    }

    #[test]
    fn other_v2_metrics_are_not_shown_in_v1() {
        let v2 = json!({"spec": {"maxReplicas": 2, "metrics": [{"type": "Resource",
            "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}]}});
        assert_eq!(v2_to_v1(&v2)["spec"], json!({"maxReplicas": 2}));
    }
}
