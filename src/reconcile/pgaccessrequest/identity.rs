//! Who a request is for, how that identity reads in an approval, and what "exactly bound" means.

use std::fmt;

use k8s_openapi::api::rbac::v1::RoleBinding;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubjectKind {
    User,
    Group,
    ServiceAccount,
}

impl SubjectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SubjectKind::User => "User",
            SubjectKind::Group => "Group",
            SubjectKind::ServiceAccount => "ServiceAccount",
        }
    }
}

/// The subject of a request, as `spec.subject` holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub kind: SubjectKind,
    pub name: String,
    /// Only for a ServiceAccount.
    pub namespace: Option<String>,
}

impl Subject {
    /// The name an approval by this subject would carry in `status.approver`; a Group never approves.
    pub fn identity(&self) -> Option<String> {
        match self.kind {
            SubjectKind::User => Some(self.name.clone()),
            SubjectKind::ServiceAccount => Some(format!(
                "system:serviceaccount:{}:{}",
                self.namespace.as_deref().unwrap_or_default(),
                self.name
            )),
            SubjectKind::Group => None,
        }
    }

    /// The RBAC subject a faithful RoleBinding carries for this request.
    pub fn to_rbac(&self) -> k8s_openapi::api::rbac::v1::Subject {
        k8s_openapi::api::rbac::v1::Subject {
            api_group: match self.kind {
                SubjectKind::ServiceAccount => None,
                _ => Some(RBAC_GROUP.to_string()),
            },
            kind: self.kind.as_str().to_string(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
        }
    }

    fn matches_rbac(&self, s: &k8s_openapi::api::rbac::v1::Subject) -> bool {
        let group_ok = match self.kind {
            // ServiceAccount subjects carry the core group: empty or absent.
            SubjectKind::ServiceAccount => s.api_group.as_deref().unwrap_or_default().is_empty(),
            _ => s.api_group.as_deref() == Some(RBAC_GROUP),
        };
        group_ok
            && s.kind == self.kind.as_str()
            && s.name == self.name
            && match self.kind {
                SubjectKind::ServiceAccount => s.namespace == self.namespace,
                _ => s.namespace.as_deref().unwrap_or_default().is_empty(),
            }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind.as_str(), ns, self.name),
            None => write!(f, "{} {}", self.kind.as_str(), self.name),
        }
    }
}

/// True when the RoleBinding binds exactly this one subject to exactly this ClusterRole.
pub fn binds_exactly(rb: &RoleBinding, subject: &Subject, cluster_role: &str) -> bool {
    let role_ok = rb.role_ref.api_group.as_deref() == Some(RBAC_GROUP)
        && rb.role_ref.kind == "ClusterRole"
        && rb.role_ref.name == cluster_role;
    let subjects = rb.subjects.as_deref().unwrap_or_default();
    role_ok && subjects.len() == 1 && subject.matches_rbac(&subjects[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::RoleRef;

    fn user(name: &str) -> Subject {
        Subject {
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
        let sa = Subject {
            kind: SubjectKind::ServiceAccount,
            name: "bot".into(),
            namespace: Some("team-a".into()),
        };
        assert_eq!(
            sa.identity().as_deref(),
            Some("system:serviceaccount:team-a:bot")
        );
        let group = Subject {
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
            &binding(vec![alice.to_rbac()], "viewer"),
            &alice,
            "viewer"
        ));
        // another role
        assert!(!binds_exactly(
            &binding(vec![alice.to_rbac()], "admin"),
            &alice,
            "viewer"
        ));
        // a second subject
        let two = binding(vec![alice.to_rbac(), user("mallory").to_rbac()], "viewer");
        assert!(!binds_exactly(&two, &alice, "viewer"));
        // no subject
        assert!(!binds_exactly(&binding(vec![], "viewer"), &alice, "viewer"));
        // a Role instead of a ClusterRole
        let mut role = binding(vec![alice.to_rbac()], "viewer");
        role.role_ref.kind = "Role".into();
        assert!(!binds_exactly(&role, &alice, "viewer"));
        // the same name as a Group
        let mut group = alice.to_rbac();
        group.kind = "Group".into();
        assert!(!binds_exactly(
            &binding(vec![group], "viewer"),
            &alice,
            "viewer"
        ));
    }

    #[test]
    fn service_account_binding_needs_its_namespace() {
        let sa = Subject {
            kind: SubjectKind::ServiceAccount,
            name: "bot".into(),
            namespace: Some("team-a".into()),
        };
        assert!(binds_exactly(
            &binding(vec![sa.to_rbac()], "viewer"),
            &sa,
            "viewer"
        ));
        let mut elsewhere = sa.to_rbac();
        elsewhere.namespace = Some("team-b".into());
        assert!(!binds_exactly(
            &binding(vec![elsewhere], "viewer"),
            &sa,
            "viewer"
        ));
    }
}
