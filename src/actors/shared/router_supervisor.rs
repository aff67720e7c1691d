//! Supervision of the CNPG secret router: if it fails, a new one starts after a backoff; its
//! Secret watch lists again (rebuilding which Secrets exist) and every object is woken once so
//! its next pass registers the Secrets it uses again.

use std::sync::{Arc, RwLock};

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use crate::actors::secret_router::{RouterArgs, SecretRouter};
use crate::messages::shared::SecretRouterMsg;
use crate::runtime::BackoffPolicy;

/// The router currently running (none while a restart is pending).
#[derive(Debug, Default)]
pub struct RouterSlot(RwLock<Option<ActorRef<SecretRouterMsg>>>);

impl RouterSlot {
    pub fn current(&self) -> Option<ActorRef<SecretRouterMsg>> {
        self.0
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn set(&self, router: Option<ActorRef<SecretRouterMsg>>) {
        *self
            .0
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = router;
    }
}

pub struct RouterSupervisor;

pub struct RouterSupervisorArgs {
    pub router: RouterArgs,
    pub slot: Arc<RouterSlot>,
    pub restart: BackoffPolicy,
}

pub struct RouterSupervisorState {
    args: RouterSupervisorArgs,
    restarts: u32,
}

/// The restart backoff elapsed.
pub struct Respawn;

impl RouterSupervisor {
    async fn spawn_router(
        myself: &ActorRef<Respawn>,
        state: &RouterSupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let (router, _) = Actor::spawn_linked(
            None,
            SecretRouter,
            state.args.router.clone(),
            myself.get_cell(),
        )
        .await?;
        state.args.slot.set(Some(router));
        Ok(())
    }
}

impl Actor for RouterSupervisor {
    type Msg = Respawn;
    type State = RouterSupervisorState;
    type Arguments = RouterSupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let state = RouterSupervisorState { args, restarts: 0 };
        Self::spawn_router(&myself, &state).await?;
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        _message: Respawn,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // The index and its registrations survive the router: the new watch's relist wakes
        // the users of every Secret that changed or went meanwhile, and nobody else.
        Self::spawn_router(&myself, state).await?;
        tracing::info!(restarts = state.restarts, "secret router restarted");
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Never stop because the router ended (ractor's default): restart it.
        let reason = match event {
            SupervisionEvent::ActorFailed(_, err) => err.to_string(),
            SupervisionEvent::ActorTerminated(_, _, reason) => {
                reason.unwrap_or_else(|| "stopped".into())
            }
            _ => return Ok(()),
        };
        state.args.slot.set(None);
        state.restarts = state.restarts.saturating_add(1);
        let delay = state.args.restart.delay(state.restarts);
        tracing::warn!(%reason, restart_in = ?delay, "secret router ended");
        myself.send_after(delay, || Respawn);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::secret_router::SecretSubscriber;
    use crate::messages::{KindKey, ObjectKey};
    use std::time::Duration;

    struct Nobody;
    impl SecretSubscriber for Nobody {
        fn secret_changed(&self, _: &KindKey, _: &ObjectKey) {}
    }

    #[tokio::test]
    async fn a_failed_router_is_replaced() {
        let slot = Arc::new(RouterSlot::default());
        let (supervisor, _) = Actor::spawn(
            None,
            RouterSupervisor,
            RouterSupervisorArgs {
                router: RouterArgs {
                    subscriber: Arc::new(Nobody),
                    index: crate::children::ReferenceIndex::new(
                        "Secrets",
                        crate::children::secrets_resource(),
                    ),
                    watch: None,
                },
                slot: slot.clone(),
                restart: BackoffPolicy {
                    min_delay: Duration::from_millis(10),
                    max_delay: Duration::from_millis(10),
                },
            },
        )
        .await
        .unwrap();
        let first = slot.current().expect("a router runs");
        first.kill();
        let mut replaced = None;
        for _ in 0..200 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            if let Some(now) = slot.current()
                && now.get_id() != first.get_id()
            {
                replaced = Some(now);
                break;
            }
        }
        let replaced = replaced.expect("replaced");
        let stats = ractor::call!(replaced, SecretRouterMsg::Stats).expect("the new one answers");
        assert_eq!(stats.objects, 0);
        supervisor.stop(None);
    }
}
