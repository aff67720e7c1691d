//! What one pass over a PgAccessRequest decides, from what the pass observed.
//!
//! No I/O here: the actor gathers the request, the RoleBindings labelled for it and whether its
//! Cluster exists, calls [`decide`], then carries out the deletions, the one status write and the
//! Events in that order. The operator only ever takes grants away, so the only child action is a
//! deletion.

use std::time::Duration;

use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::jiff::Timestamp;

use super::identity::{binds_exactly, describe};
use crate::api::{AccessPhase as Phase, AccessSubject, PgAccessRequest, PgAccessRequestStatus};
use crate::conditions::{ConditionType, find_condition};

/// How long a RoleBinding of a request that is not Approved may live: the console creates the
/// binding before it records the approval, so a binding younger than this is an approval in flight.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(60);

/// Everything a pass needs to know about the request itself.
#[derive(Clone, Debug)]
pub struct RequestFacts<'a> {
    pub name: &'a str,
    /// The request's uid: a RoleBinding it owns goes with it when it is deleted.
    pub uid: Option<&'a str>,
    pub namespace: &'a str,
    pub subject: &'a AccessSubject,
    pub cluster_role: &'a str,
    pub expires_at: Timestamp,
    pub phase: Phase,
    pub approver: Option<&'a str>,
    /// The approvers recorded in `status.approvals`, in order.
    pub approvals: Vec<&'a str>,
    /// `spec.approvalsRequired`: how many distinct approvers, never the subject, an approval
    /// needs.
    pub approvals_required: i32,
    /// `spec.cluster` and whether a Cluster of that name exists in the namespace (`None`: the
    /// operator cannot read Clusters there).
    pub cluster: Option<(&'a str, Option<bool>)>,
    /// Whether the ClusterRole of `spec.clusterRole` exists (`None`: it could not be read; what
    /// is unknown is neither reported missing nor present: [`ConfigVerdict::Unknown`]).
    pub cluster_role_exists: Option<bool>,
    /// How long a RoleBinding of a request that is not Approved may live ([`ORPHAN_GRACE`]).
    pub orphan_grace: Duration,
    /// The RoleBindingSynced reason stored by the previous pass, if any.
    pub previous_binding_reason: Option<&'a str>,
}

impl<'a> RequestFacts<'a> {
    /// The facts of `obj` as stored (`status`: its status, or an empty one when it has none),
    /// with what was observed beside it: `cluster` (see [`RequestFacts::cluster`]) and the
    /// orphan grace in force. Whether the ClusterRole exists is not known yet (`None`).
    pub fn of(
        obj: &'a PgAccessRequest,
        name: &'a str,
        namespace: &'a str,
        status: &'a PgAccessRequestStatus,
        cluster: Option<(&'a str, Option<bool>)>,
        orphan_grace: Duration,
    ) -> Self {
        RequestFacts {
            name,
            uid: obj.metadata.uid.as_deref(),
            namespace,
            subject: &obj.spec.subject,
            cluster_role: &obj.spec.cluster_role,
            expires_at: obj.spec.expires_at.0,
            phase: status.phase.clone(),
            approver: status.approver.as_deref(),
            approvals: status
                .approvals
                .iter()
                .map(|a| a.approver.as_str())
                .collect(),
            approvals_required: obj.spec.approvals_required,
            cluster,
            // Read past the caches by the pass, which sets it.
            cluster_role_exists: None,
            orphan_grace,
            previous_binding_reason: find_condition(
                &status.common.conditions,
                ConditionType::RoleBindingSynced,
            )
            .map(|c| c.reason.as_str()),
        }
    }
}

/// Why a RoleBinding is deleted; carried into the `RoleBindingDeleted` Event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeletionCause {
    Expired,
    Terminal,
    Drifted,
    Orphaned,
    SelfApproval,
    InvalidStatus,
}

