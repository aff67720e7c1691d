//! One Pod's fact, as the kubelet and the scheduler wrote it: the worst thing that keeps it
//! from being Ready, named and copied (bounded), never paraphrased into "waiting".

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use crate::conditions::Reason;
use crate::conditions::reasons::common;

/// The longest kubelet or scheduler text copied into a fact, in bytes; the whole condition
/// message is bounded again by the engine.
const DETAIL_LIMIT: usize = 480;

/// What keeps a Pod from being Ready, worst first: the order is the precedence among Pods
/// (a Secret the user must create beats a crash the image may cause, which beats a full node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PodFactKind {
    SecretNotFound,
    SecretKeyMissing,
    ImagePullFailed,
    CrashLoopBackOff,
    Unschedulable,
    NotReady,
    /// Still starting (Pending without a problem, containers being created): the rollout's
    /// progress, not a Pod's fault.
    Starting,
}

impl PodFactKind {
    pub fn reason(self) -> Reason {
        match self {
            Self::SecretNotFound => common::SECRET_NOT_FOUND,
            Self::SecretKeyMissing => common::SECRET_KEY_MISSING,
            Self::ImagePullFailed => common::IMAGE_PULL_FAILED,
            Self::CrashLoopBackOff => common::CRASH_LOOP_BACK_OFF,
            Self::Unschedulable => common::POD_UNSCHEDULABLE,
            Self::NotReady => common::POD_NOT_READY,
            Self::Starting => common::ROLLOUT_IN_PROGRESS,
        }
    }
}

/// A Pod that is not Ready and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodFact {
    pub pod: String,
    pub kind: PodFactKind,
    /// The fact as written by its author (kubelet, scheduler), bounded.
    pub detail: String,
}

/// A Pod its ReplicaSet counts: not Failed (evicted Pods are Failed), not Succeeded, not being
/// deleted. The others are ignored, as the ReplicaSet controller's `IsPodActive` ignores them.
pub fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Failed" | "Succeeded"))
}

/// The fact of an active Pod that is not Ready; `None` for a Ready Pod.
pub fn pod_fact(pod: &Pod) -> Option<PodFact> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let status = pod.status.as_ref();
    let condition = |type_: &str| {
        status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
    };
    if condition("Ready").is_some_and(|c| c.status == "True") {
        return None;
    }
    let fact = |kind, detail: String| PodFact {
        pod: name.clone(),
        kind,
        detail: bounded(&detail),
    };
    // CloudNativePG's IsPodUnschedulable: Pending and PodScheduled=False/Unschedulable.
    let pending = status.and_then(|s| s.phase.as_deref()) == Some("Pending");
    if let Some(scheduled) = condition("PodScheduled")
        && pending
        && scheduled.status == "False"
        && scheduled.reason.as_deref() == Some("Unschedulable")
    {
        let message = scheduled.message.as_deref().unwrap_or_default();
        return Some(fact(
            PodFactKind::Unschedulable,
            format!("Unschedulable: {message}"),
        ));
    }
    let containers = status
        .into_iter()
        .flat_map(|s| {
            let init = s
                .init_container_statuses
                .iter()
                .flatten()
                .map(|c| ("init container", c));
            let main = s
                .container_statuses
                .iter()
                .flatten()
                .map(|c| ("container", c));
            init.chain(main)
        })
        .filter_map(|(what, c)| container_fact(what, c))
        .min_by_key(|(kind, _)| *kind);
    if let Some((kind, detail)) = containers {
        return Some(fact(kind, detail));
    }
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, None | Some("Pending")) {
        return Some(fact(
            PodFactKind::Starting,
            format!("phase {}, starting", phase.unwrap_or("unknown")),
        ));
    }
    let detail = match condition("Ready") {
        Some(ready) => format!(
            "Ready={} ({}): {}",
            ready.status,
            ready.reason.as_deref().unwrap_or("no reason"),
            ready.message.as_deref().unwrap_or("no message")
        ),
        None => format!(
            "phase {}, no Ready condition reported",
            status.and_then(|s| s.phase.as_deref()).unwrap_or("unknown")
        ),
    };
    Some(fact(PodFactKind::NotReady, detail))
}

/// A container's waiting state, classified; running containers say nothing here.
fn container_fact(what: &str, container: &ContainerStatus) -> Option<(PodFactKind, String)> {
    let waiting = container.state.as_ref()?.waiting.as_ref()?;
    let reason = waiting.reason.as_deref().unwrap_or_default();
    let message = waiting.message.as_deref().unwrap_or_default();
    let name = &container.name;
    let kind = match reason {
        "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" => PodFactKind::ImagePullFailed,
        "CrashLoopBackOff" => PodFactKind::CrashLoopBackOff,
        "CreateContainerConfigError" => secret_problem(message).unwrap_or(PodFactKind::NotReady),
        "ContainerCreating" | "PodInitializing" => PodFactKind::Starting,
        _ => PodFactKind::NotReady,
    };
    let last_exit = container
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .filter(|_| kind == PodFactKind::CrashLoopBackOff)
        .map(|t| {
            format!(
                " (last exit code {}{})",
                t.exit_code,
                t.reason
                    .as_deref()
                    .map(|r| format!(", {r}"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_default();
    let message = if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    };
    Some((kind, format!("{what} {name}: {reason}{last_exit}{message}")))
}

/// The kubelet's texts for a Secret an env var or volume needs: `secret "NAME" not found`
/// (`secrets "NAME" not found` from older kubelets) and `couldn't find key K in Secret NS/NAME`.
fn secret_problem(message: &str) -> Option<PodFactKind> {
    if message.starts_with("couldn't find key ") && message.contains(" in Secret ") {
        return Some(PodFactKind::SecretKeyMissing);
    }
    let not_found = message.ends_with("\" not found")
        && (message.starts_with("secret \"") || message.starts_with("secrets \""));
    not_found.then_some(PodFactKind::SecretNotFound)
}

/// Cuts a copied text on a char boundary, marking the cut.
fn bounded(text: &str) -> String {
    if text.len() <= DETAIL_LIMIT {
        return text.to_owned();
    }
    let mut cut = DETAIL_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}
