//! What the operator must be allowed to do in a watched namespace, and which namespaces of
//! WATCH_NAMESPACES it therefore keeps or drops (pure). The table below is the one place that
//! lists the permissions; the deployment's RBAC must grant at least these.

use std::collections::BTreeMap;
use std::fmt;

/// The API group of the operator's own kinds.
pub const OWN_GROUP: &str = "pgtoolbox.fyannk.dev";

/// One (verb, group, resource[/subresource]) the operator needs in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Permission {
    pub verb: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
}

impl fmt::Display for Permission {
    /// As `kubectl auth can-i` spells it: `patch pgadmins.pgtoolbox.fyannk.dev/status`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        if !self.subresource.is_empty() {
            write!(f, "/{}", self.subresource)?;
        }
        Ok(())
    }
}

const READ: &[&str] = &["get", "list", "watch"];
const MANAGE: &[&str] = &["get", "list", "watch", "create", "update", "delete"];

/// Our kinds whose status the operator writes (merge patch on `/status`).
pub const OWN_KINDS_WITH_STATUS: &[&str] = &[
    "pgadmins",
    "pgtoolboxconsoles",
    "evidenceagents",
    "pgaccessrequests",
];
/// Our kinds the operator only reads.
const OWN_KINDS_READ_ONLY: &[&str] = &["pgadminaccesses"];
/// Children the operator creates, replaces and deletes.
const CHILDREN: &[(&str, &str)] = &[
    ("apps", "deployments"),
    ("", "services"),
    ("", "serviceaccounts"),
    ("", "secrets"),
    ("", "configmaps"),
    ("", "persistentvolumeclaims"),
    ("rbac.authorization.k8s.io", "rolebindings"),
    ("networking.k8s.io", "networkpolicies"),
    ("networking.k8s.io", "ingresses"),
    ("batch", "jobs"),
];
/// What the operator reads but never writes: Pods for workload failures, CloudNativePG Clusters.
const READ_ONLY: &[(&str, &str)] = &[("", "pods"), ("postgresql.cnpg.io", "clusters")];
/// Events are created, and patched when a repeated Event is counted as a series.
const EVENTS: &[Permission] = &[
    perm("create", "events.k8s.io", "events", ""),
    perm("patch", "events.k8s.io", "events", ""),
];

const fn perm(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
) -> Permission {
    Permission {
        verb,
        group,
        resource,
        subresource,
    }
}

/// The status write of one of our kinds.
pub fn status_write(plural: &'static str) -> Permission {
    perm("patch", OWN_GROUP, plural, "status")
}

/// Every permission the operator needs in each watched namespace.
pub fn required_permissions() -> Vec<Permission> {
    let mut all = Vec::new();
    for plural in OWN_KINDS_WITH_STATUS {
        all.extend(READ.iter().map(|verb| perm(verb, OWN_GROUP, plural, "")));
        all.push(status_write(plural));
    }
    for plural in OWN_KINDS_READ_ONLY {
        all.extend(READ.iter().map(|verb| perm(verb, OWN_GROUP, plural, "")));
    }
    for (group, resource) in CHILDREN {
        all.extend(MANAGE.iter().map(|verb| perm(verb, group, resource, "")));
    }
    for (group, resource) in READ_ONLY {
        all.extend(READ.iter().map(|verb| perm(verb, group, resource, "")));
    }
    all.extend_from_slice(EVENTS);
    all
}

/// A namespace of WATCH_NAMESPACES left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedNamespace {
    pub namespace: String,
    pub missing: Vec<Permission>,
}

impl DroppedNamespace {
    /// Whether the operator may still write the status of `plural` objects there.
    pub fn may_write_status(&self, plural: &'static str) -> bool {
        let read = perm("list", OWN_GROUP, plural, "");
        !self.missing.contains(&status_write(plural)) && !self.missing.contains(&read)
    }

