//! The reason registry: every reason the operator may write, registered once, by owner.
//!
//! A [`Reason`] can only be built inside this module, so code elsewhere can only use the
//! registered constants (`reasons::common::AS_EXPECTED`, `reasons::pgadmin::TOO_MANY_SERVERS`, ...).
//! Reasons are frozen public API: extend the registry, never rename (the golden file
//! `tests/golden/reasons` holds the set).

use std::fmt;

/// Which part of the product a reason belongs to. `Common` reasons are shared by every kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    Common,
    PgAdmin,
    EvidenceAgent,
    Console,
    PgAccessRequest,
}

impl Owner {
    /// The owner's name as written in the golden file and the docs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Owner::Common => "common",
            Owner::PgAdmin => "pgadmin",
            Owner::EvidenceAgent => "evidenceagent",
            Owner::Console => "console",
            Owner::PgAccessRequest => "pgaccessrequest",
        }
    }
}

/// A registered condition or Event reason. Only the constants below exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reason {
    owner: Owner,
    name: &'static str,
    meaning: &'static str,
    action: &'static str,
}

impl Reason {
    /// Private on purpose: the registry is the only place a reason comes into being.
    const fn registered(
        owner: Owner,
        name: &'static str,
        meaning: &'static str,
        action: &'static str,
    ) -> Self {
        Reason {
            owner,
            name,
            meaning,
            action,
        }
    }

