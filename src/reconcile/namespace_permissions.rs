//! What the operator must be allowed to do in a watched namespace, and which namespaces of
//! WATCH_NAMESPACES it therefore keeps or drops (pure). The table below is the one place that
//! lists the permissions; the deployment's RBAC must grant at least these.

use std::collections::BTreeMap;
use std::fmt;

/// The API group of the operator's own kinds.
pub use crate::api::GROUP as OWN_GROUP;

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
/// Kept in the cache, never read one by one.
const WATCH: &[&str] = &["list", "watch"];
/// Children: applied (server-side apply: patch, and create when it creates), read once before
/// the first apply, deleted when no longer desired; never replaced.
const MANAGE: &[&str] = &["get", "list", "watch", "create", "patch", "delete"];
/// PgAccessRequest only ever takes grants away: it deletes RoleBindings, and patches one only to
/// make its request its owner (so deleting the request deletes the grant).
const REVOKE: &[&str] = &["get", "list", "watch", "patch", "delete"];

/// What one managed kind needs in a namespace besides reading itself and writing its status.
struct KindNeeds {
    kind: &'static str,
    plural: &'static str,
    /// Runs a Deployment (the [`WORKLOAD`] rows).
    workload: bool,
    /// (group, resource, verbs)
    uses: &'static [(&'static str, &'static str, &'static [&'static str])],
}

/// Children a workload kind renders and owns, and the Pods it reads for their failures.
const WORKLOAD: &[(&str, &str, &[&str])] = &[
    ("apps", "deployments", MANAGE),
    ("", "services", MANAGE),
    ("", "serviceaccounts", MANAGE),
    ("", "pods", WATCH),
    ("apps", "replicasets", WATCH),
];

/// The table, one row per kind. The permissions a namespace needs are those of the kinds the
/// operator runs (a kind not built yet asks for nothing), plus [`COMMON`].
const KINDS: &[KindNeeds] = &[
    KindNeeds {
        kind: "PgAccessRequest",
        plural: "pgaccessrequests",
        workload: false,
        uses: &[
            ("rbac.authorization.k8s.io", "rolebindings", REVOKE),
            // Whether a request exists before its orphaned RoleBindings are deleted.
            (OWN_GROUP, "pgaccessrequests", &["get"]),
        ],
    },
    KindNeeds {
        kind: "PgAdmin",
        plural: "pgadmins",
        workload: true,
        uses: &[
            // Watched metadata-only; the grants a PgAdmin is named in are read whole.
            (OWN_GROUP, "pgadminaccesses", READ),
            ("", "secrets", MANAGE),
            ("", "persistentvolumeclaims", MANAGE),
            ("networking.k8s.io", "networkpolicies", MANAGE),
            ("networking.k8s.io", "ingresses", MANAGE),
            ("batch", "jobs", MANAGE),
        ],
    },
    KindNeeds {
        kind: "PgToolBoxConsole",
        plural: "pgtoolboxconsoles",
        workload: true,
        // Secrets are read once per resourceVersion: the CA Secrets it mirrors, and the digest of
        // those its Pods consume (the workload hash).
        uses: &[
            ("", "configmaps", MANAGE),
            ("", "secrets", &["get"]),
            ("rbac.authorization.k8s.io", "rolebindings", MANAGE),
            ("networking.k8s.io", "networkpolicies", MANAGE),
            ("networking.k8s.io", "ingresses", MANAGE),
        ],
    },
    KindNeeds {
        kind: "EvidenceAgent",
        plural: "evidenceagents",
        workload: true,
        // The CA bundle ConfigMap of the `openshift` provider; the serving certificate
        // Secrets of the `operator` provider.
        uses: &[("", "configmaps", MANAGE), ("", "secrets", MANAGE)],
    },
];

/// Whatever kinds run: Clusters read, Secrets watched (metadata only) by the secret router,
/// Events recorded (patched when a repeat is counted as a series).
const COMMON: &[(&str, &str, &[&str])] = &[
    ("postgresql.cnpg.io", "clusters", READ),
    ("", "secrets", &["list", "watch"]),
    ("events.k8s.io", "events", &["create", "patch"]),
];

/// Our kinds that carry NamespaceNotWatched: (kind, plural).
pub const NOT_WATCHED_KINDS: &[(&str, &str)] = &[
    ("PgAdmin", "pgadmins"),
    ("PgToolBoxConsole", "pgtoolboxconsoles"),
    ("EvidenceAgent", "evidenceagents"),
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

/// The plural of one of our kinds, when the table knows it.
#[cfg(test)]
pub fn plural_of(kind: &str) -> Option<&'static str> {
    KINDS.iter().find(|k| k.kind == kind).map(|k| k.plural)
}

/// Every permission the operator needs in each watched namespace to run `kinds`.
pub fn required_permissions<S: AsRef<str>>(kinds: &[S]) -> Vec<Permission> {
    let mut all = Vec::new();
    let add = |all: &mut Vec<Permission>, group, resource, verbs: &[&'static str]| {
        all.extend(verbs.iter().map(|verb| perm(verb, group, resource, "")));
    };
    for (group, resource, verbs) in COMMON {
        add(&mut all, group, resource, verbs);
    }
    for needs in KINDS
        .iter()
        .filter(|n| kinds.iter().any(|k| k.as_ref() == n.kind))
    {
        add(&mut all, OWN_GROUP, needs.plural, WATCH);
        all.push(status_write(needs.plural));
        let workload = if needs.workload { WORKLOAD } else { &[] };
        for (group, resource, verbs) in needs.uses.iter().chain(workload) {
            add(&mut all, group, resource, verbs);
        }
    }
    all.sort();
    all.dedup();
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
        format!(
            "the operator does not watch namespace {}: it lacks {}; this status is no longer updated",
            self.namespace,
            self.missing_list()
        )
    }

