//! Pod Security Admission, as kube-apiserver's built-in `PodSecurity` plugin applies it: the
//! namespace's `pod-security.kubernetes.io/<mode>[-version]` labels choose a level
//! (`privileged`, `baseline`, `restricted`) per mode. `enforce` refuses a Pod that violates its
//! level (403 `violates PodSecurity "<level>:<version>": ...`); `warn` answers a `Warning`
//! header for a Pod it would refuse; a workload resource's Pod template (Deployment, Job, ...)
//! is never refused, its violations of the `enforce` and `warn` levels come back as warnings.
//!
//! The checks are the Pod Security Standards' baseline and restricted controls at their latest
//! version (see [`violations`]); a pinned `-version` label is named in the messages, but the
//! checks are the latest ones. Not simulated: the `audit` mode (the sim keeps no audit log),
//! exemptions (kube-apiserver has none by default), Windows host processes, probe and
//! lifecycle hosts, and the `appArmorProfile` field (the AppArmor annotations are checked).

use serde_json::Value;

use crate::apiserver::error::ApiError;
use crate::store::objects::Locked;
use crate::store::resources::ResourceInfo;

const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";

/// A Pod Security level, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "privileged" => Some(Self::Privileged),
            "baseline" => Some(Self::Baseline),
            "restricted" => Some(Self::Restricted),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Privileged => "privileged",
            Self::Baseline => "baseline",
            Self::Restricted => "restricted",
        }
    }
}

/// One mode's policy: a level and the version it is written against (`latest` or `v1.N`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub level: Level,
    pub version: String,
}

impl Policy {
    /// The policy a mode's labels set. No level label: `privileged`. As kube-apiserver does, an
    /// unparsable level fails closed to `restricted`, an unparsable version to `latest`.
    pub fn of(labels: Option<&Value>, mode: &str) -> Self {
        let label = |key: &str| {
            labels
                .and_then(|l| l.get(format!("{LABEL_PREFIX}{key}")))
                .and_then(Value::as_str)
        };
        let level = match label(mode) {
            None => Level::Privileged,
            Some(s) => Level::parse(s).unwrap_or(Level::Restricted),
        };
        let version = match label(&format!("{mode}-version")) {
            Some(v) if valid_version(v) => v.to_string(),
            _ => "latest".to_string(),
        };
        Self { level, version }
    }

    /// `restricted:latest`, as the messages name a policy.
    pub fn name(&self) -> String {
        format!("{}:{}", self.level.as_str(), self.version)
    }
}

fn valid_version(v: &str) -> bool {
    v == "latest"
        || v.strip_prefix("v1.")
            .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()))
}

/// One failed control: its reason and, when it has one, its detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub reason: String,
    pub detail: String,
}

/// The violations of `level` by a Pod of this metadata and spec, in the order kube-apiserver
/// lists them (by control).
pub fn violations(level: Level, metadata: &Value, spec: &Value) -> Vec<Violation> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let restricted = level == Level::Restricted;
    let windows = spec.pointer("/os/name").and_then(Value::as_str) == Some("windows");
    let pod = Pod { metadata, spec };
    // Each control by its identifier; in restricted, the restricted variant of a control
    // replaces the baseline one.
    let mut checks: Vec<(&str, Option<Violation>)> = vec![
        ("appArmorProfile", pod.app_armor()),
        ("hostNamespaces", pod.host_namespaces()),
        ("hostPorts", pod.host_ports()),
        ("privileged", pod.privileged()),
        ("procMount", pod.proc_mount()),
        ("seLinuxOptions", pod.se_linux()),
        ("sysctls", pod.sysctls()),
    ];
    if restricted {
        checks.push(("restrictedVolumes", pod.restricted_volumes()));
        checks.push(("runAsNonRoot", pod.run_as_non_root()));
        checks.push(("runAsUser", pod.run_as_user()));
        // Windows Pods are exempt from these three (the plugin's 1.25 relaxation).
        if !windows {
            checks.push(("allowPrivilegeEscalation", pod.privilege_escalation()));
            checks.push(("capabilities_restricted", pod.capabilities_restricted()));
            checks.push(("seccompProfile_restricted", pod.seccomp(true)));
        }
    } else {
        checks.push(("capabilities_baseline", pod.capabilities_baseline()));
        checks.push(("hostPathVolumes", pod.host_path_volumes()));
        checks.push(("seccompProfile_baseline", pod.seccomp(false)));
    }
    checks.sort_by(|a, b| a.0.cmp(b.0));
    checks.into_iter().filter_map(|(_, v)| v).collect()
}