impl DeletionCause {
    pub fn describe(self) -> &'static str {
        match self {
            DeletionCause::Expired => "the request expired",
            DeletionCause::Terminal => "the request is no longer approved",
            DeletionCause::Drifted => {
                "it bound something other than exactly the request's subject to its ClusterRole"
            }
            DeletionCause::Orphaned => {
                "it outlived the one-minute grace while the request was not approved"
            }
            DeletionCause::SelfApproval => "the approval was recorded by the request's own subject",
            DeletionCause::InvalidStatus => "the request's status is not one the operator accepts",
        }
    }
}

/// One RoleBinding to delete, pinned to the version that was judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub cause: DeletionCause,
}

/// A RoleBinding to make owned by the request (an ownerReference, not a controller one), so that
/// deleting the request deletes the grant, even while the operator is down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adoption {
    pub name: String,
    pub resource_version: Option<String>,
}

/// The ConfigurationValid verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigVerdict {
    Valid {
        message: String,
    },
    ClusterNotFound {
        message: String,
    },
    /// `spec.clusterRole` names no ClusterRole: reported, never a stall (expiry, revocation and
    /// drift removal keep working). A missing Cluster is said first.
    ClusterRoleNotFound {
        message: String,
    },
    Invalid {
        message: String,
    },
    /// Whether the ClusterRole exists could not be read (a transient error, a 404 that does
    /// not name it): the stored condition stands, whatever it says, until a read answers.
    Unknown,
}

/// The RoleBindingSynced verdict; each variant is one registered reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingVerdict {
    AwaitingDecision,
    AccessGranted,
    AccessDenied,
    AccessExpired,
    AccessRevoked,
    RoleBindingOrphaned,
    SelfApprovalRefused,
    RoleBindingMissing,
    RoleBindingDrifted,
    /// The phase cannot be judged (an unrecognised or incomplete decision): not evaluated.
    NotEvaluated,
}

/// Events the pass emits once its writes succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestEvent {
    AccessExpired,
    SelfApprovalRefused { approver: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub deletions: Vec<Deletion>,
    pub adoptions: Vec<Adoption>,
    /// A phase the operator records itself (`Expired`, `Revoked`); `None` keeps the stored one.
    pub new_phase: Option<Phase>,
    pub config: ConfigVerdict,
    pub binding: BindingVerdict,
    pub binding_message: String,
    pub events: Vec<RequestEvent>,
    /// `spec.expiresAt` while the request can still expire.
    pub expiry_at: Option<Timestamp>,
    /// The earliest end of a RoleBinding's orphan grace, if one is still within it.
    pub grace_ends: Option<Timestamp>,
}

