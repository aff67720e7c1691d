//! Generated schedules: what the console, the users and the faults do, and when.

use pgtoolbox_sim::cluster::WorkloadFault;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::kinds::{Exposure, Workload};

/// Requests `r0..r{REQUESTS}`, Clusters `c0..c{CLUSTERS}`.
pub const REQUESTS: usize = 4;
pub const CLUSTERS: usize = 2;

#[derive(Clone, Debug)]
pub enum Step {
    /// A user asks for access until `expires_in` seconds from now (negative: already past).
    Create {
        req: usize,
        expires_in: i64,
        cluster: Option<usize>,
    },
    /// The console approves: the RoleBinding first, then the decision.
    Approve {
        req: usize,
        approver: &'static str,
    },
    /// The console's RoleBinding alone (an approval in flight, or an orphan if none follows).
    Bind {
        req: usize,
    },
    /// A decision recorded in status: `Approved`, `Denied`, `Revoked`.
    Decide {
        req: usize,
        phase: &'static str,
        approver: &'static str,
    },
    /// Someone adds a second subject to the request's RoleBinding.
    Tamper {
        req: usize,
    },
    /// Someone deletes the request's RoleBinding.
    Unbind {
        req: usize,
    },
    /// `expiresAt` moved earlier, to `secs` from now.
    Shorten {
        req: usize,
        secs: i64,
    },
    DeleteRequest {
        req: usize,
    },
    /// Someone annotates the request (a concurrent write: the operator's next status write
    /// with the old resourceVersion gets a real 409).
    Touch {
        req: usize,
    },
    CreateCluster {
        cluster: usize,
    },
    DeleteCluster {
        cluster: usize,
    },
    Fault(Fault),
    /// The operator process dies (state lost, API state kept) and comes back after `down_secs`.
    Crash {
        down_secs: u64,
    },
    Sleep {
        millis: u64,
    },
    /// The clock runs to `offset` seconds around a request's `expiresAt`.
    JumpToExpiry {
        req: usize,
        offset: i64,
    },
    /// A user creates workload `n` of `kind` (an EvidenceAgent of Cluster `cluster`).
    CreateWorkload {
        kind: Workload,
        n: usize,
        image: Option<&'static str>,
        exposure: Exposure,
        cluster: usize,
        openshift: bool,
    },
    DeleteWorkload {
        kind: Workload,
        n: usize,
    },
    /// `spec.image` set (or removed: the operator's default, if any).
    SetImage {
        kind: Workload,
        n: usize,
        image: Option<&'static str>,
    },
    /// `spec.exposure` changed (a console or a PgAdmin).
    SetExposure {
        kind: Workload,
        n: usize,
        exposure: Exposure,
    },
    /// A fault of the simulated cluster on one workload's children (or everyone's), on or off.
    WorkloadFault {
        fault: WorkloadFault,
        target: Option<(Workload, usize)>,
        on: bool,
    },
    /// The sim's CloudNativePG leaves Cluster `c{cluster}`'s CA Secret without `ca.crt`
    /// (`CaKeyMissing`) or with no certificate in it (`CaInvalid`), or restores it.
    ClusterCa {
        cluster: usize,
        fault: WorkloadFault,
        on: bool,
    },
    /// The ObjectStore's credential Secret: created, deleted, rotated, or left without a key.
    Credentials(SecretChange),
    /// The ObjectStore of the Clusters' backups, created or deleted.
    ObjectStore {
        present: bool,
    },
    /// The PgAdminAccess of team-b granting PgAdmin p1 its Cluster, created or deleted.
    Grant {
        present: bool,
    },
    /// The operator's CA Secret is deleted (a rotation: the next operator signs with a new one).
    RotateCa,
    /// The clock runs to `offset` seconds around an EvidenceAgent's certificate renewal.
    JumpToRenewal {
        n: usize,
        offset: i64,
    },
    /// A fault of the leader election (schedules running two replicas, `crate::leader`).
    Leader(crate::leader::LeaderStep),
    /// PgAdmin `n`'s settings database (`spec.configDatabase` on Cluster `c0`), set or removed.
    ConfigDatabase {
        n: usize,
        on: bool,
    },
    /// PgAdmin `n`'s image changed (backed up first when it has a settings database), its
    /// backup Jobs failing from now on when `backup_fails`.
    Upgrade {
        n: usize,
        image: &'static str,
        backup_fails: bool,
    },
    /// PgAdmin `n` annotated to skip the upgrade backup to its current target image.
    SkipBackup {
        n: usize,
    },
    /// Console `n`'s `spec.exposure.networkPolicy.from`: none, or one peer.
    ConsolePeers {
        n: usize,
        from: Option<Peers>,
    },
    /// Someone's NetworkPolicy admitting every source to every Pod of the namespace, created
    /// or deleted (it bypasses the consoles' ingress policies).
    AllowAll {
        present: bool,
    },
    /// PgAdmin `n`'s `spec.egress.extraRules`: none, or one rule to `to`.
    Egress {
        n: usize,
        to: Option<EgressTo>,
    },
    /// The simulated cluster runs an older CloudNativePG (read before the sim starts: its
    /// CRDs are what is installed).
    Cnpg(Cnpg),
    /// Workload `n` (a console or a PgAdmin) given an image in state `image`, then published
    /// under a hostname outside the operator's allowed suffixes, then paused when `pause`.
    RefusedHostname {
        kind: Workload,
        n: usize,
        exposure: Exposure,
        image: ImageState,
        pause: bool,
    },
}

