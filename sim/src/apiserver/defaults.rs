//! Defaults a real API server fills into built-in kinds on every write (the values of
//! kubernetes' `pkg/apis/*/v1/defaults.go`, the registry strategies and the default admission
//! plugins), so an object reads back as it would from a cluster.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::store::resources::ResourceInfo;

/// Fill in the defaults of a built-in kind; custom resources are defaulted from their schema.
pub fn apply(info: &ResourceInfo, obj: &mut Value) {
    if info.custom {
        return;
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Secret") => secret(obj),
        ("", "Pod") => pod(obj),
        ("", "Service") => service(obj),
        ("", "Namespace") => namespace(obj),
        ("", "PersistentVolumeClaim") => {
            default(obj, "/spec/volumeMode", json!("Filesystem"));
        }
        ("", "Endpoints") => {
            for subset in items_mut(obj, "/subsets") {
                for port in items_mut(subset, "/ports") {
                    default(port, "/protocol", json!("TCP"));
                }
            }
        }
        ("apps", "Deployment") => deployment(obj),
        ("apps", "ReplicaSet") => {
            default(obj, "/spec/replicas", json!(1));
            pod_template(obj, "/spec/template");
        }
        ("apps", "StatefulSet") => stateful_set(obj),
        ("apps", "DaemonSet") => daemon_set(obj),
        ("batch", "Job") => {
            job(obj, "/spec");
            let unlabelled = obj
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty);
            if unlabelled
                && let Some(labels) = obj.pointer("/spec/template/metadata/labels").cloned()
                && labels.as_object().is_some_and(|m| !m.is_empty())
            {
                obj["metadata"]["labels"] = labels;
            }
        }
        ("batch", "CronJob") => cron_job(obj),
        ("coordination.k8s.io", "Lease") => {
            micro_times(obj, &["/spec/acquireTime", "/spec/renewTime"]);
        }
        ("" | "events.k8s.io", "Event") => {
            micro_times(obj, &["/eventTime", "/series/lastObservedTime"]);
        }
        ("networking.k8s.io", "NetworkPolicy") => network_policy(obj),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            // A ServiceAccount's group stays "", which the server's JSON omits (omitempty).
            for subject in items_mut(obj, "/subjects") {
                if matches!(
                    subject.get("kind").and_then(Value::as_str),
                    Some("User" | "Group")
                ) {
                    default(subject, "/apiGroup", json!("rbac.authorization.k8s.io"));
                }
            }
        }
        _ => {}
    }
}

/// `metav1.MicroTime` fields as the server writes them back: UTC with exactly six fraction
/// digits (`RFC3339Micro`), whatever precision the client sent.
fn micro_times(obj: &mut Value, pointers: &[&str]) {
    for pointer in pointers {
        if let Some(field) = obj.pointer_mut(pointer)
            && let Some(micro) = field.as_str().and_then(micro_time)
        {
            *field = Value::String(micro);
        }
    }
}

/// An RFC 3339 timestamp in `RFC3339Micro` (`2026-01-02T03:04:05.123000Z`); `None` when it
/// does not parse (validation refuses it later).
pub fn micro_time(text: &str) -> Option<String> {
    let ts: jiff::Timestamp = text.parse().ok()?;
    let utc = jiff::tz::Offset::UTC.to_datetime(ts);
    Some(format!(
        "{}.{:06}Z",
        utc.strftime("%Y-%m-%dT%H:%M:%S"),
        utc.subsec_nanosecond() / 1000
    ))
}

/// Set `pointer` to `value` unless something is there; missing parent objects are created.
fn default(obj: &mut Value, pointer: &str, value: Value) {
    if obj.pointer(pointer).is_some_and(|v| !v.is_null()) {
        return;
    }
    let mut node = obj;
    let segments: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    for seg in parents {
        if !node.is_object() {
            return;
        }
        let next = node
            .as_object_mut()
            .map(|m| m.entry(seg.clone()).or_insert_with(|| json!({})));
        match next {
            Some(n) if n.is_object() => node = n,
            Some(n) if n.is_null() => {
                *n = json!({});
                node = n;
            }
            _ => return,
        }
    }
    if let Some(m) = node.as_object_mut() {
        m.insert(last.clone(), value);
    }
}

/// The elements of the list at `pointer` (none when absent or not a list).
fn items_mut<'a>(obj: &'a mut Value, pointer: &str) -> impl Iterator<Item = &'a mut Value> {
    obj.pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|v| v.is_object())
}

