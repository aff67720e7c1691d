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
}