    /// The message of Ready=Unknown NamespaceNotWatched and of its Warning Event.
    pub fn message(&self) -> String {
        const SHOWN: usize = 12;
        let mut names: Vec<String> = self
            .missing
            .iter()
            .take(SHOWN)
            .map(ToString::to_string)
            .collect();
        if self.missing.len() > SHOWN {
            names.push(format!("and {} more", self.missing.len() - SHOWN));
        }
        format!(
            "the operator does not watch namespace {}: it lacks {}; this status is no longer updated",
            self.namespace,
            names.join(", ")
        )
    }
}

/// Which namespaces to watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchPlan {
    pub watched: Vec<String>,
    pub dropped: Vec<DroppedNamespace>,
}

/// Splits the listed namespaces by the access-review answers: a namespace with any permission
/// denied is dropped. `answers` holds one `(namespace, permission, allowed)` per review.
pub fn plan_watch(namespaces: &[String], answers: &[(String, Permission, bool)]) -> WatchPlan {
    let mut missing: BTreeMap<&str, Vec<Permission>> = namespaces
        .iter()
        .map(|ns| (ns.as_str(), Vec::new()))
        .collect();
    for (namespace, permission, allowed) in answers {
        if !allowed && let Some(list) = missing.get_mut(namespace.as_str()) {
            list.push(*permission);
        }
    }
    let mut plan = WatchPlan::default();
    for (namespace, mut denied) in missing {
        if denied.is_empty() {
            plan.watched.push(namespace.to_owned());
        } else {
            denied.sort();
            denied.dedup();
            plan.dropped.push(DroppedNamespace {
                namespace: namespace.to_owned(),
                missing: denied,
            });
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_covers_every_kind_named_by_the_issue() {
        let all = required_permissions();
        let has = |verb: &str, resource: &str, sub: &str| {
            all.iter()
                .any(|p| p.verb == verb && p.resource == resource && p.subresource == sub)
        };
        for kind in OWN_KINDS_WITH_STATUS {
            assert!(has("watch", kind, ""), "{kind}");
            assert!(has("patch", kind, "status"), "{kind}");
        }
        for child in [
            "deployments",
            "services",
            "serviceaccounts",
            "secrets",
            "configmaps",
            "rolebindings",
            "networkpolicies",
            "jobs",
            "ingresses",
        ] {
            assert!(
                has("create", child, "") && has("delete", child, ""),
                "{child}"
            );
        }
        assert!(has("create", "events", ""));
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "no permission is listed twice");
    }

    #[test]
    fn a_namespace_missing_anything_is_dropped() {
        let namespaces = vec!["team-a".to_owned(), "team-b".to_owned()];
        let create_secrets = perm("create", "", "secrets", "");
        let list_deployments = perm("list", "apps", "deployments", "");
        let answers = vec![
            ("team-a".to_owned(), create_secrets, true),
            ("team-b".to_owned(), create_secrets, false),
            ("team-b".to_owned(), list_deployments, false),
            ("team-a".to_owned(), list_deployments, true),
        ];
        let plan = plan_watch(&namespaces, &answers);
        assert_eq!(plan.watched, vec!["team-a".to_owned()]);
        assert_eq!(plan.dropped.len(), 1);
        let dropped = &plan.dropped[0];
        assert_eq!(dropped.namespace, "team-b");
        let message = dropped.message();
        assert!(message.contains("team-b"), "{message}");
        assert!(message.contains("create secrets"), "{message}");
        assert!(message.contains("list deployments.apps"), "{message}");
        assert!(dropped.may_write_status("pgadmins"));
    }

    #[test]
    fn status_is_left_alone_where_it_may_not_be_written() {
        let dropped = DroppedNamespace {
            namespace: "x".into(),
            missing: vec![status_write("pgadmins")],
        };
        assert!(!dropped.may_write_status("pgadmins"));
        assert!(dropped.may_write_status("evidenceagents"));
    }

    #[test]
    fn long_lists_are_shortened() {
        let dropped = DroppedNamespace {
            namespace: "x".into(),
            missing: required_permissions(),
        };
        assert!(dropped.message().contains("more"));
        assert_eq!(
            status_write("pgadmins").to_string(),
            "patch pgadmins.pgtoolbox.fyannk.dev/status"
        );
    }
}
