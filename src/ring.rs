//! Which member owns an object (issue 30): pure hashing, no I/O. It sits below `messages`,
//! which carries an `Ownership` to the kind supervisors.
//!
//! The key is FNV-1a 64 of `kind/namespace/name`, not of the uid: a member must know whether
//! an object is its own before it has read it (a child or a referenced object names its owner
//! by name only), and the key must stay the same for everything that follows the owner.
//! With [`Placement::Namespace`] the key is the namespace's alone: a share is then a set of
//! namespaces, which an API server offering KEP-5866's `shardSelector` can filter every watch
//! by (the FNV-1a 64 of each of them, see [`Ownership::namespace_ranges`]).

use std::collections::BTreeSet;
use std::hash::Hasher;

/// FNV-1a, 64 bits, of the bytes alone (`Hash` for a `str` would add a terminator).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(bytes);
    hasher.finish()
}

/// The hash an object is placed by.
pub fn object_key(kind: &str, namespace: &str, name: &str) -> u64 {
    fnv1a64(format!("{kind}/{namespace}/{name}").as_bytes())
}

/// What an object's place in the ring is computed from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// `kind/namespace/name`: objects spread evenly whatever namespaces they are in.
    #[default]
    Object,
    /// The namespace: all of a namespace's objects, of every kind, go to one member. Even only
    /// over many namespaces, but a share is a set of namespaces the API server can filter by.
    Namespace,
}

/// The key a namespace is placed by. FNV-1a alone barely moves its top bits between names
/// that differ only in their last characters (`team-1`, `team-2`): mixed, they spread.
pub fn namespace_key(namespace: &str) -> u64 {
    mix(fnv1a64(namespace.as_bytes()))
}

/// Jump consistent hashing (Lamping and Veach): the bucket in `[0, buckets)` of `key`; going
/// from n to n+1 buckets moves about 1/(n+1) of the keys, all of them to the new bucket.
pub fn jump_hash(mut key: u64, buckets: u32) -> u32 {
    let (mut b, mut j): (i64, i64) = (-1, 0);
    while j < i64::from(buckets) {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        // The top 31 bits as a fraction: exact in an f64.
        let fraction = ((key >> 33) + 1) as f64;
        j = ((b + 1) as f64 * (f64::from(1u32 << 31) / fraction)) as i64;
    }
    u32::try_from(b).unwrap_or(0)
}

/// splitmix64's finaliser: spreads a combined key and member hash over 64 bits.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Rendezvous (highest random weight) hashing: the member with the highest weight for `key`.
/// A member leaving moves only its own keys; one joining takes about 1/n from each.
pub fn rendezvous<'a>(key: u64, members: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    members
        .into_iter()
        .map(|member| (mix(key ^ fnv1a64(member.as_bytes())), member))
        // Ties (never seen in practice) go to the smaller name, so every member agrees.
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, member)| member)
}

/// One way of splitting the objects between members, seen from one member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ring {
    /// One replica: everything.
    All,
    /// Nothing yet (a member that has not agreed a view with the others).
    Nothing,
    /// Static sharding (`--total-shards`, `--shard-index`): jump hashing.
    Static { index: u32, total: u32 },
    /// Dynamic membership: rendezvous hashing over the live members.
    Members {
        me: String,
        members: BTreeSet<String>,
    },
}

impl Ring {
    /// Whether every key this ring owns, `other` owns too (`false` may be said of a ring that
    /// in fact adds nothing). Under rendezvous hashing a member keeps or loses keys when
    /// members join, and gains only when one leaves (or it joins itself): the winner among
    /// more members is the winner among fewer, or one of those added.
    pub fn within(&self, other: &Ring) -> bool {
        match (self, other) {
            (_, Self::All) | (Self::Nothing, _) => true,
            // Not a member of its own ring: it owns nothing.
            (Self::Members { me, members }, _) if !members.contains(me) => true,
            (
                Self::Members { me, members },
                Self::Members {
                    me: other_me,
                    members: fewer,
                },
            ) => me == other_me && fewer.contains(me) && members.is_superset(fewer),
            _ => self == other,
        }
    }

    pub fn owns(&self, key: u64) -> bool {
        match self {
            Self::All => true,
            Self::Nothing => false,
            Self::Static { index, total } => *total == 0 || jump_hash(key, *total) == *index,
            Self::Members { me, members } => {
                rendezvous(key, members.iter().map(String::as_str)) == Some(me.as_str())
            }
        }
    }
}

