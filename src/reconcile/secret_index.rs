//! Which managed objects use which Secrets, and which of them a Secret change wakes (pure).
//!
//! Mirrors CloudNativePG's rule: a Secret is admitted when one of our objects owns it, uses it,
//! or it carries `cnpg.io/reload`; it then wakes only its owner and the objects that use it, so
//! the label alone wakes nobody. Only Secret names and resourceVersions are kept, never data.

use std::collections::{HashMap, HashSet};

use crate::children::Relist;
pub use crate::messages::shared::SecretMeta;
pub use crate::messages::{KindKey, ObjectKey};

/// CloudNativePG's opt-in label for user Secrets; its value is ignored.
pub const RELOAD_LABEL: &str = "cnpg.io/reload";

/// The last version seen of an admitted Secret.
#[derive(Clone, Debug)]
struct Seen {
    resource_version: Option<String>,
    /// Admitted by owner or label, so kept even when no object uses it.
    owned_or_labelled: bool,
}

#[derive(Debug, Default)]
pub struct SecretIndex {
    users: HashMap<ObjectKey, HashSet<KindKey>>,
    uses: HashMap<KindKey, Vec<ObjectKey>>,
    seen: HashMap<ObjectKey, Seen>,
    /// Watch scopes (a namespace, or `None` for all) whose first full list is done. Until then a
    /// list only records versions, since every object reads its Secrets on its first reconcile.
    synced: HashSet<Option<String>>,
    /// The relist in progress of each watch scope.
    relists: HashMap<Option<String>, Relist<ObjectKey>>,
}

impl SecretIndex {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn object_count(&self) -> usize {
        self.uses.len()
    }

    pub fn secret_count(&self) -> usize {
        self.users.len()
    }

    /// Watch scopes whose first full list is done.
    pub fn synced_scopes(&self) -> usize {
        self.synced.len()
    }

    pub fn users_of(&self, secret: &ObjectKey) -> impl Iterator<Item = &KindKey> {
        self.users.get(secret).into_iter().flatten()
    }

    /// Replaces every reference of `object` with `secrets` (empty = forget it).
    pub fn register(&mut self, object: &KindKey, secrets: Vec<ObjectKey>) {
        let mut secrets = secrets;
        secrets.sort();
        secrets.dedup();
        // Most passes register what they registered last time: nothing to redo.
        if self.uses.get(object) == Some(&secrets) {
            return;
        }
        self.forget(object);
        if secrets.is_empty() {
            return;
        }
        for secret in &secrets {
            self.users
                .entry(secret.clone())
                .or_default()
                .insert(object.clone());
        }
        self.uses.insert(object.clone(), secrets);
    }

    /// Drops every reference of `object`.
    pub fn forget(&mut self, object: &KindKey) {
        let Some(old) = self.uses.remove(object) else {
            return;
        };
        for secret in old {
            let now_unused = match self.users.get_mut(&secret) {
                Some(set) => {
                    set.remove(object);
                    set.is_empty()
                }
                None => false,
            };
            if now_unused {
                self.users.remove(&secret);
                if self.seen.get(&secret).is_some_and(|s| !s.owned_or_labelled) {
                    self.seen.remove(&secret);
                }
            }
        }
    }

    fn admitted(&self, meta: &SecretMeta) -> bool {
        meta.owner.is_some() || meta.reload_label || self.users.contains_key(&meta.key)
    }

    fn targets(&self, meta: &SecretMeta) -> Vec<KindKey> {
        let mut targets: Vec<KindKey> = self.users_of(&meta.key).cloned().collect();
        if let Some(owner) = &meta.owner
            && !targets.contains(owner)
        {
            targets.push(owner.clone());
        }
        targets.sort();
        targets
    }

    /// A Secret was added or changed: the objects to wake (none when it is not admitted or its
    /// version is the one already seen, as after a watch re-list).
    pub fn applied(&mut self, meta: &SecretMeta) -> Option<Vec<KindKey>> {
        if !self.admitted(meta) {
            return None;
        }
        let previous = self.seen.insert(
            meta.key.clone(),
            Seen {
                resource_version: meta.resource_version.clone(),
                owned_or_labelled: meta.owner.is_some() || meta.reload_label,
            },
        );
        for scope in [None, Some(meta.key.namespace.clone())] {
            if let Some(relist) = self.relists.get_mut(&scope) {
                relist.listed(meta.key.clone());
            }
        }
        let unchanged = previous.is_some_and(|p| p.resource_version == meta.resource_version);
        if unchanged || !self.is_synced(&meta.key.namespace) {
            return Some(Vec::new());
        }
        Some(self.targets(meta))
    }

    /// A Secret was deleted: the objects to wake.
    pub fn deleted(&mut self, meta: &SecretMeta) -> Option<Vec<KindKey>> {
        let was_seen = self.seen.remove(&meta.key).is_some();
        if !was_seen && !self.admitted(meta) {
            return None;
        }
        Some(self.targets(meta))
    }

    fn is_synced(&self, namespace: &str) -> bool {
        self.synced.contains(&None) || self.synced.contains(&Some(namespace.to_owned()))
    }