/// What `spec.image` of a workload says, against the operator's allow-list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageState {
    /// Not set: the operator's default (a PgAdmin's), or none (a console's: required).
    Missing,
    Allowed,
    /// From a repository outside `ALLOWED_IMAGE_REPOSITORIES`.
    Refused,
}

impl ImageState {
    pub const ALL: [ImageState; 3] = [Self::Missing, Self::Allowed, Self::Refused];

    pub fn image(self) -> Option<&'static str> {
        match self {
            Self::Missing => None,
            Self::Allowed => Some(IMAGES[0]),
            Self::Refused => Some(REFUSED_IMAGE),
        }
    }
}

/// The CloudNativePG release of a workload schedule's cluster, by what its CRDs serve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cnpg {
    /// 1.31 and later: Database, and DatabaseRole with a generated password (`spec.password`).
    #[default]
    Current,
    /// 1.30: DatabaseRole without `spec.password`.
    NoPasswordGeneration,
    /// 1.25 to 1.29: Database, no DatabaseRole.
    NoDatabaseRoles,
    /// Before 1.25: neither Database nor DatabaseRole.
    NoDatabases,
}

impl Cnpg {
    pub const OLDER: [Cnpg; 3] = [
        Self::NoPasswordGeneration,
        Self::NoDatabaseRoles,
        Self::NoDatabases,
    ];

    /// The release a schedule's cluster runs: the first `Cnpg` step's, else the current one.
    pub fn of(schedule: &[Step]) -> Cnpg {
        schedule
            .iter()
            .find_map(|s| match s {
                Step::Cnpg(c) => Some(*c),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Why a settings database (`spec.configDatabase`) cannot be had on this release (the
    /// spec's ConfigurationValid reason), if it cannot.
    pub fn settings_database_refused(self) -> Option<&'static str> {
        match self {
            Self::Current => None,
            Self::NoPasswordGeneration => Some("PasswordGenerationUnavailable"),
            Self::NoDatabaseRoles => Some("DatabaseRoleAPIUnavailable"),
            Self::NoDatabases => Some("DatabaseAPIUnavailable"),
        }
    }
}

/// Who a console's ingress NetworkPolicy admits (`spec.exposure.networkPolicy.from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peers {
    /// The ingress controller's namespace, by its name label: confined.
    ControllerNamespace,
    /// A /24 of documentation addresses, away from the Pod network: confined.
    NarrowBlock,
    /// The Pod network (`10.244.0.0/16`: the sim's Nodes' podCIDRs, the console Pods'
    /// addresses): broad.
    PodNetwork,
    /// Every namespace (a namespaceSelector that pins nothing): broad.
    AnyNamespace,
    /// A block whose exception lies outside it: the API server refuses the policy.
    ExceptOutside,
}

impl Peers {
    pub const ALL: [Peers; 5] = [
        Self::ControllerNamespace,
        Self::NarrowBlock,
        Self::PodNetwork,
        Self::AnyNamespace,
        Self::ExceptOutside,
    ];

    /// Whether a peer list of this admits (nearly) everyone.
    pub fn broad(self) -> bool {
        matches!(self, Self::PodNetwork | Self::AnyNamespace)
    }
}

/// Where an extra egress rule of a PgAdmin goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EgressTo {
    /// Pods of a named namespace with a label: a named destination.
    NamedPods,
    /// A /24: a named destination.
    NarrowBlock,
    /// 10.0.0.0/8: the whole private range (open).
    WideBlock,
    /// No `to` at all: any address (open).
    Anywhere,
}

impl EgressTo {
    pub const ALL: [EgressTo; 4] = [
        Self::NamedPods,
        Self::NarrowBlock,
        Self::WideBlock,
        Self::Anywhere,
    ];

