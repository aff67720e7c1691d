//! The lifecycle of a bound, live Pod as a table of stages, after KWOK's stages: each stage
//! is a selector on what the kubelet knows of the Pod ([`Facts`]), the change it writes
//! (status, Events, its own bookkeeping) and the delay it answers ([`Next`]). A sync runs the
//! stages in table order; a stage that selects the Pod either ends the sync with its delay or
//! passes it on to the next stages. Deletion and finished Pods are handled before the table
//! (`Kubelet::reconcile`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{
    Kubelet, RECHECK, Track, container_names, env_problem, image_valid, missing_pull_secrets,
    mount_problems,
};
use crate::apiserver::defaults::qos_class;
use crate::apiserver::error::ApiError;
use crate::cluster::nodes::node_ip;
use crate::cluster::util::str_at;
use crate::cluster::{Ctx, EventKind, Next, PODS, Tx, WorkloadFault};
use crate::store::objects::ObjKey;

/// What a sync knows of one Pod, read once before the stages run; the selectors read only this.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Facts {
    /// Secret/ConfigMap volumes that cannot be mounted: (volume, message).
    pub mounts: Vec<(String, String)>,
    /// The first image the runtime cannot parse.
    pub invalid_image: Option<String>,
    /// The ImagePullBackOff workload fault holds the Pod.
    pub pull_fault: bool,
    /// Image pulls failed before (their back-off is forgotten once pulls work again).
    pub pull_failed_before: bool,
    /// No sync wrote a status yet.
    pub first_sync: bool,
    /// A container run began.
    pub started: bool,
    /// What is left of the start delay (pull, create); zero once it passed.
    pub start_left: Duration,
    /// A missing Secret, ConfigMap or key in `env`/`envFrom` (read only before the start).
    pub config_problem: Option<String>,
    /// `imagePullSecrets` that do not exist (the pull goes on without them).
    pub missing_pull_secrets: Vec<String>,
}

impl Facts {
    fn read(ctx: &Ctx, tx: &Tx<'_>, pod: &Value, key: &ObjKey, track: &Track) -> Self {
        let containers = containers(pod);
        let started = track.running_since.is_some();
        let invalid_image = containers
            .iter()
            .map(|c| str_at(c, "/image").unwrap_or(""))
            .find(|image| !image_valid(image))
            .map(str::to_string);
        Self {
            mounts: mount_problems(tx, &key.0, pod),
            invalid_image,
            pull_fault: ctx.fault(WorkloadFault::ImagePullBackOff, pod),
            pull_failed_before: track.pull_failures > 0,
            first_sync: pod.pointer("/status/startTime").is_none(),
            started,
            start_left: ctx
                .server
                .config
                .pod_start
                .saturating_sub(track.seen.elapsed()),
            config_problem: if started {
                None
            } else {
                containers.iter().find_map(|c| env_problem(tx, &key.0, c))
            },
            missing_pull_secrets: missing_pull_secrets(tx, &key.0, pod),
        }
    }
}

