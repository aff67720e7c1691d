//! The rules that combine a PgAccessRequest's decision with what the actor does around it:
//! when the cache's word on a missing RoleBinding is checked against the API, and which timers
//! the pass leaves armed.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::{BindingVerdict, Decision, RequestFacts};
use crate::conditions::reasons::access_request;
use crate::messages::TimerPurpose;

/// Timers fire this much after the instant they aim at, so the pass they start sees it passed.
pub const TIMER_SLACK: Duration = Duration::from_millis(20);

/// The console writes the RoleBinding, then the approval, and their watch events may arrive the
/// other way round: before an approved request is first said to have no RoleBinding (a
/// Warning), the API is asked rather than the cache. Once said, the cache's word stands.
pub fn needs_live_read(decision: &Decision, request: &RequestFacts<'_>) -> bool {
    decision.binding == BindingVerdict::RoleBindingMissing
        && request.previous_binding_reason != Some(access_request::ROLE_BINDING_MISSING.as_str())
}

/// The timers for the instants the decision waits for (expiry, the end of an orphan grace),
/// each a little after its instant; one already passed fires at once. ClusterRoles are not
/// watched: while the request's ClusterRole is missing or could not be read, it is looked at
/// again after `recheck` (the short stall recheck, two minutes by default).
pub fn timers(
    decision: &Decision,
    request: &RequestFacts<'_>,
    now: Timestamp,
    recheck: Duration,
) -> Vec<(TimerPurpose, Duration)> {
    let delay = |at: Timestamp| {
        Duration::try_from(at.duration_since(now))
            .unwrap_or(Duration::ZERO)
            .saturating_add(TIMER_SLACK)
    };
    let mut timers: Vec<_> = [
        (TimerPurpose::Expiry, decision.expiry_at),
        (TimerPurpose::Grace, decision.grace_ends),
    ]
    .into_iter()
    .filter_map(|(purpose, at)| at.map(|at| (purpose, delay(at))))
    .collect();
    if request.cluster_role_exists != Some(true) && decision.expiry_at.is_some() {
        // After the kept read has aged past `recheck`, so that the pass reads again.
        timers.push((TimerPurpose::Recheck2m, recheck.saturating_add(TIMER_SLACK)));
    }
    timers
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;

    use super::*;
    use crate::api::{AccessPhase, AccessSubject, SubjectKind};
    use crate::reconcile::access_request::{ConfigVerdict, Decision};

    fn decision(binding: BindingVerdict) -> Decision {
        Decision {
            deletions: Vec::new(),
            adoptions: Vec::new(),
            new_phase: None,
            config: ConfigVerdict::Valid {
                message: String::new(),
            },
            binding,
            binding_message: String::new(),
            events: Vec::new(),
            expiry_at: None,
            grace_ends: None,
        }
    }

    fn request<'a>(subject: &'a AccessSubject, previous: Option<&'a str>) -> RequestFacts<'a> {
        RequestFacts {
            name: "orders",
            uid: Some("uid"),
            namespace: "team-a",
            subject,
            cluster_role: "view",
            expires_at: Timestamp::UNIX_EPOCH,
            phase: AccessPhase::Approved,
            approver: Some("bob"),
            approvals: Vec::new(),
            approvals_required: 1,
            cluster: None,
            cluster_role_exists: Some(true),
            orphan_grace: Duration::from_secs(120),
            previous_binding_reason: previous,
        }
    }

    #[test]
    fn a_missing_binding_is_checked_against_the_api_until_it_has_been_said() {
        let alice = AccessSubject {
            kind: SubjectKind::User,
            name: "alice".into(),
            namespace: None,
        };
        let missing = access_request::ROLE_BINDING_MISSING.as_str();
        let rows = [
            (BindingVerdict::RoleBindingMissing, None, true),
            (
                BindingVerdict::RoleBindingMissing,
                Some("AccessGranted"),
                true,
            ),
            (BindingVerdict::RoleBindingMissing, Some(missing), false),
            (BindingVerdict::AccessGranted, None, false),
            (BindingVerdict::AwaitingDecision, Some(missing), false),
        ];
        for (binding, previous, live) in rows {
            assert_eq!(
                needs_live_read(&decision(binding), &request(&alice, previous)),
                live,
                "{binding:?} after {previous:?}"
            );
        }
    }

    #[test]
    fn timers_aim_just_after_their_instants_and_a_passed_one_fires_at_once() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let alice = AccessSubject {
            kind: SubjectKind::User,
            name: "alice".into(),
            namespace: None,
        };
        let req = request(&alice, None);
        let recheck = Duration::from_secs(120);
        let mut d = decision(BindingVerdict::AccessGranted);
        assert!(timers(&d, &req, now, recheck).is_empty());
        d.expiry_at = Some(now + SignedDuration::from_secs(60));
        d.grace_ends = Some(now - SignedDuration::from_secs(5));
        assert_eq!(
            timers(&d, &req, now, recheck),
            vec![
                (TimerPurpose::Expiry, Duration::from_secs(60) + TIMER_SLACK),
                (TimerPurpose::Grace, TIMER_SLACK),
            ]
        );
    }

    #[test]
    fn a_missing_or_unread_cluster_role_is_looked_at_again_until_the_request_ends() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let alice = AccessSubject {
            kind: SubjectKind::User,
            name: "alice".into(),
            namespace: None,
        };
        let recheck = Duration::from_secs(120);
        let mut d = decision(BindingVerdict::AwaitingDecision);
        d.expiry_at = Some(now + SignedDuration::from_secs(600));
        for (exists, rechecked) in [(Some(false), true), (None, true), (Some(true), false)] {
            let mut req = request(&alice, None);
            req.cluster_role_exists = exists;
            let armed = timers(&d, &req, now, recheck);
            assert_eq!(
                armed.contains(&(TimerPurpose::Recheck2m, recheck + TIMER_SLACK)),
                rechecked,
                "{exists:?}: {armed:?}"
            );
        }
        // A terminal request (nothing left to expire) is not looked at again for its role.
        d.expiry_at = None;
        let mut req = request(&alice, None);
        req.cluster_role_exists = Some(false);
        assert!(timers(&d, &req, now, recheck).is_empty());
    }
}
