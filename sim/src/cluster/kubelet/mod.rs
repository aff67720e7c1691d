//! The kubelets of the simulated Nodes: a Pod bound to one of them is prepared (volumes
//! mounted, image pulled, env resolved) and runs after `SimConfig::pod_start`, with an IP from
//! its Node's podCIDR and the status fields, conditions and Events a real kubelet writes.
//!
//! Before starting it checks what a real kubelet checks, with the same outcomes: a missing
//! Secret/ConfigMap volume keeps the Pod `ContainerCreating` with `FailedMount` Events; a missing
//! Secret, ConfigMap or key in `env`/`envFrom` is `CreateContainerConfigError`; an unparseable
//! image is `InvalidImageName`; `optional: true` is honoured. Containers of Pods with
//! `restartPolicy: Never/OnFailure` run for `pod_start` and exit. Deleted Pods go after a short
//! grace. Workload faults: ImagePullBackOff, CrashLoopBackOff, NotReady, StuckTerminating (Pods),
//! JobFailed (the Job owning the Pod). What the images refuse as the real programs do (a pgAdmin
//! configuration the real one cannot load, a probe on an undeclared port) is in `image_rules`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

mod images;
mod stages;

use super::image_rules;
use super::util::{self, hex64, is_deleting, is_terminal, str_at};
use super::{
    CONFIGMAPS, Component, Ctx, EventKind, JOBS, Kind, NODES, Next, PODS, SECRETS, Tx,
    WorkloadFault, key_of,
};
use crate::apiserver::error::ApiError;
use crate::store::objects::{Event, ObjKey};
use images::{image_id, image_valid, normalized};

const NAME: &str = "kubelet";
/// Base and cap of the kubelet's container restart and image pull back-off.
const BACKOFF: Duration = Duration::from_secs(10);
const BACKOFF_CAP: Duration = Duration::from_secs(300);
/// How often a Pod waiting on a mount or config is looked at again without a change.
const RECHECK: Duration = Duration::from_secs(10);

/// Where one Pod is in its life, as the kubelet remembers it between syncs.
#[derive(Debug, Clone)]
struct Track {
    /// When the kubelet first saw it bound (start delays count from here).
    seen: Instant,
    /// When the current container run began.
    running_since: Option<Instant>,
    /// When the current back-off (image pull or crash) ends.
    backoff_until: Option<Instant>,
    pull_failures: u32,
    /// When the last image pull failed.
    pull_failed_at: Option<Instant>,
    /// When deletion was first seen.
    deleting_since: Option<Instant>,
}

#[derive(Default)]
struct State {
    pods: HashMap<ObjKey, Track>,
    /// node -> last octets in use, and pod -> (node, octet).
    ips: HashMap<String, BTreeSet<u8>>,
    owner: HashMap<ObjKey, (String, u8)>,
    /// Pods held up by a missing Secret/ConfigMap (volume or env), woken when one changes.
    blocked: BTreeSet<ObjKey>,
}

#[derive(Default)]
pub struct Kubelet {
    state: Mutex<State>,
}

fn backoff(n: u32) -> Duration {
    BACKOFF
        .saturating_mul(1 << n.saturating_sub(1).min(5))
        .min(BACKOFF_CAP)
}

fn optional(v: &Value) -> bool {
    v.get("optional").and_then(Value::as_bool) == Some(true)
}

/// `env`/`envFrom` of one container resolved against Secrets and ConfigMaps, as
/// `makeEnvironmentVariables` does: the first problem, in the kubelet's words.
fn env_problem(tx: &Tx<'_>, ns: &str, container: &Value) -> Option<String> {
    let sources = container
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for src in sources {
        for (field, kind, word) in [
            ("configMapRef", CONFIGMAPS, "configmap"),
            ("secretRef", SECRETS, "secret"),
        ] {
            if let Some(r) = src.get(field) {
                let name = str_at(r, "/name").unwrap_or("");
                if tx.get(kind, ns, name).is_none() && !optional(r) {
                    return Some(format!("{word} \"{name}\" not found"));
                }
            }
        }
    }
    let env = container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for var in env {
        for (field, kind, word, title) in [
            ("configMapKeyRef", CONFIGMAPS, "configmap", "ConfigMap"),
            ("secretKeyRef", SECRETS, "secret", "Secret"),
        ] {
            let Some(r) = var.pointer(&format!("/valueFrom/{field}")) else {
                continue;
            };
            let name = str_at(r, "/name").unwrap_or("");
            let key = str_at(r, "/key").unwrap_or("");
            match tx.get(kind, ns, name) {
                None if optional(r) => {}
                None => return Some(format!("{word} \"{name}\" not found")),
                Some(obj) => {
                    let has = ["data", "binaryData", "stringData"]
                        .iter()
                        .any(|d| obj.get(*d).and_then(|m| m.get(key)).is_some());
                    if !has && !optional(r) {
                        return Some(format!("couldn't find key {key} in {title} {ns}/{name}"));
                    }
                }
            }
        }
    }
    None
}

