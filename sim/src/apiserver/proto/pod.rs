//! The pod template: pod spec, containers, probes, security contexts, environment.

use std::mem::take;

use k8s_pb::api::core::v1 as core;
use serde_json::Value;

use super::ProtoError;
use super::json::{Obj, object_meta};
use super::refs::{local_object_reference, object_field_selector, resource_field_selector};
use super::scheduling::{affinity, scheduling_fields};
use super::volumes::volume;

pub fn pod_template_spec(mut m: core::PodTemplateSpec) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("metadata", m.metadata.take(), object_meta)?;
    o.msg("spec", m.spec.take(), pod_spec)?;
    o.done(m, "PodTemplateSpec")
}

pub fn pod_spec(mut s: core::PodSpec) -> Result<Value, ProtoError> {
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
    o.msg("resources", s.resources.take(), resource_requirements)?;
    o.ptr_bool("setHostnameAsFQDN", s.set_hostname_as_fqdn.take());
    o.ptr_bool("hostUsers", s.host_users.take());
    o.ptr_str("hostnameOverride", s.hostname_override.take());
    o.msg(
        "securityContext",
        s.security_context.take(),
        pod_security_context,
    )?;
    o.msg("affinity", s.affinity.take(), affinity)?;
    scheduling_fields(&mut o, &mut s)?;
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
        o.msg("fieldRef", s.field_ref.take(), object_field_selector)?;
        o.msg(
            "resourceFieldRef",
            s.resource_field_ref.take(),
            resource_field_selector,
        )?;
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
