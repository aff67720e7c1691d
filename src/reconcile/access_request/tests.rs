use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::*;
use crate::api::{AccessPhase as Phase, AccessSubject, SubjectKind};

const NOW: &str = "2026-11-29T12:00:00Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

fn at(offset_secs: i64) -> Timestamp {
    now() + SignedDuration::from_secs(offset_secs)
}

fn alice() -> &'static AccessSubject {
    static ALICE: std::sync::OnceLock<AccessSubject> = std::sync::OnceLock::new();
    ALICE.get_or_init(|| AccessSubject {
        kind: SubjectKind::User,
        name: "alice".into(),
        namespace: None,
    })
}

fn request(phase: Phase, approver: Option<&'static str>) -> RequestFacts<'static> {
    RequestFacts {
        name: "orders",
        uid: Some("request-uid"),
        namespace: "team-a",
        subject: alice(),
        cluster_role: "cnpg-viewer",
        expires_at: at(3600),
        phase,
        approver,
        approvals: Vec::new(),
        approvals_required: 1,
        cluster: None,
        cluster_role_exists: Some(true),
        orphan_grace: ORPHAN_GRACE,
        previous_binding_reason: None,
    }
}

fn rb(name: &str, subjects: Vec<AccessSubject>, role: &str, age_secs: i64) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("7".into()),
            creation_timestamp: Some(Time(at(-age_secs))),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: Some(subjects.iter().map(rbac_subject).collect()),
    }
}

fn exact(age_secs: i64) -> RoleBinding {
    rb(
        "pgar-orders",
        vec![alice().clone()],
        "cnpg-viewer",
        age_secs,
    )
}

fn causes(d: &Decision) -> Vec<DeletionCause> {
    d.deletions.iter().map(|x| x.cause).collect()
}

/// (name, phase, approver, bindings, verdict, deletion causes, new phase)
type Case = (
    &'static str,
    Phase,
    Option<&'static str>,
    Vec<RoleBinding>,
    BindingVerdict,
    Vec<DeletionCause>,
    Option<Phase>,
);

#[test]
fn each_phase_and_binding_state_gives_its_reason() {
    use BindingVerdict::*;
    use DeletionCause as C;
    let drifted = rb(
        "pgar-orders",
        vec![
            alice().clone(),
            AccessSubject {
                name: "mallory".into(),
                ..alice().clone()
            },
        ],
        "cnpg-viewer",
        5,
    );
    let wrong_role = rb("pgar-orders", vec![alice().clone()], "cluster-admin", 5);
    // (name, phase, approver, bindings, verdict, deletion causes, new phase)
    let cases: Vec<Case> = vec![
        (
            "pending, nothing bound",
            Phase::Pending,
            None,
            vec![],
            AwaitingDecision,
            vec![],
            None,
        ),
        (
            "pending, approval in flight",
            Phase::Pending,
            None,
            vec![exact(10)],
            AwaitingDecision,
            vec![],
            None,
        ),
        (
            "pending, orphan past grace",
            Phase::Pending,
            None,
            vec![exact(61)],
            RoleBindingOrphaned,
            vec![C::Orphaned],
            None,
        ),
        (
            "pending, foreign subject at once",
            Phase::Pending,
            None,
            vec![drifted.clone()],
            RoleBindingDrifted,
            vec![C::Drifted],
            None,
        ),
        (
            "approved, bound",
            Phase::Approved,
            Some("bob"),
            vec![exact(300)],
            AccessGranted,
            vec![],
            None,
        ),
        (
            "approved, missing",
            Phase::Approved,
            Some("bob"),
            vec![],
            RoleBindingMissing,
            vec![],
            None,
        ),
        (
            "approved, second subject",
            Phase::Approved,
            Some("bob"),
            vec![drifted],
            RoleBindingDrifted,
            vec![C::Drifted],
            None,
        ),
        (
            "approved, wrong role",
            Phase::Approved,
            Some("bob"),
            vec![wrong_role],
            RoleBindingDrifted,
            vec![C::Drifted],
            None,
        ),
        (
            "approved by the subject",
            Phase::Approved,
            Some("alice"),
            vec![exact(5)],
            SelfApprovalRefused,
            vec![C::SelfApproval],
            Some(Phase::Revoked),
        ),
        (
            "approved without approver",
            Phase::Approved,
            None,
            vec![exact(5)],
            NotEvaluated,
            vec![C::InvalidStatus],
            None,
        ),
        (
            "denied",
            Phase::Denied,
            Some("bob"),
            vec![exact(5)],
            AccessDenied,
            vec![C::Terminal],
            None,
        ),
        (
            "revoked",
            Phase::Revoked,
            Some("bob"),
            vec![],
            AccessRevoked,
            vec![],
            None,
        ),
        (
            "revoked after self-approval",
            Phase::Revoked,
            Some("alice"),
            vec![],
            SelfApprovalRefused,
            vec![],
            None,
        ),
        (
            "expired",
            Phase::Expired,
            Some("bob"),
            vec![exact(5)],
            AccessExpired,
            vec![C::Expired],
            None,
        ),
        (
            "unknown phase",
            Phase::Unrecognized("Maybe".into()),
            None,
            vec![exact(5)],
            NotEvaluated,
            vec![C::InvalidStatus],
            None,
        ),
    ];
    for (name, phase, approver, bindings, verdict, deletions, new_phase) in cases {
        let req = request(phase, approver);
        let refs: Vec<&RoleBinding> = bindings.iter().collect();
        let d = decide(&req, &refs, now());
        assert_eq!(d.binding, verdict, "{name}");
        assert_eq!(causes(&d), deletions, "{name}");
        assert_eq!(d.new_phase, new_phase, "{name}");
    }
}

