//! core/v1 kinds and the pod template shared by the workload kinds.

use std::mem::take;

use k8s_pb::api::core::v1 as core;
use prost::Message;
use serde_json::Value;

use super::ProtoError;
use super::json::{Conv, Obj, object_meta};

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

pub fn local_object_reference(mut m: core::LocalObjectReference) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("name", m.name.take());
    o.done(m, "LocalObjectReference")
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

pub fn pod_template_spec(mut m: core::PodTemplateSpec) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), pod_spec)?;
    o.done(m, "PodTemplateSpec")
}

fn pod_spec(mut s: core::PodSpec) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msgs("volumes", take(&mut s.volumes), volume)?;
    o.msgs("initContainers", take(&mut s.init_containers), container)?;
    o.msgs("containers", take(&mut s.containers), container)?;
    o.str("restartPolicy", s.restart_policy.take());
    o.ptr_int(
        "terminationGracePeriodSeconds",
        s.termination_grace_period_seconds.take(),
    );
    o.ptr_int("activeDeadlineSeconds", s.active_deadline_seconds.take());
    o.str("dnsPolicy", s.dns_policy.take());
    o.str_map("nodeSelector", take(&mut s.node_selector));
    o.str("serviceAccountName", s.service_account_name.take());
    o.str("serviceAccount", s.service_account.take());
    o.ptr_bool(
        "automountServiceAccountToken",
        s.automount_service_account_token.take(),
    );
    o.str("nodeName", s.node_name.take());
    o.flag("hostNetwork", s.host_network.take());
    o.flag("hostPID", s.host_pid.take());
    o.flag("hostIPC", s.host_ipc.take());
    o.ptr_bool("shareProcessNamespace", s.share_process_namespace.take());
    o.msgs(
        "imagePullSecrets",
        take(&mut s.image_pull_secrets),
        local_object_reference,
    )?;
    o.str("hostname", s.hostname.take());
    o.str("subdomain", s.subdomain.take());
    o.str("schedulerName", s.scheduler_name.take());
    o.msgs("tolerations", take(&mut s.tolerations), toleration)?;
    o.str("priorityClassName", s.priority_class_name.take());
    o.ptr_int("priority", s.priority.take());
    o.ptr_str("runtimeClassName", s.runtime_class_name.take());
    o.ptr_bool("enableServiceLinks", s.enable_service_links.take());
    o.ptr_str("preemptionPolicy", s.preemption_policy.take());
    o.quantities("overhead", take(&mut s.overhead));
    o.ptr_bool("setHostnameAsFQDN", s.set_hostname_as_fqdn.take());
    o.ptr_bool("hostUsers", s.host_users.take());
    o.ptr_str("hostnameOverride", s.hostname_override.take());
    o.msg(
        "securityContext",
        s.security_context.take(),
        pod_security_context,
    )?;
    o.done(s, "PodSpec")
}

fn toleration(mut t: core::Toleration) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("key", t.key.take());
    o.str("operator", t.operator.take());
    o.str("value", t.value.take());
    o.str("effect", t.effect.take());
    o.ptr_int("tolerationSeconds", t.toleration_seconds.take());
    o.done(t, "Toleration")
}