    /// Whether the rule confines egress to named destinations.
    pub fn confines(self) -> bool {
        matches!(self, Self::NamedPods | Self::NarrowBlock)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretChange {
    Create,
    Delete,
    Rotate,
    DropKey,
}

/// Which kinds a schedule drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// PgAccessRequests, RoleBindings and Clusters on an API server without cluster components.
    Access,
    /// The workload kinds on the simulated cluster (Deployments get Pods, Jobs finish).
    Workloads,
}

#[derive(Clone, Debug)]
pub enum Fault {
    DropWatches,
    /// The next resumed watch answers 410 and the history is compacted (a relist follows).
    Gone,
    Errors {
        pattern: &'static str,
        code: u16,
        count: u32,
    },
    Latency {
        pattern: &'static str,
        millis: u64,
        count: u32,
    },
    /// 403 on `pattern` for `secs`, then allowed again.
    Deny {
        pattern: &'static str,
        secs: u64,
    },
    /// 401 to everything for `secs` (expired credentials).
    Unauthorized {
        secs: u64,
    },
    /// A group not served (404, discovery included) for `secs`: CloudNativePG uninstalled, say.
    Unserved {
        group: &'static str,
        secs: u64,
    },
}

const PATTERNS: &[&str] = &[
    "*:*:*",
    "delete:rbac.authorization.k8s.io/rolebindings:*",
    "patch:pgtoolbox.fyannk.dev/pgaccessrequests:*",
    "list:rbac.authorization.k8s.io/rolebindings:*",
    "watch:*:*",
    "list:pgtoolbox.fyannk.dev/pgaccessrequests:*",
    "patch:rbac.authorization.k8s.io/rolebindings:*",
];

/// Workloads `k0,k1`, `p0,p1`, `e0,e1` of each kind.
pub const WORKLOADS: usize = 2;

const WORKLOAD_PATTERNS: &[&str] = &[
    "*:*:*",
    "patch:pgtoolbox.fyannk.dev/pgadmins:*",
    "patch:pgtoolbox.fyannk.dev/evidenceagents:*",
    "patch:pgtoolbox.fyannk.dev/pgtoolboxconsoles:*",
    "patch:apps/deployments:*",
    "create:secrets:*",
    "patch:secrets:*",
    "delete:batch/jobs:*",
    "watch:*:*",
    "list:secrets:*",
    "get:secrets:*",
    "patch:services:*",
];

/// The repositories the operator allows in workload schedules (`ALLOWED_IMAGE_REPOSITORIES`):
/// every image of [`IMAGES`] and the PgAdmin default, not [`REFUSED_IMAGE`].
pub const ALLOWED_REPOSITORIES: [&str; 2] = ["docker.io", "ghcr.io/pgtoolbox"];
pub const REFUSED_IMAGE: &str = "quay.io/elsewhere/app:1.0";

const IMAGES: [&str; 3] = [
    "docker.io/library/app:1.0",
    "docker.io/library/app:1.1",
    "ghcr.io/pgtoolbox/app:2.0",
];

const FAULTS: [WorkloadFault; 6] = [
    WorkloadFault::ImagePullBackOff,
    WorkloadFault::CrashLoopBackOff,
    WorkloadFault::JobFailed,
    WorkloadFault::NotAdmitted,
    WorkloadFault::ServiceCaPaused,
    WorkloadFault::NotReady,
];

/// The faults of a Cluster's CA Secret.
pub const CA_FAULTS: [WorkloadFault; 2] = [WorkloadFault::CaKeyMissing, WorkloadFault::CaInvalid];

/// Workload schedules (in a hundred) given a late `allow-all` policy, and a late upgrade of a
/// PgAdmin with a settings database whose backup fails: without these, the budget's 80 seeds
/// settled on `ExposurePolicyBypassed` and `UpgradeBackupFailed` once each.
const BYPASS_PERCENT: u32 = 20;
const FAILING_UPGRADE_PERCENT: u32 = 20;
/// Workload schedules on a CloudNativePG older than the settings database's APIs.
const OLDER_CNPG_PERCENT: u32 = 24;
/// Workload schedules given a late refused hostname (with an image state, paused or not) on a
/// console or a PgAdmin, and a late console ingress policy the API server refuses.
const REFUSED_HOSTNAME_PERCENT: u32 = 70;
const REFUSED_POLICY_PERCENT: u32 = 25;

pub struct Generator {
    rng: StdRng,
}

impl Generator {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n)
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.random_range(0..100) < percent
    }