#[test]
fn expiry_turns_any_live_request_expired_and_deletes_everything() {
    for phase in [
        Phase::Pending,
        Phase::Approved,
        Phase::Unrecognized("x".into()),
    ] {
        let mut req = request(phase.clone(), Some("bob"));
        req.expires_at = at(-1);
        let b = exact(5);
        let d = decide(&req, &[&b], now());
        assert_eq!(d.new_phase, Some(Phase::Expired), "{phase:?}");
        assert_eq!(d.binding, BindingVerdict::AccessExpired);
        assert_eq!(causes(&d), vec![DeletionCause::Expired]);
        assert_eq!(d.events, vec![RequestEvent::AccessExpired]);
        assert_eq!(d.wake_at(), None, "nothing left to wait for");
    }
}

#[test]
fn expiry_is_exactly_at_expires_at() {
    let mut req = request(Phase::Approved, Some("bob"));
    req.expires_at = now();
    assert_eq!(decide(&req, &[], now()).new_phase, Some(Phase::Expired));
    req.expires_at = at(1);
    assert_eq!(decide(&req, &[], now()).new_phase, None);
}

#[test]
fn terminal_requests_never_expire_again() {
    let mut req = request(Phase::Denied, Some("bob"));
    req.expires_at = at(-10);
    let d = decide(&req, &[], now());
    assert_eq!(d.new_phase, None);
    assert!(d.events.is_empty());
    assert_eq!(d.binding, BindingVerdict::AccessDenied);
}

#[test]
fn wakes_at_the_earliest_of_expiry_and_grace_end() {
    let req = request(Phase::Pending, None);
    let young = exact(10);
    assert_eq!(decide(&req, &[&young], now()).wake_at(), Some(at(50)));
    assert_eq!(decide(&req, &[], now()).wake_at(), Some(at(3600)));
    let mut soon = request(Phase::Pending, None);
    soon.expires_at = at(20);
    assert_eq!(decide(&soon, &[&young], now()).wake_at(), Some(at(20)));
}

#[test]
fn self_approval_by_a_service_account_is_refused() {
    let mut req = request(Phase::Approved, Some("system:serviceaccount:team-a:bot"));
    let bot = AccessSubject {
        kind: SubjectKind::ServiceAccount,
        name: "bot".into(),
        namespace: Some("team-a".into()),
    };
    req.subject = &bot;
    let d = decide(&req, &[], now());
    assert_eq!(d.binding, BindingVerdict::SelfApprovalRefused);
    assert_eq!(
        d.events,
        vec![RequestEvent::SelfApprovalRefused {
            approver: "system:serviceaccount:team-a:bot".into()
        }]
    );
}

