//! Table columns of the common built-in kinds, as the API server's printers
//! (`pkg/printers/internalversion`) fill them for `kubectl get`: same column names, types,
//! priorities (`-o wide` shows priority 1) and cell formats.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::apiserver::table::human_age;

/// One column: name, type, priority.
type Col = (&'static str, &'static str, i64);

const POD: &[Col] = &[
    ("Ready", "string", 0),
    ("Status", "string", 0),
    ("Restarts", "string", 0),
    ("Age", "string", 0),
    ("IP", "string", 1),
    ("Node", "string", 1),
    ("Nominated Node", "string", 1),
    ("Readiness Gates", "string", 1),
];
const DEPLOYMENT: &[Col] = &[
    ("Ready", "string", 0),
    ("Up-to-date", "string", 0),
    ("Available", "string", 0),
    ("Age", "string", 0),
    ("Containers", "string", 1),
    ("Images", "string", 1),
    ("Selector", "string", 1),
];
const REPLICA_SET: &[Col] = &[
    ("Desired", "integer", 0),
    ("Current", "integer", 0),
    ("Ready", "integer", 0),
    ("Age", "string", 0),
    ("Containers", "string", 1),
    ("Images", "string", 1),
    ("Selector", "string", 1),
];
const STATEFUL_SET: &[Col] = &[
    ("Ready", "string", 0),
    ("Age", "string", 0),
    ("Containers", "string", 1),
    ("Images", "string", 1),
];
const DAEMON_SET: &[Col] = &[
    ("Desired", "integer", 0),
    ("Current", "integer", 0),
    ("Ready", "integer", 0),
    ("Up-to-date", "integer", 0),
    ("Available", "integer", 0),
    ("Node Selector", "string", 0),
    ("Age", "string", 0),
    ("Containers", "string", 1),
    ("Images", "string", 1),
    ("Selector", "string", 1),
];
const JOB: &[Col] = &[
    ("Status", "string", 0),
    ("Completions", "string", 0),
    ("Duration", "string", 0),
    ("Age", "string", 0),
    ("Containers", "string", 1),
    ("Images", "string", 1),
    ("Selector", "string", 1),
];
const SERVICE: &[Col] = &[
    ("Type", "string", 0),
    ("Cluster-IP", "string", 0),
    ("External-IP", "string", 0),
    ("Port(s)", "string", 0),
    ("Age", "string", 0),
    ("Selector", "string", 1),
];
const NODE: &[Col] = &[
    ("Status", "string", 0),
    ("Roles", "string", 0),
    ("Age", "string", 0),
    ("Version", "string", 0),
    ("Internal-IP", "string", 1),
    ("External-IP", "string", 1),
    ("OS-Image", "string", 1),
    ("Kernel-Version", "string", 1),
    ("Container-Runtime", "string", 1),
];
const PVC: &[Col] = &[
    ("Status", "string", 0),
    ("Volume", "string", 0),
    ("Capacity", "string", 0),
    ("Access Modes", "string", 0),
    ("StorageClass", "string", 0),
    ("VolumeAttributesClass", "string", 0),
    ("Age", "string", 0),
    ("VolumeMode", "string", 1),
];
const INGRESS: &[Col] = &[
    ("Class", "string", 0),
    ("Hosts", "string", 0),
    ("Address", "string", 0),
    ("Ports", "string", 0),
    ("Age", "string", 0),
];
const CONFIG_MAP: &[Col] = &[("Data", "integer", 0), ("Age", "string", 0)];
const SECRET: &[Col] = &[
    ("Type", "string", 0),
    ("Data", "integer", 0),
    ("Age", "string", 0),
];
const NAMESPACE: &[Col] = &[("Status", "string", 0), ("Age", "string", 0)];
const SERVICE_ACCOUNT: &[Col] = &[("Secrets", "integer", 0), ("Age", "string", 0)];
const ENDPOINTS: &[Col] = &[("Endpoints", "string", 0), ("Age", "string", 0)];
/// Events print no leading Name column; their name is a wide column at the end.
const EVENT: &[Col] = &[
    ("Last Seen", "string", 0),
    ("Type", "string", 0),
    ("Reason", "string", 0),
    ("Object", "string", 0),
    ("Subobject", "string", 1),
    ("Source", "string", 1),
    ("Message", "string", 0),
    ("First Seen", "string", 1),
    ("Count", "string", 1),
    ("Name", "string", 1),
];
const CRON_JOB: &[Col] = &[
    ("Schedule", "string", 0),
    ("Timezone", "string", 0),
    ("Suspend", "boolean", 0),
    ("Active", "integer", 0),
    ("Last Schedule", "string", 0),
    ("Age", "string", 0),
    ("Containers", "string", 1),
    ("Images", "string", 1),
    ("Selector", "string", 1),
];
const NETWORK_POLICY: &[Col] = &[("Pod-Selector", "string", 0), ("Age", "string", 0)];
const LEASE: &[Col] = &[("Holder", "string", 0), ("Age", "string", 0)];
const ROLE: &[Col] = &[("Created At", "string", 0)];
const ROLE_BINDING: &[Col] = &[
    ("Role", "string", 0),
    ("Age", "string", 0),
    ("Users", "string", 1),
    ("Groups", "string", 1),
    ("ServiceAccounts", "string", 1),
];