fn containers(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// One sync of one Pod: what the stages read and write.
pub(super) struct Sync<'a, 't> {
    ctx: &'a Ctx,
    tx: &'a mut Tx<'t>,
    pod: &'a Value,
    key: &'a ObjKey,
    node: &'a str,
    track: Track,
    facts: Facts,
    /// The Pod with the status every write starts from (first sync: `Pending`, host, start).
    next: Value,
    names: Vec<String>,
    unready: String,
    containers: Vec<Value>,
    host_ip: String,
}

/// A stage's change: `Some` ends the sync with that delay, `None` passes the Pod on.
type Act = fn(&Kubelet, &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError>;

pub(super) struct Stage {
    pub name: &'static str,
    pub selects: fn(&Facts) -> bool,
    act: Act,
}

/// The stages in the order a sync tries them.
pub(super) const STAGES: &[Stage] = &[
    Stage {
        name: "volumes-unmounted",
        selects: |f| !f.mounts.is_empty(),
        act: volumes_unmounted,
    },
    Stage {
        name: "invalid-image",
        selects: |f| f.invalid_image.is_some(),
        act: invalid_image,
    },
    Stage {
        name: "image-pull-back-off",
        selects: |f| f.pull_fault,
        act: image_pull_back_off,
    },
    Stage {
        name: "pulls-recovered",
        selects: |f| f.pull_failed_before,
        act: pulls_recovered,
    },
    Stage {
        name: "container-creating",
        selects: |f| f.first_sync && !f.started,
        act: container_creating,
    },
    Stage {
        name: "start-delay",
        selects: |f| !f.started && !f.start_left.is_zero(),
        act: start_delay,
    },
    Stage {
        name: "config-error",
        selects: |f| !f.started && f.config_problem.is_some(),
        act: config_error,
    },
    Stage {
        name: "start",
        selects: |f| !f.started,
        act: start,
    },
    Stage {
        name: "running",
        selects: |f| f.started,
        act: running,
    },
];

impl Kubelet {
    /// Run the stages for a bound Pod that is neither deleting nor finished.
    pub(super) fn sync(
        &self,
        ctx: &Ctx,
        tx: &mut Tx<'_>,
        pod: &Value,
        key: &ObjKey,
        node: &str,
        track: Track,
    ) -> Result<Next, ApiError> {
        let facts = Facts::read(ctx, tx, pod, key, &track);
        // A Pod waiting on a volume is woken when a Secret or ConfigMap changes.
        self.set_blocked(key, !facts.mounts.is_empty());
        let names = container_names(pod);
        let node_no: u32 = node
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let host_ip = node_ip(node_no);
        let mut next = pod.clone();
        let status = &mut next["status"];
        if !status.is_object() {
            *status = json!({});
        }
        if facts.first_sync {
            status["phase"] = json!("Pending");
            status["hostIP"] = json!(host_ip);
            status["hostIPs"] = json!([{"ip": host_ip}]);
            status["startTime"] = json!(ctx.clock.rfc3339());
            status["qosClass"] = json!(qos_class(pod));
        }
        let mut s = Sync {
            ctx,
            tx,
            pod,
            key,
            node,
            track,
            unready: format!("containers with unready status: [{}]", names.join(" ")),
            names,
            next,
            containers: containers(pod),
            host_ip,
            facts,
        };
        for stage in STAGES {
            if !(stage.selects)(&s.facts) {
                continue;
            }
            tracing::trace!(pod = ?s.key, stage = stage.name, "kubelet stage");
            if let Some(next) = (stage.act)(self, &mut s)? {
                return Ok(next);
            }
        }
        Ok(Next::Done)
    }
}

/// A Secret/ConfigMap volume cannot be mounted: `ContainerCreating`, `FailedMount` Events.
fn volumes_unmounted(k: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    let next = s.next.clone();
    k.write_waiting(
        s.ctx,
        s.tx,
        next,
        &s.names,
        "ContainerCreating",
        None,
        &s.unready,
        false,
    )?;
    let stored =
        s.tx.get_key(PODS, s.key)
            .unwrap_or_else(|| Arc::new(s.pod.clone()));
    for (_, message) in &s.facts.mounts {
        s.tx.event(
            &stored,
            EventKind::Warning,
            "FailedMount",
            message,
            Some(s.node),
        )?;
    }
    Ok(Some(Next::After(RECHECK)))
}

/// An image the runtime cannot parse: `InvalidImageName`, for good.
fn invalid_image(k: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    let image = s.facts.invalid_image.clone().unwrap_or_default();
    let msg = format!(
        "Failed to apply default image tag \"{image}\": couldn't parse image name \"{image}\": invalid reference format"
    );
    let next = s.next.clone();
    k.write_waiting(
        s.ctx,
        s.tx,
        next,
        &s.names,
        "InvalidImageName",
        Some(&msg),
        &s.unready,
        true,
    )?;
    s.tx.event(
        s.pod,
        EventKind::Warning,
        "InspectFailed",
        &msg,
        Some(s.node),
    )?;
    s.tx.event(
        s.pod,
        EventKind::Warning,
        "Failed",
        "Error: InvalidImageName",
        Some(s.node),
    )?;
    Ok(Some(Next::Done))
}

/// The ImagePullBackOff fault: pulls of the first image fail, with the kubelet's back-off.
fn image_pull_back_off(k: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    let image = s
        .containers
        .first()
        .and_then(|c| str_at(c, "/image"))
        .unwrap_or("")
        .to_string();
    let next = s.next.clone();
    k.pull_failure(
        s.ctx,
        s.tx,
        next,
        s.key,
        &s.names,
        &image,
        &s.unready,
        s.track.clone(),
        s.node,
    )
    .map(Some)
}

/// Pulls work again: forget the failures and their back-off.
fn pulls_recovered(k: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    k.set_track(s.key, |t| {
        t.pull_failures = 0;
        t.pull_failed_at = None;
        t.backoff_until = None;
    });
    Ok(None)
}

/// First sight of the Pod: `ContainerCreating` and a `Pulling` Event per container.
fn container_creating(k: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    let next = s.next.clone();
    k.write_waiting(
        s.ctx,
        s.tx,
        next,
        &s.names,
        "ContainerCreating",
        None,
        &s.unready,
        false,
    )?;
    if !s.facts.missing_pull_secrets.is_empty() {
        // kubelet's getPullSecretsForPod: the pull goes on with the secrets it could read.
        s.tx.event(
            s.pod,
            EventKind::Warning,
            "FailedToRetrieveImagePullSecret",
            &format!(
                "Unable to retrieve some image pull secrets ({}); attempting to pull the image may not succeed.",
                s.facts.missing_pull_secrets.join(", ")
            ),
            Some(s.node),
        )?;
    }
    for c in &s.containers {
        let image = str_at(c, "/image").unwrap_or("");
        s.tx.event(
            s.pod,
            EventKind::Normal,
            "Pulling",
            &format!("Pulling image \"{image}\""),
            Some(s.node),
        )?;
    }
    Ok(None)
}

/// Pulling and creating take `SimConfig::pod_start`: come back when it has passed.
fn start_delay(_: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    Ok(Some(Next::After(s.facts.start_left)))
}

/// Config in `env`/`envFrom` is missing at container creation: `CreateContainerConfigError`.
fn config_error(k: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    let msg = s.facts.config_problem.clone().unwrap_or_default();
    k.set_blocked(s.key, true);
    let cur = current(s);
    let stored = k.write_waiting(
        s.ctx,
        s.tx,
        cur,
        &s.names,
        "CreateContainerConfigError",
        Some(&msg),
        &s.unready,
        true,
    )?;
    s.tx.event(
        &stored,
        EventKind::Warning,
        "Failed",
        &format!("Error: {msg}"),
        Some(s.node),
    )?;
    Ok(Some(Next::After(RECHECK)))
}

/// The containers start: an address, `Running`, the `Pulled`, `Created` and `Started` Events.
fn start(k: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    // The volume check already unblocked the Pod; config is fine here.
    k.set_blocked(s.key, false);
    let Some(ip) = k.ip_for(s.tx, s.key, s.node).or_else(|| {
        // Address leaked by a missed deletion: rebuild from the store and retry once.
        k.rebuild_ips(s.tx);
        k.ip_for(s.tx, s.key, s.node)
    }) else {
        return Ok(Some(Next::After(RECHECK)));
    };
    let host_net = s.pod.pointer("/spec/hostNetwork") == Some(&json!(true));
    let ip = if host_net { s.host_ip.clone() } else { ip };
    let cur = current(s);
    let stored = k.start_containers(s.ctx, s.tx, cur, &s.containers, &ip, 0, None)?;
    for c in &s.containers {
        let image = str_at(c, "/image").unwrap_or("");
        let cname = str_at(c, "/name").unwrap_or("");
        s.tx.event(&stored, EventKind::Normal, "Pulled", &format!("Successfully pulled image \"{image}\" in 1.2s (1.2s including waiting). Image size: 48000000 bytes."), Some(s.node))?;
        s.tx.event(
            &stored,
            EventKind::Normal,
            "Created",
            &format!("Created container: {cname}"),
            Some(s.node),
        )?;
        s.tx.event(
            &stored,
            EventKind::Normal,
            "Started",
            &format!("Started container {cname}"),
            Some(s.node),
        )?;
    }
    let now = Instant::now();
    k.set_track(s.key, |t| {
        t.running_since = Some(now);
        t.backoff_until = None;
    });
    Ok(Some(k.after_start(s.ctx, s.tx, &stored)))
}

/// A started Pod: readiness follows the faults and probes; exits follow the restart policy.
fn running(k: &Kubelet, s: &mut Sync<'_, '_>) -> Result<Option<Next>, ApiError> {
    k.running(
        s.ctx,
        s.tx,
        s.pod,
        s.key,
        &s.containers,
        s.track.clone(),
        s.node,
    )
    .map(Some)
}

/// The Pod as stored now (an earlier stage of this sync may have written it).
fn current(s: &Sync<'_, '_>) -> Value {
    s.tx.get_key(PODS, s.key)
        .map(|p| (*p).clone())
        .unwrap_or_else(|| s.next.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stages that select `facts`, in table order.
    fn selected(facts: &Facts) -> Vec<&'static str> {
        STAGES
            .iter()
            .filter(|s| (s.selects)(facts))
            .map(|s| s.name)
            .collect()
    }

    /// A Pod seen for the first time, nothing wrong: it is created and waits for the start.
    fn fresh() -> Facts {
        Facts {
            first_sync: true,
            start_left: Duration::from_secs(2),
            ..Facts::default()
        }
    }

    #[test]
    fn volumes_unmounted_selects_a_missing_volume() {
        let f = Facts {
            mounts: vec![("cfg".into(), "configmap \"cfg\" not found".into())],
            ..fresh()
        };
        assert_eq!(selected(&f)[0], "volumes-unmounted");
        assert!(!selected(&fresh()).contains(&"volumes-unmounted"));
    }

    #[test]
    fn invalid_image_selects_an_unparseable_image() {
        let f = Facts {
            invalid_image: Some("Nginx".into()),
            ..fresh()
        };
        assert_eq!(selected(&f)[0], "invalid-image");
        assert!(!selected(&fresh()).contains(&"invalid-image"));
    }

    #[test]
    fn image_pull_back_off_selects_the_fault() {
        let f = Facts {
            pull_fault: true,
            ..fresh()
        };
        assert_eq!(selected(&f)[0], "image-pull-back-off");
        assert!(!selected(&fresh()).contains(&"image-pull-back-off"));
    }

    #[test]
    fn pulls_recovered_selects_earlier_failures() {
        let f = Facts {
            pull_failed_before: true,
            ..fresh()
        };
        assert_eq!(selected(&f)[0], "pulls-recovered");
        assert!(!selected(&fresh()).contains(&"pulls-recovered"));
    }

    #[test]
    fn container_creating_selects_the_first_sync_only() {
        assert_eq!(selected(&fresh())[0], "container-creating");
        let later = Facts {
            first_sync: false,
            ..fresh()
        };
        assert!(!selected(&later).contains(&"container-creating"));
    }

    #[test]
    fn start_delay_selects_until_the_delay_passed() {
        assert_eq!(
            selected(&fresh()),
            ["container-creating", "start-delay", "start"]
        );
        let waited = Facts {
            start_left: Duration::ZERO,
            ..fresh()
        };
        assert!(!selected(&waited).contains(&"start-delay"));
    }

    #[test]
    fn config_error_selects_missing_config_before_the_start() {
        let f = Facts {
            start_left: Duration::ZERO,
            config_problem: Some("secret \"db\" not found".into()),
            ..fresh()
        };
        assert_eq!(
            selected(&f),
            ["container-creating", "config-error", "start"]
        );
        let started = Facts { started: true, ..f };
        assert!(!selected(&started).contains(&"config-error"));
    }

    #[test]
    fn start_selects_a_pod_not_yet_started() {
        let f = Facts {
            first_sync: false,
            start_left: Duration::ZERO,
            ..Facts::default()
        };
        assert_eq!(selected(&f), ["start"]);
    }

    #[test]
    fn running_selects_a_started_pod() {
        let f = Facts {
            started: true,
            ..Facts::default()
        };
        assert_eq!(selected(&f), ["running"]);
    }

    #[test]
    fn every_stage_is_named_once() {
        let mut names: Vec<&str> = STAGES.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), STAGES.len());
    }
}
