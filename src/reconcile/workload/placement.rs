//! The shared `podTemplate` block (api.md, "Pod template") put on a rendered pod template, and
//! the finishing every rendered Pod of every kind goes through: [`finish_pod`] places it, then
//! restricts it (`restrict_pod`). The Deployment's workload hash is stamped after it,
//! so a change of the block is a new hash, hence one rollout.
//!
//! What the operator renders wins: its labels and annotations over the user's of the same key,
//! its own Pod affinity terms (a Job that must run beside the workload's Pod) next to the
//! user's, its tolerations next to the user's.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, PodAffinity, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::security::restrict_pod;
use crate::api::PodTemplate;
use crate::reconcile::children::{COMPONENT_LABEL, INSTANCE_LABEL, MANAGED_BY_LABEL};

/// Places the template with the object's `podTemplate` block (if any), then gives every
/// container the restricted security context (`writable_root`: see [`restrict_pod`]). Every
/// kind's Deployment and Job templates are finished here, so the block means the same on all.
pub fn finish_pod(
    template: &mut PodTemplateSpec,
    block: Option<&PodTemplate>,
    writable_root: &[&str],
) {
    if let Some(block) = block {
        place_pod(template, block);
    }
    if let Some(spec) = template.spec.as_mut() {
        restrict_pod(spec, writable_root);
    }
}

/// Adds the block's placement, pull secrets and metadata to the template, keeping what the
/// renderer set wherever both set the same thing.
fn place_pod(template: &mut PodTemplateSpec, block: &PodTemplate) {
    let meta = template.metadata.get_or_insert_with(Default::default);
    add_missing(&mut meta.labels, &block.labels);
    add_missing(&mut meta.annotations, &block.annotations);
    // The workload's own selector labels, for spread constraints that name no selector.
    let own: BTreeMap<String, String> = meta
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| [MANAGED_BY_LABEL, INSTANCE_LABEL, COMPONENT_LABEL].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let Some(spec) = template.spec.as_mut() else {
        return;
    };
    if !block.node_selector.is_empty() {
        add_missing(&mut spec.node_selector, &block.node_selector);
    }
    if !block.tolerations.is_empty() {
        spec.tolerations
            .get_or_insert_with(Vec::new)
            .extend(block.tolerations.iter().cloned());
    }
    if let Some(affinity) = &block.affinity {
        spec.affinity = Some(merge_affinity(spec.affinity.take(), affinity));
    }
    if !block.topology_spread_constraints.is_empty() {
        let constraints = block.topology_spread_constraints.iter().map(|c| {
            let mut c = c.clone();
            if c.label_selector.is_none() {
                c.label_selector = Some(LabelSelector {
                    match_labels: Some(own.clone()),
                    ..LabelSelector::default()
                });
            }
            c
        });
        spec.topology_spread_constraints
            .get_or_insert_with(Vec::new)
            .extend(constraints);
    }
    if spec.priority_class_name.is_none() {
        spec.priority_class_name
            .clone_from(&block.priority_class_name);
    }
    if !block.image_pull_secrets.is_empty() {
        spec.image_pull_secrets
            .get_or_insert_with(Vec::new)
            .extend(block.image_pull_secrets.iter().cloned());
    }
}

/// `a` then `b`, `None` when both are empty.
fn joined<T>(a: Option<Vec<T>>, b: Option<Vec<T>>) -> Option<Vec<T>> {
    let all: Vec<T> = a
        .into_iter()
        .flatten()
        .chain(b.into_iter().flatten())
        .collect();
    (!all.is_empty()).then_some(all)
}