impl Decision {
    /// When to look again without any watched change.
    pub fn wake_at(&self) -> Option<Timestamp> {
        match (self.expiry_at, self.grace_ends) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Every child is as decided: nothing was deleted or adopted by this pass.
    pub fn converged(&self) -> bool {
        self.deletions.is_empty() && self.adoptions.is_empty()
    }
}

/// Decides one pass. `bindings` are the RoleBindings labelled for this request (any name).
pub fn decide(req: &RequestFacts<'_>, bindings: &[&RoleBinding], now: Timestamp) -> Decision {
    let config = config_verdict(req);
    let expired_now = now >= req.expires_at && !req.phase.is_terminal();
    let mut events = Vec::new();
    let mut new_phase = None;

    // The phase this pass acts on: expiry and self-approval move it before the bindings are judged.
    let phase = if expired_now {
        events.push(RequestEvent::AccessExpired);
        new_phase = Some(Phase::Expired);
        Phase::Expired
    } else if req.phase == Phase::Approved && is_self_approval(req) {
        events.push(RequestEvent::SelfApprovalRefused {
            approver: req.approver.unwrap_or_default().to_string(),
        });
        new_phase = Some(Phase::Revoked);
        Phase::Revoked
    } else {
        req.phase.clone()
    };

    let mut judged = JudgedBindings::default();
    let (binding, binding_message) = match &phase {
        Phase::Expired | Phase::Denied | Phase::Revoked => {
            let cause = match &phase {
                Phase::Expired => DeletionCause::Expired,
                Phase::Revoked if is_self_approval(req) => DeletionCause::SelfApproval,
                _ => DeletionCause::Terminal,
            };
            judged.delete_all(bindings, cause);
            terminal_verdict(req, &phase)
        }
        Phase::Unrecognized(_) => {
            judged.delete_all(bindings, DeletionCause::InvalidStatus);
            (BindingVerdict::NotEvaluated, unjudged_message(req))
        }
        Phase::Approved if req.approver.is_none_or(str::is_empty) || !enough_approvals(req) => {
            judged.delete_all(bindings, DeletionCause::InvalidStatus);
            (BindingVerdict::NotEvaluated, unjudged_message(req))
        }
        Phase::Approved => approved_verdict(req, bindings, &mut judged),
        Phase::Pending => pending_verdict(req, bindings, now, &mut judged),
    };

    let expiry_at = (!phase.is_terminal()).then_some(req.expires_at);
    let adoptions = adoptions(req, bindings, &judged.deletions);

    Decision {
        deletions: judged.deletions,
        adoptions,
        new_phase,
        config,
        binding,
        binding_message,
        events,
        expiry_at,
        grace_ends: judged.grace_ends,
    }
}

#[derive(Default)]
struct JudgedBindings {
    deletions: Vec<Deletion>,
    grace_ends: Option<Timestamp>,
}

impl JudgedBindings {
    fn delete(&mut self, rb: &RoleBinding, cause: DeletionCause) {
        self.deletions.push(Deletion {
            name: rb.metadata.name.clone().unwrap_or_default(),
            uid: rb.metadata.uid.clone(),
            resource_version: rb.metadata.resource_version.clone(),
            cause,
        });
    }

    fn delete_all(&mut self, bindings: &[&RoleBinding], cause: DeletionCause) {
        for rb in bindings {
            self.delete(rb, cause);
        }
    }