fn columns(group: &str, kind: &str) -> Option<&'static [Col]> {
    Some(match (group, kind) {
        ("", "Pod") => POD,
        ("", "Service") => SERVICE,
        ("", "Node") => NODE,
        ("", "PersistentVolumeClaim") => PVC,
        ("", "ConfigMap") => CONFIG_MAP,
        ("", "Secret") => SECRET,
        ("", "Namespace") => NAMESPACE,
        ("", "ServiceAccount") => SERVICE_ACCOUNT,
        ("", "Endpoints") => ENDPOINTS,
        ("apps", "Deployment") => DEPLOYMENT,
        ("apps", "ReplicaSet") => REPLICA_SET,
        ("apps", "StatefulSet") => STATEFUL_SET,
        ("apps", "DaemonSet") => DAEMON_SET,
        ("batch", "Job") => JOB,
        ("networking.k8s.io", "Ingress") => INGRESS,
        ("", "Event") => EVENT,
        ("batch", "CronJob") => CRON_JOB,
        ("networking.k8s.io", "NetworkPolicy") => NETWORK_POLICY,
        ("coordination.k8s.io", "Lease") => LEASE,
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => ROLE,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => ROLE_BINDING,
        _ => return None,
    })
}

/// Column definitions (Name first) and the cells of `obj`, or `None` for kinds without printers.
pub fn definitions(group: &str, kind: &str) -> Option<Vec<Value>> {
    let cols = columns(group, kind)?;
    let mut defs = Vec::new();
    if !leads_without_name(group, kind) {
        defs.push(json!({"name": "Name", "type": "string", "format": "name",
            "description": "Name must be unique within a namespace.", "priority": 0}));
    }
    defs.extend(cols.iter().map(|(name, ty, priority)| {
        json!({"name": name, "type": ty, "format": "", "description": "", "priority": priority})
    }));
    Some(defs)
}

fn leads_without_name(group: &str, kind: &str) -> bool {
    group.is_empty() && kind == "Event"
}

fn i(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn s<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn or_none(text: String) -> String {
    if text.is_empty() {
        "<none>".into()
    } else {
        text
    }
}

fn items<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn age(obj: &Value, now: Timestamp) -> String {
    since(s(obj, "/metadata/creationTimestamp"), now)
}

fn since(stamp: &str, now: Timestamp) -> String {
    match stamp.parse::<Timestamp>() {
        Ok(at) => human_age(now.as_second() - at.as_second()),
        Err(_) => "<unknown>".into(),
    }
}

/// Containers and images of a pod template, comma-separated.
fn containers_images(obj: &Value, spec: &str) -> (String, String) {
    let cs = items(obj, &format!("{spec}/containers"));
    let names: Vec<&str> = cs.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// A label selector as `a=b,c in (d)`.
fn selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return "<none>".into();
    };
    let mut parts: Vec<String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = s(e, "/key");
        let values: Vec<&str> = items(e, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match s(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            _ => format!("!{key}"),
        });
    }
    or_none(parts.join(","))
}