/// `extra`'s entries whose key `map` does not hold yet.
fn add_missing(map: &mut Option<BTreeMap<String, String>>, extra: &BTreeMap<String, String>) {
    if extra.is_empty() {
        return;
    }
    let map = map.get_or_insert_with(BTreeMap::new);
    for (k, v) in extra {
        map.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// The user's affinity with the renderer's Pod affinity terms kept (required and preferred,
/// the renderer's first); the renderer sets no node affinity nor anti-affinity.
fn merge_affinity(rendered: Option<Affinity>, user: &Affinity) -> Affinity {
    let mut out = user.clone();
    let Some(own) = rendered.and_then(|a| a.pod_affinity) else {
        return out;
    };
    let theirs = out.pod_affinity.take().unwrap_or_default();
    out.pod_affinity = Some(PodAffinity {
        required_during_scheduling_ignored_during_execution: joined(
            own.required_during_scheduling_ignored_during_execution,
            theirs.required_during_scheduling_ignored_during_execution,
        ),
        preferred_during_scheduling_ignored_during_execution: joined(
            own.preferred_during_scheduling_ignored_during_execution,
            theirs.preferred_during_scheduling_ignored_during_execution,
        ),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block(value: serde_json::Value) -> PodTemplate {
        serde_json::from_value(value).unwrap()
    }

    fn template(value: serde_json::Value) -> PodTemplateSpec {
        serde_json::from_value(value).unwrap()
    }

    fn rendered() -> PodTemplateSpec {
        template(json!({
            "metadata": {
                "labels": {"app.kubernetes.io/managed-by": "pgtoolbox-operator",
                    "app.kubernetes.io/instance": "p", "app.kubernetes.io/component": "pgadmin",
                    "app.kubernetes.io/name": "pgadmin"},
                "annotations": {"pgtoolbox.fyannk.dev/forwarded-for-trust": "abc"},
            },
            "spec": {"containers": [{"name": "app"}]},
        }))
    }

    #[test]
    fn every_field_of_the_block_lands_on_the_pod() {
        let mut t = rendered();
        let b = block(json!({
            "nodeSelector": {"pool": "tools"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"team": "a"}}}],
            "priorityClassName": "tools-high",
            "imagePullSecrets": [{"name": "registry"}],
            "labels": {"team": "a"},
            "annotations": {"example.com/owner": "dba"},
        }));
        finish_pod(&mut t, Some(&b), &[]);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["spec"]["nodeSelector"], json!({"pool": "tools"}));
        assert_eq!(v["spec"]["tolerations"][0]["key"], "dedicated");
        assert_eq!(
            v["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchExpressions"][0]["key"],
            "zone"
        );
        let spread = &v["spec"]["topologySpreadConstraints"];
        // No selector: the workload's own Pods.
        assert_eq!(
            spread[0]["labelSelector"],
            json!({"matchLabels": {"app.kubernetes.io/managed-by": "pgtoolbox-operator",
                "app.kubernetes.io/instance": "p", "app.kubernetes.io/component": "pgadmin"}})
        );
        assert_eq!(
            spread[1]["labelSelector"],
            json!({"matchLabels": {"team": "a"}})
        );
        assert_eq!(v["spec"]["priorityClassName"], "tools-high");
        assert_eq!(v["spec"]["imagePullSecrets"], json!([{"name": "registry"}]));
        assert_eq!(v["metadata"]["labels"]["team"], "a");
        assert_eq!(v["metadata"]["annotations"]["example.com/owner"], "dba");
        // Restricted as before.
        assert_eq!(
            v["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"],
            false
        );
    }

    #[test]
    fn the_operators_labels_and_annotations_win() {
        let mut t = rendered();
        let b = block(json!({
            "labels": {"app.kubernetes.io/instance": "someone-else", "app.kubernetes.io/component": "x"},
            "annotations": {"pgtoolbox.fyannk.dev/forwarded-for-trust": "forged"},
        }));
        finish_pod(&mut t, Some(&b), &[]);
        let meta = t.metadata.unwrap();
        let labels = meta.labels.unwrap();
        assert_eq!(labels["app.kubernetes.io/instance"], "p");
        assert_eq!(labels["app.kubernetes.io/component"], "pgadmin");
        assert_eq!(
            meta.annotations.unwrap()["pgtoolbox.fyannk.dev/forwarded-for-trust"],
            "abc"
        );
    }

    #[test]
    fn a_jobs_own_pod_affinity_is_kept_beside_the_users() {
        let own = json!({"labelSelector": {"matchLabels": {"app.kubernetes.io/component": "pgadmin"}},
            "topologyKey": "kubernetes.io/hostname"});
        let mut t = rendered();
        t.spec.as_mut().unwrap().affinity = Some(
            serde_json::from_value(json!({"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [own]}}))
            .unwrap(),
        );
        let theirs =
            json!({"labelSelector": {"matchLabels": {"cache": "yes"}}, "topologyKey": "zone"});
        let b = block(json!({"affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [theirs]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}}));
        finish_pod(&mut t, Some(&b), &[]);
        let v = serde_json::to_value(t.spec.unwrap().affinity).unwrap();
        assert_eq!(
            v["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
            json!([own, theirs])
        );
        assert_eq!(
            v["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
            10
        );
    }

    #[test]
    fn without_a_block_the_template_is_only_restricted() {
        let mut placed = rendered();
        finish_pod(&mut placed, None, &[]);
        let mut empty = rendered();
        finish_pod(&mut empty, Some(&PodTemplate::default()), &[]);
        let mut restricted = rendered();
        restrict_pod(restricted.spec.as_mut().unwrap(), &[]);
        assert_eq!(placed, restricted);
        assert_eq!(empty, restricted);
    }

    #[test]
    fn a_changed_block_is_a_new_workload_hash() {
        use super::super::hash::workload_hash;
        let hash = |b: Option<PodTemplate>| {
            let mut t = rendered();
            finish_pod(&mut t, b.as_ref(), &[]);
            workload_hash(&t, &[])
        };
        let none = hash(None);
        let a = hash(Some(block(json!({"nodeSelector": {"pool": "a"}}))));
        let b = hash(Some(block(json!({"nodeSelector": {"pool": "b"}}))));
        assert_ne!(none, a);
        assert_ne!(a, b);
        assert_eq!(a, hash(Some(block(json!({"nodeSelector": {"pool": "a"}})))));
    }
}