    /// `steps` steps; every request is created first in the order drawn, so most steps act on
    /// something that exists, while some still race a create or follow a delete.
    pub fn schedule(&mut self, steps: usize) -> Vec<Step> {
        self.interleaved(steps, Self::step)
    }

    /// `steps` steps drawn by `step`, a crash at a random point in half of the schedules, and
    /// a sleep of up to 8 s after most steps.
    fn interleaved(&mut self, steps: usize, step: fn(&mut Self, usize) -> Step) -> Vec<Step> {
        let mut out = Vec::with_capacity(steps);
        let crash_at = self.chance(50).then(|| self.below(steps.max(1)));
        for i in 0..steps {
            if Some(i) == crash_at {
                out.push(Step::Crash {
                    down_secs: self.rng.random_range(0..30),
                });
            }
            out.push(step(self, i));
            if self.chance(60) {
                out.push(Step::Sleep {
                    millis: self.rng.random_range(0..8_000),
                });
            }
        }
        out
    }

    fn step(&mut self, i: usize) -> Step {
        let req = self.below(REQUESTS);
        if i < REQUESTS && self.chance(80) {
            return Step::Create {
                req: i,
                expires_in: self.expiry(),
                cluster: self.chance(50).then(|| self.below(CLUSTERS)),
            };
        }
        match self.below(100) {
            0..=7 => Step::Create {
                req,
                expires_in: self.expiry(),
                cluster: self.chance(50).then(|| self.below(CLUSTERS)),
            },
            8..=22 => Step::Approve {
                req,
                approver: if self.chance(10) { "alice" } else { "bob" },
            },
            23..=28 => Step::Bind { req },
            29..=36 => Step::Decide {
                req,
                phase: ["Approved", "Denied", "Revoked"][self.below(3)],
                approver: if self.chance(15) { "alice" } else { "bob" },
            },
            37..=41 => Step::Tamper { req },
            42..=45 => Step::Unbind { req },
            46..=49 => Step::Shorten {
                req,
                secs: self.rng.random_range(-10..120),
            },
            50..=52 => Step::DeleteRequest { req },
            53 => Step::Touch { req },
            54..=58 => Step::CreateCluster {
                cluster: self.below(CLUSTERS),
            },
            59..=61 => Step::DeleteCluster {
                cluster: self.below(CLUSTERS),
            },
            62..=80 => Step::Fault(self.fault()),
            81..=84 => Step::Touch { req },
            85..=92 => Step::JumpToExpiry {
                req,
                offset: self.rng.random_range(-3..4),
            },
            _ => Step::Sleep {
                millis: self.rng.random_range(0..70_000),
            },
        }
    }