/// `stringData` is write-only: merged into `data` (base64) and never stored; `type` is Opaque.
fn secret(obj: &mut Value) {
    if let Some(Value::Object(string_data)) =
        obj.as_object_mut().and_then(|m| m.remove("stringData"))
    {
        let engine = base64::engine::general_purpose::STANDARD;
        for (k, v) in string_data {
            let text = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            default(obj, "/data", json!({}));
            if let Some(data) = obj.get_mut("data").and_then(Value::as_object_mut) {
                data.insert(k, json!(engine.encode(text)));
            }
        }
    }
    default(obj, "/type", json!("Opaque"));
}

/// The namespace controller's label and the phase a new namespace starts in.
fn namespace(obj: &mut Value) {
    if let Some(name) = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        default(
            obj,
            "/metadata/labels/kubernetes.io~1metadata.name",
            json!(name),
        );
    }
}

fn service(obj: &mut Value) {
    let kind = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    default(obj, "/spec/type", json!(kind));
    default(obj, "/spec/sessionAffinity", json!("None"));
    for port in items_mut(obj, "/spec/ports") {
        default(port, "/protocol", json!("TCP"));
        let unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if unset && let Some(p) = port.get("port").cloned() {
            port["targetPort"] = p;
        }
    }
    if kind == "ExternalName" {
        return;
    }
    default(obj, "/spec/internalTrafficPolicy", json!("Cluster"));
    if kind == "NodePort" || kind == "LoadBalancer" {
        default(obj, "/spec/externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        default(obj, "/spec/allocateLoadBalancerNodePorts", json!(true));
    }
    default(obj, "/spec/ipFamilyPolicy", json!("SingleStack"));
    default(obj, "/spec/ipFamilies", json!(["IPv4"]));
}

fn deployment(obj: &mut Value) {
    default(obj, "/spec/replicas", json!(1));
    let recreate = obj.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate");
    if !recreate {
        default(obj, "/spec/strategy/type", json!("RollingUpdate"));
        default(
            obj,
            "/spec/strategy/rollingUpdate/maxUnavailable",
            json!("25%"),
        );
        default(obj, "/spec/strategy/rollingUpdate/maxSurge", json!("25%"));
    }
    default(obj, "/spec/revisionHistoryLimit", json!(10));
    default(obj, "/spec/progressDeadlineSeconds", json!(600));
    pod_template(obj, "/spec/template");
}

fn stateful_set(obj: &mut Value) {
    default(obj, "/spec/replicas", json!(1));
    default(obj, "/spec/podManagementPolicy", json!("OrderedReady"));
    let on_delete = obj
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        == Some("OnDelete");
    if !on_delete {
        default(obj, "/spec/updateStrategy/type", json!("RollingUpdate"));
        default(
            obj,
            "/spec/updateStrategy/rollingUpdate/partition",
            json!(0),
        );
    }
    default(obj, "/spec/revisionHistoryLimit", json!(10));
    default(
        obj,
        "/spec/persistentVolumeClaimRetentionPolicy",
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
    );
    for claim in items_mut(obj, "/spec/volumeClaimTemplates") {
        default(claim, "/spec/volumeMode", json!("Filesystem"));
    }
    pod_template(obj, "/spec/template");
}

fn daemon_set(obj: &mut Value) {
    let on_delete = obj
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        == Some("OnDelete");
    if !on_delete {
        default(obj, "/spec/updateStrategy/type", json!("RollingUpdate"));
        default(
            obj,
            "/spec/updateStrategy/rollingUpdate/maxUnavailable",
            json!(1),
        );
        default(obj, "/spec/updateStrategy/rollingUpdate/maxSurge", json!(0));
    }
    default(obj, "/spec/revisionHistoryLimit", json!(10));
    pod_template(obj, "/spec/template");
}

/// Job defaults below `spec` (a Job's `/spec`, a CronJob's `/spec/jobTemplate/spec`).
fn job(obj: &mut Value, spec: &str) {
    let Some(s) = obj.pointer_mut(spec).filter(|s| s.is_object()) else {
        return;
    };
    if s.get("completions").is_none() && s.get("parallelism").is_none() {
        s["completions"] = json!(1);
    }
    default(s, "/parallelism", json!(1));
    let per_index = s.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
    default(
        s,
        "/backoffLimit",
        json!(if per_index { i32::MAX } else { 6 }),
    );
    default(s, "/completionMode", json!("NonIndexed"));
    default(s, "/suspend", json!(false));
    if s.get("podFailurePolicy").is_none_or(Value::is_null) {
        default(s, "/podReplacementPolicy", json!("TerminatingOrFailed"));
    }
    pod_template(s, "/template");
}

fn cron_job(obj: &mut Value) {
    default(obj, "/spec/concurrencyPolicy", json!("Allow"));
    default(obj, "/spec/suspend", json!(false));
    default(obj, "/spec/successfulJobsHistoryLimit", json!(3));
    default(obj, "/spec/failedJobsHistoryLimit", json!(1));
    job(obj, "/spec/jobTemplate/spec");
}

fn network_policy(obj: &mut Value) {
    if obj.pointer("/spec/policyTypes").is_none() && obj.get("spec").is_some_and(Value::is_object) {
        let mut types = vec![json!("Ingress")];
        if obj.pointer("/spec/egress").is_some_and(|e| !e.is_null()) {
            types.push(json!("Egress"));
        }
        obj["spec"]["policyTypes"] = Value::Array(types);
    }
    for dir in ["/spec/ingress", "/spec/egress"] {
        for rule in items_mut(obj, dir) {
            for port in items_mut(rule, "/ports") {
                default(port, "/protocol", json!("TCP"));
            }
        }
    }
}

/// A Pod: its spec's defaults, plus what the Pod strategy and the default admission plugins
/// (ServiceAccount, Priority, DefaultTolerationSeconds) add to Pods but not to templates.
fn pod(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    pod_spec(spec);
    default(spec, "/enableServiceLinks", json!(true));
    default(spec, "/priority", json!(0));
    default(spec, "/preemptionPolicy", json!("PreemptLowerPriority"));
    let account = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string();
    default(spec, "/serviceAccountName", json!(account));
    default(spec, "/serviceAccount", json!(account));
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let present = spec
            .get("tolerations")
            .and_then(Value::as_array)
            .is_some_and(|ts| {
                ts.iter()
                    .any(|t| t.get("key").and_then(Value::as_str) == Some(key))
            });
        if !present {
            default(spec, "/tolerations", json!([]));
            if let Some(ts) = spec.get_mut("tolerations").and_then(Value::as_array_mut) {
                ts.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
    for list in ["/containers", "/initContainers"] {
        for c in items_mut(spec, list) {
            requests_from_limits(c);
        }
    }
    // The registry's create strategy: a new Pod is Pending with its QoS class.
    let qos = qos_class(obj);
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    default(obj, "/status/phase", json!("Pending"));
    default(obj, "/status/qosClass", json!(qos));
}

/// The QoS class of a Pod, as `qos.GetPodQOS` derives it from requests and limits.
pub fn qos_class(pod: &Value) -> &'static str {
    let cs: Vec<&Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let has =
        |c: &Value, kind: &str, r: &str| c.pointer(&format!("/resources/{kind}/{r}")).is_some();
    if cs.iter().all(|c| {
        !has(c, "requests", "cpu")
            && !has(c, "requests", "memory")
            && !has(c, "limits", "cpu")
            && !has(c, "limits", "memory")
    }) {
        return "BestEffort";
    }
    let guaranteed = cs.iter().all(|c| {
        ["cpu", "memory"].iter().all(|r| {
            let limit = c.pointer(&format!("/resources/limits/{r}"));
            let request = c.pointer(&format!("/resources/requests/{r}")).or(limit);
            limit.is_some() && request == limit
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A container with limits but no requests for a resource requests its limit.
fn requests_from_limits(container: &mut Value) {
    let Some(limits) = container
        .pointer("/resources/limits")
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    for (name, quantity) in limits {
        default(
            container,
            &format!(
                "/resources/requests/{}",
                name.replace('~', "~0").replace('/', "~1")
            ),
            quantity,
        );
    }
}

fn pod_template(obj: &mut Value, pointer: &str) {
    if let Some(spec) = obj
        .pointer_mut(&format!("{pointer}/spec"))
        .filter(|s| s.is_object())
    {
        pod_spec(spec);
    }
}

/// `SetDefaults_PodSpec` and the defaults of what a pod spec holds.
fn pod_spec(spec: &mut Value) {
    default(spec, "/dnsPolicy", json!("ClusterFirst"));
    default(spec, "/restartPolicy", json!("Always"));
    default(spec, "/terminationGracePeriodSeconds", json!(30));
    default(spec, "/securityContext", json!({}));
    default(spec, "/schedulerName", json!("default-scheduler"));
    for list in ["/containers", "/initContainers", "/ephemeralContainers"] {
        for c in items_mut(spec, list) {
            container(c);
        }
    }
    for volume in items_mut(spec, "/volumes") {
        self::volume(volume);
    }
}

fn container(c: &mut Value) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let policy = if pulls_always(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    default(c, "/imagePullPolicy", json!(policy));
    default(c, "/terminationMessagePath", json!("/dev/termination-log"));
    default(c, "/terminationMessagePolicy", json!("File"));
    default(c, "/resources", json!({}));
    for port in items_mut(c, "/ports") {
        default(port, "/protocol", json!("TCP"));
    }
    for env in items_mut(c, "/env") {
        if env
            .pointer("/valueFrom/fieldRef")
            .is_some_and(Value::is_object)
        {
            default(env, "/valueFrom/fieldRef/apiVersion", json!("v1"));
        }
    }
    for probe in ["/livenessProbe", "/readinessProbe", "/startupProbe"] {
        if let Some(p) = c.pointer_mut(probe).filter(|p| p.is_object()) {
            self::probe(p);
        }
    }
    for hook in ["/lifecycle/postStart", "/lifecycle/preStop"] {
        if let Some(h) = c.pointer_mut(hook).filter(|h| h.is_object()) {
            http_get(h);
        }
    }
}

/// The Job strategy at create: unless `manualSelector`, the selector is generated from the
/// Job's uid and the template labelled to match (new and legacy label names). A selector the
/// client set itself is refused, as the real validation does.
pub fn job_selector(obj: &mut Value, uid: &str) -> Option<crate::apiserver::error::Cause> {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let generated = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    if let Some(sel) = obj.pointer("/spec/selector").filter(|s| !s.is_null())
        && *sel != generated
    {
        return Some(crate::apiserver::error::Cause {
            field: "spec.selector".into(),
            message: "Invalid value: \"\": `selector` not auto-generated".into(),
            reason: "FieldValueInvalid".into(),
        });
    }
    for (k, v) in [
        ("batch.kubernetes.io~1controller-uid", uid),
        ("batch.kubernetes.io~1job-name", name.as_str()),
        ("controller-uid", uid),
        ("job-name", name.as_str()),
    ] {
        default(
            obj,
            &format!("/spec/template/metadata/labels/{k}"),
            json!(v),
        );
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("selector".into(), generated);
    }
    None
}

/// `latest` or no tag (and no digest) pulls every time.
pub fn pulls_always(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

fn probe(p: &mut Value) {
    default(p, "/timeoutSeconds", json!(1));
    default(p, "/periodSeconds", json!(10));
    default(p, "/successThreshold", json!(1));
    default(p, "/failureThreshold", json!(3));
    http_get(p);
}

fn http_get(handler: &mut Value) {
    if handler.get("httpGet").is_some_and(Value::is_object) {
        default(handler, "/httpGet/path", json!("/"));
        default(handler, "/httpGet/scheme", json!("HTTP"));
    }
}

const SOURCES: [&str; 4] = ["secret", "configMap", "projected", "downwardAPI"];

fn volume(v: &mut Value) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    if m.keys().all(|k| k == "name") {
        m.insert("emptyDir".into(), Value::Object(Map::new()));
    }
    for source in SOURCES {
        if v.get(source).is_some_and(Value::is_object) {
            default(v, &format!("/{source}/defaultMode"), json!(420));
        }
    }
    if v.get("hostPath").is_some_and(Value::is_object) {
        default(v, "/hostPath/type", json!(""));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn micro_times_are_written_with_six_fraction_digits_in_utc() {
        assert_eq!(
            micro_time("2026-01-02T03:04:05.123Z").as_deref(),
            Some("2026-01-02T03:04:05.123000Z")
        );
        assert_eq!(
            micro_time("2026-01-02T04:04:05.1234567+01:00").as_deref(),
            Some("2026-01-02T03:04:05.123456Z")
        );
        assert_eq!(
            micro_time("2026-01-02T03:04:05Z").as_deref(),
            Some("2026-01-02T03:04:05.000000Z")
        );
        assert_eq!(micro_time("yesterday"), None);
    }

    use super::*;
    use crate::store::resources;

    fn info(group: &str, kind: &str) -> ResourceInfo {
        resources::builtins()
            .into_iter()
            .find(|i| i.group == group && i.kind == kind)
            .unwrap()
    }

    #[test]
    fn secret_string_data_is_merged_and_dropped() {
        let mut s = json!({"data": {"a": "eA=="}, "stringData": {"a": "y", "b": "hello"}});
        apply(&info("", "Secret"), &mut s);
        assert_eq!(
            s,
            json!({"data": {"a": "eQ==", "b": "aGVsbG8="}, "type": "Opaque"})
        );
        let mut typed = json!({"type": "kubernetes.io/tls"});
        apply(&info("", "Secret"), &mut typed);
        assert_eq!(typed["type"], "kubernetes.io/tls");
    }

    #[test]
    fn deployment_gets_the_apps_v1_defaults() {
        let mut d = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}});
        apply(&info("apps", "Deployment"), &mut d);
        let s = &d["spec"];
        assert_eq!(s["replicas"], 1);
        assert_eq!(
            s["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(s["revisionHistoryLimit"], 10);
        assert_eq!(s["progressDeadlineSeconds"], 600);
        let pod = &s["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert_eq!(pod["securityContext"], json!({}));
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        let c = &pod["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c["terminationMessagePolicy"], "File");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert!(pod.get("enableServiceLinks").is_none(), "templates only");
        let mut recreate = json!({"spec": {"strategy": {"type": "Recreate"}}});
        apply(&info("apps", "Deployment"), &mut recreate);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        assert!(pulls_always("nginx"));
        assert!(pulls_always("nginx:latest"));
        assert!(pulls_always("registry:5000/team/app"));
        assert!(!pulls_always("registry:5000/team/app:1.2"));
        assert!(!pulls_always("nginx@sha256:abc"));
    }

    #[test]
    fn service_ports_default_protocol_and_target_port() {
        let mut s =
            json!({"spec": {"ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}});
        apply(&info("", "Service"), &mut s);
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["sessionAffinity"], "None");
        assert_eq!(
            s["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(s["spec"]["ports"][1]["targetPort"], "https");
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
        assert_eq!(s["spec"]["internalTrafficPolicy"], "Cluster");
        assert!(s["spec"].get("externalTrafficPolicy").is_none());
    }

    #[test]
    fn a_new_pod_is_pending_with_its_qos_class() {
        let mut p = json!({"spec": {"containers": [{"name": "c", "image": "nginx",
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        apply(&info("", "Pod"), &mut p);
        assert_eq!(p["status"]["phase"], "Pending");
        assert_eq!(p["status"]["qosClass"], "Guaranteed");
        // What the kubelet wrote stays.
        let mut running = json!({"spec": {"containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running", "qosClass": "BestEffort"}});
        apply(&info("", "Pod"), &mut running);
        assert_eq!(running["status"]["phase"], "Running");
    }

    #[test]
    fn job_defaults_keep_the_restart_policy() {
        let mut j = json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        apply(&info("batch", "Job"), &mut j);
        let s = &j["spec"];
        assert_eq!(
            (
                &s["completions"],
                &s["parallelism"],
                &s["backoffLimit"],
                &s["completionMode"],
                &s["suspend"]
            ),
            (
                &json!(1),
                &json!(1),
                &json!(6),
                &json!("NonIndexed"),
                &json!(false)
            )
        );
        assert_eq!(s["template"]["spec"]["restartPolicy"], "Never");
        assert_eq!(
            s["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
        let mut parallel = json!({"spec": {"parallelism": 3, "template": {}}});
        apply(&info("batch", "Job"), &mut parallel);
        assert!(parallel["spec"].get("completions").is_none());
    }

    #[test]
    fn pods_get_admission_defaults_and_requests_from_limits() {
        let mut p = json!({"spec": {"containers": [{"name": "c", "image": "x:1",
            "resources": {"limits": {"cpu": "1"}}}],
            "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}});
        apply(&info("", "Pod"), &mut p);
        let s = &p["spec"];
        assert_eq!(s["serviceAccountName"], "default");
        assert_eq!(s["enableServiceLinks"], true);
        assert_eq!(s["tolerations"].as_array().map(Vec::len), Some(2));
        assert_eq!(s["containers"][0]["resources"]["requests"]["cpu"], "1");
        assert_eq!(s["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(s["volumes"][1]["secret"]["defaultMode"], 420);
        let again = p.clone();
        apply(&info("", "Pod"), &mut p);
        assert_eq!(p, again, "defaulting is idempotent");
    }
}
