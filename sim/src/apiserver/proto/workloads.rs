//! apps, batch, rbac, authorization and autoscaling kinds.

use std::mem::take;

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::authorization::v1 as authz;
use k8s_pb::api::autoscaling::v1 as autoscaling;
use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::rbac::v1 as rbac;
use serde_json::Value;

use super::ProtoError;
use super::cluster::persistent_volume_claim;
use super::core::typed;
use super::json::{Obj, label_selector, object_meta};
use super::pod::pod_template_spec;

pub fn decode(api_version: &str, kind: &str, raw: &[u8]) -> Result<Option<Value>, ProtoError> {
    match (api_version, kind) {
        ("apps/v1", "Deployment") => typed(raw, deployment),
        ("apps/v1", "ReplicaSet") => typed(raw, replica_set),
        ("apps/v1", "StatefulSet") => typed(raw, stateful_set),
        ("apps/v1", "DaemonSet") => typed(raw, daemon_set),
        ("batch/v1", "Job") => typed(raw, job),
        ("batch/v1", "CronJob") => typed(raw, cron_job),
        ("rbac.authorization.k8s.io/v1", "Role") => typed(raw, role),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => typed(raw, cluster_role),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => typed(raw, role_binding),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => typed(raw, cluster_role_binding),
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => typed(raw, access_review),
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => typed(raw, rules_review),
        ("autoscaling/v1", "Scale") => typed(raw, scale),
        _ => Ok(None),
    }
}

fn deployment(mut m: apps::Deployment) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.ptr_int("replicas", s.replicas.take());
        o.msg("selector", s.selector.take(), label_selector)?;
        o.msg("template", s.template.take(), pod_template_spec)?;
        o.msg("strategy", s.strategy.take(), |mut st| {
            let mut o = Obj::new();
            o.str("type", st.r#type.take());
            o.msg("rollingUpdate", st.rolling_update.take(), |mut r| {
                let mut o = Obj::new();
                o.int_or_string("maxUnavailable", r.max_unavailable.take());
                o.int_or_string("maxSurge", r.max_surge.take());
                o.done(r, "RollingUpdateDeployment")
            })?;
            o.done(st, "DeploymentStrategy")
        })?;
        o.int("minReadySeconds", s.min_ready_seconds.take());
        o.ptr_int("revisionHistoryLimit", s.revision_history_limit.take());
        o.flag("paused", s.paused.take());
        o.ptr_int(
            "progressDeadlineSeconds",
            s.progress_deadline_seconds.take(),
        );
        o.done(s, "DeploymentSpec")
    })?;
    // The server owns status; kubectl sends an empty one.
    m.status.take();
    o.done(m, "Deployment")
}

fn replica_set(mut m: apps::ReplicaSet) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.ptr_int("replicas", s.replicas.take());
        o.int("minReadySeconds", s.min_ready_seconds.take());
        o.msg("selector", s.selector.take(), label_selector)?;
        o.msg("template", s.template.take(), pod_template_spec)?;
        o.done(s, "ReplicaSetSpec")
    })?;
    m.status.take();
    o.done(m, "ReplicaSet")
}

