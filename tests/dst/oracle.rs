//! The workload kinds' oracle and the log check, written from the spec (api.md, the seed's
//! tables of each kind), not from the operator's `decide`.
//!
//! For each aspect, in the kind's order, the final inputs say: it must fail with one of these
//! reasons (`Hard`), it may fail with one of these or hold (`Soft`: a fault of the simulated
//! cluster whose effect the history does not settle — a registration Job that may have
//! succeeded before, a service CA paused after it filled the Secret, a Pod started in the very
//! second its fault went on), or it holds. Whether a Pod fault acts is read from the Pods.
//! Ready must then give the first `Hard` reason, a `Soft` one before it, or `AsExpected` when
//! nothing is `Hard`.

use pgtoolbox_sim::cluster::{WorkloadFault, WorkloadFaultRule};
use serde_json::Value;

use crate::invariants::{Violation, condition, name, violation};
use crate::kinds::{Exposure, Workload};
use crate::schedule::{ALLOWED_REPOSITORIES, CA_FAULTS};
use crate::workloads::{
    ALLOW_ALL, ALLOWED_HOST_SUFFIX, BACKUP_JOBS, CLUSTER_LABEL, CREDENTIALS, GRANT,
    SETTINGS_CLUSTER, STORE, target_image,
};
use crate::world::{History, Snapshot, epoch};
use k8s_openapi::jiff::Timestamp;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Hard(Vec<&'static str>),
    Soft(Vec<&'static str>),
    Holds,
}

use Verdict::{Hard, Holds, Soft};

fn fault_on(h: &History, fault: WorkloadFault, instance: &str) -> bool {
    h.workload_faults.iter().any(|r: &WorkloadFaultRule| {
        r.fault == fault
            && (r.selector.is_empty()
                || r.selector == format!("app.kubernetes.io/instance={instance}"))
    })
}

fn input<'a>(snap: &'a Snapshot, kind: &str, input_name: &str) -> Option<&'a Value> {
    snap.inputs
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == input_name)
        .map(|o| o.as_ref())
}

/// Whether the workload is published (an Ingress, a Route, a Gateway) under a hostname outside
/// the operator's allowed suffix.
fn hostname_refused(obj: &Value) -> bool {
    let exposure = &obj["spec"]["exposure"];
    let published = matches!(
        exposure["type"].as_str(),
        Some("ingress" | "route" | "gateway")
    );
    let host = exposure["hostname"].as_str().unwrap_or_default();
    published
        && !host.is_empty()
        && host != ALLOWED_HOST_SUFFIX
        && !host.ends_with(&format!(".{ALLOWED_HOST_SUFFIX}"))
}

