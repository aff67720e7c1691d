//! Who registered which targets (object keys, or namespaces for label selectors), with the
//! `Track` each user asked for: the two-way map a reference index keeps per kind of target.

use std::collections::HashMap;
use std::hash::Hash;

use dashmap::DashMap;
use dashmap::mapref::one::Ref;

use crate::messages::KindKey;

/// Which changes of a referenced object wake a user; each user says what it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Track {
    /// Only appearing and disappearing (and, for a namespace user, a change of labels): a
    /// Cluster named by a request.
    Existence,
    /// Every new resourceVersion (a Secret whose contents a Pod consumes).
    Version,
}

pub struct Registrations<T: Eq + Hash> {
    /// Target → its users and what wakes each.
    users: DashMap<T, HashMap<KindKey, Track>>,
    /// User → what it registered (sorted), and how it tracks it.
    uses: DashMap<KindKey, (Track, Vec<T>)>,
}

impl<T: Eq + Hash + Ord + Clone> Default for Registrations<T> {
    fn default() -> Self {
        Self {
            users: DashMap::new(),
            uses: DashMap::new(),
        }
    }
}

impl<T: Eq + Hash + Ord + Clone> Registrations<T> {
    /// Replaces what `user` registered (empty: nothing). Every pass calls it; most change
    /// nothing, and those return before any write.
    pub fn register(&self, user: &KindKey, targets: Vec<T>, track: Track) {
        let mut targets = targets;
        targets.sort();
        targets.dedup();
        if self
            .uses
            .get(user)
            .is_some_and(|known| known.0 == track && known.1 == targets)
            || (targets.is_empty() && !self.uses.contains_key(user))
        {
            return;
        }
        self.forget(user);
        if targets.is_empty() {
            return;
        }
        for target in &targets {
            self.users
                .entry(target.clone())
                .or_default()
                .insert(user.clone(), track);
        }
        self.uses.insert(user.clone(), (track, targets));
    }

    /// The user is gone: what it registered goes with it.
    pub fn forget(&self, user: &KindKey) {
        let Some((_, (_, targets))) = self.uses.remove(user) else {
            return;
        };
        for target in targets {
            if let Some(mut users) = self.users.get_mut(&target) {
                users.remove(user);
            }
            self.users.remove_if(&target, |_, users| users.is_empty());
        }
    }

    /// The users of one target, with their tracks.
    pub fn users(&self, target: &T) -> Option<Ref<'_, T, HashMap<KindKey, Track>>> {
        self.users.get(target)
    }

    /// Every target with its users.
    pub fn iter(&self) -> dashmap::iter::Iter<'_, T, HashMap<KindKey, Track>> {
        self.users.iter()
    }

    /// Every user with a registration.
    pub fn users_registered(&self) -> Vec<KindKey> {
        self.uses.iter().map(|e| e.key().clone()).collect()
    }

    /// How many users registered something, and how many targets are registered.
    pub fn counts(&self) -> (usize, usize) {
        (self.uses.len(), self.users.len())
    }
}