/// `reason (detail), reason (detail)`: the violations as the messages list them.
pub fn describe(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| {
            if v.detail.is_empty() {
                v.reason.clone()
            } else {
                format!("{} ({})", v.reason, v.detail)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a kind keeps its Pod template, for the workload resources the plugin warns about.
fn template_path(info: &ResourceInfo) -> Option<&'static str> {
    if info.custom {
        return None;
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "replicationcontrollers")
        | ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => Some("/spec/template"),
        ("batch", "cronjobs") => Some("/spec/jobTemplate/spec/template"),
        ("", "podtemplates") => Some("/template"),
        _ => None,
    }
}

/// The admission hook, on every create and main-resource update before the object is stored:
/// refuses a Pod its namespace's `enforce` level forbids, and records the warnings of `warn`
/// (Pods) or of `enforce` and `warn` (workload templates). An update is evaluated only when it
/// changes the Pod spec or template, as the plugin ignores metadata and status updates.
pub fn admit(
    l: &Locked<'_>,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let is_pod = !info.custom && info.group.is_empty() && info.plural == "pods";
    let path = if is_pod {
        ""
    } else {
        match template_path(info) {
            Some(p) => p,
            None => return Ok(()),
        }
    };
    let (pod_meta, pod_spec) = if is_pod {
        (obj.get("metadata"), obj.get("spec"))
    } else {
        let template = obj.pointer(path);
        (
            template.and_then(|t| t.get("metadata")),
            template.and_then(|t| t.get("spec")),
        )
    };
    if let Some(old) = old {
        let old_spec = if is_pod {
            old.get("spec")
        } else {
            old.pointer(path).and_then(|t| t.get("spec"))
        };
        let old_meta = if is_pod {
            None
        } else {
            old.pointer(path).and_then(|t| t.get("metadata"))
        };
        if old_spec == pod_spec && (is_pod || old_meta == pod_meta) {
            return Ok(());
        }
    }
    let ns_key = (String::new(), "namespaces".to_string());
    let Some(ns) = l.get(&ns_key, &(String::new(), namespace.to_string())) else {
        return Ok(());
    };
    let labels = ns.pointer("/metadata/labels");
    let enforce = Policy::of(labels, "enforce");
    let warn = Policy::of(labels, "warn");
    let empty = Value::Null;
    let meta = pod_meta.unwrap_or(&empty);
    let spec = pod_spec.unwrap_or(&empty);
    let enforced = violations(enforce.level, meta, spec);
    if is_pod && !enforced.is_empty() {
        return Err(ApiError::forbidden_object(
            "",
            "pods",
            name,
            &format!(
                "violates PodSecurity \"{}\": {}",
                enforce.name(),
                describe(&enforced)
            ),
        ));
    }
    if !is_pod && !enforced.is_empty() {
        l.warn(would_violate(&enforce, &enforced));
    }
    if is_pod || warn != enforce {
        let warned = violations(warn.level, meta, spec);
        if !warned.is_empty() {
            l.warn(would_violate(&warn, &warned));
        }
    }
    Ok(())
}

fn would_violate(policy: &Policy, violations: &[Violation]) -> String {
    format!(
        "would violate PodSecurity \"{}\": {}",
        policy.name(),
        describe(violations)
    )
}

/// `"a", "b"`.
fn join_quote(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural<'a>(one: &'a str, many: &'a str, n: usize) -> &'a str {
    if n == 1 { one } else { many }
}

/// `container "a"` / `containers "a", "b"`.
fn containers_phrase(names: &[String]) -> String {
    format!(
        "{} {}",
        plural("container", "containers", names.len()),
        join_quote(names)
    )
}

fn violation(reason: &str, detail: String) -> Option<Violation> {
    Some(Violation {
        reason: reason.to_string(),
        detail,
    })
}

/// Sorted, deduplicated.
fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

struct Pod<'a> {
    metadata: &'a Value,
    spec: &'a Value,
}

impl Pod<'_> {
    /// Every container: init, regular and ephemeral.
    fn containers(&self) -> impl Iterator<Item = &Value> {
        ["initContainers", "containers", "ephemeralContainers"]
            .into_iter()
            .flat_map(|k| {
                self.spec
                    .get(k)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
    }

    fn name(c: &Value) -> String {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    fn ctx<'v>(c: &'v Value, field: &str) -> Option<&'v Value> {
        c.get("securityContext").and_then(|s| s.get(field))
    }

    fn pod_ctx(&self, field: &str) -> Option<&Value> {
        self.spec.get("securityContext").and_then(|s| s.get(field))
    }

    fn volumes(&self) -> impl Iterator<Item = &serde_json::Map<String, Value>> {
        self.spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
    }

    fn annotations(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.metadata
            .get("annotations")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
    }

    fn host_namespaces(&self) -> Option<Violation> {
        let set: Vec<String> = ["hostIPC", "hostNetwork", "hostPID"]
            .into_iter()
            .filter(|k| self.spec.get(*k).and_then(Value::as_bool) == Some(true))
            .map(str::to_string)
            .collect();
        if set.is_empty() {
            return None;
        }
        violation("host namespaces", set.join(", "))
    }

    fn privileged(&self) -> Option<Violation> {
        let bad: Vec<String> = self
            .containers()
            .filter(|c| Self::ctx(c, "privileged").and_then(Value::as_bool) == Some(true))
            .map(Self::name)
            .collect();
        if bad.is_empty() {
            return None;
        }
        violation(
            "privileged",
            format!(
                "{} must not set securityContext.privileged=true",
                containers_phrase(&bad)
            ),
        )
    }

    fn added_capabilities(c: &Value) -> Vec<String> {
        Self::ctx(c, "capabilities")
            .and_then(|cap| cap.get("add"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    }

    fn capabilities_baseline(&self) -> Option<Violation> {
        const DEFAULT: [&str; 13] = [
            "AUDIT_WRITE",
            "CHOWN",
            "DAC_OVERRIDE",
            "FOWNER",
            "FSETID",
            "KILL",
            "MKNOD",
            "NET_BIND_SERVICE",
            "SETFCAP",
            "SETGID",
            "SETPCAP",
            "SETUID",
            "SYS_CHROOT",
        ];
        let mut bad = Vec::new();
        let mut caps = Vec::new();
        for c in self.containers() {
            let extra: Vec<String> = Self::added_capabilities(c)
                .into_iter()
                .filter(|a| !DEFAULT.contains(&a.as_str()))
                .collect();
            if !extra.is_empty() {
                bad.push(Self::name(c));
                caps.extend(extra);
            }
        }
        if bad.is_empty() {
            return None;
        }
        violation(
            "non-default capabilities",
            format!(
                "{} must not include {} in securityContext.capabilities.add",
                containers_phrase(&bad),
                join_quote(&sorted(caps))
            ),
        )
    }

    fn capabilities_restricted(&self) -> Option<Violation> {
        let mut missing_drop = Vec::new();
        let mut adding = Vec::new();
        let mut caps = Vec::new();
        for c in self.containers() {
            let drops_all = Self::ctx(c, "capabilities")
                .and_then(|cap| cap.get("drop"))
                .and_then(Value::as_array)
                .is_some_and(|d| d.iter().any(|x| x.as_str() == Some("ALL")));
            if !drops_all {
                missing_drop.push(Self::name(c));
            }
            let extra: Vec<String> = Self::added_capabilities(c)
                .into_iter()
                .filter(|a| a != "NET_BIND_SERVICE")
                .collect();
            if !extra.is_empty() {
                adding.push(Self::name(c));
                caps.extend(extra);
            }
        }
        let mut details = Vec::new();
        if !missing_drop.is_empty() {
            details.push(format!(
                "{} must set securityContext.capabilities.drop=[\"ALL\"]",
                containers_phrase(&missing_drop)
            ));
        }
        if !adding.is_empty() {
            details.push(format!(
                "{} must not include {} in securityContext.capabilities.add",
                containers_phrase(&adding),
                join_quote(&sorted(caps))
            ));
        }
        if details.is_empty() {
            return None;
        }
        violation("unrestricted capabilities", details.join("; "))
    }

    fn host_path_volumes(&self) -> Option<Violation> {
        let bad: Vec<String> = self
            .volumes()
            .filter(|v| v.contains_key("hostPath"))
            .map(|v| {
                v.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        if bad.is_empty() {
            return None;
        }
        violation(
            "hostPath volumes",
            format!(
                "{} {}",
                plural("volume", "volumes", bad.len()),
                join_quote(&bad)
            ),
        )
    }

    fn restricted_volumes(&self) -> Option<Violation> {
        const ALLOWED: [&str; 8] = [
            "configMap",
            "csi",
            "downwardAPI",
            "emptyDir",
            "ephemeral",
            "persistentVolumeClaim",
            "projected",
            "secret",
        ];
        const KNOWN: [&str; 21] = [
            "hostPath",
            "gcePersistentDisk",
            "awsElasticBlockStore",
            "gitRepo",
            "nfs",
            "iscsi",
            "glusterfs",
            "rbd",
            "flexVolume",
            "cinder",
            "cephfs",
            "flocker",
            "fc",
            "azureFile",
            "vsphereVolume",
            "quobyte",
            "azureDisk",
            "photonPersistentDisk",
            "portworxVolume",
            "scaleIO",
            "storageos",
        ];
        let mut bad = Vec::new();
        let mut types = Vec::new();
        for v in self.volumes() {
            if ALLOWED.iter().any(|k| v.contains_key(*k)) {
                continue;
            }
            bad.push(
                v.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            );
            let kind = KNOWN
                .iter()
                .find(|k| v.contains_key(**k))
                .copied()
                .unwrap_or("unknown");
            types.push(kind.to_string());
        }
        if bad.is_empty() {
            return None;
        }
        let types = sorted(types);
        violation(
            "restricted volume types",
            format!(
                "{} {} {} {} {}",
                plural("volume", "volumes", bad.len()),
                join_quote(&bad),
                plural("uses", "use", bad.len()),
                plural(
                    "restricted volume type",
                    "restricted volume types",
                    types.len()
                ),
                join_quote(&types)
            ),
        )
    }

    fn host_ports(&self) -> Option<Violation> {
        let mut bad = Vec::new();
        let mut ports = Vec::new();
        for c in self.containers() {
            let used: Vec<String> = c
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
                .filter(|p| *p != 0)
                .map(|p| p.to_string())
                .collect();
            if !used.is_empty() {
                bad.push(Self::name(c));
                ports.extend(used);
            }
        }
        if bad.is_empty() {
            return None;
        }
        let ports = sorted(ports);
        violation(
            "hostPort",
            format!(
                "{} {} {} {}",
                containers_phrase(&bad),
                plural("uses", "use", bad.len()),
                plural("hostPort", "hostPorts", ports.len()),
                ports.join(", ")
            ),
        )
    }

    fn privilege_escalation(&self) -> Option<Violation> {
        let bad: Vec<String> = self
            .containers()
            .filter(|c| {
                Self::ctx(c, "allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false)
            })
            .map(Self::name)
            .collect();
        if bad.is_empty() {
            return None;
        }
        violation(
            "allowPrivilegeEscalation != false",
            format!(
                "{} must set securityContext.allowPrivilegeEscalation=false",
                containers_phrase(&bad)
            ),
        )
    }

    fn run_as_non_root(&self) -> Option<Violation> {
        let mut bad_setters = Vec::new();
        let pod_value = self.pod_ctx("runAsNonRoot").and_then(Value::as_bool);
        if pod_value == Some(false) {
            bad_setters.push("pod".to_string());
        }
        let pod_non_root = pod_value == Some(true);
        let mut explicit = Vec::new();
        let mut implicit = Vec::new();
        for c in self.containers() {
            match Self::ctx(c, "runAsNonRoot").and_then(Value::as_bool) {
                Some(false) => explicit.push(Self::name(c)),
                Some(true) => {}
                None if !pod_non_root => implicit.push(Self::name(c)),
                None => {}
            }
        }
        if !explicit.is_empty() {
            bad_setters.push(containers_phrase(&explicit));
        }
        if !bad_setters.is_empty() {
            return violation(
                "runAsNonRoot != true",
                format!(
                    "{} must not set securityContext.runAsNonRoot=false",
                    bad_setters.join(" and ")
                ),
            );
        }
        if !implicit.is_empty() {
            return violation(
                "runAsNonRoot != true",
                format!(
                    "pod or {} must set securityContext.runAsNonRoot=true",
                    containers_phrase(&implicit)
                ),
            );
        }
        None
    }

    fn run_as_user(&self) -> Option<Violation> {
        let mut bad_setters = Vec::new();
        if self.pod_ctx("runAsUser").and_then(Value::as_i64) == Some(0) {
            bad_setters.push("pod".to_string());
        }
        let bad: Vec<String> = self
            .containers()
            .filter(|c| Self::ctx(c, "runAsUser").and_then(Value::as_i64) == Some(0))
            .map(Self::name)
            .collect();
        if !bad.is_empty() {
            bad_setters.push(containers_phrase(&bad));
        }
        if bad_setters.is_empty() {
            return None;
        }
        violation(
            "runAsUser=0",
            format!("{} must not set runAsUser=0", bad_setters.join(" and ")),
        )
    }

    /// `seccompProfile`: baseline refuses an explicit `Unconfined`; restricted also wants
    /// `RuntimeDefault` or `Localhost` on the Pod or on every container.
    fn seccomp(&self, restricted: bool) -> Option<Violation> {
        let valid = |t: Option<&str>| matches!(t, Some("RuntimeDefault" | "Localhost"));
        let profile_type = |p: &Value| p.get("type").and_then(Value::as_str).map(str::to_string);
        let mut bad_setters = Vec::new();
        let mut bad_values = Vec::new();
        let mut pod_set = false;
        if let Some(p) = self.pod_ctx("seccompProfile") {
            let t = profile_type(p);
            if valid(t.as_deref()) {
                pod_set = true;
            } else {
                bad_setters.push("pod".to_string());
                bad_values.push(t.unwrap_or_default());
            }
        }
        let mut explicit = Vec::new();
        let mut implicit = Vec::new();
        for c in self.containers() {
            match Self::ctx(c, "seccompProfile") {
                Some(p) => {
                    let t = profile_type(p);
                    if !valid(t.as_deref()) {
                        explicit.push(Self::name(c));
                        bad_values.push(t.unwrap_or_default());
                    }
                }
                None if !pod_set => implicit.push(Self::name(c)),
                None => {}
            }
        }
        if !explicit.is_empty() {
            bad_setters.push(containers_phrase(&explicit));
        }
        if !bad_setters.is_empty() {
            return violation(
                "seccompProfile",
                format!(
                    "{} must not set securityContext.seccompProfile.type to {}",
                    bad_setters.join(" and "),
                    join_quote(&sorted(bad_values))
                ),
            );
        }
        if restricted && !implicit.is_empty() {
            return violation(
                "seccompProfile",
                format!(
                    "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                    containers_phrase(&implicit)
                ),
            );
        }
        None
    }

    fn sysctls(&self) -> Option<Violation> {
        const ALLOWED: [&str; 12] = [
            "kernel.shm_rmid_forced",
            "net.ipv4.ip_local_port_range",
            "net.ipv4.tcp_syncookies",
            "net.ipv4.ping_group_range",
            "net.ipv4.ip_unprivileged_port_start",
            "net.ipv4.ip_local_reserved_ports",
            "net.ipv4.tcp_keepalive_time",
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.tcp_keepalive_intvl",
            "net.ipv4.tcp_keepalive_probes",
            "net.ipv4.tcp_rmem",
            "net.ipv4.tcp_wmem",
        ];
        let bad: Vec<String> = self
            .pod_ctx("sysctls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("name").and_then(Value::as_str))
            .filter(|n| !ALLOWED.contains(n))
            .map(str::to_string)
            .collect();
        if bad.is_empty() {
            return None;
        }
        violation("forbidden sysctls", bad.join(", "))
    }

    fn proc_mount(&self) -> Option<Violation> {
        let mut bad = Vec::new();
        let mut types = Vec::new();
        for c in self.containers() {
            if let Some(t) = Self::ctx(c, "procMount").and_then(Value::as_str)
                && t != "Default"
            {
                bad.push(Self::name(c));
                types.push(t.to_string());
            }
        }
        if bad.is_empty() {
            return None;
        }
        violation(
            "procMount",
            format!(
                "{} must not set securityContext.procMount to {}",
                containers_phrase(&bad),
                join_quote(&sorted(types))
            ),
        )
    }

    fn se_linux(&self) -> Option<Violation> {
        const TYPES: [&str; 4] = ["", "container_t", "container_init_t", "container_kvm_t"];
        let mut bad_types = Vec::new();
        let mut set_user = false;
        let mut set_role = false;
        let mut check = |opts: &Value| {
            let mut ok = true;
            let t = opts.get("type").and_then(Value::as_str).unwrap_or_default();
            if !TYPES.contains(&t) {
                ok = false;
                bad_types.push(t.to_string());
            }
            if opts
                .get("user")
                .and_then(Value::as_str)
                .is_some_and(|u| !u.is_empty())
            {
                ok = false;
                set_user = true;
            }
            if opts
                .get("role")
                .and_then(Value::as_str)
                .is_some_and(|r| !r.is_empty())
            {
                ok = false;
                set_role = true;
            }
            ok
        };
        let mut bad_setters = Vec::new();
        if let Some(o) = self.pod_ctx("seLinuxOptions")
            && !check(o)
        {
            bad_setters.push("pod".to_string());
        }
        let bad: Vec<String> = self
            .containers()
            .filter(|c| Self::ctx(c, "seLinuxOptions").is_some_and(|o| !check(o)))
            .map(Self::name)
            .collect();
        if !bad.is_empty() {
            bad_setters.push(containers_phrase(&bad));
        }
        if bad_setters.is_empty() {
            return None;
        }
        // As the plugin words it: the user and role notes follow a forbidden type only.
        let mut data = Vec::new();
        if !bad_types.is_empty() {
            let types = sorted(bad_types);
            data.push(format!(
                "{} {}",
                plural("type", "types", types.len()),
                join_quote(&types)
            ));
            if set_user {
                data.push("user may not be set".to_string());
            }
            if set_role {
                data.push("role may not be set".to_string());
            }
        }
        violation(
            "seLinuxOptions",
            format!(
                "{} set forbidden securityContext.seLinuxOptions: {}",
                bad_setters.join(" and "),
                data.join("; ")
            ),
        )
    }

    fn app_armor(&self) -> Option<Violation> {
        const PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
        let bad: Vec<String> = self
            .annotations()
            .filter(|(k, _)| k.starts_with(PREFIX))
            .filter_map(|(k, v)| {
                let v = v.as_str().unwrap_or_default();
                let allowed = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
                (!allowed).then(|| format!("{k}={v:?}"))
            })
            .collect();
        if bad.is_empty() {
            return None;
        }
        let bad = sorted(bad);
        violation(
            plural(
                "forbidden AppArmor profile",
                "forbidden AppArmor profiles",
                bad.len(),
            ),
            bad.join(", "),
        )
    }
}

#[cfg(test)]
mod tests;
