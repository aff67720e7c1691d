//! A kind supervisor's share of the objects when several members split them (issue 30).
//!
//! Every member watches every object of the kind, but keeps only its own share: of another
//! member's object it keeps the key (so a relist's diff and the orphan sweep know it exists),
//! never the object. A hand-off is two steps. `drain` stops, and waits for, the actors of the
//! objects lost; `adopt` then lists the kind again ([`Restarts`]), and the objects gained come
//! back through that list as any new object does (their first pass schedules their timers
//! again from status). Between the two the operator's children caches list again too, so a
//! gained object's first pass sees its children.

use std::collections::HashSet;
use std::sync::Arc;

use ractor::ActorRef;

use super::kind::{KindState, KindSupervisor, kind_of};
use crate::actors::{Listed, Reconciler};
use crate::messages::{KindMsg, ObjectKey};
use crate::ring::Ownership;

/// Another member's object: only which watch reported it.
pub(super) struct Foreign {
    pub(super) source: usize,
}

/// Whether `ownership` holds `key` of kind `R`.
pub(super) fn owns<R: Reconciler>(ownership: &Ownership, key: &ObjectKey) -> bool {
    ownership.owns_object(&kind_of::<R>(), &key.namespace, &key.name)
}

impl<R: Reconciler> KindSupervisor<R> {
    /// Notes `key` as another member's object (dropping any copy of it).
    pub(super) fn keep_foreign(state: &mut KindState<R>, key: ObjectKey, source: usize) {
        state.foreign.insert(key, Foreign { source });
    }

    /// Once every watch listed: lets the reconciler remove what objects that do not exist left
    /// behind, for the keys of this member's share (each key's owner sweeps for it, as it
    /// would pass it), off the supervisor.
    pub(super) fn sweep_orphans(&self, state: &KindState<R>) {
        if !state.complete() {
            return;
        }
        // The whole list: another member's objects are no orphans.
        let known: HashSet<ObjectKey> = state
            .objects
            .keys()
            .chain(state.foreign.keys())
            .cloned()
            .collect();
        let listed = Listed::new(kind_of::<R>(), known, state.ownership.clone());
        let (reconciler, env) = (self.reconciler.clone(), state.env.clone());
        tokio::spawn(async move { reconciler.on_listed(&listed, &env).await });
    }

    /// Takes `ownership` and drains what it no longer holds: returns once those actors ended
    /// (each bounded by the shutdown grace), with whether it holds objects kept as another
    /// member's (to be adopted, see [`KindSupervisor::adopt`]).
    pub(super) async fn drain(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        ownership: Arc<Ownership>,
    ) -> bool {
        state.ownership = ownership;
        let lost: Vec<ObjectKey> = state
            .objects
            .keys()
            .filter(|key| !owns::<R>(&state.ownership, key))
            .cloned()
            .collect();
        let mut stopping = Vec::new();
        for key in lost {
            if let Some((tracked, actor)) = self.forget(myself, state, &key, "moved").await {
                Self::keep_foreign(state, key, tracked.source);
                stopping.extend(actor);
            }
        }
        let grace = state.options.shutdown_grace;
        // Already asked to stop by `forget`: wait for each to end (its pass finishing).
        for actor in stopping {
            if actor.wait(Some(grace)).await.is_err() {
                tracing::warn!(actor = ?actor.get_id(), "a moved actor outlived the grace");
            }
        }
        self.gains(state)
    }

    /// Whether the share holds objects this member did not keep.
    fn gains(&self, state: &KindState<R>) -> bool {
        state
            .foreign
            .keys()
            .any(|key| owns::<R>(&state.ownership, key))
    }

    /// Adopts what the share gained: the kind is listed again and the gained objects start as
    /// new ones do. Orphans of keys gained are swept at the end of that list (and now, for
    /// those left by objects no longer listed).
    pub(super) fn adopt(&self, state: &mut KindState<R>) {
        if self.gains(state) {
            let generation = state.relists.restart();
            tracing::info!(kind = %kind_of::<R>(), generation, "share grew: listing again");
        }
        self.sweep_orphans(state);
    }
}