    /// What the reason says about the object, in a sentence (`explain` prints it).
    pub const fn meaning(self) -> &'static str {
        self.meaning
    }

    /// What a user can do about it, in a sentence or two.
    pub const fn action(self) -> &'static str {
        self.action
    }

    pub const fn as_str(self) -> &'static str {
        self.name
    }

    pub const fn owner(self) -> Owner {
        self.owner
    }

    /// Looks a reason up by its wire name (e.g. one read back from a stored condition).
    pub fn parse(name: &str) -> Option<Reason> {
        ALL.iter().copied().find(|r| r.name == name)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl AsRef<str> for Reason {
    fn as_ref(&self) -> &str {
        self.name
    }
}

/// Declares the constants of each owner and the full list `ALL` from one table, so a
/// constant cannot exist without being registered. Each entry is
/// `CONSTANT = "WireName" { "what it means.", "what to do." }`: both texts are required.
macro_rules! registry {
    ($( $module:ident => $owner:expr, {
        $( $constant:ident = $name:literal { $meaning:literal, $action:literal $(,)? } ),* $(,)?
    } )*) => {
        $(
            pub mod $module {
                use super::{Owner, Reason};
                $(
                    pub const $constant: Reason =
                        Reason::registered($owner, $name, $meaning, $action);
                )*
            }
        )*
        /// Every registered reason, grouped by owner.
        pub const ALL: &[Reason] = &[ $( $( $module::$constant, )* )* ];
    };
}

registry! {
    common => Owner::Common, {
        AS_EXPECTED = "AsExpected" {
            "The condition holds: everything it checks is as it should be.",
            "Nothing to do.",
        },
        INITIALIZING = "Initializing" {
            "The operator has not evaluated this condition yet, so it reads Unknown rather than a guess.",
            "Wait for the operator's first pass; if none comes, check that the operator runs and watches this namespace.",
        },
        RECONCILING = "Reconciling" {
            "The operator is bringing the children to their desired state, or has not yet observed something it needs at the object's current generation.",
            "Wait a moment; if it lasts, read the other conditions and the Events for what holds it back.",
        },
        RECONCILE_ERROR = "ReconcileError" {
            "The last reconciliation pass ended in an error; the message starts with its class and carries the error text.",
            "Read the error and the Warning Events, then fix the permission, quota or admission policy they name; the operator retries with backoff.",
        },
        RECONCILIATION_PAUSED = "ReconciliationPaused" {
            "The object carries the annotation pgtoolbox.fyannk.dev/reconcile: skip, so the operator leaves it as it is.",
            "Remove the annotation to let the operator reconcile it again.",
        },
        CONFIGURATION_INVALID = "ConfigurationInvalid" {
            "A check across several objects, which the CRD schema cannot express, failed.",
            "Read the message for the field and the object at fault, and correct the spec or that object.",
        },
        RESOURCE_NOT_OWNED = "ResourceNotOwned" {
            "The generated name of a child is taken by an object this operator does not control; the operator leaves that object untouched.",
            "Delete or rename the foreign object the message names, or rename this object so its children get other names.",
        },
        SECRET_NOT_FOUND = "SecretNotFound" {
            "A Secret this object refers to, or that its Pod needs in order to start, does not exist.",
            "Create the Secret the message names in the object's namespace, or correct the reference.",
        },
        SECRET_KEY_MISSING = "SecretKeyMissing" {
            "The referenced Secret exists but lacks the key that is needed.",
            "Add the key to the Secret, or point the reference at the key it really holds.",
        },
        CONFIG_MAP_NOT_FOUND = "ConfigMapNotFound" {
            "A ConfigMap this object refers to does not exist.",
            "Create the ConfigMap the message names, or correct the reference; the operator looks again every two minutes.",
        },
        CLUSTER_NOT_FOUND = "ClusterNotFound" {
            "No CloudNativePG Cluster of the referenced name exists in the namespace.",
            "Check the Cluster's name in the spec, or create the Cluster.",
        },
        ROLLOUT_IN_PROGRESS = "RolloutInProgress" {
            "The Deployment is rolling out and no Pod reports a problem.",
            "Usually nothing: wait for the rollout; if it lasts, look at the Pods with kubectl get pods.",
        },
        ROLLOUT_STUCK = "RolloutStuck" {
            "The Deployment went past its progress deadline and no Pod says why.",
            "Describe the Deployment, its newest ReplicaSet and its Pods to find what keeps new replicas from becoming available.",
        },
        POD_UNSCHEDULABLE = "PodUnschedulable" {
            "The scheduler cannot place a Pod on any Node; its explanation is copied.",
            "Add or free capacity, or relax the node selector, affinity, tolerations or resource requests so that a Node fits.",
        },
        IMAGE_PULL_FAILED = "ImagePullFailed" {
            "A container image cannot be pulled; the kubelet's explanation is copied.",
            "Check the image name and tag, that the registry is reachable from the Nodes, and the pull Secret.",
        },
        CRASH_LOOP_BACK_OFF = "CrashLoopBackOff" {
            "A container keeps exiting soon after it starts, and the kubelet waits longer before each restart.",
            "Read the container's previous logs (kubectl logs --previous) and fix the configuration or image that makes it exit.",
        },
        REPLICA_FAILURE = "ReplicaFailure" {
            "The Deployment cannot create its Pods, for instance because a ResourceQuota or an admission check refuses them.",
            "Read the refusal in the message, then raise the quota or adapt the policy that refuses the Pods.",
        },
        POD_NOT_READY = "PodNotReady" {
            "A Pod runs but does not pass its readiness check yet.",
            "Usually nothing; if it lasts, check the Pod's readiness probe and its logs.",
        },
        SCALED_TO_ZERO = "ScaledToZero" {
            "The workload is meant to run no replicas; no current reconciler reports this reason.",
            "Nothing to do; ask for at least one replica to run it.",
        },
        NOT_REQUESTED = "NotRequested" {
            "The exposure type is clusterIP, so nothing is published outside the cluster.",
            "Nothing to do; set spec.exposure.type to route, ingress or gateway to publish it.",
        },
        NOT_ADMITTED = "NotAdmitted" {
            "The router or ingress controller refused the Route or Ingress.",
            "Read the router's reason in the message; a host another Route already claims, or a wrong ingress class, are the usual causes.",
        },
        NOT_ACCEPTED = "NotAccepted" {
            "The parent Gateway did not accept the HTTPRoute, or could not resolve what it refers to.",
            "Check the parentRef (name, namespace, sectionName), which routes the Gateway allows, and the backend the message names.",
        },
        GATEWAY_NOT_FOUND = "GatewayNotFound" {
            "The Gateway the parentRef names does not exist; registered, but no current reconciler reports it.",
            "Create the Gateway, or correct spec.exposure.gateway.parentRef.",
        },
        HOSTNAME_CONFLICT = "HostnameConflict" {
            "Another PgAdmin or console, created earlier, asks for the same exposure hostname and keeps it: nothing is published under it here.",
            "Choose another hostname, or release it from the object the message names (delete it or change its hostname); this one then publishes by itself.",
        },
        ROUTE_API_UNAVAILABLE = "RouteAPIUnavailable" {
            "The OpenShift Route API is not served, or the operator may not read Routes in this namespace.",
            "Off OpenShift choose exposure type ingress or gateway; otherwise grant the operator access to Routes and restart it.",
        },
        GATEWAY_API_UNAVAILABLE = "GatewayAPIUnavailable" {
            "The Gateway API is not served, or the operator may not read HTTPRoutes in this namespace.",
            "Install the Gateway API CRDs or grant the operator access to HTTPRoutes and restart it, or choose another exposure type.",
        },
        IMAGE_NOT_ALLOWED = "ImageNotAllowed" {
            "An image lies outside the repositories the operator is allowed to run.",
            "Use an image from an allowed repository, or have ALLOWED_IMAGE_REPOSITORIES of the operator extended.",
        },
        HOSTNAME_NOT_ALLOWED = "HostnameNotAllowed" {
            "The exposure hostname ends with none of the suffixes the operator allows, so whatever was published under it is withdrawn.",
            "Choose a hostname under an allowed suffix (EXPOSURE_ALLOWED_HOST_SUFFIXES), or have the suffix added.",
        },
        RECONCILIATION_FAILED = "ReconciliationFailed" {
            "A Warning Event: a pass failed for a reason other than a quota or an admission refusal.",
            "Read the Event's note and the operator's log; a missing permission or an unreachable API is the usual cause.",
        },
        QUOTA_EXCEEDED = "QuotaExceeded" {
            "A Warning Event: a ResourceQuota refused one of the operator's writes.",
            "Raise the namespace's ResourceQuota, or lower what the object asks for.",
        },
        ADMISSION_DENIED = "AdmissionDenied" {
            "A Warning Event: an admission webhook, an admission policy or Pod Security refused one of the operator's writes.",
            "Read the refusal in the note and adapt the policy or the object's spec so that the write is admitted.",
        },
        NAMESPACE_NOT_WATCHED = "NamespaceNotWatched" {
            "At start the operator left this namespace out for missing permissions, so it no longer updates this object's status.",
            "Grant the operator the permissions the message names in this namespace, then restart it.",
        },
    }
    pgadmin => Owner::PgAdmin, {
        NO_CLUSTER_SELECTED = "NoClusterSelected" {
            "The clusterSelector matches no Cluster of the namespace.",
            "Label the Clusters to offer, or change spec.clusterSelector.",
        },
        POOLER_NOT_FOUND = "PoolerNotFound" {
            "A pooler:<name> endpoint names no Pooler of a registered Cluster.",
            "Create the Pooler, or correct the endpoint's name.",
        },
        TOO_MANY_SERVERS = "TooManyServers" {
            "The set of offered servers is over the limit of 64.",
            "Narrow the clusterSelector, the cross-namespace references or the endpoints.",
        },
        PGADMIN_NOT_RUNNING = "PgAdminNotRunning" {
            "No pgAdmin Pod is Ready yet, so server registration and the egress check wait for one.",
            "Wait for the workload; when WorkloadReady is False, fix what it reports first.",
        },
        REGISTRATION_RUNNING = "RegistrationRunning" {
            "The Job that registers the current set of servers in pgAdmin is running.",
            "Usually nothing: wait for the Job to finish.",
        },
        REGISTRATION_FAILED = "RegistrationFailed" {
            "The Job that registers the servers failed; its outcome is in the message.",
            "Read the Job's logs (kubectl logs job/NAME) and fix the cause; a change of the offered servers starts a new Job.",
        },
        REGISTRATION_STARTED = "RegistrationStarted" {
            "An Event: a registration Job started for a new set of servers.",
            "Nothing to do.",
        },
        SERVERS_REGISTERED = "ServersRegistered" {
            "An Event: a registration Job succeeded.",
            "Nothing to do.",
        },
        UPGRADE_BACKUP_RUNNING = "UpgradeBackupRunning" {
            "The settings database is being backed up before pgAdmin's image changes.",
            "Usually nothing: the new image rolls out once the backup is done.",
        },
        UPGRADE_BACKUP_FAILED = "UpgradeBackupFailed" {
            "The backup of the settings database before an image change failed, so the old image keeps running.",
            "Read the backup Job's logs and fix the cause, or name the target image in the pgtoolbox.fyannk.dev/skip-upgrade-backup annotation to upgrade without a backup.",
        },
        UPGRADE_BACKUP_COMPLETED = "UpgradeBackupCompleted" {
            "An Event: the backup before an image change finished.",
            "Nothing to do.",
        },
        UPGRADE_BACKUP_SKIPPED = "UpgradeBackupSkipped" {
            "A Warning Event: the skip annotation let an image change through without a backup.",
            "Nothing to do now; remove the annotation so that the next upgrade is backed up.",
        },
        ROLLOUT_STARTED = "RolloutStarted" {
            "An Event: the workload changed and its Deployment rolls out.",
            "Nothing to do.",
        },
        PGADMIN_EGRESS_OPEN = "PgAdminEgressOpen" {
            "The egress NetworkPolicy of pgAdmin has rules that reach more than named destinations; the message lists them.",
            "Nothing is required; to confine egress, replace the rules listed with named destinations.",
        },
        DATABASE_ROLE_API_UNAVAILABLE = "DatabaseRoleAPIUnavailable" {
            "The CloudNativePG DatabaseRole API cannot be read, or is not served while the spec needs it.",
            "Install a CloudNativePG that serves DatabaseRole, or grant the operator read access to it, then restart the operator.",
        },
        POOLER_API_UNAVAILABLE = "PoolerAPIUnavailable" {
            "The CloudNativePG Pooler API cannot be read, or is not served while a pooler endpoint needs it.",
            "Install the Pooler CRD or grant the operator access to Poolers, or drop the pooler endpoints.",
        },
        GRANT_MISSING = "GrantMissing" {
            "A Cluster of another namespace is named in crossNamespaceClusterRefs, but no PgAdminAccess there grants it to this PgAdmin.",
            "Have that namespace's owners create a PgAdminAccess granting it, or remove the reference.",
        },
        CONFIG_DATABASE_NOT_READY = "ConfigDatabaseNotReady" {
            "CloudNativePG has not yet made the settings database, its role or the role's password; pgAdmin has no Pod until then.",
            "Usually nothing: wait; if it lasts, look at the Database and DatabaseRole objects and their Cluster.",
        },
        PASSWORD_GENERATION_UNAVAILABLE = "PasswordGenerationUnavailable" {
            "The installed CloudNativePG cannot generate the password of the settings role.",
            "Upgrade CloudNativePG to a version that generates DatabaseRole passwords, or drop spec.configDatabase.",
        },
        DATABASE_API_UNAVAILABLE = "DatabaseAPIUnavailable" {
            "The CloudNativePG Database API, which spec.configDatabase needs, is not served or not readable.",
            "Install a CloudNativePG that serves Database or grant the operator access to it, or drop spec.configDatabase.",
        },
    }
    evidence_agent => Owner::EvidenceAgent, {
        BARMAN_PLUGIN_NOT_CONFIGURED = "BarmanPluginNotConfigured" {
            "The Cluster does not use the barman-cloud plugin with a barmanObjectName parameter.",
            "Configure the barman-cloud plugin on the Cluster, naming its ObjectStore in barmanObjectName.",
        },
        OBJECT_STORE_NOT_FOUND = "ObjectStoreNotFound" {
            "The ObjectStore the Cluster's plugin names is not in the namespace.",
            "Create the ObjectStore, or correct barmanObjectName on the Cluster.",
        },
        OBJECT_STORE_API_UNAVAILABLE = "ObjectStoreAPIUnavailable" {
            "The barman-cloud ObjectStore API is not served, or the operator may not read it.",
            "Install the barman-cloud plugin's CRDs or grant the operator access to ObjectStores, then restart it.",
        },
        UNSUPPORTED_OBJECT_STORE = "UnsupportedObjectStore" {
            "The ObjectStore does not use static S3 credentials, the only profile the agent supports.",
            "Give the ObjectStore s3Credentials taken from a Secret (access key id and secret access key).",
        },
        DESTINATION_INVALID = "DestinationInvalid" {
            "The ObjectStore's destination is not s3://BUCKET or s3://BUCKET/PREFIX with a valid bucket name.",
            "Correct destinationPath in the ObjectStore.",
        },
        REGION_REQUIRED = "RegionRequired" {
            "The ObjectStore has a custom endpoint URL but no region.",
            "Add the region to the ObjectStore's S3 settings.",
        },
        IMAGE_REQUIRED = "ImageRequired" {
            "No agent image is set and the operator has no default one.",
            "Set spec.image, or start the operator with --default-evidence-agent-image.",
        },
        SERVICE_CA_PENDING = "ServiceCAPending" {
            "The OpenShift service CA has not yet issued the serving certificate or injected the CA bundle.",
            "Usually nothing: wait; if it lasts, check that the cluster's service CA runs.",
        },
        CERTIFICATE_ISSUED = "CertificateIssued" {
            "An Event: the operator issued or renewed the agent's serving certificate.",
            "Nothing to do.",
        },
    }
    console => Owner::Console, {
        CONSOLE_IMAGE_REQUIRED = "ConsoleImageRequired" {
            "No console image is set and the operator has no default one.",
            "Set spec.image, or start the operator with --default-console-image.",
        },
        CONSOLE_ROLE_MISSING = "ConsoleRoleMissing" {
            "A ClusterRole the console must be bound to is not installed: the installation is incomplete.",
            "Install the console ClusterRoles from deploy/; the operator looks again every two minutes.",
        },
        INSTANCE_CA_MISSING = "InstanceCAMissing" {
            "The server CA of some selected Clusters is not in the mirrored bundle; status.instanceCABundle says which and why.",
            "Fix what status.instanceCABundle.missing names for each Cluster; the console keeps running meanwhile.",
        },
        INSTANCE_CA_INVALID = "InstanceCAInvalid" {
            "A Cluster's CA Secret has a ca.crt without any PEM certificate in it.",
            "Correct ca.crt in that Secret, or let CloudNativePG write it again.",
        },
        INSTANCE_CA_BUNDLE_FULL = "InstanceCABundleFull" {
            "The mirrored bundle reached the size a ConfigMap can hold, so the Clusters after it are left out.",
            "Select fewer Clusters, or provide your own bundle with spec.instanceCABundleRef.",
        },
        EXPOSURE_OPEN = "ExposureOpen" {
            "The console is published without its ingress NetworkPolicy, so any Pod can reach its port.",
            "Set spec.exposure.networkPolicy.from to the Pods of the router, ingress controller or gateway.",
        },
        EXPOSURE_PEERS_BROAD = "ExposurePeersBroad" {
            "A peer of the ingress NetworkPolicy admits (nearly) everyone, so the console trusts no forwarded client address.",
            "Narrow spec.exposure.networkPolicy.from: pin a label value of the namespace or Pods, or use a narrow ipBlock.",
        },
        EXPOSURE_POLICY_INVALID = "ExposurePolicyInvalid" {
            "The API server or an admission policy refused the ingress NetworkPolicy rendered from the spec.",
            "Read the refusal in the message and correct spec.exposure.networkPolicy; the operator tries again every five minutes and on any change.",
        },
        EXPOSURE_POLICY_BYPASSED = "ExposurePolicyBypassed" {
            "Another NetworkPolicy of the namespace lets more peers reach the console port, and NetworkPolicies add up.",
            "Narrow or remove the other NetworkPolicy the message names, or keep the console Pods out of its selector.",
        },
        EXPOSURE_TRUST_UNVERIFIED = "ExposureTrustUnverified" {
            "The peers of the ingress policy could not be checked yet, or a wider policy waits until no console Pod trusts every peer.",
            "Usually nothing: wait for the console Pods to get addresses or for old Pods to go; delete a Pod stuck terminating if one is named.",
        },
        EXPOSURE_POLICY_KEPT = "ExposurePolicyKept" {
            "The ingress NetworkPolicy is no longer wanted but stays while a console Pod may still rely on it.",
            "Usually nothing: it goes once no Pod holds the trust grant; deal with a Pod stuck terminating if one is named.",
        },
    }
    access_request => Owner::PgAccessRequest, {
        AWAITING_DECISION = "AwaitingDecision" {
            "The request waits for a decision; nothing is bound.",
            "An approver other than the subject decides it in the console.",
        },
        ACCESS_GRANTED = "AccessGranted" {
            "The request is approved and its RoleBinding binds exactly the subject to the ClusterRole.",
            "Nothing to do; the access ends at spec.expiresAt.",
        },
        ACCESS_DENIED = "AccessDenied" {
            "The request was denied; nothing is bound.",
            "Nothing to do; file a new request if access is still needed.",
        },
        ACCESS_EXPIRED = "AccessExpired" {
            "The request expired and nothing is bound; also the Event of the expiry.",
            "Nothing to do; file a new request if access is still needed.",
        },
        ACCESS_REVOKED = "AccessRevoked" {
            "The access was revoked; nothing is bound.",
            "Nothing to do; file a new request if access is still needed.",
        },
        ROLE_BINDING_MISSING = "RoleBindingMissing" {
            "The request is approved but its RoleBinding is gone, and the operator never creates it again.",
            "Revoke this request and file a new one.",
        },
        ROLE_BINDING_DRIFTED = "RoleBindingDrifted" {
            "A RoleBinding of the request bound another subject or ClusterRole, so the operator deleted it.",
            "Find out who changed the RoleBinding; revoke this request and file a new one if access is still needed.",
        },
        ROLE_BINDING_ORPHANED = "RoleBindingOrphaned" {
            "A RoleBinding of a request that is not approved outlived the grace given to an approval in flight, and was deleted.",
            "Approve again in the console if the access was meant to be granted.",
        },
        SELF_APPROVAL_REFUSED = "SelfApprovalRefused" {
            "The recorded approver is the request's own subject, so the operator revoked the grant.",
            "Have someone other than the subject decide a new request.",
        },
        CLUSTER_ROLE_NOT_FOUND = "ClusterRoleNotFound" {
            "The ClusterRole the request names in spec.clusterRole does not exist, so a RoleBinding to it would grant nothing; expiry and revocation keep working.",
            "Check the ClusterRole's name in the request (requests are immutable: file a corrected one), or create the ClusterRole; the operator looks again every two minutes.",
        },
        ROLE_BINDING_DELETED = "RoleBindingDeleted" {
            "An Event: the operator deleted a RoleBinding of the request; the note gives the cause.",
            "Nothing to do, unless the cause is unexpected.",
        },
    }
}

/// The golden-file form of the registry: `owner reason` per line, sorted.
#[cfg(test)]
pub fn golden_listing() -> String {
    let mut lines: Vec<String> = ALL
        .iter()
        .map(|r| format!("{} {}", r.owner().as_str(), r.as_str()))
        .collect();
    lines.sort();
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_reason_is_registered_once() {
        let mut seen = HashSet::new();
        for reason in ALL {
            assert!(seen.insert(reason.as_str()), "{reason} registered twice");
        }
    }

    #[test]
    fn parse_round_trips_every_reason() {
        for reason in ALL {
            assert_eq!(Reason::parse(reason.as_str()), Some(*reason));
        }
        assert_eq!(Reason::parse("Waiting"), None);
    }

    /// `explain` prints both texts of every reason: none may be empty or trail off.
    #[test]
    fn every_reason_says_what_it_means_and_what_to_do() {
        for reason in ALL {
            for (what, text) in [("meaning", reason.meaning()), ("action", reason.action())] {
                let text = text.trim();
                assert!(!text.is_empty(), "{reason}: empty {what}");
                assert!(
                    text.ends_with(['.', '!', '?']),
                    "{reason}: the {what} is not a full sentence: {text}"
                );
                assert!(
                    text.starts_with(|c: char| c.is_uppercase()),
                    "{reason}: the {what} does not start a sentence: {text}"
                );
            }
            assert_ne!(reason.meaning(), reason.action(), "{reason}");
        }
    }

    #[test]
    fn registry_matches_the_golden_file() {
        let golden = include_str!("../../tests/golden/reasons");
        assert_eq!(
            golden_listing(),
            golden,
            "the reason registry changed: extending it means updating tests/golden/reasons \
             deliberately; renaming a reason is never allowed"
        );
    }
}

#[cfg(test)]
mod docs_tests {
    use super::ALL;
    use crate::conditions::ConditionType;

    #[test]
    fn every_reason_and_type_is_described_in_the_docs() {
        let docs = include_str!("../../docs/conditions.md");
        for reason in ALL {
            let row = format!("| `{reason}` |");
            assert!(
                docs.contains(&row),
                "docs/conditions.md has no row for {reason}"
            );
        }
        for type_ in ConditionType::ALL {
            let row = format!("| `{type_}` |");
            assert!(
                docs.contains(&row),
                "docs/conditions.md has no row for {type_}"
            );
        }
    }
}