/// The `imagePullSecrets` of a Pod that the kubelet cannot read (they do not exist), in the
/// Pod's order: it pulls without them (`FailedToRetrieveImagePullSecret`).
fn missing_pull_secrets(tx: &Tx<'_>, ns: &str, pod: &Value) -> Vec<String> {
    pod.pointer("/spec/imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| str_at(r, "/name"))
        .filter(|name| !name.is_empty() && tx.get(SECRETS, ns, name).is_none())
        .map(str::to_string)
        .collect()
}

/// Secret and ConfigMap volumes (also inside projected ones) that cannot be mounted:
/// `(volume, message)` for the FailedMount Event.
fn mount_problems(tx: &Tx<'_>, ns: &str, pod: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let volumes = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for v in volumes {
        let vol = str_at(v, "/name").unwrap_or("").to_string();
        let mut sources: Vec<(Kind, &str, &Value, &str)> = Vec::new();
        if let Some(s) = v.get("secret") {
            sources.push((SECRETS, "secret", s, "secretName"));
        }
        if let Some(c) = v.get("configMap") {
            sources.push((CONFIGMAPS, "configmap", c, "name"));
        }
        for p in v
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(s) = p.get("secret") {
                sources.push((SECRETS, "secret", s, "name"));
            }
            if let Some(c) = p.get("configMap") {
                sources.push((CONFIGMAPS, "configmap", c, "name"));
            }
        }
        for (kind, word, src, name_field) in sources {
            let name = src.get(name_field).and_then(Value::as_str).unwrap_or("");
            match tx.get(kind, ns, name) {
                None if optional(src) => {}
                None => out.push((
                    vol.clone(),
                    format!("MountVolume.SetUp failed for volume \"{vol}\" : {word} \"{name}\" not found"),
                )),
                Some(obj) => {
                    let missing = src
                        .get("items")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|i| i.get("key").and_then(Value::as_str))
                        .find(|k| {
                            ["data", "binaryData"]
                                .iter()
                                .all(|d| obj.get(*d).and_then(|m| m.get(*k)).is_none())
                        });
                    if let Some(k) = missing
                        && !optional(src)
                    {
                        out.push((
                            vol.clone(),
                            format!("MountVolume.SetUp failed for volume \"{vol}\" : references non-existent {word} key: {k}"),
                        ));
                    }
                }
            }
        }
    }
    out
}

fn container_names(pod: &Value) -> Vec<String> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// What the containers of a started Pod are doing.
#[derive(Debug, Clone, PartialEq)]
enum Run {
    Running {
        ready: bool,
        /// Why the readiness probe cannot even be run, when it cannot.
        probe_error: Option<String>,
    },
    /// Exited; `restarting` when the restart policy brings it back (after a back-off).
    Exited { code: i64, restarting: bool },
}

impl Kubelet {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An address from the node's podCIDR, kept until the Pod is gone.
    fn ip_for(&self, tx: &Tx<'_>, key: &ObjKey, node: &str) -> Option<String> {
        let cidr = tx
            .get(NODES, "", node)
            .and_then(|n| str_at(&n, "/spec/podCIDR").map(str::to_string))?;
        let prefix = cidr.strip_suffix(".0/24")?.to_string();
        let mut st = self.state();
        if let Some((n, octet)) = st.owner.get(key)
            && n == node
        {
            return Some(format!("{prefix}.{octet}"));
        }
        let used = st.ips.entry(node.to_string()).or_default();
        let octet = (2u8..=254).find(|o| !used.contains(o))?;
        used.insert(octet);
        st.owner.insert(key.clone(), (node.to_string(), octet));
        Some(format!("{prefix}.{octet}"))
    }