fn container(mut c: core::Container) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    // `name` has no omitempty in Go.
    o.ptr_str("name", c.name.take());
    o.str("image", c.image.take());
    o.strs("command", take(&mut c.command));
    o.strs("args", take(&mut c.args));
    o.str("workingDir", c.working_dir.take());
    o.msgs("ports", take(&mut c.ports), |mut p| {
        let mut o = Obj::new();
        o.str("name", p.name.take());
        o.int("hostPort", p.host_port.take());
        o.ptr_int("containerPort", p.container_port.take());
        o.str("protocol", p.protocol.take());
        o.str("hostIP", p.host_ip.take());
        o.done(p, "ContainerPort")
    })?;
    o.msgs("envFrom", take(&mut c.env_from), env_from_source)?;
    o.msgs("env", take(&mut c.env), env_var)?;
    o.msg("resources", c.resources.take(), resource_requirements)?;
    o.ptr_str("restartPolicy", c.restart_policy.take());
    o.msgs("volumeMounts", take(&mut c.volume_mounts), |mut v| {
        let mut o = Obj::new();
        o.ptr_str("name", v.name.take());
        o.flag("readOnly", v.read_only.take());
        o.ptr_str("recursiveReadOnly", v.recursive_read_only.take());
        o.ptr_str("mountPath", v.mount_path.take());
        o.str("subPath", v.sub_path.take());
        o.ptr_str("mountPropagation", v.mount_propagation.take());
        o.str("subPathExpr", v.sub_path_expr.take());
        o.done(v, "VolumeMount")
    })?;
    o.msg("livenessProbe", c.liveness_probe.take(), probe)?;
    o.msg("readinessProbe", c.readiness_probe.take(), probe)?;
    o.msg("startupProbe", c.startup_probe.take(), probe)?;
    o.msg("lifecycle", c.lifecycle.take(), |mut l| {
        let mut o = Obj::new();
        o.msg("postStart", l.post_start.take(), lifecycle_handler)?;
        o.msg("preStop", l.pre_stop.take(), lifecycle_handler)?;
        o.ptr_str("stopSignal", l.stop_signal.take());
        o.done(l, "Lifecycle")
    })?;
    o.msg(
        "securityContext",
        c.security_context.take(),
        security_context,
    )?;
    o.str("terminationMessagePath", c.termination_message_path.take());
    o.str(
        "terminationMessagePolicy",
        c.termination_message_policy.take(),
    );
    o.str("imagePullPolicy", c.image_pull_policy.take());
    o.flag("stdin", c.stdin.take());
    o.flag("stdinOnce", c.stdin_once.take());
    o.flag("tty", c.tty.take());
    o.done(c, "Container")
}

fn exec_action(mut e: core::ExecAction) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.strs("command", take(&mut e.command));
    o.done(e, "ExecAction")
}

fn http_get_action(mut h: core::HttpGetAction) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("path", h.path.take());
    o.int_or_string("port", h.port.take());
    o.str("host", h.host.take());
    o.str("scheme", h.scheme.take());
    o.msgs("httpHeaders", take(&mut h.http_headers), |mut x| {
        let mut o = Obj::new();
        o.ptr_str("name", x.name.take());
        o.ptr_str("value", x.value.take());
        o.done(x, "HTTPHeader")
    })?;
    o.done(h, "HTTPGetAction")
}

fn tcp_socket_action(mut t: core::TcpSocketAction) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.int_or_string("port", t.port.take());
    o.str("host", t.host.take());
    o.done(t, "TCPSocketAction")
}

/// A probe; its handler is inlined in JSON (`httpGet` beside `periodSeconds`).
fn probe(mut p: core::Probe) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.inline(p.handler.take(), |mut h| {
        let mut o = Obj::new();
        o.msg("exec", h.exec.take(), exec_action)?;
        o.msg("httpGet", h.http_get.take(), http_get_action)?;
        o.msg("tcpSocket", h.tcp_socket.take(), tcp_socket_action)?;
        o.msg("grpc", h.grpc.take(), |mut g| {
            let mut o = Obj::new();
            o.ptr_int("port", g.port.take());
            o.ptr_str("service", g.service.take());
            o.done(g, "GRPCAction")
        })?;
        o.done(h, "ProbeHandler")
    })?;
    o.int("initialDelaySeconds", p.initial_delay_seconds.take());
    o.int("timeoutSeconds", p.timeout_seconds.take());
    o.int("periodSeconds", p.period_seconds.take());
    o.int("successThreshold", p.success_threshold.take());
    o.int("failureThreshold", p.failure_threshold.take());
    o.ptr_int(
        "terminationGracePeriodSeconds",
        p.termination_grace_period_seconds.take(),
    );
    o.done(p, "Probe")
}

