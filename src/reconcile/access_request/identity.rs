//! Who a request is for, how that identity reads in an approval, and what "exactly bound" means.

use k8s_openapi::api::rbac::v1::RoleBinding;

use crate::api::{AccessSubject, SubjectKind};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The RBAC subject a faithful RoleBinding of the request carries.
#[cfg(test)]
pub fn rbac_subject(subject: &AccessSubject) -> k8s_openapi::api::rbac::v1::Subject {
    k8s_openapi::api::rbac::v1::Subject {
        api_group: match subject.kind {
            SubjectKind::ServiceAccount => None,
            _ => Some(RBAC_GROUP.to_string()),
        },
        kind: kind_name(subject.kind).to_string(),
        name: subject.name.clone(),
        namespace: subject.namespace.clone(),
    }
}

fn kind_name(kind: SubjectKind) -> &'static str {
    match kind {
        SubjectKind::User => "User",
        SubjectKind::Group => "Group",
        SubjectKind::ServiceAccount => "ServiceAccount",
    }
}

fn matches_rbac(subject: &AccessSubject, s: &k8s_openapi::api::rbac::v1::Subject) -> bool {
    let group_ok = match subject.kind {
        // ServiceAccount subjects carry the core group: empty or absent.
        SubjectKind::ServiceAccount => s.api_group.as_deref().unwrap_or_default().is_empty(),
        _ => s.api_group.as_deref() == Some(RBAC_GROUP),
    };
    group_ok
        && s.kind == kind_name(subject.kind)
        && s.name == subject.name
        && match subject.kind {
            SubjectKind::ServiceAccount => s.namespace == subject.namespace,
            _ => s.namespace.as_deref().unwrap_or_default().is_empty(),
        }
}

/// How a subject reads in messages: `User alice`, `ServiceAccount team-a/bot`.
pub fn describe(subject: &AccessSubject) -> String {
    match &subject.namespace {
        Some(ns) => format!("{} {}/{}", kind_name(subject.kind), ns, subject.name),
        None => format!("{} {}", kind_name(subject.kind), subject.name),
    }
}

/// A RoleBinding labelled for a request as the operator keeps it (`access_bindings`): what a
/// pass judges (its role, its name, owners, age and version, the request label) and no more
/// subjects than tell "exactly one" from "more" (two). Anyone who may label RoleBindings can
/// label them for a request; their annotations, other labels and further subjects are not held.
/// Idempotent: keeping a kept binding changes nothing.
pub fn keep_binding(mut rb: RoleBinding) -> RoleBinding {
    let meta = &mut rb.metadata;
    meta.annotations = None;
    meta.managed_fields = None;
    if let Some(labels) = meta.labels.as_mut() {
        labels.retain(|key, _| key == super::REQUEST_LABEL);
    }
    if let Some(subjects) = rb.subjects.as_mut() {
        subjects.truncate(2);
    }
    rb
}