    fn set_blocked(&self, key: &ObjKey, blocked: bool) {
        let mut st = self.state();
        if blocked {
            st.blocked.insert(key.clone());
        } else {
            st.blocked.remove(key);
        }
    }

    fn forget(&self, key: &ObjKey) {
        let mut st = self.state();
        st.pods.remove(key);
        st.blocked.remove(key);
        if let Some((node, octet)) = st.owner.remove(key)
            && let Some(set) = st.ips.get_mut(&node)
        {
            set.remove(&octet);
        }
    }
}

/// The Job a Pod belongs to, for the JobFailed fault.
fn owning_job(tx: &Tx<'_>, pod: &Value, ns: &str) -> Option<std::sync::Arc<Value>> {
    let name = super::controller_of(pod, JOBS)?;
    tx.get(JOBS, ns, &name)
}

impl Component for Kubelet {
    fn name(&self) -> &'static str {
        NAME
    }

    fn primary(&self) -> Kind {
        PODS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![SECRETS, CONFIGMAPS]
    }

    fn map(&self, _ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if PODS.is(&event.res) {
            return vec![key_of(&event.object)];
        }
        // A Secret or ConfigMap appeared or changed: Pods of its namespace that wait on config.
        self.state()
            .blocked
            .iter()
            .filter(|(ns, _)| *ns == event.namespace)
            .cloned()
            .collect()
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(NAME);
        let Some(pod) = tx.get_key(PODS, key) else {
            self.forget(key);
            return Ok(Next::Done);
        };
        let Some(node) = str_at(&pod, "/spec/nodeName").map(str::to_string) else {
            return Ok(Next::Done);
        };
        if tx.get(NODES, "", &node).is_none() {
            return Ok(Next::Done); // not one of ours: nobody runs it
        }
        let now = Instant::now();
        let track = {
            let mut st = self.state();
            st.pods
                .entry(key.clone())
                .or_insert(Track {
                    seen: now,
                    running_since: None,
                    backoff_until: None,
                    pull_failures: 0,
                    pull_failed_at: None,
                    deleting_since: None,
                })
                .clone()
        };
        if is_deleting(&pod) {
            return self.terminate(ctx, &mut tx, &pod, key, track);
        }
        if is_terminal(&pod) {
            return Ok(Next::Done);
        }
        self.sync(ctx, &mut tx, &pod, key, &node, track)
    }
}

impl Kubelet {
    fn set_track(&self, key: &ObjKey, f: impl FnOnce(&mut Track)) {
        if let Some(t) = self.state().pods.get_mut(key) {
            f(t);
        }
    }