/// A plain label map as `a=b,c=d` (Service selectors, node selectors).
fn label_map(v: Option<&Value>) -> String {
    let parts: Vec<String> = v
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    or_none(parts.join(","))
}

fn condition_true(obj: &Value, ty: &str) -> bool {
    items(obj, "/status/conditions")
        .iter()
        .any(|c| s(c, "/type") == ty && s(c, "/status") == "True")
}

fn pod_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let statuses = items(obj, "/status/containerStatuses");
    let total = items(obj, "/spec/containers").len();
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts: i64 = statuses.iter().map(|c| i(c, "/restartCount")).sum();
    let mut reason = s(obj, "/status/reason").to_string();
    if reason.is_empty() {
        reason = s(obj, "/status/phase").to_string();
    }
    for c in statuses {
        let waiting = s(c, "/state/waiting/reason");
        let terminated = s(c, "/state/terminated/reason");
        if !waiting.is_empty() {
            reason = waiting.to_string();
        } else if !terminated.is_empty() {
            reason = terminated.to_string();
        }
    }
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    let gates = items(obj, "/spec/readinessGates").len();
    vec![
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        json!(age(obj, now)),
        json!(or_none(s(obj, "/status/podIP").to_string())),
        json!(or_none(s(obj, "/spec/nodeName").to_string())),
        json!(or_none(s(obj, "/status/nominatedNodeName").to_string())),
        json!(if gates == 0 {
            "<none>".to_string()
        } else {
            format!("0/{gates}")
        }),
    ]
}

fn service_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ty = s(obj, "/spec/type");
    let cluster_ip = or_none(s(obj, "/spec/clusterIP").to_string());
    let lb: Vec<&str> = items(obj, "/status/loadBalancer/ingress")
        .iter()
        .map(|i| {
            let ip = s(i, "/ip");
            if ip.is_empty() { s(i, "/hostname") } else { ip }
        })
        .collect();
    let external: Vec<String> = items(obj, "/spec/externalIPs")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let external_ip = match ty {
        "ExternalName" => s(obj, "/spec/externalName").to_string(),
        "LoadBalancer" if lb.is_empty() && external.is_empty() => "<pending>".into(),
        "LoadBalancer" => [lb.join(","), external.join(",")]
            .into_iter()
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>()
            .join(","),
        _ => or_none(external.join(",")),
    };
    let ports: Vec<String> = items(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let node = p.get("nodePort").and_then(Value::as_i64);
            match node {
                Some(n) => format!("{}:{n}/{}", i(p, "/port"), s(p, "/protocol")),
                None => format!("{}/{}", i(p, "/port"), s(p, "/protocol")),
            }
        })
        .collect();
    vec![
        json!(ty),
        json!(cluster_ip),
        json!(external_ip),
        json!(or_none(ports.join(","))),
        json!(age(obj, now)),
        json!(label_map(obj.pointer("/spec/selector"))),
    ]
}

