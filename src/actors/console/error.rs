//! Why a console pass cannot proceed; its own file so the pass's parts share it without
//! importing one another.

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("PgToolBoxConsole {0} has no uid yet: its children cannot be owned")]
    NoUid(String),
    #[error("the operator cannot read Clusters in namespace {0}")]
    ClustersUnreadable(String),
}