/// Issue 29: the pass that deletes a drifted binding and the passes after it say the same, so a
/// drift costs one status write and an operator restarted after it has nothing to write.
#[test]
fn an_approved_drift_reads_the_same_before_and_after_the_deletion() {
    let mallory = AccessSubject {
        name: "mallory".into(),
        ..alice().clone()
    };
    let drifted = rb(
        "pgar-orders",
        vec![alice().clone(), mallory],
        "cnpg-viewer",
        5,
    );
    let req = request(Phase::Approved, Some("bob"));
    let deleting = decide(&req, &[&drifted], now());
    assert_eq!(deleting.binding, BindingVerdict::RoleBindingDrifted);
    assert_eq!(causes(&deleting), vec![DeletionCause::Drifted]);
    let mut after = request(Phase::Approved, Some("bob"));
    after.previous_binding_reason = Some("RoleBindingDrifted");
    let kept = decide(&after, &[], now());
    assert_eq!(kept.binding, BindingVerdict::RoleBindingDrifted);
    assert_eq!(kept.binding_message, deleting.binding_message);
    assert!(
        deleting.binding_message.contains("User alice")
            && deleting.binding_message.contains("cnpg-viewer"),
        "{}",
        deleting.binding_message
    );
}

#[test]
fn drift_and_orphan_verdicts_outlive_the_deleted_binding() {
    let mut req = request(Phase::Approved, Some("bob"));
    req.previous_binding_reason = Some("RoleBindingDrifted");
    assert_eq!(
        decide(&req, &[], now()).binding,
        BindingVerdict::RoleBindingDrifted
    );
    let mut pending = request(Phase::Pending, None);
    pending.previous_binding_reason = Some("RoleBindingOrphaned");
    assert_eq!(
        decide(&pending, &[], now()).binding,
        BindingVerdict::RoleBindingOrphaned
    );
    // A new approval in flight replaces the old orphan verdict.
    let young = exact(1);
    assert_eq!(
        decide(&pending, &[&young], now()).binding,
        BindingVerdict::AwaitingDecision
    );
}

#[test]
fn configuration_verdicts() {
    let req = request(Phase::Pending, None);
    match decide(&req, &[], now()).config {
        ConfigVerdict::Valid { message } => assert!(message.contains("every Cluster"), "{message}"),
        other => panic!("{other:?}"),
    }
    let mut missing = request(Phase::Approved, Some("bob"));
    missing.cluster = Some(("orders-db", Some(false)));
    let b = exact(5);
    let d = decide(&missing, &[&b], now());
    assert!(matches!(d.config, ConfigVerdict::ClusterNotFound { .. }));
    assert_eq!(
        d.binding,
        BindingVerdict::AccessGranted,
        "a missing Cluster never blocks the grant's lifecycle"
    );
    let mut found = missing.clone();
    found.cluster = Some(("orders-db", Some(true)));
    assert!(matches!(
        decide(&found, &[], now()).config,
        ConfigVerdict::Valid { .. }
    ));
    found.cluster = Some(("orders-db", None));
    assert!(matches!(
        decide(&found, &[], now()).config,
        ConfigVerdict::ClusterNotFound { .. }
    ));
    found.cluster = Some(("orders-db", Some(true)));
    assert!(matches!(
        decide(&found, &[], now()).config,
        ConfigVerdict::Valid { .. }
    ));
    let odd = request(Phase::Unrecognized("Maybe".into()), None);
    match decide(&odd, &[], now()).config {
        ConfigVerdict::Invalid { message } => assert!(message.contains("\"Maybe\""), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn deletions_are_pinned_to_the_judged_version() {
    let req = request(Phase::Denied, Some("bob"));
    let b = exact(5);
    let d = decide(&req, &[&b], now());
    assert_eq!(d.deletions[0].uid.as_deref(), Some("uid-pgar-orders"));
    assert_eq!(d.deletions[0].resource_version.as_deref(), Some("7"));
}

#[test]
fn kept_bindings_are_adopted_once_and_deleted_ones_never() {
    let req = request(Phase::Approved, Some("bob"));
    let b = exact(5);
    let d = decide(&req, &[&b], now());
    assert_eq!(d.adoptions.len(), 1);
    assert!(!d.converged(), "an adoption is a change in flight");
    let mut owned = exact(5);
    owned.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            uid: "request-uid".into(),
            ..Default::default()
        },
    ]);
    let d = decide(&req, &[&owned], now());
    assert!(d.adoptions.is_empty());
    assert!(d.converged());
    let denied = request(Phase::Denied, Some("bob"));
    let d = decide(&denied, &[&b], now());
    assert!(
        d.adoptions.is_empty(),
        "a binding being deleted is not adopted"
    );
}

