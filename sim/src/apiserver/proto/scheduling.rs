//! Where a Pod may run: affinity, topology spread, and the pod spec's small placement and DNS
//! fields.

use std::mem::take;

use k8s_pb::api::core::v1 as core;
use serde_json::Value;

use super::ProtoError;
use super::json::{Obj, label_selector};

fn node_selector_term(mut t: core::NodeSelectorTerm) -> Result<Value, ProtoError> {
    let requirement = |mut r: core::NodeSelectorRequirement| {
        let mut o = Obj::new();
        o.ptr_str("key", r.key.take());
        o.ptr_str("operator", r.operator.take());
        o.strs("values", take(&mut r.values));
        o.done(r, "NodeSelectorRequirement")
    };
    let mut o = Obj::new();
    o.msgs(
        "matchExpressions",
        take(&mut t.match_expressions),
        requirement,
    )?;
    o.msgs("matchFields", take(&mut t.match_fields), requirement)?;
    o.done(t, "NodeSelectorTerm")
}

fn pod_affinity_term(mut t: core::PodAffinityTerm) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("labelSelector", t.label_selector.take(), label_selector)?;
    o.strs("namespaces", take(&mut t.namespaces));
    o.ptr_str("topologyKey", t.topology_key.take());
    o.msg(
        "namespaceSelector",
        t.namespace_selector.take(),
        label_selector,
    )?;
    o.strs("matchLabelKeys", take(&mut t.match_label_keys));
    o.strs("mismatchLabelKeys", take(&mut t.mismatch_label_keys));
    o.done(t, "PodAffinityTerm")
}

fn weighted_pod_affinity_term(mut w: core::WeightedPodAffinityTerm) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_int("weight", w.weight.take());
    o.msg(
        "podAffinityTerm",
        w.pod_affinity_term.take(),
        pod_affinity_term,
    )?;
    o.done(w, "WeightedPodAffinityTerm")
}

pub fn affinity(mut a: core::Affinity) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("nodeAffinity", a.node_affinity.take(), |mut n| {
        let mut o = Obj::new();
        o.msg(
            "requiredDuringSchedulingIgnoredDuringExecution",
            n.required_during_scheduling_ignored_during_execution.take(),
            |mut sel| {
                let mut o = Obj::new();
                o.msgs(
                    "nodeSelectorTerms",
                    take(&mut sel.node_selector_terms),
                    node_selector_term,
                )?;
                o.done(sel, "NodeSelector")
            },
        )?;
        o.msgs(
            "preferredDuringSchedulingIgnoredDuringExecution",
            take(&mut n.preferred_during_scheduling_ignored_during_execution),
            |mut p| {
                let mut o = Obj::new();
                o.ptr_int("weight", p.weight.take());
                o.msg("preference", p.preference.take(), node_selector_term)?;
                o.done(p, "PreferredSchedulingTerm")
            },
        )?;
        o.done(n, "NodeAffinity")
    })?;
    o.msg("podAffinity", a.pod_affinity.take(), |mut p| {
        let mut o = Obj::new();
        o.msgs(
            "requiredDuringSchedulingIgnoredDuringExecution",
            take(&mut p.required_during_scheduling_ignored_during_execution),
            pod_affinity_term,
        )?;
        o.msgs(
            "preferredDuringSchedulingIgnoredDuringExecution",
            take(&mut p.preferred_during_scheduling_ignored_during_execution),
            weighted_pod_affinity_term,
        )?;
        o.done(p, "PodAffinity")
    })?;
    o.msg("podAntiAffinity", a.pod_anti_affinity.take(), |mut p| {
        let mut o = Obj::new();
        o.msgs(
            "requiredDuringSchedulingIgnoredDuringExecution",
            take(&mut p.required_during_scheduling_ignored_during_execution),
            pod_affinity_term,
        )?;
        o.msgs(
            "preferredDuringSchedulingIgnoredDuringExecution",
            take(&mut p.preferred_during_scheduling_ignored_during_execution),
            weighted_pod_affinity_term,
        )?;
        o.done(p, "PodAntiAffinity")
    })?;
    o.done(a, "Affinity")
}

/// Topology spread, host aliases, DNS config, readiness and scheduling gates, OS.
pub fn scheduling_fields(o: &mut Obj, s: &mut core::PodSpec) -> Result<(), ProtoError> {
    o.msgs(
        "topologySpreadConstraints",
        take(&mut s.topology_spread_constraints),
        |mut t| {
            let mut o = Obj::new();
            o.ptr_int("maxSkew", t.max_skew.take());
            o.ptr_str("topologyKey", t.topology_key.take());
            o.ptr_str("whenUnsatisfiable", t.when_unsatisfiable.take());
            o.msg("labelSelector", t.label_selector.take(), label_selector)?;
            o.ptr_int("minDomains", t.min_domains.take());
            o.ptr_str("nodeAffinityPolicy", t.node_affinity_policy.take());
            o.ptr_str("nodeTaintsPolicy", t.node_taints_policy.take());
            o.strs("matchLabelKeys", take(&mut t.match_label_keys));
            o.done(t, "TopologySpreadConstraint")
        },
    )?;
    o.msgs("hostAliases", take(&mut s.host_aliases), |mut h| {
        let mut o = Obj::new();
        o.ptr_str("ip", h.ip.take());
        o.strs("hostnames", take(&mut h.hostnames));
        o.done(h, "HostAlias")
    })?;
    o.msg("dnsConfig", s.dns_config.take(), |mut d| {
        let mut o = Obj::new();
        o.strs("nameservers", take(&mut d.nameservers));
        o.strs("searches", take(&mut d.searches));
        o.msgs("options", take(&mut d.options), |mut x| {
            let mut o = Obj::new();
            o.str("name", x.name.take());
            o.ptr_str("value", x.value.take());
            o.done(x, "PodDNSConfigOption")
        })?;
        o.done(d, "PodDNSConfig")
    })?;
    o.msgs("readinessGates", take(&mut s.readiness_gates), |mut g| {
        let mut o = Obj::new();
        o.ptr_str("conditionType", g.condition_type.take());
        o.done(g, "PodReadinessGate")
    })?;
    o.msgs("schedulingGates", take(&mut s.scheduling_gates), |mut g| {
        let mut o = Obj::new();
        o.ptr_str("name", g.name.take());
        o.done(g, "PodSchedulingGate")
    })?;
    o.msg("os", s.os.take(), |mut x| {
        let mut o = Obj::new();
        o.ptr_str("name", x.name.take());
        o.done(x, "PodOS")
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use serde_json::json;

    #[test]
    fn anti_affinity_and_spread_keep_their_shape() {
        let term = core::PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: [("app".to_string(), "pg".to_string())].into(),
                ..Default::default()
            }),
            topology_key: Some("kubernetes.io/hostname".into()),
            ..Default::default()
        };
        let a = core::Affinity {
            pod_anti_affinity: Some(core::PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: vec![
                    core::WeightedPodAffinityTerm {
                        weight: Some(100),
                        pod_affinity_term: Some(term),
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            affinity(a).unwrap(),
            json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "pg"}},
                    "topologyKey": "kubernetes.io/hostname"}}]}})
        );
        let mut spec = core::PodSpec {
            topology_spread_constraints: vec![core::TopologySpreadConstraint {
                max_skew: Some(1),
                topology_key: Some("zone".into()),
                when_unsatisfiable: Some("DoNotSchedule".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut o = Obj::new();
        scheduling_fields(&mut o, &mut spec).unwrap();
        assert_eq!(
            o.done(spec, "PodSpec").unwrap(),
            json!({"topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})
        );
    }
}
