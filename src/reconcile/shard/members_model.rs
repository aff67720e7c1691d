//! A seeded model of membership schedules (joins, leaves, crashes, partitions, Lease read
//! latency, clock-rate skew) run through [`Handshake`] in ticks of 100 ms, checking: at most
//! one writer per object at any tick; after the churn, every object has exactly one owner;
//! no object goes without an owner for longer than the Lease's duration plus the hand-off's
//! own steps (so its timers fire at most that late).

use std::collections::{BTreeMap, HashMap};

use super::handshake::{Handshake, Peer, Step};
use crate::ring::{Ownership, Placement, Ring};

const LEASE: u64 = 150; // 15 s
const DEADLINE: u64 = 100; // 10 s
const PERIOD: u64 = 20; // 2 s between loops
const OBJECTS: usize = 120;
const TICKS: u64 = 4_000;
const QUIET: u64 = 1_500; // no churn in the last 150 s

/// The objects as `(namespace, name)`: placed by namespace, each in its own namespace (so
/// they spread over the buckets); placed by object, all in one.
fn objects(placement: Placement) -> Vec<(String, String)> {
    (0..OBJECTS)
        .map(|i| match placement {
            Placement::Object => ("ns".to_owned(), format!("o{i}")),
            Placement::Namespace => (format!("ns{i}"), "o".to_owned()),
        })
        .collect()
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A Lease on the server: the view it shows and a version bumped by every write.
#[derive(Clone)]
struct LeaseRecord {
    view: Option<u64>,
    version: u64,
}

enum Phase {
    /// Reads the Leases at `at`.
    Read { at: u64 },
    /// Acts at `at` on what it read (latency in between).
    Act {
        at: u64,
        read: BTreeMap<String, LeaseRecord>,
    },
    /// Its lost objects' actors finish at `at`; then it publishes.
    Draining {
        at: u64,
        next: Ownership,
        publish: u64,
    },
}

struct Member {
    id: String,
    handshake: Handshake,
    writing: Ownership,
    /// `writing` applied to the model's keys (recomputed when it changes).
    owned: Vec<bool>,
    phase: Phase,
    /// Last successful renewal; past `DEADLINE` without one the member stops.
    renewed: u64,
    /// Per peer: the version last seen and the tick (on our own clock) it changed.
    seen: HashMap<String, (u64, f64)>,
    /// Our clock's rate against true time.
    rate: f64,
    partitioned_until: u64,
    alive: bool,
}

impl Member {
    fn new(id: String, now: u64, rng: &mut Rng, placement: Placement) -> Self {
        Self {
            id: id.clone(),
            handshake: Handshake::new(id, placement),
            writing: Ownership::placed(Ring::Nothing, placement),
            owned: Vec::new(),
            phase: Phase::Read { at: now },
            renewed: now,
            seen: HashMap::new(),
            rate: 0.9 + (rng.below(21) as f64) / 100.0,
            partitioned_until: 0,
            alive: true,
        }
    }

    fn stop(&mut self) {
        self.alive = false;
        self.write(Ownership::placed(Ring::Nothing, self.writing.placement()));
    }

    fn write(&mut self, ownership: Ownership) {
        self.owned = objects(ownership.placement())
            .iter()
            .map(|(namespace, name)| ownership.owns_object("PgAdmin", namespace, name))
            .collect();
        self.writing = ownership;
    }

    fn live_peers(&mut self, now: u64, read: &BTreeMap<String, LeaseRecord>) -> Vec<Peer> {
        let local = now as f64 * self.rate;
        read.iter()
            .filter(|(id, lease)| {
                let entry = self
                    .seen
                    .entry(id.to_string())
                    .or_insert((lease.version, local));
                if entry.0 != lease.version {
                    *entry = (lease.version, local);
                }
                **id == self.id || local - entry.1 <= LEASE as f64
            })
            .map(|(id, lease)| Peer {
                identity: id.clone(),
                view: lease.view,
            })
            .collect()
    }

    fn tick(&mut self, now: u64, leases: &mut BTreeMap<String, LeaseRecord>, rng: &mut Rng) {
        if !self.alive {
            return;
        }
        if now.saturating_sub(self.renewed) > DEADLINE {
            // Lost its Lease: stops before anyone may count it expired.
            self.stop();
            return;
        }
        let reachable = now >= self.partitioned_until;
        match std::mem::replace(&mut self.phase, Phase::Read { at: u64::MAX }) {
            Phase::Read { at } if at <= now => {
                if reachable {
                    // Renew, then read (the renewal is part of the same loop).
                    let own = leases.entry(self.id.clone()).or_insert(LeaseRecord {
                        view: None,
                        version: 0,
                    });
                    own.version += 1;
                    self.renewed = now;
                    self.phase = Phase::Act {
                        at: now + rng.below(6),
                        read: leases.clone(),
                    };
                } else {
                    self.phase = Phase::Read { at: now + PERIOD };
                }
            }
            Phase::Act { at, read } if at <= now => {
                let live = self.live_peers(now, &read);
                match self.handshake.observe(&live) {
                    Step::Drain { ownership, publish } => {
                        self.phase = Phase::Draining {
                            at: now + rng.below(12),
                            next: ownership,
                            publish,
                        };
                    }
                    Step::Adopt(ownership) => {
                        self.write(ownership);
                        self.phase = Phase::Read { at: now + PERIOD };
                    }
                    Step::Hold => self.phase = Phase::Read { at: now + PERIOD },
                }
            }
            Phase::Draining { at, next, publish } if at <= now => {
                self.write(next);
                if reachable && let Some(own) = leases.get_mut(&self.id) {
                    own.view = Some(publish);
                    own.version += 1;
                    self.renewed = now;
                    self.phase = Phase::Read { at: now + 1 };
                } else {
                    // Publication failed: drained, but the Lease does not show it yet.
                    self.phase = Phase::Draining {
                        at: now + PERIOD,
                        next: self.writing.clone(),
                        publish,
                    };
                }
            }
            other => self.phase = other,
        }
    }
}

fn run(seed: u64, placement: Placement) {
    let mut rng = Rng(seed);
    let mut leases: BTreeMap<String, LeaseRecord> = BTreeMap::new();
    let mut members: Vec<Member> = Vec::new();
    let first = 1 + rng.below(3);
    for n in 0..first {
        members.push(Member::new(format!("m{n}"), 0, &mut rng, placement));
    }
    let mut next_id = first;
    let mut unowned_since: Vec<Option<u64>> = vec![Some(0); OBJECTS];
    // Expiry (the Lease's duration measured on a slow clock), a partition's deadline, the
    // loops and the drain: how late one event may make a moved object's timers.
    let bound = (LEASE as f64 / 0.9) as u64 + DEADLINE + 4 * (PERIOD + 6 + 12);
    let mut events: Vec<u64> = Vec::new();
    for now in 0..TICKS {
        let churn = now < TICKS - QUIET && rng.below(200) == 0;
        let alive: Vec<usize> = (0..members.len()).filter(|i| members[*i].alive).collect();
        if churn {
            events.push(now);
            match rng.below(4) {
                0 if alive.len() < 5 => {
                    members.push(Member::new(format!("m{next_id}"), now, &mut rng, placement));
                    next_id += 1;
                }
                1 if alive.len() > 1 => {
                    // A crash: stops at once, its Lease left to expire.
                    members[alive[rng.below(alive.len() as u64) as usize]].stop();
                }
                2 if alive.len() > 1 => {
                    // A graceful leave: stops and deletes its Lease.
                    let gone = alive[rng.below(alive.len() as u64) as usize];
                    members[gone].stop();
                    leases.remove(&members[gone].id);
                }
                3 if !alive.is_empty() => {
                    let cut = alive[rng.below(alive.len() as u64) as usize];
                    members[cut].partitioned_until = now + 30 + rng.below(150);
                }
                _ => {}
            }
        }
        // Keep at least one member: a replacement starts when the last one went.
        if members.iter().all(|m| !m.alive) {
            members.push(Member::new(format!("m{next_id}"), now, &mut rng, placement));
            next_id += 1;
        }
        for member in &mut members {
            member.tick(now, &mut leases, &mut rng);
        }
        for (i, since_slot) in unowned_since.iter_mut().enumerate() {
            let writers = members
                .iter()
                .filter(|m| m.alive && m.owned.get(i) == Some(&true))
                .count();
            assert!(writers <= 1, "seed {seed} tick {now}: {writers} writers");
            match (writers, *since_slot) {
                (0, None) => *since_slot = Some(now),
                (1, Some(since)) => {
                    // Events overlapping the gap each add their own delay.
                    let overlapping = events
                        .iter()
                        .filter(|at| (since.saturating_sub(bound)..=now).contains(*at))
                        .count()
                        .max(1) as u64;
                    assert!(
                        since == 0 || now - since <= bound * overlapping,
                        "seed {seed}: object {i} had no owner for {} ticks",
                        now - since
                    );
                    *since_slot = None;
                }
                _ => {}
            }
        }
    }
    for (i, since) in unowned_since.iter().enumerate() {
        assert!(
            since.is_none(),
            "seed {seed}: object {i} has no owner at the end"
        );
    }
}

#[test]
fn members_model_keeps_one_writer_per_object_over_100_seeded_schedules() {
    for seed in 0..100 {
        run(seed, Placement::Object);
    }
}

#[test]
fn members_model_keeps_one_writer_per_namespace_placed_object_over_100_seeded_schedules() {
    for seed in 0..100 {
        run(seed, Placement::Namespace);
    }
}
