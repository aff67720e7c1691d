//! The errors of a PgAdmin pass of its own (a refused child and the API's errors are the
//! runtime's).

use crate::actors::ReconcileError;

#[derive(Debug, thiserror::Error)]
pub enum PgAdminError {
    #[error("PgAdmin {0} has no uid yet: its children cannot be owned")]
    NoUid(String),
    #[error(transparent)]
    Render(#[from] crate::reconcile::pgadmin::RenderError),
    #[error(transparent)]
    Facts(#[from] crate::conditions::FactsError),
    #[error(transparent)]
    Apply(#[from] crate::children::ApplyError),
}

impl From<PgAdminError> for ReconcileError {
    fn from(e: PgAdminError) -> Self {
        ReconcileError::other(e)
    }
}

/// An exposure object that does not convert to its typed form.
pub(super) fn render_error(e: serde_json::Error) -> PgAdminError {
    PgAdminError::Apply(crate::children::ApplyError::Render(e))
}
