//! Generated schedules: what the console, the users and the faults do, and when.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

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
        let mut out = Vec::with_capacity(steps);
        let crash_at = self.chance(50).then(|| self.below(steps.max(1)));
        for i in 0..steps {
            if Some(i) == crash_at {
                out.push(Step::Crash {
                    down_secs: self.rng.random_range(0..30),
                });
            }
            out.push(self.step(i));
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