fn lifecycle_handler(mut h: core::LifecycleHandler) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("exec", h.exec.take(), exec_action)?;
    o.msg("httpGet", h.http_get.take(), http_get_action)?;
    o.msg("tcpSocket", h.tcp_socket.take(), tcp_socket_action)?;
    o.msg("sleep", h.sleep.take(), |mut s| {
        let mut o = Obj::new();
        o.ptr_int("seconds", s.seconds.take());
        o.done(s, "SleepAction")
    })?;
    o.done(h, "LifecycleHandler")
}

fn se_linux_options(mut s: core::SeLinuxOptions) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("user", s.user.take());
    o.str("role", s.role.take());
    o.str("type", s.r#type.take());
    o.str("level", s.level.take());
    o.done(s, "SELinuxOptions")
}

fn seccomp_profile(mut s: core::SeccompProfile) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("type", s.r#type.take());
    o.ptr_str("localhostProfile", s.localhost_profile.take());
    o.done(s, "SeccompProfile")
}

fn app_armor_profile(mut s: core::AppArmorProfile) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("type", s.r#type.take());
    o.ptr_str("localhostProfile", s.localhost_profile.take());
    o.done(s, "AppArmorProfile")
}

fn security_context(mut s: core::SecurityContext) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("capabilities", s.capabilities.take(), |mut c| {
        let mut o = Obj::new();
        o.strs("add", take(&mut c.add));
        o.strs("drop", take(&mut c.drop));
        o.done(c, "Capabilities")
    })?;
    o.ptr_bool("privileged", s.privileged.take());
    o.msg(
        "seLinuxOptions",
        s.se_linux_options.take(),
        se_linux_options,
    )?;
    o.ptr_int("runAsUser", s.run_as_user.take());
    o.ptr_int("runAsGroup", s.run_as_group.take());
    o.ptr_bool("runAsNonRoot", s.run_as_non_root.take());
    o.ptr_bool("readOnlyRootFilesystem", s.read_only_root_filesystem.take());
    o.ptr_bool(
        "allowPrivilegeEscalation",
        s.allow_privilege_escalation.take(),
    );
    o.ptr_str("procMount", s.proc_mount.take());
    o.msg("seccompProfile", s.seccomp_profile.take(), seccomp_profile)?;
    o.msg(
        "appArmorProfile",
        s.app_armor_profile.take(),
        app_armor_profile,
    )?;
    o.done(s, "SecurityContext")
}

fn pod_security_context(mut s: core::PodSecurityContext) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg(
        "seLinuxOptions",
        s.se_linux_options.take(),
        se_linux_options,
    )?;
    o.ptr_int("runAsUser", s.run_as_user.take());
    o.ptr_int("runAsGroup", s.run_as_group.take());
    o.ptr_bool("runAsNonRoot", s.run_as_non_root.take());
    o.ints("supplementalGroups", take(&mut s.supplemental_groups));
    o.ptr_str(
        "supplementalGroupsPolicy",
        s.supplemental_groups_policy.take(),
    );
    o.ptr_int("fsGroup", s.fs_group.take());
    o.msgs("sysctls", take(&mut s.sysctls), |mut x| {
        let mut o = Obj::new();
        o.ptr_str("name", x.name.take());
        o.ptr_str("value", x.value.take());
        o.done(x, "Sysctl")
    })?;
    o.ptr_str("fsGroupChangePolicy", s.fs_group_change_policy.take());
    o.msg("seccompProfile", s.seccomp_profile.take(), seccomp_profile)?;
    o.msg(
        "appArmorProfile",
        s.app_armor_profile.take(),
        app_armor_profile,
    )?;
    o.ptr_str("seLinuxChangePolicy", s.se_linux_change_policy.take());
    o.done(s, "PodSecurityContext")
}

fn resource_requirements(mut r: core::ResourceRequirements) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.quantities("limits", take(&mut r.limits));
    o.quantities("requests", take(&mut r.requests));
    o.done(r, "ResourceRequirements")
}