/// Whether `image`'s repository is outside the operator's allow-list.
fn image_refused(image: &str) -> bool {
    !ALLOWED_REPOSITORIES.iter().any(|r| {
        image
            .strip_prefix(r)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// Whether the console's ingress NetworkPolicy, rendered from `spec.exposure.networkPolicy`
/// (for a Route, or an Ingress given peers), has a block whose exception lies outside it,
/// which the API server refuses. The schedules' blocks are /24s: outside is another /24.
fn policy_refused(obj: &Value) -> bool {
    let spec = &obj["spec"];
    let from = spec["exposure"]["networkPolicy"]["from"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let network = |cidr: &str| cidr.rsplit_once('.').map(|(net, _)| net.to_string());
    let outside = from.iter().any(|peer| {
        let block = &peer["ipBlock"];
        let cidr = network(block["cidr"].as_str().unwrap_or_default());
        block["except"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| network(e.as_str().unwrap_or_default()) != cidr)
    });
    Exposure::of_spec(spec) != Exposure::ClusterIp && outside
}

/// Whether the workload carries `pgtoolbox.fyannk.dev/reconcile: skip`.
pub fn paused(obj: &Value) -> bool {
    obj["metadata"]["annotations"][pgtoolbox_operator::api::RECONCILE_ANNOTATION] == "skip"
}

/// The credential Secret's state: missing, without the secret key, or complete.
fn credentials(snap: &Snapshot) -> Verdict {
    match input(snap, "Secret", CREDENTIALS) {
        None => Hard(vec!["SecretNotFound"]),
        Some(s) if s["data"]["ACCESS_SECRET_KEY"].is_null() => Hard(vec!["SecretKeyMissing"]),
        Some(_) => Holds,
    }
}

/// What a PgAdmin's settings database decides: a configuration failure (its Cluster missing),
/// whether CloudNativePG leaves its settings objects unapplied, and the upgrade backup.
struct SettingsDatabase {
    config: Option<Vec<&'static str>>,
    not_applied: bool,
    backup: Verdict,
}

/// A PgAdmin's settings database: its Cluster must exist; with it, an image change is backed
/// up first by a Job. While CloudNativePG leaves the settings objects unapplied, the database
/// is not ready, nothing is backed up, and pgAdmin waits.
fn settings_database(h: &History, snap: &Snapshot, obj: &Value) -> SettingsDatabase {
    let instance = name(obj);
    let mut out = SettingsDatabase {
        config: None,
        not_applied: false,
        backup: Holds,
    };
    if obj["spec"]["configDatabase"].is_null() {
        return out;
    }
    let cluster_missing = !snap.clusters.iter().any(|c| c == SETTINGS_CLUSTER);
    // A CloudNativePG older than the APIs the settings database needs refuses it first.
    if let Some(refused) = h.cnpg.settings_database_refused() {
        let mut reasons = vec![refused];
        if cluster_missing {
            reasons.extend(["ClusterNotFound", "ConfigurationInvalid"]);
        }
        out.config = Some(reasons);
        return out;
    }
    if cluster_missing {
        out.config = Some(vec!["ClusterNotFound", "ConfigurationInvalid"]);
        return out;
    }
    out.not_applied = fault_on(h, WorkloadFault::NotApplied, instance);
    if !out.not_applied {
        out.backup = upgrade_backup(h, snap, obj);
    }
    out
}

/// The upgrade backup of a PgAdmin whose settings database is ready. An image change not
/// skipped by the annotation is held by the backup Job of its target (`<name>-pgadmin-upgrade-
/// backup-<hash8 of the target>`) until that Job completes; a completed Job stays while its
/// image runs (for its logs), and goes with the next image change. So the Job of the target,
/// if it is still there: failed,
/// WorkloadReady says `UpgradeBackupFailed`; running, `UpgradeBackupRunning`; complete or
/// gone, neither. Whether it failed is read first from the history: a fault failing its Pod
/// (`JobFailed` on it, `CrashLoopBackOff` on its Pod) on since before the Job was created, with
/// no image-pull fault ever keeping that Pod from starting, fails it; otherwise the Job's own
/// status (what the sim's Job controller made of the faults it met) says.
fn upgrade_backup(h: &History, snap: &Snapshot, obj: &Value) -> Verdict {
    let instance = name(obj);
    let target = target_image(obj);
    let annotation =
        pgtoolbox_operator::testing::reconcile::pgadmin::SKIP_UPGRADE_BACKUP_ANNOTATION;
    if obj["metadata"]["annotations"][annotation].as_str() == Some(target.as_str()) {
        return Holds;
    }
    let block: Option<pgtoolbox_operator::api::PodTemplate> =
        serde_json::from_value(obj["spec"]["podTemplate"].clone()).unwrap_or_default();
    let job_name = pgtoolbox_operator::testing::reconcile::pgadmin::upgrade_backup_job_name(
        instance,
        &target,
        block.as_ref(),
    );
    let Some(job) = snap.jobs.iter().find(|j| name(j) == job_name) else {
        return Holds;
    };
    if !job["metadata"]["deletionTimestamp"].is_null() {
        // Going: the pass that dropped it may not have written its verdict yet.
        return Soft(vec!["UpgradeBackupFailed", "UpgradeBackupRunning"]);
    }
    if backup_made_to_fail(h, job, instance) {
        return Hard(vec!["UpgradeBackupFailed"]);
    }
    let holds = |t: &str| {
        job["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == t && c["status"] == "True"))
    };
    if holds("Complete") {
        Holds
    } else if holds("Failed") {
        Hard(vec!["UpgradeBackupFailed"])
    } else {
        Hard(vec!["UpgradeBackupRunning"])
    }
}

/// Whether the history alone says backup Job `job` of `instance` failed: its Pod (run once:
/// `backoffLimit: 0`) met a fault that exits it, on without a break since before the Job was
/// created, and no image-pull fault was ever on that could have kept it from starting.
fn backup_made_to_fail(h: &History, job: &Value, instance: &str) -> bool {
    let Some(created) = job["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .map(|t| t.duration_since(epoch()).as_millis().max(0) as u64)
    else {
        return false;
    };
    let of_instance = format!("app.kubernetes.io/instance={instance}");
    let of_backup = format!("{BACKUP_JOBS},{of_instance}");
    let pull_blocked = h.faults_ever.iter().any(|r| {
        r.fault == WorkloadFault::ImagePullBackOff
            && (r.selector.is_empty() || r.selector == of_instance)
    });
    // Timestamps have a second's precision: a fault on in the Job's very second may be later.
    let before = |since: u64| since / 1000 < created / 1000;
    !pull_blocked
        && h.fault_since.iter().any(|(r, since)| {
            let exits = match r.fault {
                WorkloadFault::JobFailed => {
                    r.selector.is_empty() || r.selector == of_instance || r.selector == of_backup
                }
                WorkloadFault::CrashLoopBackOff => {
                    r.selector.is_empty() || r.selector == of_instance
                }
                _ => false,
            };
            exits && before(*since)
        })
}

/// Whether a peer of a console's ingress policy admits (nearly) everyone: a namespace selector
/// that pins nothing, or an ipBlock holding the Pod network (the sim's Nodes take their
/// podCIDRs from `10.244.0.0/16`).
fn broad_peer(peer: &Value) -> bool {
    let pins = |selector: &Value| {
        selector["matchLabels"]
            .as_object()
            .is_some_and(|m| !m.is_empty())
            || selector["matchExpressions"]
                .as_array()
                .is_some_and(|e| !e.is_empty())
    };
    let namespaces = &peer["namespaceSelector"];
    let any_namespace = namespaces.is_object() && !pins(namespaces);
    let pod_network = peer["ipBlock"]["cidr"]
        .as_str()
        .is_some_and(|cidr| cidr.starts_with("10.244.") || cidr.starts_with("10.0.0.0/"));
    any_namespace || pod_network
}

/// Whether a CA fault is on at the end for Cluster `cluster` (its CA Secret without `ca.crt`,
/// or with no certificate in it).
fn ca_broken(h: &History, cluster: &str) -> bool {
    h.workload_faults.iter().any(|r| {
        CA_FAULTS.contains(&r.fault)
            && (r.selector.is_empty() || r.selector == format!("{CLUSTER_LABEL}={cluster}"))
    })
}

/// Since when (ms) `fault` has been on for `instance`, without a break, if it still is.
fn on_since(h: &History, fault: WorkloadFault, instance: &str) -> Option<u64> {
    h.fault_since
        .iter()
        .filter(|(r, _)| {
            r.fault == fault
                && (r.selector.is_empty()
                    || r.selector == format!("app.kubernetes.io/instance={instance}"))
        })
        .map(|(_, since)| *since)
        .min()
}

/// Whether a container of the workload's live Pods started while a fault was on since
/// `since_ms`, or has yet to start (it will meet the fault).
#[derive(Debug, PartialEq, Eq)]
enum Met {
    Yes,
    No,
    /// Started in the very second the fault went on (timestamps have a second's precision).
    Unsure,
}

fn met(snap: &Snapshot, instance: &str, since_ms: u64) -> Met {
    let live: Vec<&Value> = snap
        .pods
        .iter()
        .map(|p| p.as_ref())
        .filter(|p| {
            p["metadata"]["labels"]["app.kubernetes.io/instance"] == instance
                && p["metadata"]["deletionTimestamp"].is_null()
                && p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        })
        .collect();
    if live.is_empty() {
        return Met::Yes;
    }
    let since_second = since_ms / 1000;
    let mut unsure = false;
    for pod in live {
        let statuses = pod["status"]["containerStatuses"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if statuses.is_empty() {
            return Met::Yes;
        }
        for status in statuses {
            let started = status["state"]["running"]["startedAt"]
                .as_str()
                .and_then(|t| t.parse::<Timestamp>().ok())
                .map(|t| t.duration_since(epoch()).as_secs().max(0) as u64);
            match started {
                None => return Met::Yes,
                Some(second) if second > since_second => return Met::Yes,
                Some(second) if second == since_second => unsure = true,
                Some(_) => {}
            }
        }
    }
    if unsure { Met::Unsure } else { Met::No }
}

/// A Pod fault. ImagePullBackOff and CrashLoopBackOff act on a container as it starts: they
/// fail the workload when one of its Pods started (or restarted, or has yet to start) while
/// the fault was on, and leave a Pod running since before untouched. NotReady acts on a
/// running Pod's readiness at once.
fn pods(h: &History, snap: &Snapshot, instance: &str) -> Verdict {
    let mut hard = Vec::new();
    let mut soft = Vec::new();
    let starting: [(WorkloadFault, &[&'static str]); 2] = [
        (
            WorkloadFault::ImagePullBackOff,
            &["ImagePullFailed", "RolloutInProgress", "RolloutStuck"],
        ),
        (
            WorkloadFault::CrashLoopBackOff,
            &[
                "CrashLoopBackOff",
                "PodNotReady",
                "RolloutInProgress",
                "RolloutStuck",
            ],
        ),
    ];
    for (fault, reasons) in starting {
        match on_since(h, fault, instance).map(|since| met(snap, instance, since)) {
            Some(Met::Yes) => hard.extend(reasons),
            Some(Met::Unsure) => soft.extend(reasons),
            Some(Met::No) | None => {}
        }
    }
    if fault_on(h, WorkloadFault::NotReady, instance) {
        // A Pod that cannot start says why first; one that runs is not ready, and a rollout
        // waiting for it passes its progress deadline.
        hard.extend(["PodNotReady", "RolloutInProgress", "RolloutStuck"]);
    }
    if !hard.is_empty() {
        hard.extend(soft);
        Hard(hard)
    } else if !soft.is_empty() {
        Soft(soft)
    } else {
        Holds
    }
}

fn exposure(h: &History, obj: &Value, instance: &str) -> Verdict {
    let published = Exposure::of_spec(&obj["spec"]) != Exposure::ClusterIp;
    if published && fault_on(h, WorkloadFault::NotAdmitted, instance) {
        // An Ingress left without an address is one not observed admitted yet (Unknown).
        Soft(vec!["NotAdmitted", "Reconciling"])
    } else {
        Holds
    }
}

/// The aspects' verdicts of one workload, in the kind's order.
pub fn verdicts(h: &History, snap: &Snapshot, kind: Workload, obj: &Value) -> Vec<Verdict> {
    let instance = name(obj);
    let spec = &obj["spec"];
    let image = spec["image"].is_string();
    let has_cluster = |c: &str| snap.clusters.iter().any(|x| x == c);
    match kind {
        // The hostname is judged first, then the image, then the ingress policy it renders.
        Workload::Console => vec![
            if hostname_refused(obj) {
                Hard(vec!["HostnameNotAllowed"])
            } else if !image {
                Hard(vec!["ConsoleImageRequired"])
            } else if spec["image"].as_str().is_some_and(image_refused) {
                Hard(vec!["ImageNotAllowed"])
            } else if policy_refused(obj) {
                Hard(vec!["ExposurePolicyInvalid"])
            } else {
                Holds
            },
            pods(h, snap, instance),
            exposure(h, obj, instance),
        ],
        Workload::PgAdmin => {
            let config = if instance == "p1" {
                // Offers only the Cluster of team-b, which the grant must allow.
                if input(snap, "PgAdminAccess", GRANT).is_some() {
                    Holds
                } else {
                    Hard(vec!["GrantMissing", "NoClusterSelected"])
                }
            } else if has_cluster("c0") || has_cluster("c1") {
                Holds
            } else {
                Hard(vec!["NoClusterSelected"])
            };
            let database = settings_database(h, snap, obj);
            let config = match (config, database.config) {
                (Hard(mut a), Some(b)) => {
                    a.extend(b);
                    Hard(a)
                }
                (_, Some(b)) => Hard(b),
                (config, None) => config,
            };
            let config = match config {
                // The hostname is judged first; the settings database once it is fixed.
                _ if hostname_refused(obj) => Hard(vec!["HostnameNotAllowed"]),
                Hard(mut a) if image_refused(&target_image(obj)) => {
                    a.push("ImageNotAllowed");
                    Hard(a)
                }
                _ if image_refused(&target_image(obj)) => Hard(vec!["ImageNotAllowed"]),
                config => config,
            };
            let pods = match (database.not_applied, database.backup) {
                // Unapplied settings objects hold pgAdmin back whatever its Pods do.
                (true, _) => match pods(h, snap, instance) {
                    Hard(mut a) | Soft(mut a) => {
                        a.push("ConfigDatabaseNotReady");
                        Hard(a)
                    }
                    Holds => Hard(vec!["ConfigDatabaseNotReady"]),
                },
                // A backup held or failed is what WorkloadReady says, whatever the old Pods do.
                (false, Hard(backup)) => Hard(backup),
                (false, Soft(mut backup)) => match pods(h, snap, instance) {
                    Hard(a) => Hard(a.into_iter().chain(backup).collect()),
                    Soft(a) => {
                        backup.extend(a);
                        Soft(backup)
                    }
                    Holds => Soft(backup),
                },
                (false, Holds) => pods(h, snap, instance),
            };
            let mut servers = Vec::new();
            if fault_on(h, WorkloadFault::JobFailed, instance) {
                servers.push("RegistrationFailed");
            }
            if pods != Holds {
                servers.push("PgAdminNotRunning");
            }
            vec![
                config,
                pods,
                exposure(h, obj, instance),
                if servers.is_empty() {
                    Holds
                } else {
                    Soft(servers)
                },
            ]
        }
        Workload::Agent => {
            let cluster = spec["cluster"]["name"].as_str().unwrap_or_default();
            let mut config = Vec::new();
            if !has_cluster(cluster) {
                config.push("ClusterNotFound");
            }
            if input(snap, "ObjectStore", STORE).is_none() {
                config.push("ObjectStoreNotFound");
            }
            if !image {
                config.push("ImageRequired");
            }
            let openshift = spec["servingCertificate"]["provider"] == "openshift";
            let certificate = if openshift && fault_on(h, WorkloadFault::ServiceCaPaused, instance)
            {
                Soft(vec!["ServiceCAPending"])
            } else {
                Holds
            };
            let workload = match (credentials(snap), pods(h, snap, instance)) {
                (Hard(mut a), Soft(b) | Hard(b)) => {
                    a.extend(b);
                    Hard(a)
                }
                (Hard(a), Holds) => Hard(a),
                (_, pods) => pods,
            };
            vec![
                if config.is_empty() {
                    Holds
                } else {
                    Hard(config)
                },
                certificate,
                workload,
            ]
        }
    }
}

/// The Ready reasons the verdicts allow.
pub fn allowed_ready(verdicts: &[Verdict]) -> Vec<&'static str> {
    let mut allowed = Vec::new();
    for v in verdicts {
        match v {
            Hard(reasons) => {
                allowed.extend(reasons);
                return allowed;
            }
            Soft(reasons) => allowed.extend(reasons),
            Holds => {}
        }
    }
    allowed.push("AsExpected");
    allowed
}

/// What an advisory condition (never in Ready) may say: its `(status, reason)`s, `None` for
/// absent.
type Allowed = Vec<Option<(&'static str, &'static str)>>;

/// The advisory conditions the final inputs decide, with what each may say. The verdicts of
/// the aspects say whether the workload runs and whether its configuration holds.
fn advisories(
    h: &History,
    snap: &Snapshot,
    kind: Workload,
    obj: &Value,
    verdicts: &[Verdict],
) -> Vec<(&'static str, Allowed)> {
    let instance = name(obj);
    let spec = &obj["spec"];
    let pods_hold = verdicts.get(1) == Some(&Holds);
    // The refusals the pass stops at before it judges the advisories (the hostname, the
    // image, the console's ingress policy): they keep what the last judging pass said, which
    // describes the children as then applied. A refused policy published nothing to confine.
    if let Some(Hard(config)) = verdicts.first() {
        if kind == Workload::Console && config == &["ExposurePolicyInvalid"] {
            return vec![("ExposureConfined", vec![None])];
        }
        let stops = [
            "HostnameNotAllowed",
            "ImageNotAllowed",
            "ExposurePolicyInvalid",
        ];
        if config.iter().any(|r| stops.contains(r)) {
            return Vec::new();
        }
    }
    match kind {
        // Running (Pods untouched by a fault), the egress policy is judged: open when an extra
        // rule reaches an unnamed destination. Not running, it waits (Unknown).
        Workload::PgAdmin => {
            let rules = spec["egress"]["extraRules"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            let open = rules.iter().any(|r| {
                let to = r["to"].as_array().map(Vec::as_slice).unwrap_or_default();
                to.is_empty()
                    || to
                        .iter()
                        .any(|p| p["ipBlock"]["cidr"].as_str() == Some("10.0.0.0/8"))
            });
            let judged = if open {
                ("False", "PgAdminEgressOpen")
            } else {
                ("True", "AsExpected")
            };
            let mut allowed = vec![Some(judged)];
            if !pods_hold {
                allowed.push(Some(("Unknown", "PgAdminNotRunning")));
            }
            vec![("PgAdminEgressConfined", allowed)]
        }
        // Judged only once the console renders (an image), and the Pods are settled: a fault
        // holding a rollout may keep an old Pod trusting peers (Kept, TrustUnverified).
        Workload::Console if spec["image"].is_string() => {
            let exposure = Exposure::of_spec(spec);
            let from = spec["exposure"]["networkPolicy"]["from"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            // Any policy rendered (the router's namespaces by default for a Route, `from` when
            // given) is judged: a broad peer first, then a policy of someone else admitting
            // every source to the console's Pods.
            let policy = if from.iter().any(broad_peer) {
                ("False", "ExposurePeersBroad")
            } else if input(snap, "NetworkPolicy", ALLOW_ALL).is_some() {
                ("False", "ExposurePolicyBypassed")
            } else {
                ("True", "AsExpected")
            };
            let judged = match exposure {
                Exposure::ClusterIp => None,
                Exposure::Route => Some(policy),
                // No `from`: no policy rendered, any Pod reaches the port.
                Exposure::Ingress if from.is_empty() => Some(("False", "ExposureOpen")),
                Exposure::Ingress => Some(policy),
            };
            let mut confined = vec![judged];
            if !pods_hold {
                confined.push(Some(("False", "ExposurePolicyKept")));
                confined.push(Some(("False", "ExposureTrustUnverified")));
            }
            if exposure != Exposure::ClusterIp && fault_on(h, WorkloadFault::NotAdmitted, instance)
            {
                confined.push(None);
            }

            // The console mirrors the CAs of every Cluster of its namespace (no selector, no
            // instanceCABundleRef): a CA Secret the sim's CloudNativePG left without `ca.crt`
            // or with no certificate in it leaves that Cluster out.
            let bundle = if snap.clusters.iter().any(|c| ca_broken(h, c)) {
                ("False", "InstanceCAMissing")
            } else {
                ("True", "AsExpected")
            };
            vec![
                ("ExposureConfined", confined),
                ("InstanceCABundleComplete", vec![Some(bundle)]),
            ]
        }
        _ => Vec::new(),
    }
}

/// `(status, reason)` of a condition, `None` when absent.
fn said<'a>(obj: &'a Value, type_: &str) -> Option<(&'a str, &'a str)> {
    condition(obj, type_).map(|c| {
        (
            c["status"].as_str().unwrap_or_default(),
            c["reason"].as_str().unwrap_or_default(),
        )
    })
}

/// A refused hostname or a refused ingress policy withdraws what published the workload: no
/// Ingress, Route or HTTPRoute of it, no URL, no published kinds; a refused hostname is stated
/// by ConfigurationValid, ExposureReady and Stalled, paused or not.
fn withdrawn(snap: &Snapshot, kind: Workload, obj: &Value, out: &mut Vec<Violation>) {
    let refused_host = hostname_refused(obj);
    let refused_policy = kind == Workload::Console && policy_refused(obj);
    if !(refused_host || refused_policy) {
        return;
    }
    let mut wrong = Vec::new();
    let owned = snap.exposures.iter().filter(|e| {
        e["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|o| o["kind"] == kind.kind() && o["name"] == name(obj))
    });
    for e in owned {
        wrong.push(format!("{} {} still published", e["kind"], name(e)));
    }
    let status = &obj["status"];
    if !status["url"].is_null() {
        wrong.push(format!("status.url {}", status["url"]));
    }
    if status["publishedExposureKinds"]
        .as_array()
        .is_some_and(|k| !k.is_empty())
    {
        wrong.push(format!(
            "publishedExposureKinds {}",
            status["publishedExposureKinds"]
        ));
    }
    if refused_host {
        for type_ in ["ConfigurationValid", "ExposureReady"] {
            if said(obj, type_) != Some(("False", "HostnameNotAllowed")) {
                wrong.push(format!("{type_} {:?}", said(obj, type_)));
            }
        }
        if said(obj, "Stalled") != Some(("True", "HostnameNotAllowed")) {
            wrong.push(format!("Stalled {:?}", said(obj, "Stalled")));
        }
    }
    for detail in wrong {
        out.push(violation(
            "exposure-withdrawn",
            format!(
                "{} {} (hostname refused: {refused_host}): {detail}",
                kind.kind(),
                name(obj)
            ),
        ));
    }
}

/// A paused workload says so (`Ready=Unknown`, `Progressing=False`, both
/// `ReconciliationPaused`; `Progressing` says `HostnameNotAllowed` while its hostname is
/// refused), and nothing else of its status is judged: the operator does not act on it.
fn paused_says_so(kind: Workload, obj: &Value, out: &mut Vec<Violation>) {
    let progressing = if hostname_refused(obj) {
        ("False", "HostnameNotAllowed")
    } else {
        ("False", "ReconciliationPaused")
    };
    let mut wrong = Vec::new();
    if said(obj, "Ready") != Some(("Unknown", "ReconciliationPaused")) {
        wrong.push(format!("Ready {:?}", said(obj, "Ready")));
    }
    if said(obj, "Progressing") != Some(progressing) {
        wrong.push(format!(
            "Progressing {:?}, expected {progressing:?}",
            said(obj, "Progressing")
        ));
    }
    // Withdrawn while paused: nothing published to confine, but an ingress policy left as it
    // was is said kept (ExposurePolicyKept); nothing else.
    if kind == Workload::Console
        && hostname_refused(obj)
        && !matches!(
            said(obj, "ExposureConfined"),
            None | Some(("False", "ExposurePolicyKept"))
        )
    {
        wrong.push(format!(
            "ExposureConfined {:?} while withdrawn",
            said(obj, "ExposureConfined")
        ));
    }
    for detail in wrong {
        out.push(violation(
            "converges-to-oracle",
            format!("paused {} {}: {detail}", kind.kind(), name(obj)),
        ));
    }
}

/// Every workload converges: Ready says what its final inputs and faults allow, the first
/// failing aspect says it too, and the status is of the current generation.
pub fn workloads_converge(h: &History, snap: &Snapshot) -> Vec<Violation> {
    let mut out = Vec::new();
    for obj in &snap.workloads {
        let Some(kind) = Workload::of_kind(obj["kind"].as_str().unwrap_or_default()) else {
            continue;
        };
        withdrawn(snap, kind, obj, &mut out);
        if paused(obj) {
            paused_says_so(kind, obj, &mut out);
            continue;
        }
        let verdicts = verdicts(h, snap, kind, obj);
        let allowed = allowed_ready(&verdicts);
        let ready = condition(obj, "Ready");
        let reason = ready.and_then(|c| c["reason"].as_str()).unwrap_or("<none>");
        let status = ready.and_then(|c| c["status"].as_str()).unwrap_or("<none>");
        let ready_ok =
            allowed.contains(&reason) && ((reason == "AsExpected") == (status == "True"));
        if !ready_ok {
            out.push(violation(
                "converges-to-oracle",
                format!(
                    "{} {} says Ready {status} {reason}, expected one of {allowed:?} ({verdicts:?})",
                    kind.kind(),
                    name(obj)
                ),
            ));
        }
        for (type_, allowed) in advisories(h, snap, kind, obj, &verdicts) {
            let said = condition(obj, type_).map(|c| {
                (
                    c["status"].as_str().unwrap_or_default(),
                    c["reason"].as_str().unwrap_or_default(),
                )
            });
            if !allowed.contains(&said) {
                out.push(violation(
                    "converges-to-oracle",
                    format!(
                        "{} {} says {type_} {said:?}, expected one of {allowed:?} ({verdicts:?})",
                        kind.kind(),
                        name(obj)
                    ),
                ));
            }
        }
        let observed = obj["status"]["observedGeneration"].as_i64();
        if observed != obj["metadata"]["generation"].as_i64() {
            out.push(violation(
                "converges-to-oracle",
                format!(
                    "{} {} status is of generation {observed:?}",
                    kind.kind(),
                    name(obj)
                ),
            ));
        }
    }
    out
}

/// No Secret value (a user's credential, a generated password, a private key) in a line the
/// operator logged.
pub fn no_secret_in_logs(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    for secret in &h.secret_values {
        if let Some(line) = h.log_lines.iter().find(|l| l.contains(secret.as_str())) {
            let shown: String = line.chars().take(300).collect();
            out.push(violation(
                "no-secret-in-logs",
                format!(
                    "a Secret value ({} characters) logged: {shown}",
                    secret.len()
                ),
            ));
        }
    }
    out
}

/// No Secret value in what any incarnation's caches held when it stopped: not a user's, not a
/// generated one, not the operator's own (its serving keys are kept only as judged on arrival);
/// nor in the kind supervisors' copies of their objects at the end.
pub fn no_secret_in_caches(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    for (i, dump) in h.cache_dumps.iter().enumerate() {
        for secret in &h.secret_values {
            if dump.contains(secret.as_str()) {
                let own = h.own_secret_values.contains(secret);
                out.push(violation(
                    "no-secret-in-caches",
                    format!(
                        "incarnation {}: a cache holds a Secret value ({} characters{})",
                        i + 1,
                        secret.len(),
                        if own { ", the operator's own" } else { "" }
                    ),
                ));
            }
        }
    }
    for copy in &h.supervisor_copies {
        if let Some(secret) = h.secret_values.iter().find(|s| copy.contains(s.as_str())) {
            out.push(violation(
                "no-secret-in-caches",
                format!(
                    "a kind supervisor's copy of an object holds a Secret value ({} characters)",
                    secret.len()
                ),
            ));
        }
    }
    out
}

/// Once settled, whatever the operator holds per object (an actor, a hibernated entry, a
/// restart, a timer, a registration in a reference index) is of an object that still exists.
pub fn nothing_outlives_its_object(h: &History) -> Vec<Violation> {
    h.held
        .iter()
        .filter(|(kind, _, key)| !h.existing.iter().any(|(k, e)| k == kind && e == key))
        .map(|(kind, what, key)| {
            violation(
                "nothing-outlives-its-object",
                format!("a {what} of {kind} {key}, which no longer exists"),
            )
        })
        .collect()
}
