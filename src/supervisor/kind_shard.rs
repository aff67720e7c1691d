//! A kind supervisor's share of the objects when several members split them (issue 30).
//!
//! Every member watches every object (client-side filtering: label- or server-side sharded
//! caches are a later step); it runs actors only for those its ownership holds and keeps the
//! others packed, so a hand-off needs no relist. A hand-off first stops, and waits for, the
//! actors of the objects it loses, then starts those it gains (their first pass schedules
//! their timers again from status).

use std::collections::HashSet;
use std::sync::Arc;

use ractor::ActorRef;

use super::kind::{KindState, KindSupervisor, jitter, kind_of};
use super::packed::Latest;
use crate::actors::{Listed, Reconciler};
use crate::messages::{KindMsg, ObjectKey};
use crate::reconcile::shard::Ownership;

/// Another member's object, as last seen.
pub(super) struct Foreign<K> {
    pub(super) latest: Latest<K>,
    pub(super) source: usize,
}

/// Whether `ownership` holds `key` of kind `R`.
pub(super) fn owns<R: Reconciler>(ownership: &Ownership, key: &ObjectKey) -> bool {
    ownership.owns_object(&kind_of::<R>(), &key.namespace, &key.name)
}

impl<R: Reconciler> KindSupervisor<R> {
    /// Keeps `obj` as another member's, packed.
    pub(super) fn keep_foreign(
        state: &mut KindState<R>,
        key: ObjectKey,
        source: usize,
        obj: Arc<R::Object>,
    ) {
        let mut latest = Latest::Decoded(obj);
        latest.pack();
        state.foreign.insert(key, Foreign { latest, source });
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

    /// Takes `ownership`: drains what it no longer holds (returns once those actors ended,
    /// each bounded by the shutdown grace), then adopts what it gained.
    pub(super) async fn reshard(
        &self,
        myself: &ActorRef<KindMsg<R::Object>>,
        state: &mut KindState<R>,
        ownership: Arc<Ownership>,
    ) {
        state.ownership = ownership;
        let lost: Vec<ObjectKey> = state
            .objects
            .keys()
            .filter(|key| !owns::<R>(&state.ownership, key))
            .cloned()
            .collect();
        let mut stopping = Vec::new();
        for key in lost {
            if let Some((mut tracked, actor)) = self.forget(myself, state, &key, "moved").await {
                tracked.latest.pack();
                let foreign = Foreign {
                    latest: tracked.latest,
                    source: tracked.source,
                };
                state.foreign.insert(key, foreign);
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
        let gained: Vec<ObjectKey> = state
            .foreign
            .keys()
            .filter(|key| owns::<R>(&state.ownership, key))
            .cloned()
            .collect();
        for key in gained {
            let Some(mut foreign) = state.foreign.remove(&key) else {
                continue;
            };
            match foreign.latest.decoded() {
                Ok(obj) => {
                    let delay = jitter(state.options.startup_jitter);
                    self.upsert(
                        myself,
                        state,
                        foreign.source,
                        key,
                        Arc::unwrap_or_clone(obj),
                        delay,
                    )
                    .await;
                }
                // Our own JSON of a type that decoded from the API: not expected; the next
                // delta of the object brings it back.
                Err(err) => tracing::error!(object = %key, error = %err, "moved object unreadable"),
            }
        }
        // Orphans of keys gained (or skipped while no ring held them) are swept now.
        self.sweep_orphans(state);
    }
}