/// The hash a member publishes for the view it has drained to (members in order). The
/// placement is in it (but the default's, so older members agree): members placing objects
/// differently never agree a view, rather than split the objects two ways.
pub fn view_hash(members: &BTreeSet<String>, placement: Placement) -> u64 {
    let mut joined: Vec<&str> = members.iter().map(String::as_str).collect();
    if placement == Placement::Namespace {
        joined.push("placement=namespace");
    }
    fnv1a64(joined.join("\n").as_bytes())
}

/// What a member may write: the objects every ring in it owns. During a hand-off it holds the
/// old ring and the new one together (the intersection), so it never takes an object before
/// the others have let go of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ownership {
    rings: Vec<Ring>,
    placement: Placement,
}

impl Default for Ownership {
    fn default() -> Self {
        Self::single(Ring::All)
    }
}

impl Ownership {
    /// `ring`, placing objects by [`Placement::Object`].
    pub fn single(ring: Ring) -> Self {
        Self::placed(ring, Placement::Object)
    }

    pub fn placed(ring: Ring, placement: Placement) -> Self {
        Self {
            rings: vec![ring],
            placement,
        }
    }

    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Whether every ring holds `key` (an object's key under [`Placement::Object`]).
    pub fn owns(&self, key: u64) -> bool {
        self.rings.iter().all(|ring| ring.owns(key))
    }

    /// Whether this member writes for the object `kind/namespace/name`: its passes, and what
    /// the shared actors write about it (see `shared_writes`).
    pub fn owns_object(&self, kind: &str, namespace: &str, name: &str) -> bool {
        self.is_all()
            || match self.placement {
                Placement::Object => self.owns(object_key(kind, namespace, name)),
                Placement::Namespace => self.owns(namespace_key(namespace)),
            }
    }

    /// The hash ranges `[start, end)` of `namespaces` this share holds, in order: each
    /// namespace's FNV-1a 64 `h` as `[h, h + 1)`, the hash KEP-5866's `shardRange` computes
    /// over `object.metadata.namespace`, so an API server's shard selector keeps of a watch the
    /// objects of these namespaces only. `None` when the share is everything or objects are not
    /// placed by namespace (no range says it).
    pub fn namespace_ranges(&self, namespaces: &[String]) -> Option<Vec<(u128, u128)>> {
        if self.is_all() || self.placement != Placement::Namespace {
            return None;
        }
        let mut hashes: Vec<u128> = namespaces
            .iter()
            .filter(|namespace| self.owns(namespace_key(namespace)))
            .map(|namespace| u128::from(fnv1a64(namespace.as_bytes())))
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        Some(hashes.into_iter().map(|h| (h, h + 1)).collect())
    }

    /// Whether nothing can be owned (a member that has not agreed a view yet).
    pub fn holds_nothing(&self) -> bool {
        self.rings.contains(&Ring::Nothing)
    }

    /// Whether this is one replica owning everything (the default, unchanged behaviour).
    pub fn is_all(&self) -> bool {
        self.rings.iter().all(|ring| *ring == Ring::All)
    }

    /// Also requires `ring` (the first step of a hand-off: objects are only given up).
    pub fn narrowed(&self, ring: Ring) -> Self {
        let mut rings = self.rings.clone();
        rings.push(ring);
        Self {
            rings,
            placement: self.placement,
        }
    }

    /// The newest ring alone (the hand-off's last step: the others have let go).
    pub fn settled(&self) -> Self {
        Self {
            rings: self.rings.last().cloned().into_iter().collect(),
            placement: self.placement,
        }
    }

    pub fn rings(&self) -> &[Ring] {
        &self.rings
    }

    /// Whether every object this share holds, `other` holds too (judged on the rings: `false`
    /// may be said of a share that in fact adds nothing). A share that is not within the one
    /// before it may hold objects a member did not keep.
    pub fn within(&self, other: &Ownership) -> bool {
        if other.is_all() || self.holds_nothing() {
            return true;
        }
        if self.placement != other.placement {
            return false;
        }
        // Each of `other`'s rings holds some ring of this share whole (an intersection is
        // within each ring it holds).
        other
            .rings
            .iter()
            .all(|theirs| self.rings.iter().any(|ours| ours.within(theirs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn keys() -> impl Iterator<Item = u64> {
        (0..10_000).map(|i| object_key("PgAdmin", "ns", &format!("obj-{i}")))
    }

    #[test]
    fn a_drain_is_within_the_share_before_it_and_an_adoption_only_after_a_leave_is_not() {
        let before = Ownership::single(Ring::Members {
            me: "a".into(),
            members: members(&["a", "b"]),
        });
        let after = Ring::Members {
            me: "a".into(),
            members: members(&["a", "b", "c"]),
        };
        let draining = before.narrowed(after.clone());
        assert!(draining.within(&before));
        let settled = draining.settled();
        // A member joining only takes objects away from the others.
        assert!(settled.within(&draining));
        assert!(settled.within(&before));
        // One leaving gives them objects.
        let left = Ownership::single(Ring::Members {
            me: "a".into(),
            members: members(&["a"]),
        });
        assert!(!left.within(&before));
        assert!(before.within(&left));
        let other_me = Ownership::single(Ring::Members {
            me: "b".into(),
            members: members(&["a", "b", "c"]),
        });
        assert!(!other_me.within(&before));
        // Seen before its own Lease was: it owned nothing, and gains by joining.
        let unseen = Ownership::single(Ring::Members {
            me: "c".into(),
            members: members(&["a", "b"]),
        });
        let joined = Ownership::single(Ring::Members {
            me: "c".into(),
            members: members(&["a", "b", "c"]),
        });
        assert!(unseen.within(&Ownership::single(Ring::Nothing)));
        assert!(!joined.within(&unseen));
        let (static_0, static_1) = (
            Ownership::single(Ring::Static { index: 0, total: 2 }),
            Ownership::single(Ring::Static { index: 1, total: 2 }),
        );
        assert!(static_0.within(&static_0) && !static_0.within(&static_1));
        assert!(settled.within(&Ownership::default()));
        assert!(!Ownership::default().within(&settled));
        assert!(Ownership::single(Ring::Nothing).within(&settled));
        assert!(!settled.within(&Ownership::single(Ring::Nothing)));
    }

    #[test]
    fn fnv1a64_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn jump_hash_matches_the_reference_and_moves_only_to_the_new_bucket() {
        // Values of the paper's C++ implementation.
        assert_eq!(jump_hash(1, 1), 0);
        assert_eq!(jump_hash(0xdead_beef, 1), 0);
        let (mut moved, total) = (0, 10_000);
        for key in keys() {
            let (before, after) = (jump_hash(key, 4), jump_hash(key, 5));
            assert!(before < 4 && after < 5);
            if before != after {
                assert_eq!(after, 4, "a key moves only to the new bucket");
                moved += 1;
            }
        }
        // About 1/5 moves.
        assert!((1_500..2_500).contains(&moved), "moved {moved} of {total}");
    }

    #[test]
    fn every_object_has_exactly_one_owner_in_either_mode() {
        let three = members(&["a", "b", "c"]);
        for key in keys() {
            let members_owning = three
                .iter()
                .filter(|me| {
                    Ring::Members {
                        me: me.to_string(),
                        members: three.clone(),
                    }
                    .owns(key)
                })
                .count();
            assert_eq!(members_owning, 1);
            let static_owning = (0..3)
                .filter(|index| {
                    Ring::Static {
                        index: *index,
                        total: 3,
                    }
                    .owns(key)
                })
                .count();
            assert_eq!(static_owning, 1);
        }
    }

    #[test]
    fn a_member_joining_takes_about_one_nth_and_one_leaving_moves_only_its_own() {
        let before = members(&["a", "b", "c"]);
        let after = members(&["a", "b", "c", "d"]);
        let owner = |m: &BTreeSet<String>, key| {
            rendezvous(key, m.iter().map(String::as_str)).map(str::to_owned)
        };
        let mut moved = 0;
        for key in keys() {
            let (was, is) = (owner(&before, key), owner(&after, key));
            if was != is {
                assert_eq!(is.as_deref(), Some("d"), "only the newcomer gains");
                moved += 1;
            }
        }
        assert!((2_000..3_000).contains(&moved), "moved {moved} of 10000");
        let shares: Vec<usize> = before
            .iter()
            .map(|m| {
                keys()
                    .filter(|k| owner(&before, *k).as_deref() == Some(m))
                    .count()
            })
            .collect();
        assert!(
            shares.iter().all(|s| (2_900..3_800).contains(s)),
            "{shares:?}"
        );
    }

    fn placed(me: &str, all: &[&str]) -> Ownership {
        Ownership::placed(
            Ring::Members {
                me: me.into(),
                members: members(all),
            },
            Placement::Namespace,
        )
    }

    #[test]
    fn placed_by_namespace_a_namespace_has_one_owner_for_every_object_in_it() {
        let all = ["a", "b", "c"];
        let mut shares = [0; 3];
        for n in 0..600 {
            // Names that differ only at the end, as namespaces so often do.
            let namespace = format!("team-{n}");
            let owners: Vec<usize> = (0..3)
                .filter(|i| placed(all[*i], &all).owns_object("PgAdmin", &namespace, "x"))
                .collect();
            assert_eq!(owners.len(), 1, "{namespace}: {owners:?}");
            shares[owners[0]] += 1;
            let owner = placed(all[owners[0]], &all);
            // Every kind and name in it follows.
            assert!(owner.owns_object("PgAccessRequest", &namespace, "other"));
        }
        assert!(shares.iter().all(|s| (150..250).contains(s)), "{shares:?}");
        // Static shards split the namespaces too.
        let mut shares = [0; 3];
        for n in 0..600 {
            let namespace = format!("team-{n}");
            let owning: Vec<u32> = (0..3)
                .filter(|index| {
                    Ownership::placed(
                        Ring::Static {
                            index: *index,
                            total: 3,
                        },
                        Placement::Namespace,
                    )
                    .owns_object("PgAdmin", &namespace, "x")
                })
                .collect();
            assert_eq!(owning.len(), 1);
            shares[owning[0] as usize] += 1;
        }
        assert!(shares.iter().all(|s| (150..250).contains(s)), "{shares:?}");
    }

    #[test]
    fn a_shares_namespace_ranges_hold_exactly_the_namespaces_it_owns() {
        let all = ["a", "b", "c", "d"];
        let namespaces: Vec<String> = (0..300).map(|n| format!("ns-{n}")).collect();
        let in_ranges = |ranges: &[(u128, u128)], namespace: &str| {
            let hash = u128::from(fnv1a64(namespace.as_bytes()));
            ranges
                .iter()
                .any(|(start, end)| (*start..*end).contains(&hash))
        };
        let shares: Vec<Vec<(u128, u128)>> = all
            .iter()
            .map(|me| {
                placed(me, &all)
                    .namespace_ranges(&namespaces)
                    .unwrap_or_default()
            })
            .collect();
        for (me, ranges) in all.iter().zip(&shares) {
            assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "in order");
            let share = placed(me, &all);
            for namespace in &namespaces {
                assert_eq!(
                    in_ranges(ranges, namespace),
                    share.owns_object("Pod", namespace, "p"),
                    "{me} {namespace}"
                );
            }
        }
        // Together, every namespace once.
        assert_eq!(shares.iter().map(Vec::len).sum::<usize>(), namespaces.len());
        // In hand-off, the intersection's.
        let narrowed = placed("a", &all).narrowed(Ring::Members {
            me: "a".into(),
            members: members(&["a", "b", "c", "d", "e"]),
        });
        let ranges = narrowed.namespace_ranges(&namespaces).unwrap_or_default();
        for namespace in &namespaces {
            assert_eq!(
                in_ranges(&ranges, namespace),
                narrowed.owns_object("Pod", namespace, "p")
            );
        }
        // Nothing to say for one replica or objects placed by object.
        assert_eq!(Ownership::default().namespace_ranges(&namespaces), None);
        assert_eq!(
            Ownership::single(Ring::Static { index: 0, total: 2 }).namespace_ranges(&namespaces),
            None
        );
        assert_eq!(
            Ownership::placed(Ring::Nothing, Placement::Namespace).namespace_ranges(&namespaces),
            Some(Vec::new())
        );
    }

    #[test]
    fn shares_placed_differently_are_never_within_each_other() {
        let by_object = Ownership::single(Ring::Members {
            me: "a".into(),
            members: members(&["a", "b"]),
        });
        let by_namespace = placed("a", &["a", "b"]);
        assert!(!by_namespace.within(&by_object) && !by_object.within(&by_namespace));
        assert!(by_namespace.within(&Ownership::default()));
        assert_ne!(
            view_hash(&members(&["a", "b"]), Placement::Object),
            view_hash(&members(&["a", "b"]), Placement::Namespace)
        );
        // The default placement's hash is the one older members publish.
        assert_eq!(
            view_hash(&members(&["a", "b"]), Placement::Object),
            fnv1a64(b"a\nb")
        );
    }

    #[test]
    fn an_ownership_in_hand_off_owns_the_intersection_and_settles_on_the_new_ring() {
        let old = Ring::Members {
            me: "a".into(),
            members: members(&["a", "b"]),
        };
        let new = Ring::Members {
            me: "a".into(),
            members: members(&["a", "b", "c"]),
        };
        let held = Ownership::single(old.clone()).narrowed(new.clone());
        for key in keys() {
            assert_eq!(held.owns(key), old.owns(key) && new.owns(key));
        }
        assert_eq!(held.settled(), Ownership::single(new));
        assert!(Ownership::default().is_all());
        assert!(!Ownership::single(Ring::Nothing).owns(1));
    }
}
