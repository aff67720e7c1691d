//! What a kind's complete list tells its orphan sweep (`Reconciler::on_listed`).

use std::collections::HashSet;
use std::sync::Arc;

use crate::messages::ObjectKey;
use crate::ring::Ownership;

/// The objects of one kind that exist in this member's share, and that share.
pub struct Listed {
    kind: String,
    known: HashSet<ObjectKey>,
    ownership: Arc<Ownership>,
}

impl Listed {
    /// `known`: every listed object of `kind` in `ownership` (others' keys may be in it too:
    /// they are never judged here).
    pub fn new(
        kind: impl Into<String>,
        known: HashSet<ObjectKey>,
        ownership: Arc<Ownership>,
    ) -> Self {
        Self {
            kind: kind.into(),
            known,
            ownership,
        }
    }

    /// Whether `key` names no object of the kind and what it left behind is this member's to
    /// remove: the member the ring gives the key, as if the object existed (one deleter each).
    pub fn is_my_orphan(&self, key: &ObjectKey) -> bool {
        !self.known.contains(key)
            && self
                .ownership
                .owns_object(&self.kind, &key.namespace, &key.name)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::ring::Ring;

    #[test]
    fn an_orphan_is_swept_by_one_member_and_a_listed_object_by_none() {
        let members: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
        let listed = |me: &str| {
            let ring = Ring::Members {
                me: me.into(),
                members: members.clone(),
            };
            let known = HashSet::from([ObjectKey::new("ns", "exists")]);
            Listed::new("PgAccessRequest", known, Arc::new(Ownership::single(ring)))
        };
        let views = [listed("a"), listed("b"), listed("c")];
        for i in 0..100 {
            let gone = ObjectKey::new("ns", format!("gone-{i}").as_str());
            assert_eq!(views.iter().filter(|l| l.is_my_orphan(&gone)).count(), 1);
        }
        let exists = ObjectKey::new("ns", "exists");
        assert!(views.iter().all(|l| !l.is_my_orphan(&exists)));
        let single = Listed::new("PgAccessRequest", HashSet::new(), Arc::default());
        assert!(
            single.is_my_orphan(&exists),
            "one replica sweeps everything"
        );
    }
}
