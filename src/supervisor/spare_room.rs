//! Hash tables and deques keep the room a burst made them grow into: a cold start has every
//! object's actor live at once, then they hibernate; a member that hands half its objects off
//! keeps tables sized for all of them. Once such a collection is less than half full, the room
//! goes back to the allocator (BENCHMARKS.md, "What every member holds").

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use dashmap::DashMap;

/// Below this many slots a collection is left as it is (not worth a reallocation).
const FLOOR: usize = 64;

fn sparse(len: usize, capacity: usize) -> bool {
    capacity > FLOOR && capacity > 2 * len
}

pub(super) trait GiveBackRoom {
    /// Shrinks to what is held when less than half of the room is used.
    fn give_back_room(&mut self);
}

impl<K: Eq + Hash, V, S: BuildHasher> GiveBackRoom for HashMap<K, V, S> {
    fn give_back_room(&mut self) {
        if sparse(self.len(), self.capacity()) {
            self.shrink_to_fit();
        }
    }
}

impl<K: Eq + Hash, S: BuildHasher> GiveBackRoom for HashSet<K, S> {
    fn give_back_room(&mut self) {
        if sparse(self.len(), self.capacity()) {
            self.shrink_to_fit();
        }
    }
}

impl<T> GiveBackRoom for VecDeque<T> {
    fn give_back_room(&mut self) {
        if sparse(self.len(), self.capacity()) {
            self.shrink_to_fit();
        }
    }
}

/// A shared map (the kind's registry of live actors): each of its shards is locked in turn.
impl<K: Eq + Hash, V, S: BuildHasher + Clone> GiveBackRoom for Arc<DashMap<K, V, S>> {
    fn give_back_room(&mut self) {
        if sparse(self.len(), self.capacity()) {
            self.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_goes_back_once_less_than_half_is_used_and_not_before() {
        let mut map: HashMap<u32, u32> = (0..10_000).map(|i| (i, i)).collect();
        let mut idle: VecDeque<u32> = (0..10_000).collect();
        let grown = (map.capacity(), idle.capacity());
        map.retain(|k, _| *k < 8_000);
        idle.truncate(8_000);
        map.give_back_room();
        idle.give_back_room();
        // More than half used: kept (a table's reported room moves with its deleted slots).
        assert!(map.capacity() > 10_000, "{} of {}", map.capacity(), grown.0);
        assert_eq!(idle.capacity(), grown.1);
        map.retain(|k, _| *k < 100);
        idle.clear();
        map.give_back_room();
        idle.give_back_room();
        assert!(map.capacity() < 1_000, "{}", map.capacity());
        assert_eq!(idle.capacity(), 0);
        assert_eq!(map.len(), 100);
        let mut dash: Arc<DashMap<u32, u32>> = Arc::new((0..10_000).map(|i| (i, i)).collect());
        dash.retain(|k, _| *k < 10);
        dash.give_back_room();
        assert!(dash.capacity() < 1_000, "{}", dash.capacity());
        assert_eq!(dash.len(), 10);
    }
}