/// Defence in depth behind the admission policy: an approval grants only with as many
/// distinct approvers, never the subject, as the request asks for.
#[test]
fn an_approval_grants_only_with_enough_distinct_approvers_other_than_the_subject() {
    let two = |approvals: Vec<&'static str>, approver: &'static str| RequestFacts {
        approvals,
        approvals_required: 2,
        ..request(Phase::Approved, Some(approver))
    };
    let binding = exact(5);
    let cases: Vec<(&str, RequestFacts<'static>, bool)> = vec![
        (
            "two distinct approvers",
            two(vec!["bob", "carol"], "carol"),
            true,
        ),
        ("one approver", two(vec!["carol"], "carol"), false),
        ("nobody listed, one deciding", two(vec![], "carol"), false),
        (
            "the same approver twice",
            two(vec!["carol", "carol"], "carol"),
            false,
        ),
        (
            "the subject counts for nothing",
            two(vec!["alice", "carol"], "carol"),
            false,
        ),
        (
            "the deciding approver counts when not listed",
            two(vec!["bob"], "carol"),
            true,
        ),
        (
            "one is enough where one is asked for",
            request(Phase::Approved, Some("bob")),
            true,
        ),
    ];
    for (name, req, granted) in cases {
        let d = decide(&req, &[&binding], now());
        if granted {
            assert_eq!(d.binding, BindingVerdict::AccessGranted, "{name}");
            assert!(d.deletions.is_empty(), "{name}");
            assert!(matches!(d.config, ConfigVerdict::Valid { .. }), "{name}");
        } else {
            assert_eq!(d.binding, BindingVerdict::NotEvaluated, "{name}");
            assert_eq!(causes(&d), vec![DeletionCause::InvalidStatus], "{name}");
            let ConfigVerdict::Invalid { message } = &d.config else {
                panic!("{name}: {:?}", d.config);
            };
            assert!(
                message.contains("spec.approvalsRequired is 2"),
                "{name}: {message}"
            );
            // Never a stall: the request still expires.
            assert_eq!(d.expiry_at, Some(req.expires_at), "{name}");
        }
    }
}

#[test]
fn a_missing_cluster_role_is_reported_and_never_blocks_the_lifecycle() {
    // Approved and bound, the ClusterRole misspelt: reported, the grant's lifecycle unchanged.
    let mut granted = request(Phase::Approved, Some("bob"));
    granted.cluster_role_exists = Some(false);
    let b = exact(5);
    let d = decide(&granted, &[&b], now());
    match &d.config {
        ConfigVerdict::ClusterRoleNotFound { message } => {
            assert!(message.contains("\"cnpg-viewer\""), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(d.binding, BindingVerdict::AccessGranted);
    assert!(d.deletions.is_empty());
    assert_eq!(d.expiry_at, Some(at(3600)));

    // Expiry still withdraws the grant.
    let mut expired = granted.clone();
    expired.expires_at = at(-1);
    let d = decide(&expired, &[&b], now());
    assert!(matches!(
        d.config,
        ConfigVerdict::ClusterRoleNotFound { .. }
    ));
    assert_eq!(d.new_phase, Some(Phase::Expired));
    assert_eq!(d.deletions.len(), 1);
    assert_eq!(d.deletions[0].cause, DeletionCause::Expired);

    // Drift is still removed.
    let drifted = rb("pgar-orders", vec![alice().clone()], "cluster-admin", 5);
    let d = decide(&granted, &[&drifted], now());
    assert!(matches!(
        d.config,
        ConfigVerdict::ClusterRoleNotFound { .. }
    ));
    assert_eq!(d.binding, BindingVerdict::RoleBindingDrifted);
    assert_eq!(d.deletions[0].cause, DeletionCause::Drifted);
}

#[test]
fn an_unreadable_cluster_role_is_not_said_missing() {
    let mut unknown = request(Phase::Pending, None);
    unknown.cluster_role_exists = None;
    // Neither valid nor missing: the stored condition stands until a read answers.
    assert_eq!(decide(&unknown, &[], now()).config, ConfigVerdict::Unknown);
}

#[test]
fn a_missing_cluster_is_said_before_a_missing_cluster_role() {
    let mut both = request(Phase::Pending, None);
    both.cluster_role_exists = Some(false);
    for cluster in [Some(false), None] {
        both.cluster = Some(("orders-db", cluster));
        match decide(&both, &[], now()).config {
            ConfigVerdict::ClusterNotFound { message } => assert!(
                message.contains("ClusterRole \"cnpg-viewer\" does not exist either"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
    }
    both.cluster = Some(("orders-db", Some(true)));
    assert!(matches!(
        decide(&both, &[], now()).config,
        ConfigVerdict::ClusterRoleNotFound { .. }
    ));
}
