//! A kind supervisor's share of the objects when several members split them (issue 30).
//!
//! Every member watches every object of the kind, but keeps only its own share: of another
//! member's object it keeps nothing, not even the key. A hand-off is two steps. `drain` stops,
//! and waits for, the actors of the objects lost; `adopt` then lists the kind again
//! ([`Restarts`]) when the share may have grown, and the objects gained come back through that
//! list as any new object does (their first pass schedules their timers again from status).
//! Between the two the operator's children caches list again too, so a gained object's first
//! pass sees its children. Until that list ended, no key is judged missing (its object may be
//! one gained and not seen yet).

use std::collections::HashSet;
use std::sync::Arc;

use ractor::ActorRef;

use super::kind::{KindState, KindSupervisor, kind_of, owns};
use crate::actors::{Listed, Reconciler};
use crate::messages::{KindMsg, ObjectKey};
use crate::ring::Ownership;

impl<R: Reconciler> KindSupervisor<R> {
    /// Once every watch listed: lets the reconciler remove what objects that do not exist left
    /// behind, for the keys of this member's share (each key's owner sweeps for it, as it
    /// would pass it), off the supervisor.
    pub(super) fn sweep_orphans(&self, state: &KindState<R>) {
        if !state.complete() {
            return;
        }
        // Every object of the share is known once listed; other keys are not this member's
        // to judge (`Listed` asks the ownership).
        let known: HashSet<ObjectKey> = state.objects.keys().cloned().collect();
        let listed = Listed::new(kind_of::<R>(), known, state.ownership.clone());
        let (reconciler, env) = (self.reconciler.clone(), state.env.clone());
        tokio::spawn(async move { reconciler.on_listed(&listed, &env).await });
    }

    /// Takes `ownership` and drains what it no longer holds: returns once those actors ended
    /// (each bounded by the shutdown grace), with whether the share may have grown since the
    /// kind was last listed (objects to adopt, see [`KindSupervisor::adopt`]).
    pub(super) async fn drain(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        ownership: Arc<Ownership>,
    ) -> bool {
        if !ownership.within(&state.ownership) {
            // Objects of the new share may exist unseen: nothing is missing until listed again.
            state.gained = true;
            state.listed.clear();
        }
        state.ownership = ownership;
        let lost: Vec<ObjectKey> = state
            .objects
            .keys()
            .filter(|key| !owns::<R>(&state.ownership, key))
            .cloned()
            .collect();
        let mut stopping = Vec::new();
        for key in lost {
            if let Some((_, actor)) = self.forget(myself, state, &key, "moved").await {
                stopping.extend(actor);
            }
        }
        state.give_back_room();
        let grace = state.options.shutdown_grace;
        // Already asked to stop by `forget`: wait for each to end (its pass finishing).
        for actor in stopping {
            if actor.wait(Some(grace)).await.is_err() {
                tracing::warn!(actor = ?actor.get_id(), "a moved actor outlived the grace");
            }
        }
        state.gained
    }

    /// Adopts what the share gained: the kind is listed again and the gained objects start as
    /// new ones do. Orphans of keys gained are swept at the end of that list (at once when the
    /// share did not grow).
    pub(super) fn adopt(&self, state: &mut KindState<R>) {
        if std::mem::take(&mut state.gained) {
            let generation = state.relists.restart();
            tracing::info!(kind = %kind_of::<R>(), generation, "share grew: listing again");
        }
        self.sweep_orphans(state);
    }
}