fn node_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut status = if condition_true(obj, "Ready") {
        "Ready".to_string()
    } else if items(obj, "/status/conditions")
        .iter()
        .any(|c| s(c, "/type") == "Ready")
    {
        "NotReady".to_string()
    } else {
        "Unknown".to_string()
    };
    if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let roles: Vec<&str> = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    let address = |ty: &str| {
        or_none(
            items(obj, "/status/addresses")
                .iter()
                .find(|a| s(a, "/type") == ty)
                .map(|a| s(a, "/address").to_string())
                .unwrap_or_default(),
        )
    };
    vec![
        json!(status),
        json!(or_none(roles.join(","))),
        json!(age(obj, now)),
        json!(s(obj, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(or_none(s(obj, "/status/nodeInfo/osImage").to_string())),
        json!(or_none(
            s(obj, "/status/nodeInfo/kernelVersion").to_string()
        )),
        json!(or_none(
            s(obj, "/status/nodeInfo/containerRuntimeVersion").to_string()
        )),
    ]
}

fn job_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let status = if condition_true(obj, "Complete") {
        "Complete"
    } else if condition_true(obj, "Failed") {
        "Failed"
    } else if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if condition_true(obj, "Suspended") {
        "Suspended"
    } else if condition_true(obj, "FailureTarget") {
        "FailureTarget"
    } else if condition_true(obj, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let succeeded = i(obj, "/status/succeeded");
    let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match i(obj, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = s(obj, "/status/startTime");
    let duration = match (
        start.parse::<Timestamp>(),
        s(obj, "/status/completionTime").parse::<Timestamp>(),
    ) {
        (Ok(a), Ok(b)) => human_age(b.as_second() - a.as_second()),
        (Ok(a), Err(_)) => human_age(now.as_second() - a.as_second()),
        _ => String::new(),
    };
    let (containers, images) = containers_images(obj, "/spec/template/spec");
    vec![
        json!(status),
        json!(completions),
        json!(duration),
        json!(age(obj, now)),
        json!(containers),
        json!(images),
        json!(selector(obj.pointer("/spec/selector"))),
    ]
}

/// `printEvent`: times since the last and first occurrence, `kind/name` of the object.
fn event_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let first_of = |pointers: &[&str]| {
        pointers
            .iter()
            .map(|p| s(obj, p))
            .find(|t| !t.is_empty())
            .map_or_else(|| "<unknown>".to_string(), |t| since(t, now))
    };
    let last = first_of(&["/series/lastObservedTime", "/lastTimestamp", "/eventTime"]);
    let first = first_of(&["/firstTimestamp", "/eventTime"]);
    let component = match s(obj, "/source/component") {
        "" => s(obj, "/reportingComponent"),
        c => c,
    };
    let host = match s(obj, "/source/host") {
        "" => s(obj, "/reportingInstance"),
        h => h,
    };
    let source = if host.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {host}")
    };
    let count = match i(obj, "/series/count") {
        0 => i(obj, "/count"),
        n => n,
    };
    vec![
        json!(last),
        json!(s(obj, "/type")),
        json!(s(obj, "/reason")),
        json!(format!(
            "{}/{}",
            s(obj, "/involvedObject/kind").to_lowercase(),
            s(obj, "/involvedObject/name")
        )),
        json!(s(obj, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(obj, "/message")),
        json!(first),
        json!(count),
        json!(s(obj, "/metadata/name")),
    ]
}

fn cells(group: &str, kind: &str, obj: &Value, now: Timestamp) -> Vec<Value> {
    let template = || containers_images(obj, "/spec/template/spec");
    let sel = || selector(obj.pointer("/spec/selector"));
    match (group, kind) {
        ("", "Pod") => pod_cells(obj, now),
        ("", "Service") => service_cells(obj, now),
        ("", "Node") => node_cells(obj, now),
        ("", "PersistentVolumeClaim") => {
            let modes: Vec<String> = items(obj, "/status/accessModes")
                .iter()
                .filter_map(Value::as_str)
                .map(|m| match m {
                    "ReadWriteOnce" => "RWO".to_string(),
                    "ReadOnlyMany" => "ROX".to_string(),
                    "ReadWriteMany" => "RWX".to_string(),
                    "ReadWriteOncePod" => "RWOP".to_string(),
                    other => other.to_string(),
                })
                .collect();
            let class = s(obj, "/spec/storageClassName");
            vec![
                json!(s(obj, "/status/phase")),
                json!(s(obj, "/spec/volumeName")),
                json!(s(obj, "/status/capacity/storage")),
                json!(modes.join(",")),
                json!(if class.is_empty() { "<unset>" } else { class }),
                json!(
                    or_none(s(obj, "/spec/volumeAttributesClassName").to_string())
                        .replace("<none>", "<unset>")
                ),
                json!(age(obj, now)),
                json!(s(obj, "/spec/volumeMode")),
            ]
        }
        ("", "ConfigMap") => {
            let n = ["data", "binaryData"]
                .iter()
                .filter_map(|f| obj.get(*f).and_then(Value::as_object))
                .map(|m| m.len())
                .sum::<usize>();
            vec![json!(n), json!(age(obj, now))]
        }
        ("", "Secret") => {
            let n = obj
                .get("data")
                .and_then(Value::as_object)
                .map_or(0, |m| m.len());
            vec![json!(s(obj, "/type")), json!(n), json!(age(obj, now))]
        }
        ("", "Namespace") => vec![json!(s(obj, "/status/phase")), json!(age(obj, now))],
        ("", "ServiceAccount") => {
            vec![json!(items(obj, "/secrets").len()), json!(age(obj, now))]
        }
        ("", "Endpoints") => {
            let mut eps = Vec::new();
            for subset in items(obj, "/subsets") {
                for a in items(subset, "/addresses") {
                    for p in items(subset, "/ports") {
                        eps.push(format!("{}:{}", s(a, "/ip"), i(p, "/port")));
                    }
                }
            }
            let shown = if eps.len() > 3 {
                format!("{} + {} more...", eps[..3].join(","), eps.len() - 3)
            } else {
                or_none(eps.join(","))
            };
            vec![json!(shown), json!(age(obj, now))]
        }
        ("apps", "Deployment") => {
            let (c, im) = template();
            vec![
                json!(format!(
                    "{}/{}",
                    i(obj, "/status/readyReplicas"),
                    i(obj, "/spec/replicas")
                )),
                json!(i(obj, "/status/updatedReplicas")),
                json!(i(obj, "/status/availableReplicas")),
                json!(age(obj, now)),
                json!(c),
                json!(im),
                json!(sel()),
            ]
        }
        ("apps", "ReplicaSet") => {
            let (c, im) = template();
            vec![
                json!(i(obj, "/spec/replicas")),
                json!(i(obj, "/status/replicas")),
                json!(i(obj, "/status/readyReplicas")),
                json!(age(obj, now)),
                json!(c),
                json!(im),
                json!(sel()),
            ]
        }
        ("apps", "StatefulSet") => {
            let (c, im) = template();
            vec![
                json!(format!(
                    "{}/{}",
                    i(obj, "/status/readyReplicas"),
                    i(obj, "/spec/replicas")
                )),
                json!(age(obj, now)),
                json!(c),
                json!(im),
            ]
        }
        ("apps", "DaemonSet") => {
            let (c, im) = template();
            vec![
                json!(i(obj, "/status/desiredNumberScheduled")),
                json!(i(obj, "/status/currentNumberScheduled")),
                json!(i(obj, "/status/numberReady")),
                json!(i(obj, "/status/updatedNumberScheduled")),
                json!(i(obj, "/status/numberAvailable")),
                json!(label_map(obj.pointer("/spec/template/spec/nodeSelector"))),
                json!(age(obj, now)),
                json!(c),
                json!(im),
                json!(sel()),
            ]
        }
        ("batch", "Job") => job_cells(obj, now),
        ("", "Event") => event_cells(obj, now),
        ("batch", "CronJob") => {
            let (c, im) = containers_images(obj, "/spec/jobTemplate/spec/template/spec");
            let last = s(obj, "/status/lastScheduleTime");
            vec![
                json!(s(obj, "/spec/schedule")),
                json!(or_none(s(obj, "/spec/timeZone").to_string())),
                obj.pointer("/spec/suspend").cloned().unwrap_or(Value::Null),
                json!(items(obj, "/status/active").len()),
                json!(if last.is_empty() {
                    "<none>".to_string()
                } else {
                    since(last, now)
                }),
                json!(age(obj, now)),
                json!(c),
                json!(im),
                json!(selector(obj.pointer("/spec/jobTemplate/spec/selector"))),
            ]
        }
        ("networking.k8s.io", "NetworkPolicy") => vec![
            json!(selector(obj.pointer("/spec/podSelector"))),
            json!(age(obj, now)),
        ],
        ("coordination.k8s.io", "Lease") => vec![
            json!(or_none(s(obj, "/spec/holderIdentity").to_string())),
            json!(age(obj, now)),
        ],
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => {
            vec![json!(s(obj, "/metadata/creationTimestamp"))]
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            let of = |kind: &str| -> String {
                items(obj, "/subjects")
                    .iter()
                    .filter(|x| s(x, "/kind") == kind)
                    .map(|x| match s(x, "/namespace") {
                        ns if kind == "ServiceAccount" => format!("{ns}/{}", s(x, "/name")),
                        _ => s(x, "/name").to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            vec![
                json!(format!(
                    "{}/{}",
                    s(obj, "/roleRef/kind"),
                    s(obj, "/roleRef/name")
                )),
                json!(age(obj, now)),
                json!(of("User")),
                json!(of("Group")),
                json!(of("ServiceAccount")),
            ]
        }
        ("networking.k8s.io", "Ingress") => {
            let hosts: Vec<&str> = items(obj, "/spec/rules")
                .iter()
                .map(|r| s(r, "/host"))
                .filter(|h| !h.is_empty())
                .collect();
            let address: Vec<&str> = items(obj, "/status/loadBalancer/ingress")
                .iter()
                .map(|i| {
                    let ip = s(i, "/ip");
                    if ip.is_empty() { s(i, "/hostname") } else { ip }
                })
                .collect();
            let ports = if items(obj, "/spec/tls").is_empty() {
                "80"
            } else {
                "80, 443"
            };
            let class = s(obj, "/spec/ingressClassName");
            vec![
                json!(or_none(class.to_string())),
                json!(if hosts.is_empty() {
                    "*".to_string()
                } else {
                    hosts.join(",")
                }),
                json!(address.join(",")),
                json!(ports),
                json!(age(obj, now)),
            ]
        }
        _ => Vec::new(),
    }
}

/// The Table of built-in objects, or `None` when the kind has no printer here.
pub fn render(group: &str, kind: &str, objects: &[&Value], now: Timestamp) -> Option<Value> {
    let definitions = definitions(group, kind)?;
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let mut row = Vec::new();
            if !leads_without_name(group, kind) {
                row.push(
                    obj.pointer("/metadata/name")
                        .cloned()
                        .unwrap_or(Value::Null),
                );
            }
            row.extend(cells(group, kind, obj, now));
            json!({"cells": row, "object": {
                "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
            }})
        })
        .collect();
    Some(
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": definitions, "rows": rows}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn every_row_has_one_cell_per_column() {
        let obj = json!({"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        for (g, k) in [
            ("", "Pod"),
            ("", "Service"),
            ("", "Node"),
            ("", "PersistentVolumeClaim"),
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "Namespace"),
            ("", "ServiceAccount"),
            ("", "Endpoints"),
            ("apps", "Deployment"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("batch", "Job"),
            ("networking.k8s.io", "Ingress"),
            ("", "Event"),
            ("batch", "CronJob"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("coordination.k8s.io", "Lease"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
        ] {
            let t = render(g, k, &[&obj], at("2026-01-01T00:05:00Z")).unwrap();
            let defs = t["columnDefinitions"].as_array().unwrap().len();
            let cells = t["rows"][0]["cells"].as_array().unwrap().len();
            assert_eq!(defs, cells, "{k}");
        }
    }

    #[test]
    fn events_lead_with_last_seen_and_name_the_object() {
        let e = json!({"metadata": {"name": "web.1"}, "type": "Normal", "reason": "ScalingReplicaSet",
            "involvedObject": {"kind": "Deployment", "name": "web"}, "message": "Scaled up",
            "source": {"component": "deployment-controller"}, "count": 2,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:04:00Z"});
        let t = render("", "Event", &[&e], at("2026-01-01T00:05:00Z")).unwrap();
        assert_eq!(t["columnDefinitions"][0]["name"], "Last Seen");
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "60s",
                "Normal",
                "ScalingReplicaSet",
                "deployment/web",
                "",
                "deployment-controller",
                "Scaled up",
                "5m",
                2,
                "web.1"
            ])
        );
    }

    #[test]
    fn deployment_and_service_cells_read_as_kubectl_shows_them() {
        let d = json!({"metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        let t = render("apps", "Deployment", &[&d], at("2026-01-01T00:05:00Z")).unwrap();
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["web", "2/3", 3, 2, "5m", "c", "nginx:1", "app=web"])
        );
        let svc = json!({"metadata": {"name": "db"}, "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10",
            "ports": [{"port": 5432, "protocol": "TCP"}], "selector": {"app": "db"}}});
        let t = render("", "Service", &[&svc], at("2026-01-01T00:05:00Z")).unwrap();
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "db",
                "ClusterIP",
                "10.96.0.10",
                "<none>",
                "5432/TCP",
                "<unknown>",
                "app=db"
            ])
        );
    }
}