    /// A watch (of one namespace, or all when `None`) starts listing everything again.
    pub fn relist_started(&mut self, scope: &Option<String>) {
        self.relists.entry(scope.clone()).or_default().start();
    }

    /// The re-list of `scope` is complete: Secrets not listed again were deleted while the watch
    /// was down; returns each of them with the objects to wake for it.
    pub fn relist_done(&mut self, scope: &Option<String>) -> Vec<(ObjectKey, Vec<KindKey>)> {
        let first_sync = self.synced.insert(scope.clone());
        let known = self.seen.keys().filter(|key| in_scope(scope, key));
        let mut gone = self.relists.entry(scope.clone()).or_default().finish(known);
        gone.sort();
        let mut woken = Vec::new();
        for key in gone {
            self.seen.remove(&key);
            let mut users: Vec<KindKey> = self.users_of(&key).cloned().collect();
            if !first_sync && !users.is_empty() {
                users.sort();
                woken.push((key, users));
            }
        }
        woken
    }
}

fn in_scope(scope: &Option<String>, key: &ObjectKey) -> bool {
    scope.as_ref().is_none_or(|ns| *ns == key.namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(ns: &str, name: &str, rv: &str) -> SecretMeta {
        SecretMeta {
            key: ObjectKey::new(ns, name),
            resource_version: Some(rv.to_owned()),
            owner: None,
            reload_label: false,
        }
    }

    fn obj(name: &str) -> KindKey {
        KindKey::new("PgAdmin", "ns", name)
    }

    fn synced() -> SecretIndex {
        let mut index = SecretIndex::new();
        index.relist_started(&None);
        index.relist_done(&None);
        index
    }

    #[test]
    fn a_change_wakes_exactly_the_users() {
        let mut index = synced();
        for o in ["a", "b", "c"] {
            index.register(&obj(o), vec![ObjectKey::new("ns", "shared")]);
        }
        index.register(&obj("d"), vec![ObjectKey::new("ns", "other")]);
        let woken = index.applied(&meta("ns", "shared", "2")).unwrap();
        assert_eq!(woken, vec![obj("a"), obj("b"), obj("c")]);
        assert_eq!(index.applied(&meta("ns", "unrelated", "3")), None);
        assert_eq!(
            index.applied(&meta("ns", "shared", "2")),
            Some(vec![]),
            "same version"
        );
    }

    #[test]
    fn register_replaces_and_forget_removes() {
        let mut index = synced();
        index.register(
            &obj("a"),
            vec![ObjectKey::new("ns", "s1"), ObjectKey::new("ns", "s2")],
        );
        index.register(&obj("a"), vec![ObjectKey::new("ns", "s2")]);
        assert_eq!(index.applied(&meta("ns", "s1", "1")), None);
        assert_eq!(index.applied(&meta("ns", "s2", "1")), Some(vec![obj("a")]));
        index.forget(&obj("a"));
        assert_eq!(index.object_count(), 0);
        assert_eq!(index.secret_count(), 0);
        assert_eq!(index.applied(&meta("ns", "s2", "2")), None);
    }

    #[test]
    fn owned_secrets_wake_their_owner_and_the_label_alone_wakes_nobody() {
        let mut index = synced();
        let mut owned = meta("ns", "tls", "1");
        owned.owner = Some(obj("owner"));
        assert_eq!(index.applied(&owned), Some(vec![obj("owner")]));
        let mut labelled = meta("ns", "user-ca", "1");
        labelled.reload_label = true;
        assert_eq!(index.applied(&labelled), Some(vec![]));
        index.register(&obj("x"), vec![ObjectKey::new("ns", "user-ca")]);
        labelled.resource_version = Some("2".into());
        assert_eq!(index.applied(&labelled), Some(vec![obj("x")]));
    }

    #[test]
    fn first_list_wakes_nobody_and_a_relist_wakes_only_changes_and_gaps() {
        let mut index = SecretIndex::new();
        index.register(&obj("a"), vec![ObjectKey::new("ns", "s1")]);
        index.register(&obj("b"), vec![ObjectKey::new("ns", "s2")]);
        index.register(&obj("c"), vec![ObjectKey::new("ns", "s3")]);
        index.relist_started(&None);
        for s in ["s1", "s2", "s3"] {
            assert_eq!(index.applied(&meta("ns", s, "1")), Some(vec![]));
        }
        assert!(index.relist_done(&None).is_empty());
        // The watch restarts: s1 unchanged, s2 changed, s3 deleted meanwhile.
        index.relist_started(&None);
        assert_eq!(index.applied(&meta("ns", "s1", "1")), Some(vec![]));
        assert_eq!(index.applied(&meta("ns", "s2", "5")), Some(vec![obj("b")]));
        assert_eq!(
            index.relist_done(&None),
            vec![(ObjectKey::new("ns", "s3"), vec![obj("c")])]
        );
    }

    #[test]
    fn deletion_wakes_users() {
        let mut index = synced();
        index.register(&obj("a"), vec![ObjectKey::new("ns", "s1")]);
        assert_eq!(index.deleted(&meta("ns", "s1", "9")), Some(vec![obj("a")]));
        assert_eq!(index.deleted(&meta("ns", "nobody", "9")), None);
    }
}