fn stateful_set(mut m: apps::StatefulSet) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.ptr_int("replicas", s.replicas.take());
        o.msg("selector", s.selector.take(), label_selector)?;
        o.msg("template", s.template.take(), pod_template_spec)?;
        o.msgs(
            "volumeClaimTemplates",
            take(&mut s.volume_claim_templates),
            persistent_volume_claim,
        )?;
        o.str("serviceName", s.service_name.take());
        o.str("podManagementPolicy", s.pod_management_policy.take());
        o.msg("updateStrategy", s.update_strategy.take(), |mut u| {
            let mut o = Obj::new();
            o.str("type", u.r#type.take());
            o.msg("rollingUpdate", u.rolling_update.take(), |mut r| {
                let mut o = Obj::new();
                o.ptr_int("partition", r.partition.take());
                o.int_or_string("maxUnavailable", r.max_unavailable.take());
                o.done(r, "RollingUpdateStatefulSetStrategy")
            })?;
            o.done(u, "StatefulSetUpdateStrategy")
        })?;
        o.ptr_int("revisionHistoryLimit", s.revision_history_limit.take());
        o.int("minReadySeconds", s.min_ready_seconds.take());
        o.msg(
            "persistentVolumeClaimRetentionPolicy",
            s.persistent_volume_claim_retention_policy.take(),
            |mut p| {
                let mut o = Obj::new();
                o.str("whenDeleted", p.when_deleted.take());
                o.str("whenScaled", p.when_scaled.take());
                o.done(p, "StatefulSetPersistentVolumeClaimRetentionPolicy")
            },
        )?;
        o.msg("ordinals", s.ordinals.take(), |mut x| {
            let mut o = Obj::new();
            o.int("start", x.start.take());
            o.done(x, "StatefulSetOrdinals")
        })?;
        o.done(s, "StatefulSetSpec")
    })?;
    m.status.take();
    o.done(m, "StatefulSet")
}

fn daemon_set(mut m: apps::DaemonSet) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.msg("selector", s.selector.take(), label_selector)?;
        o.msg("template", s.template.take(), pod_template_spec)?;
        o.msg("updateStrategy", s.update_strategy.take(), |mut u| {
            let mut o = Obj::new();
            o.str("type", u.r#type.take());
            o.msg("rollingUpdate", u.rolling_update.take(), |mut r| {
                let mut o = Obj::new();
                o.int_or_string("maxUnavailable", r.max_unavailable.take());
                o.int_or_string("maxSurge", r.max_surge.take());
                o.done(r, "RollingUpdateDaemonSet")
            })?;
            o.done(u, "DaemonSetUpdateStrategy")
        })?;
        o.int("minReadySeconds", s.min_ready_seconds.take());
        o.ptr_int("revisionHistoryLimit", s.revision_history_limit.take());
        o.done(s, "DaemonSetSpec")
    })?;
    m.status.take();
    o.done(m, "DaemonSet")
}

fn job_spec(mut s: batch::JobSpec) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_int("parallelism", s.parallelism.take());
    o.ptr_int("completions", s.completions.take());
    o.ptr_int("activeDeadlineSeconds", s.active_deadline_seconds.take());
    o.ptr_int("backoffLimit", s.backoff_limit.take());
    o.ptr_int("backoffLimitPerIndex", s.backoff_limit_per_index.take());
    o.ptr_int("maxFailedIndexes", s.max_failed_indexes.take());
    o.msg("selector", s.selector.take(), label_selector)?;
    o.ptr_bool("manualSelector", s.manual_selector.take());
    o.msg("template", s.template.take(), pod_template_spec)?;
    o.ptr_int(
        "ttlSecondsAfterFinished",
        s.ttl_seconds_after_finished.take(),
    );
    o.ptr_str("completionMode", s.completion_mode.take());
    o.ptr_bool("suspend", s.suspend.take());
    o.ptr_str("podReplacementPolicy", s.pod_replacement_policy.take());
    o.ptr_str("managedBy", s.managed_by.take());
    o.done(s, "JobSpec")
}

fn job(mut m: batch::Job) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), job_spec)?;
    m.status.take();
    o.done(m, "Job")
}