    /// The missing permissions, the first dozen by name.
    pub fn missing_list(&self) -> String {
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
        names.join(", ")
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

    const ALL_KINDS: [&str; 4] = [
        "PgAccessRequest",
        "PgAdmin",
        "PgToolBoxConsole",
        "EvidenceAgent",
    ];

    #[test]
    fn the_table_covers_every_kind_named_by_the_issue() {
        let all = required_permissions(&ALL_KINDS);
        let has = |verb: &str, resource: &str, sub: &str| {
            all.iter()
                .any(|p| p.verb == verb && p.resource == resource && p.subresource == sub)
        };
        for kind in ALL_KINDS {
            let plural = plural_of(kind).unwrap();
            assert!(has("watch", plural, ""), "{kind}");
            assert!(has("patch", plural, "status"), "{kind}");
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
    }

    #[test]
    fn optional_apis_never_drop_a_namespace() {
        // The prober turns them off where refused; the tracker must not ask for them.
        let optional = [
            "route.openshift.io",
            "gateway.networking.k8s.io",
            "barmancloud.cnpg.io",
        ];
        for p in required_permissions(&ALL_KINDS) {
            assert!(!optional.contains(&p.group), "{p}");
            assert!(
                p.group != "postgresql.cnpg.io" || p.resource == "clusters",
                "{p}"
            );
        }
    }

    #[test]
    fn only_the_kinds_that_run_ask_for_anything() {
        let pgar = required_permissions(&["PgAccessRequest"]);
        let granted = |verb: &str, resource: &str| {
            pgar.iter()
                .any(|p| p.verb == verb && p.resource == resource)
        };
        assert!(granted("delete", "rolebindings"));
        assert!(
            !granted("create", "rolebindings"),
            "it only takes grants away"
        );
        assert!(!granted("create", "deployments"));
        assert!(granted("watch", "secrets") && !granted("get", "secrets"));
        let evidence = required_permissions(&["EvidenceAgent"]);
        assert!(
            evidence
                .iter()
                .any(|p| p.verb == "create" && p.resource == "secrets"),
            "the operator provider writes the serving certificate Secret"
        );
        let none: [&str; 0] = [];
        assert_eq!(required_permissions(&none).len(), 7, "the common rows only");
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
            missing: required_permissions(&ALL_KINDS),
        };
        assert!(dropped.message().contains("more"));
        assert_eq!(
            status_write("pgadmins").to_string(),
            "patch pgadmins.pgtoolbox.fyannk.dev/status"
        );
    }
}