/// True when the RoleBinding binds exactly this one subject to exactly this ClusterRole.
pub fn binds_exactly(rb: &RoleBinding, subject: &AccessSubject, cluster_role: &str) -> bool {
    let role_ok = rb.role_ref.api_group.as_deref() == Some(RBAC_GROUP)
        && rb.role_ref.kind == "ClusterRole"
        && rb.role_ref.name == cluster_role;
    let subjects = rb.subjects.as_deref().unwrap_or_default();
    role_ok && subjects.len() == 1 && matches_rbac(subject, &subjects[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::RoleRef;

    fn user(name: &str) -> AccessSubject {
        AccessSubject {
            kind: SubjectKind::User,
            name: name.into(),
            namespace: None,
        }
    }

    fn binding(subjects: Vec<k8s_openapi::api::rbac::v1::Subject>, role: &str) -> RoleBinding {
        RoleBinding {
            role_ref: RoleRef {
                api_group: Some(RBAC_GROUP.into()),
                kind: "ClusterRole".into(),
                name: role.into(),
            },
            subjects: Some(subjects),
            ..Default::default()
        }
    }

    #[test]
    fn identity_of_each_subject_kind() {
        assert_eq!(user("alice").identity().as_deref(), Some("alice"));
        let sa = AccessSubject {
            kind: SubjectKind::ServiceAccount,
            name: "bot".into(),
            namespace: Some("team-a".into()),
        };
        assert_eq!(
            sa.identity().as_deref(),
            Some("system:serviceaccount:team-a:bot")
        );
        let group = AccessSubject {
            kind: SubjectKind::Group,
            name: "dbas".into(),
            namespace: None,
        };
        assert_eq!(group.identity(), None);
    }

    #[test]
    fn exact_binding_is_recognised_and_every_deviation_is_not() {
        let alice = user("alice");
        assert!(binds_exactly(
            &binding(vec![rbac_subject(&alice)], "viewer"),
            &alice,
            "viewer"
        ));
        // another role
        assert!(!binds_exactly(
            &binding(vec![rbac_subject(&alice)], "admin"),
            &alice,
            "viewer"
        ));
        // a second subject
        let two = binding(
            vec![rbac_subject(&alice), rbac_subject(&user("mallory"))],
            "viewer",
        );
        assert!(!binds_exactly(&two, &alice, "viewer"));
        // no subject
        assert!(!binds_exactly(&binding(vec![], "viewer"), &alice, "viewer"));
        // a Role instead of a ClusterRole
        let mut role = binding(vec![rbac_subject(&alice)], "viewer");
        role.role_ref.kind = "Role".into();
        assert!(!binds_exactly(&role, &alice, "viewer"));
        // the same name as a Group
        let mut group = rbac_subject(&alice);
        group.kind = "Group".into();
        assert!(!binds_exactly(
            &binding(vec![group], "viewer"),
            &alice,
            "viewer"
        ));
    }

    #[test]
    fn service_account_binding_needs_its_namespace() {
        let sa = AccessSubject {
            kind: SubjectKind::ServiceAccount,
            name: "bot".into(),
            namespace: Some("team-a".into()),
        };
        assert!(binds_exactly(
            &binding(vec![rbac_subject(&sa)], "viewer"),
            &sa,
            "viewer"
        ));
        let mut elsewhere = rbac_subject(&sa);
        elsewhere.namespace = Some("team-b".into());
        assert!(!binds_exactly(
            &binding(vec![elsewhere], "viewer"),
            &sa,
            "viewer"
        ));
    }

    #[test]
    fn a_kept_binding_is_judged_as_the_binding_and_holds_no_more() {
        use k8s_openapi::api::rbac::v1::Subject;
        let alice = || rbac_subject(&user("alice"));
        let mut big = binding(vec![alice()], "view");
        big.metadata.annotations = Some([("note".to_string(), "x".repeat(64 * 1024))].into());
        big.metadata.labels = Some(
            [
                (
                    crate::reconcile::access_request::REQUEST_LABEL.to_string(),
                    "r".to_string(),
                ),
                ("other".to_string(), "y".to_string()),
            ]
            .into(),
        );
        let kept = keep_binding(big.clone());
        assert_eq!(kept.metadata.annotations, None);
        assert_eq!(
            kept.metadata.labels,
            Some(
                [(
                    crate::reconcile::access_request::REQUEST_LABEL.to_string(),
                    "r".to_string()
                )]
                .into()
            )
        );
        assert_eq!(keep_binding(kept.clone()), kept);
        // The same verdict as the binding received, with one subject or many.
        for subjects in [
            vec![alice()],
            vec![alice(), alice()],
            vec![rbac_subject(&user("bob")), alice(), alice()],
            (0..1000)
                .map(|i| Subject {
                    name: format!("user-{i}"),
                    ..alice()
                })
                .collect(),
        ] {
            let rb = binding(subjects, "view");
            let kept = keep_binding(rb.clone());
            assert!(kept.subjects.as_ref().is_some_and(|s| s.len() <= 2));
            assert_eq!(
                binds_exactly(&kept, &user("alice"), "view"),
                binds_exactly(&rb, &user("alice"), "view")
            );
        }
    }
}