fn cron_job(mut m: batch::CronJob) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.str("schedule", s.schedule.take());
        o.ptr_str("timeZone", s.time_zone.take());
        o.ptr_int(
            "startingDeadlineSeconds",
            s.starting_deadline_seconds.take(),
        );
        o.str("concurrencyPolicy", s.concurrency_policy.take());
        o.ptr_bool("suspend", s.suspend.take());
        o.msg("jobTemplate", s.job_template.take(), |mut t| {
            let mut o = Obj::new();
            o.msg("metadata", t.metadata.take(), object_meta)?;
            o.msg("spec", t.spec.take(), job_spec)?;
            o.done(t, "JobTemplateSpec")
        })?;
        o.ptr_int(
            "successfulJobsHistoryLimit",
            s.successful_jobs_history_limit.take(),
        );
        o.ptr_int("failedJobsHistoryLimit", s.failed_jobs_history_limit.take());
        o.done(s, "CronJobSpec")
    })?;
    m.status.take();
    o.done(m, "CronJob")
}

fn policy_rule(mut r: rbac::PolicyRule) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    // `verbs` has no omitempty in Go: an empty list is written as null, which is what JSON
    // clients send too, so it is left out like the others.
    o.strs("verbs", take(&mut r.verbs));
    o.strs("apiGroups", take(&mut r.api_groups));
    o.strs("resources", take(&mut r.resources));
    o.strs("resourceNames", take(&mut r.resource_names));
    o.strs("nonResourceURLs", take(&mut r.non_resource_ur_ls));
    o.done(r, "PolicyRule")
}

fn role(mut m: rbac::Role) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msgs("rules", take(&mut m.rules), policy_rule)?;
    o.done(m, "Role")
}

fn cluster_role(mut m: rbac::ClusterRole) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msgs("rules", take(&mut m.rules), policy_rule)?;
    o.msg("aggregationRule", m.aggregation_rule.take(), |mut a| {
        let mut o = Obj::new();
        o.msgs(
            "clusterRoleSelectors",
            take(&mut a.cluster_role_selectors),
            label_selector,
        )?;
        o.done(a, "AggregationRule")
    })?;
    o.done(m, "ClusterRole")
}

fn subject(mut s: rbac::Subject) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("kind", s.kind.take());
    o.str("apiGroup", s.api_group.take());
    o.ptr_str("name", s.name.take());
    o.str("namespace", s.namespace.take());
    o.done(s, "Subject")
}

fn role_ref(mut r: rbac::RoleRef) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("apiGroup", r.api_group.take());
    o.ptr_str("kind", r.kind.take());
    o.ptr_str("name", r.name.take());
    o.done(r, "RoleRef")
}

fn role_binding(mut m: rbac::RoleBinding) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msgs("subjects", take(&mut m.subjects), subject)?;
    o.msg("roleRef", m.role_ref.take(), role_ref)?;
    o.done(m, "RoleBinding")
}

fn cluster_role_binding(mut m: rbac::ClusterRoleBinding) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msgs("subjects", take(&mut m.subjects), subject)?;
    o.msg("roleRef", m.role_ref.take(), role_ref)?;
    o.done(m, "ClusterRoleBinding")
}

fn access_review(mut m: authz::SelfSubjectAccessReview) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.msg(
            "resourceAttributes",
            s.resource_attributes.take(),
            |mut a| {
                let mut o = Obj::new();
                o.str("namespace", a.namespace.take());
                o.str("verb", a.verb.take());
                o.str("group", a.group.take());
                o.str("version", a.version.take());
                o.str("resource", a.resource.take());
                o.str("subresource", a.subresource.take());
                o.str("name", a.name.take());
                o.msg("fieldSelector", a.field_selector.take(), |mut f| {
                    let mut o = Obj::new();
                    o.str("rawSelector", f.raw_selector.take());
                    o.msgs("requirements", take(&mut f.requirements), |mut r| {
                        let mut o = Obj::new();
                        o.str("key", r.key.take());
                        o.str("operator", r.operator.take());
                        o.strs("values", take(&mut r.values));
                        o.done(r, "FieldSelectorRequirement")
                    })?;
                    o.done(f, "FieldSelectorAttributes")
                })?;
                o.msg("labelSelector", a.label_selector.take(), |mut f| {
                    let mut o = Obj::new();
                    o.str("rawSelector", f.raw_selector.take());
                    o.msgs("requirements", take(&mut f.requirements), |mut r| {
                        let mut o = Obj::new();
                        o.str("key", r.key.take());
                        o.str("operator", r.operator.take());
                        o.strs("values", take(&mut r.values));
                        o.done(r, "LabelSelectorRequirement")
                    })?;
                    o.done(f, "LabelSelectorAttributes")
                })?;
                o.done(a, "ResourceAttributes")
            },
        )?;
        o.msg(
            "nonResourceAttributes",
            s.non_resource_attributes.take(),
            |mut a| {
                let mut o = Obj::new();
                o.str("path", a.path.take());
                o.str("verb", a.verb.take());
                o.done(a, "NonResourceAttributes")
            },
        )?;
        o.done(s, "SelfSubjectAccessReviewSpec")
    })?;
    // The status is the server's answer.
    m.status.take();
    o.done(m, "SelfSubjectAccessReview")
}