    /// A workload schedule: every workload is created first (in a random order), then spec
    /// changes, input changes, workload faults, API faults, renewals and a crash interleave.
    pub fn workload_schedule(&mut self, steps: usize) -> Vec<Step> {
        let mut out = self.interleaved(steps, Self::workload_step);
        // Drawn after the rest, so the steps above stay what each seed drew before these were
        // added: two outcomes a single step rarely leaves standing at the end get a scene of
        // their own in some schedules, late enough that few later steps undo it.
        if self.chance(BYPASS_PERCENT) {
            let at = self.late_index(&out);
            out.insert(at, Step::AllowAll { present: true });
        }
        let upgrading = self.chance(FAILING_UPGRADE_PERCENT);
        if upgrading {
            self.insert_failing_upgrade(&mut out);
        }
        // An older CloudNativePG (it would refuse that upgrade's settings database first), and
        // a PgAdmin asking it for a settings database late.
        if !upgrading && self.chance(OLDER_CNPG_PERCENT) {
            let release = Cnpg::OLDER[self.below(Cnpg::OLDER.len())];
            let n = self.below(WORKLOADS);
            let at = self.late_index(&out);
            out.insert(at, Step::ConfigDatabase { n, on: true });
            out.insert(0, Step::Cnpg(release));
        }
        // Refusals (drawn last, for the same reason): a hostname with every image state, paused
        // or not, and an ingress policy the server refuses.
        if self.chance(REFUSED_HOSTNAME_PERCENT) {
            let step = Step::RefusedHostname {
                kind: [Workload::Console, Workload::PgAdmin][self.below(2)],
                n: self.below(WORKLOADS),
                exposure: [Exposure::Ingress, Exposure::Route][self.below(2)],
                image: ImageState::ALL[self.below(ImageState::ALL.len())],
                pause: self.chance(50),
            };
            let at = self.late_index(&out);
            out.insert(at, step);
        }
        if self.chance(REFUSED_POLICY_PERCENT) {
            let n = self.below(WORKLOADS);
            let scene = [
                Step::SetImage {
                    kind: Workload::Console,
                    n,
                    image: Some(IMAGES[0]),
                },
                Step::SetExposure {
                    kind: Workload::Console,
                    n,
                    exposure: [Exposure::Ingress, Exposure::Route][self.below(2)],
                },
                Step::ConsolePeers {
                    n,
                    from: Some(Peers::ExceptOutside),
                },
            ];
            let at = self.late_index(&out);
            out.splice(at..at, scene);
        }
        out
    }

    /// An index in the second half of `schedule` (after the workloads are created).
    fn late_index(&mut self, schedule: &[Step]) -> usize {
        let half = schedule.len() / 2;
        half + self.below(schedule.len() - half + 1)
    }

    /// A PgAdmin given its settings database, then (once it is applied) an upgrade to an image
    /// other than its current target, with its backup Jobs failing.
    fn insert_failing_upgrade(&mut self, schedule: &mut Vec<Step>) {
        let n = self.below(WORKLOADS);
        let at = self.late_index(schedule);
        let target = schedule[..at]
            .iter()
            .rev()
            .find_map(|step| match step {
                Step::CreateWorkload {
                    kind: Workload::PgAdmin,
                    n: m,
                    image,
                    ..
                }
                | Step::SetImage {
                    kind: Workload::PgAdmin,
                    n: m,
                    image,
                } if *m == n => Some(*image),
                Step::Upgrade { n: m, image, .. } if *m == n => Some(Some(*image)),
                _ => None,
            })
            .flatten();
        let others: Vec<&'static str> = IMAGES.into_iter().filter(|i| Some(*i) != target).collect();
        let image = others[self.below(others.len())];
        let scene = [
            Step::ConfigDatabase { n, on: true },
            // CloudNativePG applies the Database and the role, the password Secret follows.
            Step::Sleep { millis: 20_000 },
            Step::Upgrade {
                n,
                image,
                backup_fails: true,
            },
        ];
        schedule.splice(at..at, scene);
    }

    fn workload(&mut self) -> Workload {
        Workload::ALL[self.below(Workload::ALL.len())]
    }

