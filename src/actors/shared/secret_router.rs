//! The CNPG secret router: the operator's one metadata-only Secret watch. It feeds the shared
//! Secret reference index (which objects use which Secret; kinds register there directly) and
//! wakes exactly the objects that use a changed Secret, plus the object owning it, the way
//! CloudNativePG reloads on a Secret it owns or uses. Only names and resourceVersions are kept,
//! never data.

use std::sync::Arc;

use futures::StreamExt;
use kube::{Client, ResourceExt};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio_util::task::AbortOnDropHandle;
use tracing::debug;

use crate::api::GROUP as OWN_GROUP;
use crate::children::{Meta, Observed, ReferenceIndex};
use crate::k8s::WatchScope;
use crate::messages::shared::{RouterStats, SecretRouterMsg};
use crate::messages::{KindKey, ObjectKey};

/// Where a routed Secret change goes: the runtime plugs its object registry in here.
pub trait SecretSubscriber: Send + Sync + 'static {
    fn secret_changed(&self, object: &KindKey, secret: &ObjectKey);
}

/// The Secret's controller when it is one of our kinds.
pub fn owner_of(secret: &Meta) -> Option<KindKey> {
    let namespace = secret.namespace()?;
    secret
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.api_version.split('/').next() == Some(OWN_GROUP))
        .map(|o| KindKey::new(&o.kind, &namespace, &o.name))
}

/// Who a judged Secret event wakes: its users and its owner; nobody when nothing changed.
pub fn targets(seen: &Observed) -> Vec<KindKey> {
    let Some(users) = &seen.changed else {
        return Vec::new();
    };
    let mut targets = users.clone();
    if let Some(owner) = seen.meta.as_ref().and_then(owner_of)
        && !targets.contains(&owner)
    {
        targets.push(owner);
    }
    targets.sort();
    targets
}

pub struct SecretRouter;

#[derive(Clone)]
pub struct RouterArgs {
    pub subscriber: Arc<dyn SecretSubscriber>,
    /// The Secret reference index; it outlives a router restart, so no registration is lost.
    pub index: Arc<ReferenceIndex>,
    /// `None`: no watch (tests feed `Observed` themselves).
    pub watch: Option<(Client, WatchScope)>,
}

pub struct RouterState {
    index: Arc<ReferenceIndex>,
    subscriber: Arc<dyn SecretSubscriber>,
    stats: RouterStats,
    /// Aborted when the state goes, however the router ends: a killed router (its supervisor
    /// stopping) gets no `post_stop`, and a plain `JoinHandle` dropped would leave the watch
    /// running past the operator's shutdown.
    watch: Option<AbortOnDropHandle<()>>,
}

impl Actor for SecretRouter {
    type Msg = SecretRouterMsg;
    type State = RouterState;
    type Arguments = RouterArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: RouterArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let watch = args.watch.map(|(client, scope)| {
            let streams = args.index.watch_observed(&client, &scope);
            AbortOnDropHandle::new(tokio::spawn(forward(
                futures::stream::select_all(streams),
                myself,
            )))
        });
        Ok(RouterState {
            index: args.index,
            subscriber: args.subscriber,
            stats: RouterStats::default(),
            watch,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(watch) = state.watch.take() {
            watch.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: SecretRouterMsg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SecretRouterMsg::Observed(seen) => {
                state.stats.events_seen += 1;
                let targets = targets(&seen);
                for object in &targets {
                    debug!(%object, secret = %seen.key, "secret change routed");
                    state.subscriber.secret_changed(object, &seen.key);
                }
                state.stats.wakeups += targets.len() as u64;
            }
            SecretRouterMsg::Stats(reply) => {
                let mut stats = state.stats;
                (stats.objects, stats.secrets, stats.synced_scopes) = state.index.counts();
                let _ = reply.send(stats);
            }
        }
        Ok(())
    }
}

/// Streams every watched namespace's judged Secret events to the router until it stops.
async fn forward(
    mut events: futures::stream::SelectAll<crate::children::Observations>,
    router: ActorRef<SecretRouterMsg>,
) {
    while let Some(seen) = events.next().await {
        if router
            .cast(SecretRouterMsg::Observed(Box::new(seen)))
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use kube::api::DynamicObject;
    use kube::core::PartialObjectMetaExt;

    fn seen(changed: Option<Vec<KindKey>>, owner: Option<(&str, &str)>) -> Observed {
        let meta = ObjectMeta {
            name: Some("s".into()),
            namespace: Some("ns".into()),
            owner_references: owner.map(|(api_version, kind)| {
                vec![OwnerReference {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    name: "mine".into(),
                    uid: "u".into(),
                    controller: Some(true),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        }
        .into_response_partial::<DynamicObject>();
        Observed {
            key: ObjectKey::new("ns", "s"),
            changed,
            meta: Some(meta),
        }
    }

    #[test]
    fn a_change_wakes_its_users_and_our_owner_once() {
        let user = KindKey::new("PgAdmin", "ns", "a");
        let owner = KindKey::new("EvidenceAgent", "ns", "mine");
        let ours = Some(("pgtoolbox.fyannk.dev/v1alpha1", "EvidenceAgent"));
        assert_eq!(
            targets(&seen(Some(vec![user.clone()]), ours)),
            vec![owner.clone(), user.clone()]
        );
        // Someone else's controller (CNPG's Cluster) is not woken.
        assert_eq!(
            targets(&seen(
                Some(vec![user.clone()]),
                Some(("postgresql.cnpg.io/v1", "Cluster"))
            )),
            vec![user.clone()]
        );
        // Unchanged (a relist's repeat, or the first list): nobody, not even the owner.
        assert!(targets(&seen(None, ours)).is_empty());
        assert_eq!(targets(&seen(Some(vec![]), ours)), vec![owner]);
    }
}
