//! The hand-off between members, as a pure state machine over what the member Leases show.
//!
//! A member that sees the live set change first narrows what it holds to the intersection of
//! its old ring and the new one (it only lets go), drains the objects it lost, and then
//! publishes the new view's hash in its Lease. It takes the new ring alone only once every
//! live member's Lease shows that same hash, read after its own publication: by then each of
//! them has let go of what it no longer owns, so no object has two writers. A member whose
//! Lease expired is out of the view; it stopped writing before others can see it expired.

use std::collections::BTreeSet;

use crate::ring::{Ownership, Placement, Ring, view_hash};

/// A live member as its Lease shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub identity: String,
    /// The view hash it published (`None`: none yet).
    pub view: Option<u64>,
}

/// What the member does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Apply `ownership` (stop and let finish the actors of the objects it excludes), then
    /// publish `publish` in the member's Lease.
    Drain { ownership: Ownership, publish: u64 },
    /// Every live member drained to our view: apply `ownership` (adopt).
    Adopt(Ownership),
    /// Nothing changes.
    Hold,
}

#[derive(Clone, Debug)]
pub struct Handshake {
    me: String,
    view: Option<BTreeSet<String>>,
    held: Ownership,
}

impl Handshake {
    /// A new member of a ring placing objects by `placement`: it holds nothing until it
    /// agreed a view with the others.
    pub fn new(me: impl Into<String>, placement: Placement) -> Self {
        Self {
            me: me.into(),
            view: None,
            held: Ownership::placed(Ring::Nothing, placement),
        }
    }

    /// The next step, given the live members' Leases (ours among them or not) read after our
    /// last publication.
    pub fn observe(&mut self, live: &[Peer]) -> Step {
        let mut members: BTreeSet<String> = live.iter().map(|p| p.identity.clone()).collect();
        members.insert(self.me.clone());
        if self.view.as_ref() != Some(&members) {
            let publish = view_hash(&members, self.held.placement());
            let ring = Ring::Members {
                me: self.me.clone(),
                members: members.clone(),
            };
            self.held = self.held.narrowed(ring);
            self.view = Some(members);
            return Step::Drain {
                ownership: self.held.clone(),
                publish,
            };
        }
        let publish = view_hash(&members, self.held.placement());
        let agreed = live
            .iter()
            .all(|p| p.identity == self.me || p.view == Some(publish));
        if agreed && self.held.rings().len() > 1 {
            self.held = self.held.settled();
            return Step::Adopt(self.held.clone());
        }
        Step::Hold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(id: &str, view: Option<u64>) -> Peer {
        Peer {
            identity: id.into(),
            view,
        }
    }

    #[test]
    fn a_joining_member_owns_nothing_until_every_live_member_shows_its_view() {
        let mut b = Handshake::new("b", Placement::Object);
        let Step::Drain { ownership, publish } = b.observe(&[peer("a", None)]) else {
            panic!("a new view is drained first");
        };
        assert!((0..1000).all(|k| !ownership.owns(k)));
        // `a` has not drained yet: b waits.
        assert_eq!(
            b.observe(&[peer("a", None), peer("b", Some(publish))]),
            Step::Hold
        );
        let Step::Adopt(owned) = b.observe(&[peer("a", Some(publish)), peer("b", Some(publish))])
        else {
            panic!("b adopts once a shows the view");
        };
        assert!((0..1000).any(|k| owned.owns(k)));
        assert_eq!(b.observe(&[peer("a", Some(publish))]), Step::Hold);
    }

    #[test]
    fn a_member_alone_adopts_everything_after_its_own_publication() {
        let mut a = Handshake::new("a", Placement::Object);
        assert!(matches!(a.observe(&[]), Step::Drain { .. }));
        let Step::Adopt(owned) = a.observe(&[]) else {
            panic!("alone, nobody else has to agree");
        };
        assert!((0..1000).all(|k| owned.owns(k)));
    }
}
