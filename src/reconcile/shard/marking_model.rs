//! The rule for what the shared actors write with several members: NamespaceNotWatched (the
//! condition and its Event) regards one object, so the object's owner writes it
//! ([`Ownership::owns_object`]), at start and after every change of its share. Checked here
//! through joins and crashes run by [`Handshake`]: no object is held by two members at once,
//! and each is marked, with its one Event, exactly once.

use std::collections::BTreeMap;

use super::handshake::{Handshake, Peer, Step};
use crate::ring::{Ownership, Placement, Ring};

const KINDS: [&str; 3] = ["PgAdmin", "PgToolBoxConsole", "EvidenceAgent"];

fn objects(prefix: &str) -> Vec<(&'static str, String)> {
    (0..40)
        .flat_map(|i| KINDS.map(|kind| (kind, format!("{prefix}-{i}"))))
        .collect()
}

/// The API server's side: which objects say NamespaceNotWatched, who wrote each, and the
/// Events recorded.
#[derive(Default)]
struct Server {
    marked: BTreeMap<(&'static str, String), String>,
    events: usize,
}

struct Member {
    handshake: Handshake,
    held: Ownership,
    published: Option<u64>,
}

/// Members in lockstep; each applies a share by marking what it holds (as `NotWatchedMarker`
/// does: an object already marked is left unchanged, with no Event).
struct World {
    members: BTreeMap<String, Member>,
    objects: Vec<(&'static str, String)>,
    server: Server,
}

impl World {
    fn new() -> Self {
        Self {
            members: BTreeMap::new(),
            objects: objects("early"),
            server: Server::default(),
        }
    }

    fn join(&mut self, me: &str) {
        let member = Member {
            handshake: Handshake::new(me, Placement::Object),
            held: Ownership::single(Ring::Nothing),
            published: None,
        };
        self.members.insert(me.into(), member);
    }

    fn holders(&self, kind: &str, name: &str) -> usize {
        self.members
            .values()
            .filter(|m| m.held.owns_object(kind, "team-b", name))
            .count()
    }

    fn apply(&mut self, me: &str, ownership: Ownership) {
        if let Some(member) = self.members.get_mut(me) {
            member.held = ownership.clone();
        }
        for (kind, name) in &self.objects {
            assert!(self.holders(kind, name) <= 1, "{kind}/{name} held twice");
            if ownership.owns_object(kind, "team-b", name)
                && !self.server.marked.contains_key(&(*kind, name.clone()))
            {
                self.server.marked.insert((kind, name.clone()), me.into());
                self.server.events += 1;
            }
        }
    }

    /// Runs rounds until no member has anything left to do.
    fn settle(&mut self) {
        for _ in 0..20 {
            let mut moved = false;
            let names: Vec<String> = self.members.keys().cloned().collect();
            for me in names {
                let live: Vec<Peer> = self
                    .members
                    .iter()
                    .map(|(identity, m)| Peer {
                        identity: identity.clone(),
                        view: m.published,
                    })
                    .collect();
                let Some(member) = self.members.get_mut(&me) else {
                    continue;
                };
                match member.handshake.observe(&live) {
                    Step::Drain { ownership, publish } => {
                        self.apply(&me, ownership);
                        if let Some(member) = self.members.get_mut(&me) {
                            member.published = Some(publish);
                        }
                        moved = true;
                    }
                    Step::Adopt(ownership) => {
                        self.apply(&me, ownership);
                        moved = true;
                    }
                    Step::Hold => {}
                }
            }
            if !moved {
                return;
            }
        }
        panic!("the members did not settle");
    }

    /// Every object marked, once, by the member whose share held it.
    fn assert_marked_once(&self) {
        for (kind, name) in &self.objects {
            assert!(
                self.server.marked.contains_key(&(*kind, name.clone())),
                "{kind}/{name} never marked"
            );
        }
        assert_eq!(
            self.server.events,
            self.objects.len(),
            "one Event per object"
        );
    }

    /// Each object's one holder among the settled members.
    fn assert_one_holder_each(&self) {
        for (kind, name) in &self.objects {
            assert_eq!(self.holders(kind, name), 1, "{kind}/{name}");
        }
    }
}

#[test]
fn each_object_of_a_dropped_namespace_has_one_marker_in_every_mode() {
    let objects = objects("o");
    for total in 1..=5u32 {
        for (kind, name) in &objects {
            let statics = (0..total)
                .filter(|index| {
                    Ownership::single(Ring::Static {
                        index: *index,
                        total,
                    })
                    .owns_object(kind, "team-b", name)
                })
                .count();
            assert_eq!(statics, 1, "{kind}/{name} of {total} static shards");
        }
    }
    let single = Ownership::default();
    assert!(
        objects
            .iter()
            .all(|(k, n)| single.owns_object(k, "team-b", n))
    );
    let joining = Ownership::single(Ring::Nothing);
    assert!(joining.holds_nothing() && !single.holds_nothing());
    assert!(
        objects
            .iter()
            .all(|(k, n)| !joining.owns_object(k, "team-b", n))
    );
}

#[test]
fn members_starting_together_mark_each_object_once() {
    let mut world = World::new();
    for me in ["a", "b", "c"] {
        world.join(me);
    }
    world.settle();
    world.assert_one_holder_each();
    world.assert_marked_once();
    let writers: std::collections::BTreeSet<&String> = world.server.marked.values().collect();
    assert_eq!(writers.len(), 3, "each member marked its own share");
}

#[test]
fn a_hand_off_neither_drops_nor_repeats_a_mark() {
    let mut world = World::new();
    world.join("a");
    world.settle();
    for me in ["b", "c"] {
        world.join(me);
    }
    world.settle();
    world.assert_marked_once();
    // Objects nobody marked yet (created since, or of a member that crashed before marking)
    // are marked at the next change of share, by their new owner.
    world.objects.extend(objects("late"));
    world.members.remove("c");
    world.settle();
    world.assert_one_holder_each();
    world.assert_marked_once();
    for (key, writer) in &world.server.marked {
        if key.1.starts_with("late") {
            assert_ne!(writer, "c", "{key:?}");
        }
    }
    world.join("d");
    world.settle();
    world.assert_one_holder_each();
    world.assert_marked_once();
}
