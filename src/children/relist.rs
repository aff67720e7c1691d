//! The one relist diff: a watch that restarts (a dropped stream, a `410 Gone`) lists everything
//! again; whatever it knew in its scope and did not list again was deleted meanwhile.

use std::collections::HashSet;
use std::hash::Hash;

/// Tracks one watch's relist between `Init` and `InitDone`.
#[derive(Debug)]
pub struct Relist<K> {
    listing: Option<HashSet<K>>,
}

impl<K> Default for Relist<K> {
    fn default() -> Self {
        Self { listing: None }
    }
}

impl<K: Eq + Hash + Ord + Clone> Relist<K> {
    /// `Init`: a full list follows.
    pub fn start(&mut self) {
        self.listing = Some(HashSet::new());
    }

    /// `InitApply`: `key` is part of the new list (ignored outside a relist).
    pub fn listed(&mut self, key: K) {
        if let Some(listing) = &mut self.listing {
            listing.insert(key);
        }
    }

    /// `InitDone`: of the keys the watch knew (`known`, already narrowed to its scope), those
    /// not listed again, sorted: `known` comes from hash maps, whose order changes from one
    /// run to the next, and the callers act on each key in turn (a seeded run must replay).
    pub fn finish<'a>(&mut self, known: impl IntoIterator<Item = &'a K>) -> Vec<K>
    where
        K: 'a,
    {
        let listed = self.listing.take().unwrap_or_default();
        let mut gone: Vec<K> = known
            .into_iter()
            .filter(|key| !listed.contains(*key))
            .cloned()
            .collect();
        gone.sort();
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_known_but_not_listed_again_are_gone() {
        let mut relist = Relist::default();
        relist.start();
        relist.listed("b");
        relist.listed("c");
        let gone = relist.finish(&["d", "b", "a"]);
        assert_eq!(gone, vec!["a", "d"]);
        // A finished relist forgets what it listed: the next one starts empty.
        relist.start();
        assert_eq!(relist.finish(&["b"]), vec!["b"]);
    }

    #[test]
    fn nothing_is_kept_between_relists() {
        let mut relist = Relist::default();
        relist.listed(1);
        relist.start();
        assert_eq!(relist.finish(&[1, 2]), vec![1, 2]);
    }
}