    fn remember_grace(&mut self, ends: Timestamp) {
        self.grace_ends = Some(self.grace_ends.map_or(ends, |t| t.min(ends)));
    }
}

/// The kept RoleBindings of the request that it does not own yet.
fn adoptions(
    req: &RequestFacts<'_>,
    bindings: &[&RoleBinding],
    deletions: &[Deletion],
) -> Vec<Adoption> {
    let Some(uid) = req.uid else {
        return Vec::new();
    };
    bindings
        .iter()
        .filter(|rb| {
            let name = rb.metadata.name.as_deref().unwrap_or_default();
            !deletions.iter().any(|d| d.name == name)
        })
        .filter(|rb| {
            !rb.metadata
                .owner_references
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(|owner| owner.uid == uid)
        })
        .map(|rb| Adoption {
            name: rb.metadata.name.clone().unwrap_or_default(),
            resource_version: rb.metadata.resource_version.clone(),
        })
        .collect()
}

fn config_verdict(req: &RequestFacts<'_>) -> ConfigVerdict {
    if let Phase::Unrecognized(raw) = &req.phase {
        return ConfigVerdict::Invalid {
            message: format!(
                "status.phase {raw:?} is not one of Pending, Approved, Denied, Revoked, Expired; \
                 nothing stays bound until a console records a valid decision"
            ),
        };
    }
    if req.phase == Phase::Approved && req.approver.is_none_or(str::is_empty) {
        return ConfigVerdict::Invalid {
            message: "status.phase is Approved but status.approver is empty: an approval must \
                      name who decided it, so nothing stays bound"
                .to_string(),
        };
    }
    if req.phase == Phase::Approved && !enough_approvals(req) {
        let counted = distinct_approvers(req);
        return ConfigVerdict::Invalid {
            message: format!(
                "status.phase is Approved with {} distinct approver(s) other than the subject \
                 ({}) but spec.approvalsRequired is {}: nothing stays bound",
                counted.len(),
                if counted.is_empty() {
                    "none".to_string()
                } else {
                    counted.join(", ")
                },
                req.approvals_required
            ),
        };
    }
    // The Cluster is said first: the ClusterRole, when missing too, is named in its message.
    let role_too = if req.cluster_role_exists == Some(false) {
        format!(
            " (ClusterRole {:?} does not exist either)",
            req.cluster_role
        )
    } else {
        String::new()
    };
    match req.cluster {
        Some((cluster, None)) => ConfigVerdict::ClusterNotFound {
            message: format!(
                "spec.cluster names Cluster {cluster:?}, which cannot be verified: the operator \
                 may not read CloudNativePG Clusters in namespace {:?}{role_too}; expiry and \
                 revocation keep working",
                req.namespace
            ),
        },
        Some((cluster, Some(false))) => ConfigVerdict::ClusterNotFound {
            message: format!(
                "spec.cluster names Cluster {cluster:?}, which does not exist in namespace \
                 {:?}{role_too}; expiry and revocation keep working",
                req.namespace
            ),
        },
        _ if req.cluster_role_exists.is_none() => ConfigVerdict::Unknown,
        _ if req.cluster_role_exists == Some(false) => ConfigVerdict::ClusterRoleNotFound {
            message: format!(
                "spec.clusterRole names ClusterRole {:?}, which does not exist: a RoleBinding \
                 to it grants nothing until it is created; expiry and revocation keep working",
                req.cluster_role
            ),
        },
        _ => ConfigVerdict::Valid {
            message: format!(
                "the grant binds ClusterRole {:?} in namespace {:?}: it covers every Cluster of \
                 that namespace, not only {}",
                req.cluster_role,
                req.namespace,
                req.cluster
                    .map_or_else(|| "one".to_string(), |(c, _)| format!("{c:?}"))
            ),
        },
    }
}

/// The distinct approvers of the request that are not its subject: those of
/// `status.approvals` and the deciding `status.approver` (an approval recorded before approvals
/// were listed names its approver only).
fn distinct_approvers<'a>(req: &RequestFacts<'a>) -> Vec<&'a str> {
    let subject = req.subject.identity();
    let mut seen: Vec<&str> = Vec::new();
    for approver in req.approvals.iter().copied().chain(req.approver) {
        if approver.is_empty() || subject.as_deref() == Some(approver) || seen.contains(&approver) {
            continue;
        }
        seen.push(approver);
    }
    seen
}

/// Defence in depth behind the admission policy: an approval counts only with as many distinct
/// approvers, none the subject, as the request asks for.
fn enough_approvals(req: &RequestFacts<'_>) -> bool {
    let needed = usize::try_from(req.approvals_required.max(1)).unwrap_or(usize::MAX);
    distinct_approvers(req).len() >= needed
}

fn is_self_approval(req: &RequestFacts<'_>) -> bool {
    match (req.approver, req.subject.identity()) {
        (Some(approver), Some(identity)) => !approver.is_empty() && approver == identity,
        _ => false,
    }
}

fn terminal_verdict(req: &RequestFacts<'_>, phase: &Phase) -> (BindingVerdict, String) {
    match phase {
        Phase::Revoked if is_self_approval(req) => (
            BindingVerdict::SelfApprovalRefused,
            format!(
                "the approval was recorded by {:?}, the request's own subject; the operator \
                 revoked it (four eyes)",
                req.approver.unwrap_or_default()
            ),
        ),
        Phase::Revoked => (
            BindingVerdict::AccessRevoked,
            "the request was revoked; nothing is bound".to_string(),
        ),
        Phase::Denied => (
            BindingVerdict::AccessDenied,
            "the request was denied; nothing is bound".to_string(),
        ),
        _ => (
            BindingVerdict::AccessExpired,
            format!(
                "the request expired at {}; nothing is bound",
                req.expires_at
            ),
        ),
    }
}

fn unjudged_message(req: &RequestFacts<'_>) -> String {
    format!(
        "the decision recorded in status (phase {:?}) cannot be judged; any RoleBinding of the \
         request is deleted",
        req.phase.as_str()
    )
}