fn env_var(mut e: core::EnvVar) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("name", e.name.take());
    o.str("value", e.value.take());
    o.msg("valueFrom", e.value_from.take(), |mut s| {
        let mut o = Obj::new();
        o.msg("fieldRef", s.field_ref.take(), |mut f| {
            let mut o = Obj::new();
            o.str("apiVersion", f.api_version.take());
            o.ptr_str("fieldPath", f.field_path.take());
            o.done(f, "ObjectFieldSelector")
        })?;
        o.msg("resourceFieldRef", s.resource_field_ref.take(), |mut f| {
            let mut o = Obj::new();
            o.str("containerName", f.container_name.take());
            o.ptr_str("resource", f.resource.take());
            o.quantity("divisor", f.divisor.take());
            o.done(f, "ResourceFieldSelector")
        })?;
        o.msg("configMapKeyRef", s.config_map_key_ref.take(), |mut k| {
            let mut o = Obj::new();
            o.inline(k.local_object_reference.take(), local_object_reference)?;
            o.ptr_str("key", k.key.take());
            o.ptr_bool("optional", k.optional.take());
            o.done(k, "ConfigMapKeySelector")
        })?;
        o.msg("secretKeyRef", s.secret_key_ref.take(), |mut k| {
            let mut o = Obj::new();
            o.inline(k.local_object_reference.take(), local_object_reference)?;
            o.ptr_str("key", k.key.take());
            o.ptr_bool("optional", k.optional.take());
            o.done(k, "SecretKeySelector")
        })?;
        o.done(s, "EnvVarSource")
    })?;
    o.done(e, "EnvVar")
}

fn env_from_source(mut e: core::EnvFromSource) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.str("prefix", e.prefix.take());
    o.msg("configMapRef", e.config_map_ref.take(), |mut r| {
        let mut o = Obj::new();
        o.inline(r.local_object_reference.take(), local_object_reference)?;
        o.ptr_bool("optional", r.optional.take());
        o.done(r, "ConfigMapEnvSource")
    })?;
    o.msg("secretRef", e.secret_ref.take(), |mut r| {
        let mut o = Obj::new();
        o.inline(r.local_object_reference.take(), local_object_reference)?;
        o.ptr_bool("optional", r.optional.take());
        o.done(r, "SecretEnvSource")
    })?;
    o.done(e, "EnvFromSource")
}

fn key_to_path(mut k: core::KeyToPath) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("key", k.key.take());
    o.ptr_str("path", k.path.take());
    o.ptr_int("mode", k.mode.take());
    o.done(k, "KeyToPath")
}

/// The volume sources the sim's kubelet knows; any other is refused by [`Obj::done`].
fn volume(mut v: core::Volume) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("name", v.name.take());
    if let Some(mut src) = v.volume_source.take() {
        o.msg("secret", src.secret.take(), |mut s| {
            let mut o = Obj::new();
            o.str("secretName", s.secret_name.take());
            o.msgs("items", take(&mut s.items), key_to_path)?;
            o.ptr_int("defaultMode", s.default_mode.take());
            o.ptr_bool("optional", s.optional.take());
            o.done(s, "SecretVolumeSource")
        })?;
        o.msg("configMap", src.config_map.take(), |mut s| {
            let mut o = Obj::new();
            o.inline(s.local_object_reference.take(), local_object_reference)?;
            o.msgs("items", take(&mut s.items), key_to_path)?;
            o.ptr_int("defaultMode", s.default_mode.take());
            o.ptr_bool("optional", s.optional.take());
            o.done(s, "ConfigMapVolumeSource")
        })?;
        o.msg("emptyDir", src.empty_dir.take(), |mut s| {
            let mut o = Obj::new();
            o.str("medium", s.medium.take());
            o.quantity("sizeLimit", s.size_limit.take());
            o.done(s, "EmptyDirVolumeSource")
        })?;
        o.msg(
            "persistentVolumeClaim",
            src.persistent_volume_claim.take(),
            |mut s| {
                let mut o = Obj::new();
                o.ptr_str("claimName", s.claim_name.take());
                o.flag("readOnly", s.read_only.take());
                o.done(s, "PersistentVolumeClaimVolumeSource")
            },
        )?;
        if src != core::VolumeSource::default() {
            return Err(ProtoError::Unsupported("VolumeSource".into()));
        }
    }
    o.done(v, "Volume")
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