fn rules_review(mut m: authz::SelfSubjectRulesReview) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.str("namespace", s.namespace.take());
        o.done(s, "SelfSubjectRulesReviewSpec")
    })?;
    m.status.take();
    o.done(m, "SelfSubjectRulesReview")
}

fn scale(mut m: autoscaling::Scale) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), |mut s| {
        let mut o = Obj::new();
        o.int("replicas", s.replicas.take());
        o.done(s, "ScaleSpec")
    })?;
    m.status.take();
    o.done(m, "Scale")
}

#[cfg(test)]
mod tests {
    use super::super::{decode as decode_body, encode};
    use super::*;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    use serde_json::json;

    fn meta(name: &str) -> Option<ObjectMeta> {
        Some(ObjectMeta {
            name: Some(name.into()),
            labels: [("app".to_string(), name.to_string())].into(),
            ..Default::default()
        })
    }

    #[test]
    fn a_deployment_keeps_replicas_zero_and_int_or_string() {
        let d = apps::Deployment {
            metadata: meta("web"),
            spec: Some(apps::DeploymentSpec {
                replicas: Some(0),
                selector: Some(LabelSelector {
                    match_labels: [("app".to_string(), "web".to_string())].into(),
                    ..Default::default()
                }),
                template: Some(core::PodTemplateSpec {
                    metadata: meta("web"),
                    spec: Some(core::PodSpec {
                        containers: vec![core::Container {
                            name: Some("nginx".into()),
                            image: Some("nginx".into()),
                            resources: Some(core::ResourceRequirements::default()),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                }),
                strategy: Some(apps::DeploymentStrategy {
                    r#type: Some("RollingUpdate".into()),
                    rolling_update: Some(apps::RollingUpdateDeployment {
                        max_unavailable: Some(IntOrString {
                            r#type: Some(1),
                            int_val: Some(0),
                            str_val: Some("25%".into()),
                        }),
                        max_surge: Some(IntOrString {
                            r#type: Some(0),
                            int_val: Some(1),
                            str_val: Some(String::new()),
                        }),
                    }),
                }),
                min_ready_seconds: Some(0),
                paused: Some(false),
                ..Default::default()
            }),
            status: Some(apps::DeploymentStatus::default()),
        };
        let v = decode_body(&encode("apps/v1", "Deployment", &d)).unwrap();
        assert_eq!(
            v["spec"],
            json!({
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"name": "web", "labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
                "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
            })
        );
        assert_eq!(v["apiVersion"], "apps/v1");
    }

    #[test]
    fn a_stateful_set_keeps_probes_security_contexts_and_claim_templates() {
        use k8s_pb::apimachinery::pkg::api::resource::Quantity;
        let probe = core::Probe {
            handler: Some(core::ProbeHandler {
                http_get: Some(core::HttpGetAction {
                    path: Some("/healthz".into()),
                    port: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: Some("http".into()),
                    }),
                    host: Some(String::new()),
                    scheme: Some("HTTP".into()),
                    http_headers: vec![],
                }),
                ..Default::default()
            }),
            period_seconds: Some(5),
            timeout_seconds: Some(0),
            ..Default::default()
        };
        let container = core::Container {
            name: Some("pg".into()),
            image: Some("postgres:17".into()),
            readiness_probe: Some(probe),
            security_context: Some(core::SecurityContext {
                run_as_non_root: Some(true),
                capabilities: Some(core::Capabilities {
                    drop: vec!["ALL".into()],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let claim = core::PersistentVolumeClaim {
            metadata: meta("data"),
            spec: Some(core::PersistentVolumeClaimSpec {
                access_modes: vec!["ReadWriteOnce".into()],
                resources: Some(core::VolumeResourceRequirements {
                    requests: [(
                        "storage".to_string(),
                        Quantity {
                            string: Some("1Gi".into()),
                        },
                    )]
                    .into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: Some(core::PersistentVolumeClaimStatus::default()),
        };
        let sts = apps::StatefulSet {
            metadata: meta("pg"),
            spec: Some(apps::StatefulSetSpec {
                replicas: Some(1),
                template: Some(core::PodTemplateSpec {
                    metadata: None,
                    spec: Some(core::PodSpec {
                        containers: vec![container],
                        security_context: Some(core::PodSecurityContext {
                            fs_group: Some(26),
                            supplemental_groups: vec![1000, 2000],
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                }),
                volume_claim_templates: vec![claim],
                service_name: Some("pg".into()),
                ..Default::default()
            }),
            status: None,
        };
        let v = decode_body(&encode("apps/v1", "StatefulSet", &sts)).unwrap();
        let pod = &v["spec"]["template"]["spec"];
        assert_eq!(
            pod["containers"][0]["readinessProbe"],
            json!({"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "periodSeconds": 5})
        );
        assert_eq!(
            pod["containers"][0]["securityContext"],
            json!({"runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}})
        );
        assert_eq!(
            pod["securityContext"],
            json!({"fsGroup": 26, "supplementalGroups": [1000, 2000]})
        );
        assert_eq!(
            v["spec"]["volumeClaimTemplates"],
            json!([{"metadata": {"name": "data", "labels": {"app": "data"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}])
        );
        assert_eq!(v["spec"]["serviceName"], "pg");
    }

    #[test]
    fn a_role_binding_keeps_its_subjects_and_role_ref() {
        let rb = rbac::RoleBinding {
            metadata: meta("read"),
            subjects: vec![rbac::Subject {
                kind: Some("ServiceAccount".into()),
                api_group: Some(String::new()),
                name: Some("bot".into()),
                namespace: Some("team".into()),
            }],
            role_ref: Some(rbac::RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: Some("Role".into()),
                name: Some("reader".into()),
            }),
        };
        let v = decode_body(&encode("rbac.authorization.k8s.io/v1", "RoleBinding", &rb)).unwrap();
        assert_eq!(
            v["subjects"],
            json!([{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}])
        );
        assert_eq!(
            v["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"})
        );
    }

    #[test]
    fn an_access_review_keeps_its_attributes_and_drops_status() {
        let r = authz::SelfSubjectAccessReview {
            metadata: Some(ObjectMeta::default()),
            spec: Some(authz::SelfSubjectAccessReviewSpec {
                resource_attributes: Some(authz::ResourceAttributes {
                    namespace: Some("default".into()),
                    verb: Some("create".into()),
                    group: Some(String::new()),
                    resource: Some("pods".into()),
                    ..Default::default()
                }),
                non_resource_attributes: None,
            }),
            status: Some(authz::SubjectAccessReviewStatus {
                allowed: Some(false),
                ..Default::default()
            }),
        };
        let v = decode_body(&encode(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            &r,
        ))
        .unwrap();
        assert_eq!(
            v["spec"],
            json!({"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}})
        );
        assert!(v.get("status").is_none());
    }
}