fn approved_verdict(
    req: &RequestFacts<'_>,
    bindings: &[&RoleBinding],
    judged: &mut JudgedBindings,
) -> (BindingVerdict, String) {
    let mut exact = Vec::new();
    for rb in bindings {
        if binds_exactly(rb, req.subject, req.cluster_role) {
            exact.push(rb.metadata.name.as_deref().unwrap_or_default());
        } else {
            judged.delete(rb, DeletionCause::Drifted);
        }
    }
    if !judged.deletions.is_empty() {
        return (BindingVerdict::RoleBindingDrifted, drifted_message(req));
    }
    match exact.first() {
        Some(name) => (
            BindingVerdict::AccessGranted,
            format!(
                "RoleBinding {name} binds {} to ClusterRole {:?} until {}",
                describe(req.subject),
                req.cluster_role,
                req.expires_at
            ),
        ),
        // A drift deleted the binding in an earlier pass: keep saying so rather than "missing".
        None if req.previous_binding_reason == Some("RoleBindingDrifted") => {
            (BindingVerdict::RoleBindingDrifted, drifted_message(req))
        }
        None => (
            BindingVerdict::RoleBindingMissing,
            "the request is approved but no RoleBinding of it exists; the operator never \
             recreates it: revoke and request again"
                .to_string(),
        ),
    }
}

/// The drift of an approved request, the same in the pass that deletes the binding and in every
/// later one: a message that changed once the binding was gone would cost a second status
/// write, and a restarted operator would make it. The deleted bindings' names are in their
/// RoleBindingDeleted Events.
fn drifted_message(req: &RequestFacts<'_>) -> String {
    format!(
        "a RoleBinding of the request bound something other than exactly {} to ClusterRole {:?} \
         and was deleted; the operator never recreates a deleted binding: revoke and request again",
        describe(req.subject),
        req.cluster_role
    )
}

fn pending_verdict(
    req: &RequestFacts<'_>,
    bindings: &[&RoleBinding],
    now: Timestamp,
    judged: &mut JudgedBindings,
) -> (BindingVerdict, String) {
    let mut in_grace = 0usize;
    for rb in bindings {
        if !binds_exactly(rb, req.subject, req.cluster_role) {
            // Fail closed at once: a binding of someone else is never an approval in flight.
            judged.delete(rb, DeletionCause::Drifted);
            continue;
        }
        let grace_ends = rb
            .metadata
            .creation_timestamp
            .as_ref()
            .and_then(|t| t.0.checked_add(req.orphan_grace).ok());
        match grace_ends {
            Some(ends) if ends > now => {
                in_grace += 1;
                judged.remember_grace(ends);
            }
            _ => judged.delete(rb, DeletionCause::Orphaned),
        }
    }
    let drifted = judged
        .deletions
        .iter()
        .any(|d| d.cause == DeletionCause::Drifted);
    let orphaned = judged
        .deletions
        .iter()
        .any(|d| d.cause == DeletionCause::Orphaned);
    if drifted {
        return (
            BindingVerdict::RoleBindingDrifted,
            format!(
                "a RoleBinding of the pending request bound something other than exactly {} to \
                 ClusterRole {:?} and was deleted",
                describe(req.subject),
                req.cluster_role
            ),
        );
    }
    let orphan_kept = req.previous_binding_reason == Some("RoleBindingOrphaned") && in_grace == 0;
    if orphaned || orphan_kept {
        return (
            BindingVerdict::RoleBindingOrphaned,
            "a RoleBinding of the request outlived the one-minute grace while the request was \
             not approved and was deleted"
                .to_string(),
        );
    }
    let message = if in_grace > 0 {
        "awaiting a decision; a RoleBinding of the request is within its one-minute grace (an \
         approval in flight)"
            .to_string()
    } else {
        "awaiting a decision; nothing is bound".to_string()
    };
    (BindingVerdict::AwaitingDecision, message)
}