    fn image(&mut self) -> Option<&'static str> {
        (!self.chance(15)).then(|| IMAGES[self.below(IMAGES.len())])
    }

    fn exposure(&mut self) -> Exposure {
        Exposure::ALL[self.below(Exposure::ALL.len())]
    }

    fn create_workload(&mut self, kind: Workload, n: usize) -> Step {
        Step::CreateWorkload {
            kind,
            n,
            image: self.image(),
            exposure: self.exposure(),
            cluster: self.below(CLUSTERS),
            openshift: self.chance(30),
        }
    }

    fn workload_step(&mut self, i: usize) -> Step {
        let created = Workload::ALL.len() * WORKLOADS;
        if i < created && self.chance(85) {
            let kind = Workload::ALL[i % Workload::ALL.len()];
            return self.create_workload(kind, i / Workload::ALL.len());
        }
        let kind = self.workload();
        let n = self.below(WORKLOADS);
        match self.below(100) {
            0..=5 => self.create_workload(kind, n),
            6..=9 => Step::DeleteWorkload { kind, n },
            10..=17 => Step::SetImage {
                kind,
                n,
                image: self.image(),
            },
            18..=19 => Step::SetExposure {
                kind: [Workload::Console, Workload::PgAdmin][self.below(2)],
                n,
                exposure: self.exposure(),
            },
            20..=21 => Step::ConsolePeers {
                n,
                from: [
                    None,
                    Some(Peers::ControllerNamespace),
                    Some(Peers::NarrowBlock),
                    Some(Peers::PodNetwork),
                    Some(Peers::AnyNamespace),
                ][self.below(5)],
            },
            22..=23 => Step::AllowAll {
                present: self.chance(70),
            },
            24..=37 => Step::WorkloadFault {
                fault: FAULTS[self.below(FAULTS.len())],
                target: (!self.chance(20)).then_some((kind, n)),
                on: self.chance(60),
            },
            // A PgAdmin's settings Database and DatabaseRole left unapplied, or applied again.
            38..=39 | 78..=79 => Step::WorkloadFault {
                fault: WorkloadFault::NotApplied,
                target: Some((Workload::PgAdmin, n)),
                on: self.chance(70),
            },
            40..=47 => Step::Credentials(
                [
                    SecretChange::Create,
                    SecretChange::Delete,
                    SecretChange::Rotate,
                    SecretChange::Rotate,
                    SecretChange::DropKey,
                ][self.below(5)],
            ),
            48..=51 => Step::ObjectStore {
                present: self.chance(60),
            },
            52..=55 => Step::Grant {
                present: self.chance(60),
            },
            56..=59 => Step::CreateCluster {
                cluster: self.below(CLUSTERS),
            },
            60..=61 => Step::DeleteCluster {
                cluster: self.below(CLUSTERS),
            },
            62 => Step::RotateCa,
            63..=67 => Step::JumpToRenewal {
                n,
                offset: self.rng.random_range(-3..4),
            },
            68..=77 => Step::Fault(self.workload_fault_of_api()),
            80..=82 => Step::ClusterCa {
                cluster: self.below(CLUSTERS),
                fault: CA_FAULTS[self.below(CA_FAULTS.len())],
                on: self.chance(60),
            },
            83..=89 => Step::Egress {
                n,
                to: [
                    None,
                    Some(EgressTo::NamedPods),
                    Some(EgressTo::NarrowBlock),
                    Some(EgressTo::WideBlock),
                    Some(EgressTo::Anywhere),
                ][self.below(5)],
            },
            90..=93 => Step::ConfigDatabase {
                n,
                on: self.chance(70),
            },
            94..=95 => Step::SkipBackup { n },
            96..=98 => Step::Upgrade {
                n,
                image: IMAGES[self.below(IMAGES.len())],
                backup_fails: self.chance(50),
            },
            _ => Step::Sleep {
                millis: self.rng.random_range(0..70_000),
            },
        }
    }

    /// An API fault for a workload schedule (its patterns name the workload kinds' paths).
    fn workload_fault_of_api(&mut self) -> Fault {
        let mut fault = self.fault();
        let pattern = WORKLOAD_PATTERNS[self.below(WORKLOAD_PATTERNS.len())];
        match &mut fault {
            Fault::Errors { pattern: p, .. }
            | Fault::Latency { pattern: p, .. }
            | Fault::Deny { pattern: p, .. } => *p = pattern,
            _ => {}
        }
        fault
    }

    fn expiry(&mut self) -> i64 {
        match self.below(10) {
            0 => -5,
            1..=6 => self.rng.random_range(20..240),
            _ => self.rng.random_range(600..7_200),
        }
    }

    fn fault(&mut self) -> Fault {
        let pattern = PATTERNS[self.below(PATTERNS.len())];
        match self.below(8) {
            0 => Fault::DropWatches,
            1 => Fault::Gone,
            2 | 3 => Fault::Errors {
                pattern,
                // No bare 409: a real server answers it to a write only when the object
                // changed meanwhile (the operator then waits for that version); conflicts come
                // from `Touch`, a real concurrent write.
                code: [429, 500, 503][self.below(3)],
                count: self.rng.random_range(1..6),
            },
            4 => Fault::Latency {
                pattern,
                millis: self.rng.random_range(10..2_000),
                count: self.rng.random_range(1..10),
            },
            5 => Fault::Deny {
                pattern,
                secs: self.rng.random_range(1..60),
            },
            6 => Fault::Unauthorized {
                secs: self.rng.random_range(1..30),
            },
            _ => Fault::Unserved {
                group: ["postgresql.cnpg.io", "rbac.authorization.k8s.io"][self.below(2)],
                secs: self.rng.random_range(1..60),
            },
        }
    }
}