    /// Deletion: containers stop, then the Pod object goes (unless StuckTerminating).
    fn terminate(
        &self,
        ctx: &Ctx,
        tx: &mut Tx<'_>,
        pod: &Value,
        key: &ObjKey,
        track: Track,
    ) -> Result<Next, ApiError> {
        if ctx.fault(WorkloadFault::StuckTerminating, pod) {
            return Ok(Next::Done);
        }
        let since = match track.deleting_since {
            Some(s) => s,
            None => {
                let now = Instant::now();
                self.set_track(key, |t| t.deleting_since = Some(now));
                now
            }
        };
        let grace = util::int_at(pod, "/metadata/deletionGracePeriodSeconds").unwrap_or(0);
        // Containers exit on SIGTERM quickly; never wait longer than the grace period.
        let wait = ctx
            .server
            .config
            .pod_start
            .min(Duration::from_secs(grace.max(0) as u64));
        let elapsed = since.elapsed();
        if elapsed < wait {
            return Ok(Next::After(wait - elapsed));
        }
        let now = crate::apiserver::ops::DeleteOpts {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        tx.delete_with(PODS, &key.0, &key.1, &now)?;
        Ok(Next::Done)
    }

    fn rebuild_ips(&self, tx: &Tx<'_>) {
        let pods = tx.list(PODS, None);
        let mut st = self.state();
        st.ips.clear();
        st.owner.clear();
        for p in pods {
            let (Some(node), Some(ip)) =
                (str_at(&p, "/spec/nodeName"), str_at(&p, "/status/podIP"))
            else {
                continue;
            };
            if let Some(octet) = ip.rsplit('.').next().and_then(|o| o.parse::<u8>().ok()) {
                st.ips.entry(node.to_string()).or_default().insert(octet);
                st.owner.insert(key_of(&p), (node.to_string(), octet));
            }
        }
    }

    /// What the container does after it started: keep running, exit (Job pods), crash.
    fn run_outcome(&self, ctx: &Ctx, tx: &Tx<'_>, pod: &Value) -> Run {
        let ns = str_at(pod, "/metadata/namespace").unwrap_or("");
        let policy = str_at(pod, "/spec/restartPolicy").unwrap_or("Always");
        let job_fails =
            owning_job(tx, pod, ns).is_some_and(|j| ctx.fault(WorkloadFault::JobFailed, &j));
        // A program the image refuses its configuration exits at every start (image_rules).
        let refused = image_rules::start_refusal(pod).is_some();
        if refused
            || ctx.fault(WorkloadFault::CrashLoopBackOff, pod)
            || (job_fails && policy != "Always")
        {
            return Run::Exited {
                code: 1,
                restarting: policy != "Never",
            };
        }
        if policy != "Always" {
            return Run::Exited {
                code: 0,
                restarting: false,
            };
        }
        let probe_error = image_rules::probe_error(pod);
        Run::Running {
            ready: !ctx.fault(WorkloadFault::NotReady, pod) && probe_error.is_none(),
            probe_error,
        }
    }

    fn after_start(&self, ctx: &Ctx, tx: &Tx<'_>, pod: &Value) -> Next {
        match self.run_outcome(ctx, tx, pod) {
            Run::Exited { .. } => Next::After(ctx.server.config.pod_start),
            Run::Running { .. } => Next::Done,
        }
    }

    /// A started Pod: readiness follows NotReady; exits follow the restart policy.
    #[allow(clippy::too_many_arguments)]
    fn running(
        &self,
        ctx: &Ctx,
        tx: &mut Tx<'_>,
        pod: &Value,
        key: &ObjKey,
        containers: &[Value],
        track: Track,
        node: &str,
    ) -> Result<Next, ApiError> {
        let stamp = ctx.clock.rfc3339();
        let names = container_names(pod);
        let ip = str_at(pod, "/status/podIP").unwrap_or("").to_string();
        let restarts = pod
            .pointer("/status/containerStatuses/0/restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        // In back-off after a crash: restart when it ends, or at once when the fault is gone.
        if let Some(until) = track.backoff_until {
            let outcome = self.run_outcome(ctx, tx, pod);
            let now = Instant::now();
            if now < until && matches!(outcome, Run::Exited { .. }) {
                return Ok(Next::After(until - now));
            }
            let stored =
                self.start_containers(ctx, tx, pod.clone(), containers, &ip, restarts, None)?;
            for c in containers {
                let cname = str_at(c, "/name").unwrap_or("");
                tx.event(
                    &stored,
                    EventKind::Normal,
                    "Started",
                    &format!("Started container {cname}"),
                    Some(node),
                )?;
            }
            self.set_track(key, |t| {
                t.running_since = Some(now);
                t.backoff_until = None;
            });
            return Ok(self.after_start(ctx, tx, &stored));
        }
        match self.run_outcome(ctx, tx, pod) {
            Run::Running { ready, probe_error } => {
                let stored = self.start_containers(
                    ctx,
                    tx,
                    pod.clone(),
                    containers,
                    &ip,
                    restarts,
                    Some(ready),
                )?;
                if !ready {
                    tx.event(
                        &stored,
                        EventKind::Warning,
                        "Unhealthy",
                        probe_error.as_deref().unwrap_or(
                            "Readiness probe failed: HTTP probe failed with statuscode: 503",
                        ),
                        Some(node),
                    )?;
                    return Ok(Next::After(RECHECK));
                }
                Ok(Next::Done)
            }
            Run::Exited { code, restarting } => {
                let since = track.running_since.unwrap_or(track.seen);
                let ran = since.elapsed();
                let start = ctx.server.config.pod_start;
                if ran < start {
                    return Ok(Next::After(start - ran));
                }
                let mut next = pod.clone();
                let started_at = pod
                    .pointer("/status/containerStatuses/0/state/running/startedAt")
                    .cloned()
                    .unwrap_or_else(|| json!(stamp));
                let reason = if code == 0 { "Completed" } else { "Error" };
                let statuses: Vec<Value> = pod
                    .pointer("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let uid = str_at(pod, "/metadata/uid").unwrap_or("");
                let pod_ref = format!("{}_{}({uid})", key.1, key.0);
                if restarting {
                    let n = (restarts + 1) as u32;
                    let delay = backoff(n);
                    let msg_delay = format!("{}s", delay.as_secs());
                    let updated: Vec<Value> = statuses
                        .into_iter()
                        .map(|mut s| {
                            let name = s["name"].as_str().unwrap_or("").to_string();
                            let terminated = json!({"exitCode": code, "reason": reason,
                                "startedAt": started_at, "finishedAt": stamp,
                                "containerID": s.get("containerID").cloned().unwrap_or(Value::Null)});
                            s["lastState"] = json!({"terminated": terminated});
                            s["state"] = json!({"waiting": {"reason": "CrashLoopBackOff",
                                "message": format!("back-off {msg_delay} restarting failed container={name} pod={pod_ref}")}});
                            s["ready"] = json!(false);
                            s["started"] = json!(false);
                            s["restartCount"] = json!(restarts + 1);
                            s
                        })
                        .collect();
                    next["status"]["containerStatuses"] = Value::Array(updated);
                    set_ready(&mut next["status"], false, &names, &stamp);
                    let stored = tx.update_status(PODS, next)?;
                    for c in &names {
                        tx.event(
                            &stored,
                            EventKind::Warning,
                            "BackOff",
                            &format!("Back-off restarting failed container {c} in pod {pod_ref}"),
                            Some(node),
                        )?;
                    }
                    let until = Instant::now() + delay;
                    self.set_track(key, |t| t.backoff_until = Some(until));
                    return Ok(Next::After(delay));
                }
                let updated: Vec<Value> = statuses
                    .into_iter()
                    .map(|mut s| {
                        s["state"] = json!({"terminated": {"exitCode": code, "reason": reason,
                            "startedAt": started_at, "finishedAt": stamp,
                            "containerID": s.get("containerID").cloned().unwrap_or(Value::Null)}});
                        s["ready"] = json!(false);
                        s["started"] = json!(false);
                        s
                    })
                    .collect();
                next["status"]["containerStatuses"] = Value::Array(updated);
                next["status"]["phase"] = json!(if code == 0 { "Succeeded" } else { "Failed" });
                let st = &mut next["status"];
                let why = if code == 0 {
                    "PodCompleted"
                } else {
                    "PodFailed"
                };
                for t in ["Ready", "ContainersReady"] {
                    util::set_condition(
                        st,
                        t,
                        "False",
                        why,
                        "",
                        &stamp,
                        &[("lastProbeTime", Value::Null)],
                    );
                }
                util::set_condition(
                    st,
                    "PodReadyToStartContainers",
                    "False",
                    "",
                    "",
                    &stamp,
                    &[("lastProbeTime", Value::Null)],
                );
                tx.update_status(PODS, next)?;
                Ok(Next::Done)
            }
        }
    }

    /// Containers waiting (ContainerCreating, CreateContainerConfigError, ...).
    #[allow(clippy::too_many_arguments)]
    fn write_waiting(
        &self,
        ctx: &Ctx,
        tx: &mut Tx<'_>,
        mut next: Value,
        names: &[String],
        reason: &str,
        message: Option<&str>,
        unready: &str,
        sandbox_ready: bool,
    ) -> Result<std::sync::Arc<Value>, ApiError> {
        let stamp = ctx.clock.rfc3339();
        let images: HashMap<String, String> = next
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some((
                    str_at(c, "/name")?.to_string(),
                    str_at(c, "/image").unwrap_or("").to_string(),
                ))
            })
            .collect();
        let statuses: Vec<Value> = names
            .iter()
            .map(|n| {
                let mut waiting = json!({"reason": reason});
                if let Some(m) = message {
                    waiting["message"] = json!(m);
                }
                json!({"name": n, "image": images.get(n).cloned().unwrap_or_default(), "imageID": "",
                    "ready": false, "restartCount": 0, "started": false,
                    "state": {"waiting": waiting}, "lastState": {}})
            })
            .collect();
        let st = &mut next["status"];
        st["phase"] = json!("Pending");
        st["containerStatuses"] = Value::Array(statuses);
        let probe = [("lastProbeTime", Value::Null)];
        util::set_condition(
            st,
            "PodReadyToStartContainers",
            if sandbox_ready { "True" } else { "False" },
            "",
            "",
            &stamp,
            &probe,
        );
        util::set_condition(st, "Initialized", "True", "", "", &stamp, &probe);
        util::set_condition(
            st,
            "Ready",
            "False",
            "ContainersNotReady",
            unready,
            &stamp,
            &probe,
        );
        util::set_condition(
            st,
            "ContainersReady",
            "False",
            "ContainersNotReady",
            unready,
            &stamp,
            &probe,
        );
        util::set_condition(st, "PodScheduled", "True", "", "", &stamp, &probe);
        order_conditions(st);
        tx.update_status(PODS, next)
    }

    /// Containers running; `ready` None means "as the probes say" (ready unless NotReady).
    #[allow(clippy::too_many_arguments)]
    fn start_containers(
        &self,
        ctx: &Ctx,
        tx: &mut Tx<'_>,
        mut next: Value,
        containers: &[Value],
        ip: &str,
        restarts: i64,
        ready: Option<bool>,
    ) -> Result<std::sync::Arc<Value>, ApiError> {
        let stamp = ctx.clock.rfc3339();
        let ready = ready.unwrap_or_else(|| !ctx.fault(WorkloadFault::NotReady, &next));
        let names = container_names(&next);
        let old: HashMap<String, Value> = next
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| Some((s.get("name")?.as_str()?.to_string(), s.clone())))
            .collect();
        let statuses: Vec<Value> = containers
            .iter()
            .map(|c| {
                let name = str_at(c, "/name").unwrap_or("").to_string();
                let image = str_at(c, "/image").unwrap_or("").to_string();
                let prev = old.get(&name);
                let running = prev
                    .and_then(|p| p.pointer("/state/running"))
                    .cloned()
                    .unwrap_or_else(|| json!({"startedAt": stamp}));
                // A running container keeps its id; a (re)started one gets a new one.
                let id = match prev.filter(|p| p.pointer("/state/running").is_some()).and_then(|p| p.get("containerID")) {
                    Some(id) => id.clone(),
                    None => json!(format!("containerd://{}", hex64(ctx.rng_for(NAME, rand::RngExt::random::<u64>)))),
                };
                json!({
                    "name": name,
                    "image": normalized(&image),
                    "imageID": image_id(&image),
                    "containerID": id,
                    "ready": ready,
                    "restartCount": restarts,
                    "started": true,
                    "state": {"running": running},
                    "lastState": prev.and_then(|p| p.get("lastState")).cloned().unwrap_or(json!({})),
                })
            })
            .collect();
        let st = &mut next["status"];
        st["phase"] = json!("Running");
        st["containerStatuses"] = Value::Array(statuses);
        if !ip.is_empty() {
            st["podIP"] = json!(ip);
            st["podIPs"] = json!([{"ip": ip}]);
        }
        let has_init_statuses = next.pointer("/status/initContainerStatuses").is_some();
        if let Some(inits) = next
            .pointer("/spec/initContainers")
            .and_then(Value::as_array)
            .cloned()
            .filter(|_| !has_init_statuses)
        {
            let done: Vec<Value> = inits
                .iter()
                .map(|c| json!({"name": str_at(c, "/name").unwrap_or(""), "image": normalized(str_at(c, "/image").unwrap_or("")),
                    "imageID": image_id(str_at(c, "/image").unwrap_or("")), "ready": true, "restartCount": 0, "started": false,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": stamp, "finishedAt": stamp}}, "lastState": {}}))
                .collect();
            next["status"]["initContainerStatuses"] = Value::Array(done);
        }
        let st = &mut next["status"];
        let probe = [("lastProbeTime", Value::Null)];
        util::set_condition(
            st,
            "PodReadyToStartContainers",
            "True",
            "",
            "",
            &stamp,
            &probe,
        );
        util::set_condition(st, "Initialized", "True", "", "", &stamp, &probe);
        set_ready(st, ready, &names, &stamp);
        util::set_condition(st, "PodScheduled", "True", "", "", &stamp, &probe);
        order_conditions(st);
        tx.update_status(PODS, next)
    }

    #[allow(clippy::too_many_arguments)]
    fn pull_failure(
        &self,
        ctx: &Ctx,
        tx: &mut Tx<'_>,
        next: Value,
        key: &ObjKey,
        names: &[String],
        image: &str,
        unready: &str,
        track: Track,
        node: &str,
    ) -> Result<Next, ApiError> {
        let now = Instant::now();
        let start = ctx.server.config.pod_start;
        // Alternate as the kubelet does: a pull attempt fails (ErrImagePull), then back-off.
        if let Some(until) = track.backoff_until
            && now < until
        {
            let waiting = next
                .pointer("/status/containerStatuses/0/state/waiting/reason")
                .and_then(Value::as_str)
                == Some("ErrImagePull");
            let since_fail = track.pull_failed_at.map(|t| t.elapsed()).unwrap_or(start);
            if waiting && since_fail >= start {
                let msg = format!("Back-off pulling image \"{image}\"");
                let stored = self.write_waiting(
                    ctx,
                    tx,
                    next,
                    names,
                    "ImagePullBackOff",
                    Some(&msg),
                    unready,
                    true,
                )?;
                tx.event(&stored, EventKind::Normal, "BackOff", &msg, Some(node))?;
                tx.event(
                    &stored,
                    EventKind::Warning,
                    "Failed",
                    "Error: ImagePullBackOff",
                    Some(node),
                )?;
            }
            let remaining = until - now;
            return Ok(Next::After(if waiting && since_fail < start {
                start - since_fail
            } else {
                remaining
            }));
        }
        let failures = track.pull_failures + 1;
        let err = format!(
            "failed to pull and unpack image \"{}\": failed to resolve reference \"{}\": {}: not found",
            normalized(image),
            normalized(image),
            normalized(image)
        );
        let msg =
            format!("Failed to pull image \"{image}\": rpc error: code = NotFound desc = {err}");
        tx.event(
            &next,
            EventKind::Normal,
            "Pulling",
            &format!("Pulling image \"{image}\""),
            Some(node),
        )?;
        let stored = self.write_waiting(
            ctx,
            tx,
            next,
            names,
            "ErrImagePull",
            Some(&msg),
            unready,
            true,
        )?;
        tx.event(&stored, EventKind::Warning, "Failed", &msg, Some(node))?;
        tx.event(
            &stored,
            EventKind::Warning,
            "Failed",
            "Error: ErrImagePull",
            Some(node),
        )?;
        let until = now + start + backoff(failures);
        self.set_track(key, |t| {
            t.pull_failures = failures;
            t.backoff_until = Some(until);
            t.pull_failed_at = Some(now);
        });
        Ok(Next::After(start))
    }
}

fn set_ready(st: &mut Value, ready: bool, names: &[String], stamp: &str) {
    let probe = [("lastProbeTime", Value::Null)];
    if ready {
        util::set_condition(st, "Ready", "True", "", "", stamp, &probe);
        util::set_condition(st, "ContainersReady", "True", "", "", stamp, &probe);
    } else {
        let msg = format!("containers with unready status: [{}]", names.join(" "));
        util::set_condition(
            st,
            "Ready",
            "False",
            "ContainersNotReady",
            &msg,
            stamp,
            &probe,
        );
        util::set_condition(
            st,
            "ContainersReady",
            "False",
            "ContainersNotReady",
            &msg,
            stamp,
            &probe,
        );
    }
}

/// The kubelet writes pod conditions in a fixed order.
fn order_conditions(st: &mut Value) {
    const ORDER: [&str; 5] = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ];
    if let Some(list) = st.get_mut("conditions").and_then(Value::as_array_mut) {
        list.sort_by_key(|c| {
            let t = c.get("type").and_then(Value::as_str).unwrap_or("");
            ORDER.iter().position(|o| *o == t).unwrap_or(ORDER.len())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::defaults::qos_class;

    #[test]
    fn back_off_doubles_to_a_cap() {
        assert_eq!(backoff(1), Duration::from_secs(10));
        assert_eq!(backoff(2), Duration::from_secs(20));
        assert_eq!(backoff(10), Duration::from_secs(300));
    }

    #[test]
    fn qos_classes() {
        assert_eq!(
            qos_class(&json!({"spec": {"containers": [{"name": "a"}]}})),
            "BestEffort"
        );
        let g = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        assert_eq!(qos_class(&g), "Guaranteed");
        let b = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}});
        assert_eq!(qos_class(&b), "Burstable");
    }
}
