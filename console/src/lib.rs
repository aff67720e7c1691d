//! pgtoolbox-console: the web console a PgToolBoxConsole deploys.
//!
//! It reads what the operator renders (`pgtoolbox_api::console`), signs users in with OpenID
//! Connect and acts for each of them with their own ID token, never with its ServiceAccount.
//! docs/console.md describes the pages and the security model.

pub mod addr;
pub mod auth;
pub mod backups;
pub mod drills;
pub mod html;
pub mod logs;
mod metrics;
mod respond;
pub mod server;
pub mod session_end;
mod state;
pub mod tls;
pub mod views;

pub use server::serve;
pub use state::{Console, ConsoleError};
