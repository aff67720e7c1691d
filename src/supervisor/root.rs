use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use crate::messages::RootMsg;

/// The root of the actor tree. It does nothing that can fail: it only parents the per-kind
/// supervisors (a dying actor kills its linked children, so the root must not die).
pub struct RootSupervisor;

impl Actor for RootSupervisor {
    type Msg = RootMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        _args: (),
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: RootMsg,
        _state: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        match message {
            RootMsg::Shutdown => myself.stop(Some("shutdown".into())),
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        _state: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        // Overrides ractor's default, which would stop the root when a kind supervisor ends.
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                tracing::error!(supervisor = ?cell.get_name(), error = %err, "kind supervisor failed");
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                tracing::info!(supervisor = ?cell.get_name(), ?reason, "kind supervisor stopped");
            }
            _ => {}
        }
        Ok(())
    }
}
